package relay

import (
	"errors"
	"fmt"
	"sync"
)

// Session is a relayed session of either relay, as the front bounds them.
type Session interface {
	Server() string // the saved server's name
	ID() string     // the session id the client sees, for logs
	Close()         // ends the session and its upstream session
}

// Limits bound the sessions the front relays at once. Zero means no limit.
type Limits struct {
	PerServer int // sessions of one saved server
	Total     int // sessions of all saved servers together
}

// LimitError is the refusal of a session beyond a limit: it names the
// limit, and the setting that raises it.
type LimitError struct {
	Server string
	Limit  int
	Total  bool // the limit of all servers together, else of Server's
}

func (e *LimitError) Error() string {
	if e.Total {
		return fmt.Sprintf("caphub relays at most %d MCP sessions at once (caphub serve --front-max-sessions): end a session (DELETE it) or raise the limit", e.Limit)
	}
	return fmt.Sprintf("caphub relays at most %d sessions of the MCP server %q at once (caphub serve --front-max-sessions-per-server): end a session (DELETE it), save the server with sessions: shared, or raise the limit", e.Limit, e.Server)
}

// ErrShuttingDown is the refusal of a session once the table is closed.
var ErrShuttingDown = errors.New(ShuttingDown)

// Sessions is the front's table of relayed sessions, of both relays: it
// refuses a session beyond its Limits (never closing one that a client
// still uses) and once closed. It is safe for concurrent use.
type Sessions struct {
	limits Limits

	mu       sync.Mutex
	closed   bool
	byKey    map[any]Session
	byServer map[string]int
	wg       sync.WaitGroup // the goroutines Add starts
}

// NewSessions returns an empty table with limits.
func NewSessions(limits Limits) *Sessions {
	return &Sessions{limits: limits, byKey: map[any]Session{}, byServer: map[string]int{}}
}

// Admit reports whether a new session of server would be refused now: a
// *LimitError, ErrShuttingDown, or nil. Add decides; Admit lets a relay
// refuse before it starts anything.
func (t *Sessions) Admit(server string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.admitLocked(server)
}

func (t *Sessions) admitLocked(server string) error {
	switch {
	case t.closed:
		return ErrShuttingDown
	case t.limits.Total > 0 && len(t.byKey) >= t.limits.Total:
		return &LimitError{Server: server, Limit: t.limits.Total, Total: true}
	case t.limits.PerServer > 0 && t.byServer[server] >= t.limits.PerServer:
		return &LimitError{Server: server, Limit: t.limits.PerServer}
	}
	return nil
}

// Add adds s under key and starts goroutines that live with it (Wait
// waits for them), unless the table is closed or full: it then returns
// ErrShuttingDown or a *LimitError and starts nothing.
func (t *Sessions) Add(key any, s Session, goroutines ...func()) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.admitLocked(s.Server()); err != nil {
		return err
	}
	t.byKey[key] = s
	t.byServer[s.Server()]++
	for _, g := range goroutines {
		t.wg.Go(g)
	}
	return nil
}

// ByServer counts the sessions of each server.
func (t *Sessions) ByServer() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.byServer))
	for k, v := range t.byServer {
		out[k] = v
	}
	return out
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
		if t.byServer[s.Server()]--; t.byServer[s.Server()] <= 0 {
			delete(t.byServer, s.Server())
		}
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
