package mcpgw

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/server/guard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler serves MCP over HTTP. Mount it on a path P and on P/sse, without
// stripping the prefix (e.g. mux.Handle("/mcp", h) and mux.Handle("/mcp/sse", h)):
//
//   - a path ending in "/sse" is the HTTP+SSE transport of protocol
//     2024-11-05: GET opens a session and streams its events, the first of
//     which names the message endpoint (the same path with ?sessionid=…),
//     where the client POSTs its messages;
//   - any other path is the streamable HTTP transport (protocol 2025-03-26
//     and later): POST for messages (answered with an SSE stream, which
//     carries a call's progress ahead of its answer; a tools/call, a
//     tools/list or a ping the gateway reads itself, see fast.go, as
//     application/json unless a notification goes ahead of it), GET for
//     the session's stream of notifications, DELETE to end a session.
//
// Both refuse with 403 a request whose Host header is not a loopback name
// or address (localhost, 127.0.0.1, [::1]) or one of Options.AllowedHosts,
// and one with an Origin header that is not a loopback origin or one of
// Options.AllowedOrigins: a web page must not reach the gateway through DNS
// rebinding or a cross-origin request.
//
// Streams (GET) lift the server's read and write deadlines, and calls
// (POST) get callWriteWindow to answer, so that an http.Server's short
// timeouts, right for the REST API, do not cut MCP sessions.
func (g *Gateway) Handler() http.Handler { return http.HandlerFunc(g.serveHTTP) }

func (g *Gateway) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !admit(w, r, g.closed.Load(), "the MCP gateway is shut down: caphub is stopping", g.guard) {
		return
	}
	if full(w, r, g.server, g.opts.MaxSessions, "the MCP gateway") {
		return
	}
	g.activate()
	setDeadlines(w, r)
	r = identity.FromRequest(r, "")
	if strings.HasSuffix(r.URL.Path, "/sse") {
		g.serveSSE(w, r)
		return
	}
	g.serveStreamable(w, r)
}

// serveSSE serves the HTTP+SSE transport. The GET that opens a session
// gets back the path an http.StripPrefix removed, since the SDK builds the
// message endpoint it announces from the request's path.
func (g *Gateway) serveSSE(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		if r.RequestURI != "" {
			if orig, err := url.ParseRequestURI(r.RequestURI); err == nil && orig.Path != r.URL.Path {
				u := *r.URL
				u.Path, u.RawPath = orig.Path, orig.RawPath
				r.URL = &u
			}
		}
	}
	g.sse.ServeHTTP(w, r)
}

// admit answers a request an MCP endpoint refuses, 503 with shutMsg once
// it is shut down or 403 when the guard refuses it, and reports whether
// the request may go on.
func admit(w http.ResponseWriter, r *http.Request, shut bool, shutMsg string, gd *guard.Guard) bool {
	if shut {
		http.Error(w, shutMsg, http.StatusServiceUnavailable)
		return false
	}
	if ref := gd.Check(r); ref != nil {
		guard.Write(w, r, ref)
		return false
	}
	return true
}

// full answers 503 to a request that would open a session (a POST without
// a session id, a GET on an SSE endpoint) on server when it has maxSessions
// already (≤ 0: no bound), and reports whether it did. Counting walks the
// sessions, which is cheap next to the start of a session.
func full(w http.ResponseWriter, r *http.Request, server *mcp.Server, maxSessions int, what string) bool {
	opens := r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && !strings.HasSuffix(r.URL.Path, "/sse")
	opens = opens || (r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/sse"))
	if maxSessions <= 0 || !opens {
		return false
	}
	n := 0
	for ss := range server.Sessions() {
		// A POST without a session id that is not an initialize (the Go SDK
		// client's server/discover probe) makes a session that never
		// initialises and is gone with its answer: not counted.
		if ss.InitializeParams() == nil {
			continue
		}
		if n++; n >= maxSessions {
			http.Error(w, fmt.Sprintf("%s serves at most %d MCP sessions at once (caphub serve --mcp-max-sessions): end a session (DELETE it), or raise the limit; idle sessions end after --mcp-session-idle", what, maxSessions), http.StatusServiceUnavailable)
			return true
		}
	}
	return false
}

// setDeadlines frees a stream (GET) from the server's read and write
// deadlines and gives a call (POST) callWriteWindow to answer.
func setDeadlines(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	switch r.Method {
	case http.MethodGet:
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
	case http.MethodPost:
		_ = rc.SetWriteDeadline(time.Now().Add(callWriteWindow))
	}
}

// newGuard is the request guard of caphub serve (package guard) for the
// gateway's own handlers, so that they are safe when mounted alone too.
func (o Options) newGuard() *guard.Guard {
	return guard.New(guard.Options{AllowedHosts: o.AllowedHosts, AllowedOrigins: o.AllowedOrigins})
}
