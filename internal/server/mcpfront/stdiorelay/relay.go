// Package stdiorelay is the front's stdio relay (see package mcpfront): it
// serves a saved stdio server on the streamable HTTP endpoint at the
// JSON-RPC level, with no SDK type on the way. Downstream it implements the
// server side of the streamable HTTP transport (POST, the standalone GET
// stream, DELETE); upstream it speaks newline-delimited JSON-RPC over the
// stdin and stdout of the process it starts.
//
// # Ids and routing
//
// Every request sent upstream gets an id of the relay's (an integer,
// counted per process), mapped back to the client's own (any JSON) on the
// response; a progress token in params._meta is replaced with that same
// integer and restored on notifications/progress, which go to the stream
// of the request that carries the token. A client's notifications/cancelled
// names the upstream id in turn. Requests of the server (sampling,
// elicitation, roots) get ids unique in the client's session, and the
// client's answer goes upstream under the server's own id. Log messages
// and the server's requests go to the stream of the oldest request in
// flight that can cause them (tools/call, prompts/get, resources/read,
// completion/complete), else to the standalone stream; list_changed and
// resources/updated go to the standalone streams. Everything else of a
// message is relayed byte for byte.
//
// # Session modes
//
// A saved server's Sessions (mcpconn.Server) says how client sessions map
// to processes. Per client (the default): a process per client session,
// whose initialize is forwarded as the client sent it, and the server's
// answer relayed as it came. Shared: one process serves every client
// session of the saved server; the first client's initialize starts and
// initialises it, and later clients are answered by the relay with the
// stored result (with the protocol version the client asked for when the
// relay supports it: the relay does not translate between versions, and
// servers answer the versions they know alike). The server sees the first
// client's capabilities and one notifications/initialized. Requests of
// different clients interleave on the one process (the ids and tokens are
// the relay's), and what one client sets in the server's session
// (logging/setLevel, subscriptions) holds for all. The process ends
// Relay.Grace after its last client session, and is started anew (and
// initialised with the first client's initialize) on the next request
// when it died. Routing is the same in both modes: a per-client process is
// a shared one with one client.
//
// # Bounds
//
// Request bodies over wire.MaxBodyBytes are refused (413), and a line from
// the server over maxLine ends its process (and, per client, the session).
// A stream whose client reads too slowly keeps at most maxQueued bytes.
// The server's stderr goes to the front's log, cut to lines of stderrLine
// bytes and stderrLines lines a minute.
package stdiorelay

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/caphub/caphub/internal/server/mcpfront/internal/wire"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTP headers of the streamable transport.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
)

// DefaultGrace is how long a shared process outlives its last client
// session: a client that reconnects at once finds it running.
const DefaultGrace = 30 * time.Second

// Relay is the stdio relay of a front. It is safe for concurrent use.
type Relay struct {
	env *relay.Env
	// Grace is how long a shared process outlives its last session
	// (DefaultGrace); set it before the relay serves.
	Grace time.Duration

	mu     sync.Mutex
	shared map[string]*upstream // the shared processes, by saved name
	procs  sync.WaitGroup       // the goroutines of every process started
}

// New returns the stdio relay of a front.
func New(env *relay.Env) *Relay {
	grace := DefaultGrace
	if env.IdleTimeout > 0 {
		grace = min(grace, env.IdleTimeout) // a shared process idles no longer than a session
	}
	return &Relay{env: env, Grace: grace, shared: map[string]*upstream{}}
}

// Session returns the relay's session the client knows as id, or nil.
func (rl *Relay) Session(id string) *Session {
	s, _ := rl.env.Sessions.Get(id).(*Session)
	return s
}

// Wait waits, at most timeout, for every process the relay started to be
// reaped (after the front's context ended, which kills them).
func (rl *Relay) Wait(timeout time.Duration) {
	done := make(chan struct{})
	go func() {
		rl.procs.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
		rl.env.Log.Warn("mcpfront: stdio servers still running after the front closed", "waited", timeout)
	}
}

// versions are the protocol versions the relay accepts from clients: the
// SDK's that negotiate sessions with initialize (before 2026-07-28).
var versions = func() []string {
	var vs []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v < "2026-07-28" {
			vs = append(vs, v)
		}
	}
	return append(vs, "2024-11-05")
}()

