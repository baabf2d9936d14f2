package clibind

import (
	"errors"
	"os"
	"syscall"
	"unsafe"
)

// awaitExit blocks until p has exited without reaping it (waitid with
// WNOWAIT), so that its pid, which is also its process group's id, cannot
// be reused before the group is killed. It returns a nil state: the caller
// reaps with p.Wait. When waitid is unavailable it reaps and returns the
// state.
func awaitExit(p *os.Process) (*os.ProcessState, error) {
	const pPID = 1
	var info [16]uint64 // siginfo_t is 128 bytes
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(p.Pid), uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch {
		case errno == 0:
			return nil, nil
		case errors.Is(errno, syscall.EINTR):
			continue
		}
		return p.Wait()
	}
}
