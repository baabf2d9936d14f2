package httpbind

import (
	"net/http"
	"net/url"

	"github.com/caphub/caphub/internal/allowlist"
)

// hostsSetting is where the http binding's allow-list is configured.
const hostsSetting = "httpbind Options.AllowedHosts; caphub serve --allow-host"

// checkURL returns nil when u may be requested: an http or https URL whose
// host is allowed by the binding's AllowedHosts.
func (b *Binding) checkURL(u *url.URL) error {
	return allowlist.CheckURL(b.hosts, u, hostsSetting)
}

// checkRedirect returns the client's redirect policy for one call: at most 10
// redirects, each to an allowed host; a secret header is dropped when the
// redirect leaves the original host.
func (b *Binding) checkRedirect(secretHeader string) func(*http.Request, []*http.Request) error {
	return allowlist.CheckRedirect(b.hosts, hostsSetting, secretHeader)
}

// redact returns u without its query, fragment and user info, for messages:
// the query may carry an api key.
func redact(u *url.URL) string { return allowlist.Redact(u) }