// Open serves a POST without a session id for the saved server name: when
// it is an initialize and the server a stdio server, the relay opens a
// session. It reports false, having written nothing and left the body to
// read again, when another relay is to serve the request.
func (rl *Relay) Open(w http.ResponseWriter, r *http.Request, name string) bool {
	body, ok := wire.ReadBody(w, r)
	if !ok {
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	msgs, batch, err := wire.ParseBody(body)
	if err != nil || batch || msgs[0].Method != relay.MethodInitialize || !msgs[0].IsCall() {
		return false
	}
	saved, status, err := rl.env.SavedServer(r, name)
	if err != nil {
		relay.WriteError(w, status, err.Error())
		return true
	}
	srv := saved.Server
	if err := srv.Validate(); err != nil {
		relay.WriteError(w, http.StatusInternalServerError, fmt.Sprintf("caphub could not start the MCP server %q: its saved connection is invalid: %v", name, err))
		return true
	}
	if srv.Transport != mcpconn.TransportStdio {
		return false
	}
	acc, ok := checkPost(w, r)
	if !ok {
		return true
	}
	init := &msgs[0]
	s := rl.newSession(name, &srv, init.Params)
	if srv.Sessions == mcpconn.SessionsShared {
		rl.openShared(w, r, s, init, acc)
	} else {
		rl.openPerClient(w, r, s, init, acc)
	}
	return true
}

// newSession makes a session, not yet registered, for a client that
// initialises with params.
func (rl *Relay) newSession(name string, srv *mcpconn.Server, params []byte) *Session {
	s := &Session{
		rl: rl, name: name, srv: *srv, id: rand.Text(),
		done: make(chan struct{}), srvReqs: map[int64]*srvReq{},
		caps: readCapabilities(params),
	}
	s.idle.Touch()
	return s
}

// openPerClient opens a session with a process of its own: the client's
// initialize is forwarded as it came and the server's answer relayed.
func (rl *Relay) openPerClient(w http.ResponseWriter, r *http.Request, s *Session, init *wire.Msg, acc accept) {
	u, status, err := rl.start(r.Context(), s.name, &s.srv, false)
	if err != nil {
		relay.WriteError(w, status, err.Error())
		return
	}
	u.attach(s)
	s.up.Store(u)
	answer, status, err := u.initialize(r.Context(), init.Raw, init.ID, init.Params)
	if err != nil {
		u.kill(false)
		refused(w, status, err, acc)
		return
	}
	if !s.register(w, answer, acc) {
		u.kill(false)
	}
}

// openShared opens a session on the saved server's shared process: the
// first client's initialize starts and initialises it, and the others are
// answered with the result stored.
func (rl *Relay) openShared(w http.ResponseWriter, r *http.Request, s *Session, init *wire.Msg, acc accept) {
	u, fresh, status, err := rl.sharedFor(r.Context(), s.name, &s.srv)
	if err != nil {
		relay.WriteError(w, status, err.Error())
		return
	}
	var answer []byte
	if fresh {
		answer, status, err = u.initialize(r.Context(), init.Raw, init.ID, init.Params)
		u.ready(err)
		if err != nil {
			refused(w, status, err, acc)
			return
		}
	} else {
		answer = resultMessage(init.ID, withVersion(u.initResult, requestedVersion(init.Params)))
	}
	u.attach(s)
	s.up.Store(u)
	if !s.register(w, answer, acc) {
		u.detach(s)
	}
}

// refused answers an initialize that opened no session: with the server's
// own answer when it refused, else with the error.
func refused(w http.ResponseWriter, status int, err error, acc accept) {
	var e errRefused
	if errors.As(err, &e) {
		writeOne(w, e.answer, acc, "")
		return
	}
	relay.WriteError(w, status, err.Error())
}

// sharedFor returns the shared process of a saved server, started (fresh:
// the caller initialises it, then calls ready) or ready for use.
func (rl *Relay) sharedFor(ctx context.Context, name string, srv *mcpconn.Server) (u *upstream, fresh bool, status int, err error) {
	for {
		rl.mu.Lock()
		u = rl.shared[name]
		if u == nil {
			u = newUpstream(rl, name, true)
			rl.shared[name] = u
			rl.mu.Unlock()
			status, err = u.launch(ctx, srv)
			if err != nil {
				u.ready(err)
				return nil, false, status, err
			}
			return u, true, 0, nil
		}
		rl.mu.Unlock()
		select {
		case <-u.readyCh:
		case <-ctx.Done():
			return nil, false, http.StatusServiceUnavailable, fmt.Errorf("waiting for the shared MCP server %q to start: %w", name, context.Cause(ctx))
		}
		if u.readyErr != nil {
			return nil, false, http.StatusBadGateway, u.readyErr
		}
		if !u.isDead() {
			return u, false, 0, nil
		}
		rl.forget(u) // it died since: start another
	}
}

// restart returns a live shared process for a session whose process died,
// starting one and initialising it as the dead one was.
func (rl *Relay) restart(ctx context.Context, s *Session, dead *upstream) (*upstream, error) {
	rl.forget(dead)
	u, fresh, _, err := rl.sharedFor(ctx, s.name, &s.srv)
	if err != nil {
		return nil, err
	}
	if fresh {
		u.initParams = dead.initParams
		_, _, err = u.initialize(ctx, nil, nil, dead.initParams)
		if err == nil {
			u.initialized.Store(true)
			err = u.send(line(nil, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
		}
		u.ready(err)
		if err != nil {
			return nil, err
		}
		rl.env.Log.Info("mcpfront: shared stdio server restarted", "server", s.name, "pid", u.pid())
	}
	return u, nil
}

// forget drops a shared process from the table (when it is still there).
func (rl *Relay) forget(u *upstream) {
	rl.mu.Lock()
	if rl.shared[u.name] == u {
		delete(rl.shared, u.name)
	}
	rl.mu.Unlock()
}

// start starts a process for a saved server, holding a start-up slot of the
// front's Spawner until its initialize is answered.
func (rl *Relay) start(ctx context.Context, name string, srv *mcpconn.Server, shared bool) (*upstream, int, error) {
	u := newUpstream(rl, name, shared)
	status, err := u.launch(ctx, srv)
	if err != nil {
		return nil, status, err
	}
	return u, 0, nil
}

// requestedVersion reads the protocol version initialize params ask for.
func requestedVersion(params []byte) string {
	return string(wire.Unquote(member(params, "protocolVersion")))
}

// withVersion is a stored initialize result answering version instead,
// when the relay supports it and the result was for another.
func withVersion(result []byte, version string) []byte {
	v := member(result, "protocolVersion")
	if v == nil || !slices.Contains(versions, version) || string(wire.Unquote(v)) == version {
		return result
	}
	return rewrite(nil, result, span(result, v, []byte(`"`+version+`"`)))
}
