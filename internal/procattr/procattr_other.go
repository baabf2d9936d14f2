//go:build !unix

package procattr

import "syscall"

// Session is the default on systems without sessions.
func Session() *syscall.SysProcAttr { return nil }

// Group is the default on systems without process groups.
func Group() *syscall.SysProcAttr { return nil }
