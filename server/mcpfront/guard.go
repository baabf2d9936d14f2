package mcpfront

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// guard protects the front against DNS rebinding and cross-origin use from
// a browser: the Host header must name a loopback host or an allowed one,
// and an Origin header, when a browser sends one, must be a loopback origin
// or an allowed one.
type guard struct {
	origins []string // lower-cased AllowedOrigins
	hosts   []string // lower-cased AllowedHosts
}

func newGuard(origins, hosts []string) guard {
	return guard{origins: lowerAll(origins), hosts: lowerAll(hosts)}
}

func lowerAll(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// check returns why a request is refused, or nil.
func (g guard) check(r *http.Request) error {
	if !g.hostAllowed(r.Host) {
		return fmt.Errorf("Host %q is not allowed (DNS-rebinding protection): caphub answers loopback names only, unless the host is allowed in the server's configuration", r.Host)
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin) {
		return fmt.Errorf("Origin %q is not allowed: caphub answers loopback origins only, unless the origin is allowed in the server's configuration", origin)
	}
	return nil
}

// hostAllowed reports whether a Host header value (host or host:port) is a
// loopback host or matches AllowedHosts.
func (g guard) hostAllowed(hostport string) bool {
	hostport = strings.ToLower(hostport)
	host := hostname(hostport)
	if isLoopback(host) {
		return true
	}
	for _, h := range g.hosts {
		if h == "*" || h == hostport || h == host {
			return true
		}
	}
	return false
}

// originAllowed reports whether an Origin header value is a loopback http(s)
// origin or matches AllowedOrigins.
func (g guard) originAllowed(origin string) bool {
	origin = strings.ToLower(strings.TrimSuffix(origin, "/"))
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return g.any(g.origins)
	}
	if (u.Scheme == "http" || u.Scheme == "https") && isLoopback(u.Hostname()) {
		return true
	}
	for _, o := range g.origins {
		switch {
		case o == "*", o == origin:
			return true
		case strings.HasSuffix(o, ":*") && strings.TrimSuffix(o, ":*") == u.Scheme+"://"+u.Hostname():
			return true
		}
	}
	return false
}

func (g guard) any(list []string) bool {
	for _, s := range list {
		if s == "*" {
			return true
		}
	}
	return false
}

// hostname strips the port from host:port (and the brackets of an IPv6
// literal).
func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// isLoopback reports whether a host name is localhost or a loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
