//go:build !unix

package storetest

import "time"

// cpuTime cannot read the process's CPU time here: the benchmarks leave
// out their CPU per event.
func cpuTime() (time.Duration, bool) { return 0, false }

// CPUTime cannot read the process's CPU time here (see cpu_unix.go).
func CPUTime() (time.Duration, bool) { return 0, false }
