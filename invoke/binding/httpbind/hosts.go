package httpbind

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/caphub/caphub/invoke/binding/allowlist"
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

// redact returns u without its query, fragment and user info, for messages:
// the query may carry an api key.
func redact(u *url.URL) string { return allowlist.Redact(u) }
