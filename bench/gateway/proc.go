package main

import (
	"strings"
	"time"

	"github.com/prometheus/procfs"
)

// usage is what a target's processes have used, read from /proc: CPU time
// (utime+stime, which the kernel counts in 10 ms ticks) and resident
// memory (VmRSS, summed over processes, so pages two processes share count
// twice). The gateway's part is its root process and every descendant
// that is not the upstream's; the upstream's part is every process whose
// command line holds the upstream program (with its descendants), plus a
// separate upstream process (the HTTP upstream) when one is given.
type usage struct {
	gwCPU, upCPU     time.Duration
	gwRSS, upRSS     int64
	gwProcs, upProcs int
}

// measure reads the usage of the tree under root (0: no gateway) and of
// the separate upstream process upPID (0: none). marker is the upstream
// program's path.
func measure(root int, marker string, upPID int) usage {
	var u usage
	procs, err := procfs.AllProcs()
	if err != nil {
		return u
	}
	children := map[int][]procfs.Proc{}
	stats := map[int]procfs.ProcStat{}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // ended meanwhile
		}
		stats[p.PID] = st
		children[st.PPID] = append(children[st.PPID], p)
	}
	add := func(pid int, upstream bool) {
		st, ok := stats[pid]
		if !ok {
			return
		}
		cpu := time.Duration(st.CPUTime() * float64(time.Second))
		rss := int64(st.ResidentMemory())
		if upstream {
			u.upCPU += cpu
			u.upRSS += rss
			u.upProcs++
		} else {
			u.gwCPU += cpu
			u.gwRSS += rss
			u.gwProcs++
		}
	}
	var walk func(p procfs.Proc, upstream bool)
	walk = func(p procfs.Proc, upstream bool) {
		if !upstream && p.PID != root && isUpstream(p, marker) {
			upstream = true
		}
		add(p.PID, upstream)
		for _, c := range children[p.PID] {
			walk(c, upstream)
		}
	}
	if root != 0 {
		if p, err := procfs.NewProc(root); err == nil {
			walk(p, false)
		}
	}
	if upPID != 0 {
		add(upPID, true)
	}
	return u
}

// isUpstream reports whether p runs the upstream program: one of its
// arguments holds the program's path (its own argv[0], a node script's
// path, or a shell's -c line).
func isUpstream(p procfs.Proc, marker string) bool {
	args, err := p.CmdLine()
	if err != nil {
		return false
	}
	for _, a := range args {
		if strings.Contains(a, marker) {
			return true
		}
	}
	return false
}

// sub is u minus before, for the CPU times; the memory and process counts
// are u's.
func (u usage) sub(before usage) usage {
	u.gwCPU -= before.gwCPU
	u.upCPU -= before.upCPU
	return u
}
