//go:build unix

package mcpconn

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the server in its own process group, so that
// KillGroup can stop whatever it started too (npx starts node, for one).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// KillGroup kills the process group of a started server.
func KillGroup(cmd *exec.Cmd) error {
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
