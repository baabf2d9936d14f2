//go:build unix

package procattr

import "syscall"

// Session is a new session (and so a new process group, and on Linux its
// own autogroup CPU share), the child dying with caphub.
func Session() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true}
	dieWithParent(a)
	return a
}

// Group is a new process group in caphub's session, the child dying with
// caphub.
func Group() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(a)
	return a
}
