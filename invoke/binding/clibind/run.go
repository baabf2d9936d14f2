package clibind

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// drainGrace bounds how long output is still read after the program and its
// group are gone: only a process that left the group (setsid) can hold the
// pipes open that long.
const drainGrace = 2 * time.Second

// result is what a finished run produced.
type result struct {
	stdout, stderr []byte
	state          *os.ProcessState
	timedOut       bool  // the context's deadline killed it
	canceled       error // the context was cancelled (not a deadline)
	overflow       bool  // stdout exceeded its cap and the group was killed
}

// run starts path with argv and env in its own process group, collects
// stdout (up to maxOut) and stderr (up to maxErr), kills the group when ctx
// ends or stdout overflows, and, once the program has exited, kills
// whatever it left in its group. The error is about starting only.
func run(ctx context.Context, path string, argv, env []string, maxOut, maxErr int64) (*result, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Stdout: outW, Stderr: errW}
	setGroup(cmd)
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	proc := cmd.Process
	var killOnce sync.Once
	kill := func() { killOnce.Do(func() { killGroup(proc) }) }

	res := &result{}
	var stdout, stderr capBuffer
	stdout.max, stderr.max = maxOut, maxErr
	stdout.onOverflow = kill
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); stdout.readFrom(outR) }()
	go func() { defer readers.Done(); stderr.readFrom(errR) }()

	exited := make(chan struct{})
	var state *os.ProcessState
	go func() {
		state, _ = awaitExit(proc)
		close(exited)
	}()
	select {
	case <-exited:
	case <-ctx.Done():
		kill()
		<-exited
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			res.timedOut = true
		} else {
			res.canceled = ctx.Err()
		}
	}
	// The call is over: nothing it started may outlive it. The leader is
	// not reaped yet, so its group id still names this group only.
	killGroup(proc)
	if state == nil {
		state, _ = proc.Wait()
	}
	res.state = state

	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainGrace):
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()
	res.stdout, res.stderr, res.overflow = stdout.buf.Bytes(), stderr.buf.Bytes(), stdout.overflowed
	return res, nil
}

// capBuffer keeps the first max bytes read and discards the rest, calling
// onOverflow once when more arrive.
type capBuffer struct {
	buf        bytes.Buffer
	max        int64
	overflowed bool
	onOverflow func()
}

func (c *capBuffer) readFrom(r io.Reader) {
	chunk := make([]byte, 8<<10)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			room := c.max - int64(c.buf.Len())
			if int64(n) > room {
				c.buf.Write(chunk[:max(room, 0)])
				if !c.overflowed {
					c.overflowed = true
					if c.onOverflow != nil {
						c.onOverflow()
					}
				}
			} else {
				c.buf.Write(chunk[:n])
			}
		}
		if err != nil {
			return
		}
	}
}
