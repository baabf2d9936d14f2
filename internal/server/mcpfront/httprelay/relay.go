// Package httprelay is the front's HTTP relay (see package mcpfront): a
// reverse proxy for the streamable HTTP transport, used when the saved
// server speaks it and the client uses the streamable endpoint. It reads
// the tools/call requests of each body before forwarding it, to apply
// caphub's policy, and the responses that pass, without holding them
// back, to record each call's outcome.
package httprelay

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/caphub/caphub/internal/server/mcpfront/internal/wire"
	"github.com/caphub/caphub/mcpconn"
)

// HTTP headers of the streamable transport.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerLastEventID     = "Last-Event-Id" // canonical form of Last-Event-ID
)

// Relay is the HTTP relay of a front. It is safe for concurrent use.
type Relay struct {
	env *relay.Env
	// upstream carries the requests to every upstream.
	upstream *http.Transport
	// userAgent is the User-Agent header of every upstream request, made
	// once: header values are shared, never changed.
	userAgent []string
	// HeaderDelay is how long SSE bytes that need not go at once are held
	// (headerDelay when 0); set it before the relay serves.
	HeaderDelay time.Duration
}

func (rl *Relay) headerDelay() time.Duration {
	if rl.HeaderDelay > 0 {
		return rl.HeaderDelay
	}
	return headerDelay
}

// New returns the HTTP relay of a front.
func New(env *relay.Env) *Relay {
	return &Relay{env: env, upstream: newUpstreamTransport(), userAgent: []string{"caphub/" + env.Version}}
}

// CloseIdleConnections closes the relay's idle upstream connections.
func (rl *Relay) CloseIdleConnections() { rl.upstream.CloseIdleConnections() }

// Session returns the relay's session the client knows as id, or nil.
func (rl *Relay) Session(id string) *Session {
	s, _ := rl.env.Sessions.Get(id).(*Session)
	return s
}

// Open serves a POST on the streamable endpoint of a saved server that
// names no session: when it is an initialize and the server a streamable
// HTTP server, the relay opens a session with it. It reports handled
// false, having written nothing, when the SDK relay is to serve the
// request: the saved server is not a streamable HTTP server, or one whose
// upstream session is shared between clients (the SDK relay shares it), or
// the request opens no session (the SDK relay then answers as a session-based
// server does, e.g. to the sessionless server/discover); checked then says
// whether the server was just found saved.
func (rl *Relay) Open(w http.ResponseWriter, r *http.Request, name string) (handled, checked bool) {
	body, ok := wire.ReadBody(w, r)
	if !ok {
		return true, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body)) // for the SDK relay, if it serves the request
	msgs, batch, err := wire.ParseBody(body)
	if err != nil || batch || msgs[0].Method != relay.MethodInitialize || !msgs[0].IsCall() {
		return false, false
	}
	saved, status, err := rl.env.SavedServer(r, name)
	if err != nil {
		relay.WriteError(w, status, err.Error())
		return true, false
	}
	srv := saved.Server
	if err := srv.Validate(); err != nil {
		relay.WriteError(w, http.StatusInternalServerError, fmt.Sprintf("caphub could not connect to the MCP server %q: its saved connection is invalid: %v", name, err))
		return true, true
	}
	if srv.Transport != mcpconn.TransportHTTP || srv.Shared() {
		return false, true
	}
	return rl.open(w, r, name, &srv, body, &msgs[0]), true
}

// open relays an initialize request to a streamable HTTP server and, when
// the server accepts it, opens a session relayed at the HTTP level. It
// returns false, having written nothing, when the server answers the POST
// with 400, 404 or 405, as servers that speak only the SSE transport do:
// the SDK relay then connects, trying SSE too.
func (rl *Relay) open(w http.ResponseWriter, r *http.Request, name string, srv *mcpconn.Server, body []byte, init *wire.Msg) bool {
	s, status, err := rl.newSession(name, srv)
	if err != nil {
		relay.WriteError(w, status, err.Error())
		return true
	}
	s.idle.Begin()
	defer s.idle.End()
	pc := &pendingCall{key: wire.IDKey(init.ID), ctx: r.Context()}
	s.track([]*pendingCall{pc})

	rctx, stop := s.requestContext(r)
	defer stop()
	resp, err := rl.upstream.RoundTrip(s.request(rctx, http.MethodPost, r, body))
	if err != nil {
		s.unreachable(w, r, err, nil)
		s.cancel()
		return true
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		s.cancel()
		rl.env.Log.Debug("mcpfront: the server refused a streamable HTTP initialize; trying the SDK relay", "server", s.name, "status", resp.StatusCode)
		return false
	default:
		s.relayFailure(w, r, resp, nil)
		s.cancel()
		return true
	}
	s.setUpID(resp.Header.Get(headerSessionID))
	if err := s.register(); err != nil {
		s.cancel()
		s.deleteUpstream()
		relay.WriteError(w, http.StatusServiceUnavailable, err.Error())
		return true
	}
	s.relayOK(w, r, resp, []*pendingCall{pc}, nil)
	s.opened(pc)
	return true
}

// newSession makes the session of a saved streamable HTTP server, with
// the status and error to answer when its saved connection cannot be used.
func (rl *Relay) newSession(name string, srv *mcpconn.Server) (*Session, int, error) {
	if err := srv.CheckURL(); err != nil {
		return nil, http.StatusForbidden, fmt.Errorf("caphub does not connect to the MCP server %q: %v", name, err)
	}
	headers, err := srv.HTTPHeaders()
	if err != nil {
		return nil, http.StatusInternalServerError, fmt.Errorf("caphub could not connect to the MCP server %q: %v", name, err)
	}
	u, err := url.Parse(srv.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, http.StatusInternalServerError, fmt.Errorf("caphub could not connect to the MCP server %q: its URL %q is not an absolute http(s) URL: save it again with a valid one", name, srv.URL)
	}
	ctx, cancel := context.WithCancel(rl.env.Ctx)
	s := &Session{
		rl: rl, name: name, url: u, headers: headers,
		ctx: ctx, cancel: cancel, pending: map[string]*pendingCall{},
	}
	s.setID(rand.Text())
	s.idle.Touch()
	return s, 0, nil
}

// register adds the session to the front's table, with its idle timer,
// unless the front is closed or full (the error says which).
func (s *Session) register() error {
	if err := s.rl.env.Sessions.Add(s.id, s); err != nil {
		return err
	}
	s.idle.Start(s.rl.env.IdleTimeout, s.expire)
	return nil
}

// opened ends the opening of a session once the upstream's answer to its
// initialize (pc) was relayed: a failed initialize closes the session.
func (s *Session) opened(pc *pendingCall) {
	if !pc.done.Load() || pc.err != nil {
		reason := "no answer"
		if pc.err != nil {
			reason = pc.err.Message
		}
		s.rl.env.Log.Info("mcpfront: initialize failed upstream; session closed", "server", s.name, "session", s.id, "reason", reason)
		s.close(true)
		return
	}
	s.rl.env.Log.Info("mcpfront: session relayed", "server", s.name, "session", s.id, "upstream_session", s.upID, "relay", "http")
}
