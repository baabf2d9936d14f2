package mcpgw

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Handler serves MCP over HTTP. Mount it on a path P and on P/sse, without
// stripping the prefix (e.g. mux.Handle("/mcp", h) and mux.Handle("/mcp/sse", h)):
//
//   - a path ending in "/sse" is the HTTP+SSE transport of protocol
//     2024-11-05: GET opens a session and streams its events, the first of
//     which names the message endpoint (the same path with ?sessionid=…),
//     where the client POSTs its messages;
//   - any other path is the streamable HTTP transport (protocol 2025-03-26
//     and later): POST for messages (answered with application/json), GET
//     for the session's stream of notifications, DELETE to end a session.
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
	if g.closed.Load() {
		http.Error(w, "the MCP gateway is shut down: caphub is stopping", http.StatusServiceUnavailable)
		return
	}
	if err := g.checkHost(r.Host); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if err := g.checkOrigin(origin); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
	}
	g.activate()
	rc := http.NewResponseController(w)
	switch r.Method {
	case http.MethodGet:
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
	case http.MethodPost:
		_ = rc.SetWriteDeadline(time.Now().Add(callWriteWindow))
	}
	if strings.HasSuffix(r.URL.Path, "/sse") {
		g.serveSSE(w, r)
		return
	}
	g.streamable.ServeHTTP(w, r)
}

// serveSSE serves the HTTP+SSE transport. The GET that opens a session
// carries the caller (AgentHeader) into the session's context, and gets
// back the path an http.StripPrefix removed, since the SDK builds the
// message endpoint it announces from the request's path.
func (g *Gateway) serveSSE(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		r = r.WithContext(context.WithValue(r.Context(), callerKey{}, r.Header.Get(AgentHeader)))
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

// checkHost accepts loopback names and addresses, and AllowedHosts.
func (g *Gateway) checkHost(hostport string) error {
	if hostport == "" {
		return fmt.Errorf("forbidden: the request has no Host header; caphub's MCP endpoint needs one naming a loopback host (localhost, 127.0.0.1 or [::1])")
	}
	host := strings.ToLower(hostport)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if isLoopbackHost(host) {
		return nil
	}
	for _, a := range g.hosts {
		if a == "*" || a == host || a == strings.ToLower(hostport) {
			return nil
		}
	}
	return fmt.Errorf("forbidden: Host %q is not allowed: caphub's MCP endpoint accepts loopback hosts (localhost, 127.0.0.1, [::1]) to prevent DNS rebinding; allow other names with the gateway's allowed hosts", hostport)
}

// checkOrigin accepts loopback origins (http or https, any port) and
// AllowedOrigins.
func (g *Gateway) checkOrigin(origin string) error {
	o := strings.TrimSuffix(strings.ToLower(origin), "/")
	u, err := url.Parse(o)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && isLoopbackHost(u.Hostname()) {
		return nil
	}
	for _, a := range g.origins {
		a = strings.TrimSuffix(a, "/")
		if a == "*" || a == o {
			return nil
		}
		if prefix, ok := strings.CutSuffix(a, ":*"); ok && err == nil && u.Scheme+"://"+u.Hostname() == prefix {
			return nil
		}
	}
	return fmt.Errorf("forbidden: Origin %q is not allowed: caphub's MCP endpoint accepts requests from loopback origins (http://localhost, http://127.0.0.1, http://[::1], any port); allow other origins with the gateway's allowed origins", origin)
}

// isLoopbackHost reports whether host (no port, no brackets) is localhost
// or a loopback IP address.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func lowerAll(s []string) []string {
	out := slices.Clone(s)
	for i := range out {
		out[i] = strings.ToLower(strings.TrimSpace(out[i]))
	}
	return out
}
