//go:build !unix

package clibind

import (
	"os"
	"os/exec"
)

// setGroup does nothing where process groups are not available.
func setGroup(cmd *exec.Cmd) {}

// killGroup kills the program itself where process groups are not
// available.
func killGroup(p *os.Process) {
	_ = p.Kill()
}

// signalName is "" where exit signals are not reported.
func signalName(st *os.ProcessState) string { return "" }
