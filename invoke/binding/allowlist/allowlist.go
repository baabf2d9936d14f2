// Package allowlist decides which hosts the outbound bindings (http, grpc)
// may reach, so that a definition cannot make caphub connect to arbitrary
// hosts. Both bindings read their allow-lists with these rules.
package allowlist

import (
	"net"
	"strings"
)

// Allowed reports whether host:port matches one of patterns; no patterns
// means loopback only. host is lower case without a trailing dot. A
// pattern is one of:
//
//	"*"                   any host
//	"loopback"            localhost, 127.0.0.0/8 and ::1
//	"host" / "host:port"  that host (any port, or that port; "host:*" any)
//	"*.example.com[:port]"  any host under example.com
//	"10.0.0.0/8[:port]"   any address in the range
func Allowed(patterns []string, host, port string) bool {
	if len(patterns) == 0 {
		return IsLoopback(host)
	}
	for _, p := range patterns {
		if match(p, host, port) {
			return true
		}
	}
	return false
}

func match(pattern, host, port string) bool {
	p := strings.ToLower(strings.TrimSpace(pattern))
	switch p {
	case "":
		return false
	case "*":
		return true
	case "loopback":
		return IsLoopback(host)
	}
	ph, pp := p, ""
	if h, pt, err := net.SplitHostPort(p); err == nil {
		ph, pp = h, pt
	}
	if pp != "" && pp != "*" && pp != port {
		return false
	}
	ph = strings.TrimSuffix(ph, ".")
	switch {
	case ph == "loopback":
		return IsLoopback(host)
	case ph == "*":
		return true
	case strings.HasPrefix(ph, "*."):
		suffix := ph[1:] // ".example.com"
		return len(host) > len(suffix) && strings.HasSuffix(host, suffix)
	}
	if _, cidr, err := net.ParseCIDR(ph); err == nil {
		ip := net.ParseIP(host)
		return ip != nil && cidr.Contains(ip)
	}
	if pip := net.ParseIP(ph); pip != nil {
		ip := net.ParseIP(host)
		return ip != nil && ip.Equal(pip)
	}
	return ph == host
}

// IsLoopback reports whether host is "localhost" or a loopback IP literal.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
