package relay

import (
	"log/slog"
	"sync"
)

// Session is a relayed session of either relay, as the front bounds them.
type Session interface {
	Server() string    // the saved server's name
	ID() string        // the session id the client sees, for logs
	LastActive() int64 // when it last saw a request (Unix nanoseconds)
	Close()            // ends the session and its upstream session
}

// Sessions is the front's table of relayed sessions, of both relays: it
// bounds the sessions of each saved server to max, closing the least
// recently active beyond it, and refuses new ones once closed. It is safe
// for concurrent use.
type Sessions struct {
	max int // < 0: no bound
	log *slog.Logger

	mu     sync.Mutex
	closed bool
	byKey  map[any]Session
	wg     sync.WaitGroup // the goroutines Add starts
}

// NewSessions returns an empty table bounding each saved server to max
// sessions (none when negative).
func NewSessions(max int, log *slog.Logger) *Sessions {
	return &Sessions{max: max, log: log, byKey: map[any]Session{}}
}

// Add adds s under key and starts goroutines that live with it (Wait
// waits for them), unless the table is closed: it then returns false and
// starts nothing. When s's server has more than max sessions, the least
// recently active other one is taken out and closed.
func (t *Sessions) Add(key any, s Session, goroutines ...func()) bool {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return false
	}
	t.byKey[key] = s
	victim := t.evictLocked(s)
	if victim != nil {
		goroutines = append(goroutines, func() {
			t.log.Info("mcpfront: closing the least recently active session", "server", victim.Server(), "session", victim.ID(), "max_sessions", t.max)
			victim.Close()
		})
	}
	for _, g := range goroutines {
		t.wg.Go(g)
	}
	t.mu.Unlock()
	return true
}

// evictLocked takes out the least recently active session of opened's
// server other than opened, when the server has more than max, and
// returns it (nil when none is). t.mu is held.
func (t *Sessions) evictLocked(opened Session) Session {
	if t.max < 0 {
		return nil
	}
	n := 0
	var oldestKey any
	var oldest Session
	for k, s := range t.byKey {
		if s.Server() != opened.Server() {
			continue
		}
		n++
		if s != opened && (oldest == nil || s.LastActive() < oldest.LastActive()) {
			oldestKey, oldest = k, s
		}
	}
	if n <= t.max || oldest == nil {
		return nil
	}
	delete(t.byKey, oldestKey) // counted out now; closed by a goroutine of Add
	return oldest
}

// Get returns the session under key, or nil.
func (t *Sessions) Get(key any) Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byKey[key]
}

// Remove takes s out from under key, if it is still there.
func (t *Sessions) Remove(key any, s Session) {
	t.mu.Lock()
	if t.byKey[key] == s {
		delete(t.byKey, key)
	}
	t.mu.Unlock()
}

// Len is how many sessions the table holds.
func (t *Sessions) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
}

// Closed reports whether Close was called.
func (t *Sessions) Closed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// Close refuses new sessions from now on and returns the sessions the
// table holds, for the caller to close; ok is false when it was closed
// already.
func (t *Sessions) Close() (sessions []Session, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, false
	}
	t.closed = true
	for _, s := range t.byKey {
		sessions = append(sessions, s)
	}
	return sessions, true
}

// Wait waits for the goroutines Add started.
func (t *Sessions) Wait() { t.wg.Wait() }
