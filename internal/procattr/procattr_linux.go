package procattr

import "syscall"

// dieWithParent has the kernel send the child SIGKILL when the thread that
// started it ends. Go ends a thread only when a goroutine locked to it
// (runtime.LockOSThread) returns without unlocking, which caphub never
// does; so in effect, when caphub ends.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
