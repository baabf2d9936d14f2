//go:build unix && !linux

package procattr

import "syscall"

// dieWithParent does nothing where the kernel offers no parent-death
// signal through SysProcAttr: a child sees its stdin close instead.
func dieWithParent(*syscall.SysProcAttr) {}
