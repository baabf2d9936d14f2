package httpbind

import (
	"fmt"
	"github.com/caphub/caphub/invoke/binding/allowlist"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// checkURL returns nil when u may be requested: an http or https URL whose
// host is allowed by the binding's AllowedHosts.
func (b *Binding) checkURL(u *url.URL) error {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return fmt.Errorf("%w: %s uses scheme %q; the http binding sends http and https requests only", ErrHostNotAllowed, redact(u), u.Scheme)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return fmt.Errorf("%w: %s has no host", ErrHostNotAllowed, redact(u))
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	if hostAllowed(b.hosts, host, port) {
		return nil
	}
	if len(b.hosts) == 0 {
		return fmt.Errorf("%w: %s is not loopback, and with no allowed hosts configured the http binding reaches loopback only; add %q to the allowed HTTP hosts (httpbind Options.AllowedHosts) to permit it", ErrHostNotAllowed, net.JoinHostPort(host, port), host)
	}
	return fmt.Errorf("%w: %s matches none of the allowed HTTP hosts (%s); add it there (httpbind Options.AllowedHosts) to permit it", ErrHostNotAllowed, net.JoinHostPort(host, port), strings.Join(b.hosts, ", "))
}

// checkRedirect returns the client's redirect policy for one call: at most 10
// redirects, each to an allowed host; a secret header is dropped when the
// redirect leaves the original host.
func (b *Binding) checkRedirect(secretHeader string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return fmt.Errorf("stopped after 10 redirects (last to %s)", redact(req.URL))
		}
		if err := b.checkURL(req.URL); err != nil {
			return fmt.Errorf("redirect from %s refused: %w", redact(via[len(via)-1].URL), err)
		}
		if secretHeader != "" && !strings.EqualFold(req.URL.Host, via[0].URL.Host) {
			req.Header.Del(secretHeader)
		}
		return nil
	}
}

// hostAllowed reports whether host:port matches one of patterns (see
// allowlist.Allowed); no patterns means loopback only.
func hostAllowed(patterns []string, host, port string) bool {
	return allowlist.Allowed(patterns, host, port)
}

// redact returns u without its query, fragment and user info, for messages:
// the query may carry an api key.
func redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.RawQuery, c.Fragment, c.RawFragment, c.User, c.ForceQuery = "", "", "", nil, false
	return c.String()
}
