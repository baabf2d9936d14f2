// Package allowlist decides which hosts the outbound bindings (http, grpc,
// delegation) may reach, so that a definition cannot make caphub connect
// to arbitrary hosts. They read their allow-lists with these rules.
package allowlist

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
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
	if p == "" {
		return false
	}
	ph, pp := p, ""
	if h, pt, err := net.SplitHostPort(p); err == nil {
		ph, pp = h, pt
	}
	if pp != "" && pp != "*" && pp != port {
		return false
	}
	return matchHost(strings.TrimSuffix(ph, "."), host)
}

// matchHost reports whether host matches the host part of a pattern:
// "loopback", "*", "*.suffix", a CIDR, an IP literal or a host name.
func matchHost(ph, host string) bool {
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

// IsLoopback reports whether host (no port, no brackets) is "localhost", in
// any case, or a loopback IP literal. It is caphub's one loopback test: for
// destinations here, and for listen addresses and Host headers in
// server/guard.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ErrNotAllowed marks a destination outside the allow-list.
var ErrNotAllowed = errors.New("host not allowed")

// CheckURL returns nil when u may be requested: an http or https URL whose
// host matches patterns (see Allowed). setting names where the allow-list
// is configured, for the message that says how to permit the host.
func CheckURL(patterns []string, u *url.URL, setting string) error {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return fmt.Errorf("%w: %s uses scheme %q; only http and https requests are sent", ErrNotAllowed, Redact(u), u.Scheme)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return fmt.Errorf("%w: %s has no host", ErrNotAllowed, Redact(u))
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	if Allowed(patterns, host, port) {
		return nil
	}
	if len(patterns) == 0 {
		return fmt.Errorf("%w: %s is not loopback, and with no allowed hosts configured only loopback is reached; add %q to the allowed hosts (%s) to permit it", ErrNotAllowed, net.JoinHostPort(host, port), host, setting)
	}
	return fmt.Errorf("%w: %s matches none of the allowed hosts (%s); add it there (%s) to permit it", ErrNotAllowed, net.JoinHostPort(host, port), strings.Join(patterns, ", "), setting)
}

// CheckRedirect returns a client's redirect policy: at most 10 redirects,
// each to a URL CheckURL allows; secretHeader, when given, is dropped
// once a redirect leaves the original host.
func CheckRedirect(patterns []string, setting, secretHeader string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return fmt.Errorf("stopped after 10 redirects (last to %s)", Redact(req.URL))
		}
		if err := CheckURL(patterns, req.URL, setting); err != nil {
			return fmt.Errorf("redirect from %s refused: %w", Redact(via[len(via)-1].URL), err)
		}
		if secretHeader != "" && !strings.EqualFold(req.URL.Host, via[0].URL.Host) {
			req.Header.Del(secretHeader)
		}
		return nil
	}
}

// Client returns an HTTP client with its own transport; when loopbackOnly,
// its dialer refuses every non-loopback address, so that even a host name
// resolving elsewhere cannot be reached. setting is as for CheckURL.
func Client(loopbackOnly bool, setting string) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if loopbackOnly {
		d.Control = func(network, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if ip := net.ParseIP(host); ip == nil || !IsLoopback(host) {
				return fmt.Errorf("%w: address %s is not loopback, and no allowed hosts are configured (%s)", ErrNotAllowed, address, setting)
			}
			return nil
		}
	}
	t.DialContext = d.DialContext
	return &http.Client{Transport: t}
}

// Redact returns u without its query, fragment and user info, for
// messages: the query may carry an api key.
func Redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.RawQuery, c.Fragment, c.RawFragment, c.User, c.ForceQuery = "", "", "", nil, false
	return c.String()
}
