package auth

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"
)

// sessionHeader is the streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// sessions ties what outlives one request to the token that authenticated
// it: MCP sessions (streamable HTTP's Mcp-Session-Id, the SSE transport's
// ?sessionid=) are bound to the token that opened them, so that no other
// token can post into them; and every request in flight is known by token,
// so that revoking a token ends its open streams (Tokens.Supervise).
type sessions struct {
	mu    sync.Mutex
	bound map[string]binding                          // session id → its token
	live  map[string]map[*int]context.CancelCauseFunc // token id → requests in flight
}

type binding struct {
	token string
	used  time.Time
}

// errTokenEnded cancels the requests of a token that was revoked or
// expired while they ran.
var errTokenEnded = errors.New("the token that opened this stream was revoked or expired")

// sessionIdleTTL is how long a session binding is kept after its last use;
// caphub's MCP sessions expire well before.
const sessionIdleTTL = 2 * time.Hour

func newSessions() *sessions {
	return &sessions{bound: map[string]binding{}, live: map[string]map[*int]context.CancelCauseFunc{}}
}

// sessionOf returns the MCP session id a request names, if any.
func sessionOf(r *http.Request) string {
	if id := r.Header.Get(sessionHeader); id != "" {
		return id
	}
	if strings.HasSuffix(r.URL.Path, "/sse") {
		return r.URL.Query().Get("sessionid")
	}
	return ""
}

// owner checks that a session named by a request belongs to token id. An
// unknown session passes (the handler answers "session not found").
func (s *sessions) owner(session, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.bound[session]
	if !ok {
		return true
	}
	if b.token != id {
		return false
	}
	b.used = time.Now()
	s.bound[session] = b
	return true
}

func (s *sessions) bind(session, id string) {
	if session == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.bound[session]; !ok {
		s.bound[session] = binding{token: id, used: time.Now()}
	}
}

// track registers a request of token id in flight; the returned function
// ends it.
func (s *sessions) track(ctx context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	key := new(int)
	s.mu.Lock()
	m := s.live[id]
	if m == nil {
		m = map[*int]context.CancelCauseFunc{}
		s.live[id] = m
	}
	m[key] = cancel
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.live[id], key)
		if len(s.live[id]) == 0 {
			delete(s.live, id)
		}
		s.mu.Unlock()
		cancel(nil)
	}
}

// liveTokens lists the tokens with requests in flight, and forgets session
// bindings idle for longer than sessionIdleTTL.
func (s *sessions) liveTokens(now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, b := range s.bound {
		if now.Sub(b.used) > sessionIdleTTL {
			delete(s.bound, k)
		}
	}
	ids := make([]string, 0, len(s.live))
	for id := range s.live {
		ids = append(ids, id)
	}
	return ids
}

// end cancels every request of token id in flight.
func (s *sessions) end(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, cancel := range s.live[id] {
		cancel(errTokenEnded)
		n++
	}
	return n
}

// Supervise re-checks, every interval until ctx ends, the tokens whose
// requests are in flight, and ends the requests (MCP streams above all) of
// a token that was revoked or expired meanwhile, in this process or another
// sharing the database. onEnd, when set, is told of each.
func (t *Tokens) Supervise(ctx context.Context, interval time.Duration, onEnd func(tokenID string, requests int)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			for _, id := range t.sessions.liveTokens(now) {
				if _, err := t.Check(ctx, id); errors.Is(err, ErrUnauthenticated) {
					if n := t.sessions.end(id); n > 0 && onEnd != nil {
						onEnd(id, n)
					}
				}
			}
		}
	}
}

// sessionWriter binds the MCP session a response opens to the request's
// token: the Mcp-Session-Id header of a streamable HTTP response, or the
// sessionid of the endpoint event an SSE stream starts with.
type sessionWriter struct {
	http.ResponseWriter
	s       *sessions
	token   string
	sse     bool // look for the endpoint event in the body
	done    bool
	pending []byte
}

func (w *sessionWriter) WriteHeader(code int) {
	if !w.done && !w.sse {
		w.s.bind(w.Header().Get(sessionHeader), w.token)
		w.done = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) Write(p []byte) (int, error) {
	if !w.done {
		if !w.sse {
			w.WriteHeader(http.StatusOK)
		} else if len(w.pending) < 4096 {
			w.pending = append(w.pending, p...)
			if i := bytes.Index(w.pending, []byte("sessionid=")); i >= 0 {
				rest := w.pending[i+len("sessionid="):]
				if j := bytes.IndexAny(rest, "&\r\n \""); j >= 0 {
					w.s.bind(string(rest[:j]), w.token)
					w.done, w.pending = true, nil
				}
			}
		}
	}
	return w.ResponseWriter.Write(p)
}

// Flush and Unwrap keep streaming working through the wrapper.
func (w *sessionWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
