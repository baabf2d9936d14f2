package testpeers

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Process is a live process, as /proc shows it.
type Process struct {
	PID, PPID int
	Cmdline   string // its arguments, joined by spaces
}

// Processes lists the live processes (zombies aside), or skips the test
// where /proc is absent (it is Linux's).
func Processes(t testing.TB) []Process {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("listing processes needs /proc")
	}
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so read after ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, Process{PID: pid, PPID: ppid, Cmdline: strings.ReplaceAll(string(bytes.TrimRight(cmdline, "\x00")), "\x00", " ")})
	}
	return out
}

// Descendants lists the live processes under pid: its children, theirs, …
func Descendants(t testing.TB, pid int) []Process {
	t.Helper()
	all := Processes(t)
	parent := map[int]int{}
	for _, p := range all {
		parent[p.PID] = p.PPID
	}
	var out []Process
	for _, p := range all {
		for q := p.PPID; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// Alive reports whether pid is a live process (not a zombie).
func Alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}
