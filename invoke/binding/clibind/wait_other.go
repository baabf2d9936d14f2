//go:build !linux

package clibind

import "os"

// awaitExit blocks until p has exited and reaps it.
func awaitExit(p *os.Process) (*os.ProcessState, error) {
	return p.Wait()
}
