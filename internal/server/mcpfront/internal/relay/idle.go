package relay

import (
	"sync"
	"sync/atomic"
	"time"
)

// Idle ends a session that has had no request in flight for a timeout:
// many clients never end their sessions. Each relay's sessions hold one;
// the zero value is ready, Start arms it. It is safe for concurrent use.
type Idle struct {
	last   atomic.Int64 // when a request last began or ended (Unix nanoseconds)
	active atomic.Int32 // requests in flight

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

// Touch records activity now.
func (i *Idle) Touch() { i.last.Store(time.Now().UnixNano()) }

// Begin records a request that starts; End, one that ended.
func (i *Idle) Begin() { i.active.Add(1); i.Touch() }
func (i *Idle) End()   { i.Touch(); i.active.Add(-1) }

// Last is when the session was last active (Unix nanoseconds).
func (i *Idle) Last() int64 { return i.last.Load() }

// Start calls onIdle once the session has had no request in flight for
// timeout (never when timeout <= 0, or once stopped).
func (i *Idle) Start(timeout time.Duration, onIdle func()) {
	i.Touch()
	if timeout <= 0 {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stopped {
		return
	}
	i.timer = time.AfterFunc(timeout, func() { i.check(timeout, onIdle) })
}

// check calls onIdle when the session is idle, and waits again otherwise.
func (i *Idle) check(timeout time.Duration, onIdle func()) {
	since := time.Since(time.Unix(0, i.last.Load()))
	busy := i.active.Load() > 0
	if !busy && since >= timeout {
		onIdle()
		return
	}
	wait := timeout - since
	if busy || wait <= 0 {
		wait = timeout
	}
	i.mu.Lock()
	if !i.stopped {
		i.timer.Reset(wait)
	}
	i.mu.Unlock()
}

// Stop disarms it (the session ended).
func (i *Idle) Stop() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.stopped = true
	if i.timer != nil {
		i.timer.Stop()
	}
}
