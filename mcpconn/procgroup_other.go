//go:build !unix

package mcpconn

import "os/exec"

func setProcessGroup(cmd *exec.Cmd) {}

// KillGroup kills the started server.
func KillGroup(cmd *exec.Cmd) error {
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
