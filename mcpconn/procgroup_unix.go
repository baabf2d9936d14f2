//go:build unix

package mcpconn

import (
	"github.com/caphub/caphub/internal/procattr"
	"os/exec"
	"syscall"
)

// setProcessGroup starts the server in a session of its own (and so in a
// process group of its own), so that KillGroup can stop whatever it
// started too (npx starts node, for one), and so that Linux's autogroup
// scheduler gives it its own CPU share: in caphub's session, many servers
// starting at once would share one slice and all time out. It dies with
// caphub (procattr).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = procattr.Session()
}

// KillGroup kills the process group of a started server.
func KillGroup(cmd *exec.Cmd) error {
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
