//go:build unix

package storetest

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) this process has used so
// far, for the benchmarks' CPU per event; ok is false where it cannot be
// read.
func cpuTime() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// CPUTime is the CPU time this process has used so far, for benchmarks
// of other packages that report CPU per operation (robust to a loaded
// machine, unlike wall time); ok is false where it cannot be read.
func CPUTime() (d time.Duration, ok bool) { return cpuTime() }
