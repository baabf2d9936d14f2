//go:build unix

package clibind

import (
	"github.com/caphub/caphub/internal/procattr"
	"os"
	"os/exec"
	"syscall"
)

// setGroup makes the program the leader of a new process group, so that it
// and everything it starts can be killed together; it dies with caphub
// (procattr).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = procattr.Group()
}

// killGroup sends SIGKILL to p's whole process group. A group that is
// already gone is not an error.
func killGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
}

// signalName names the signal that ended a program ("" when it exited).
func signalName(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}
