// Package guard is the one check every HTTP request to caphub serve passes
// before any handler runs: the REST API, /mcp, the fronted servers, /metrics
// and whatever is added later. It refuses what a web page in a browser could
// send to a server on the user's machine:
//
//   - a Host header that is not a name the server serves (DNS rebinding: a
//     page whose name resolves to 127.0.0.1 talks to caphub as its own
//     origin). Loopback names and addresses are served; AllowedHosts adds
//     the names of a deployment behind a real host name.
//   - an Origin header of another site (a cross-origin request). Loopback
//     origins are accepted; AllowedOrigins adds others. "null" (sandboxed
//     frames, file: pages) is refused.
//   - a body that is not JSON (or YAML where a route documents it): browsers
//     send text/plain, form and multipart bodies cross-site without a CORS
//     preflight, so accepting them would let a page POST to the API.
//   - a state-changing request that a browser marks Sec-Fetch-Site:
//     cross-site, whatever its Origin.
//
// Refusals are RFC 9457 problem documents naming the header and the flag
// that would allow it.
package guard

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/caphub/caphub/internal/allowlist"
	"github.com/caphub/caphub/internal/problem"
)

// Options configures a Guard.
type Options struct {
	// AllowedHosts are Host header values served besides loopback names:
	// "host", "host:port" or "*" (any host: only behind a proxy that checks
	// it). Matching ignores case.
	AllowedHosts []string
	// AllowedOrigins are browser origins accepted besides loopback ones:
	// "scheme://host[:port]", "scheme://host:*" (any port) or "*".
	AllowedOrigins []string
	// AcceptsYAML reports whether a request's route documents a YAML body
	// (application/yaml); nil means none does.
	AcceptsYAML func(*http.Request) bool
	// HostFlag and OriginFlag name the settings that extend the lists, for
	// the refusals' advice; defaults "--allowed-host" and "--allowed-origin".
	HostFlag, OriginFlag string
}

// Guard checks requests; it is safe for concurrent use.
type Guard struct {
	hosts, origins []string // lower-cased, trimmed
	anyHost        bool
	anyOrigin      bool
	yaml           func(*http.Request) bool
	hostFlag       string
	originFlag     string
}

// New returns a Guard for opts.
func New(opts Options) *Guard {
	g := &Guard{hosts: lowerAll(opts.AllowedHosts), origins: lowerAll(opts.AllowedOrigins), yaml: opts.AcceptsYAML,
		hostFlag: opts.HostFlag, originFlag: opts.OriginFlag}
	if g.hostFlag == "" {
		g.hostFlag = "--allowed-host"
	}
	if g.originFlag == "" {
		g.originFlag = "--allowed-origin"
	}
	for _, h := range g.hosts {
		g.anyHost = g.anyHost || h == "*"
	}
	for _, o := range g.origins {
		g.anyOrigin = g.anyOrigin || o == "*"
	}
	return g
}

// Refusal says why a request was refused.
type Refusal struct {
	Status int    // 403, 415
	Type   string // problem type slug: forbidden-host, forbidden-origin, unsupported-media-type
	Title  string
	Detail string
	Header string // the header at fault
}

func (r *Refusal) Error() string { return r.Detail }

// Handler returns next behind the guard.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ref := g.Check(r); ref != nil {
			Write(w, r, ref)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Check returns why r is refused, or nil.
func (g *Guard) Check(r *http.Request) *Refusal {
	if !g.HostAllowed(r.Host) {
		return &Refusal{Status: http.StatusForbidden, Type: "forbidden-host", Title: "Host not served", Header: "Host",
			Detail: fmt.Sprintf("Host %q is not a name this caphub serves: it answers loopback names (localhost, 127.0.0.1, [::1]) so that a web page cannot reach it through DNS rebinding; to serve it under another name, start it with %s %s", r.Host, g.hostFlag, hostname(strings.ToLower(r.Host)))}
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.OriginAllowed(origin) {
		return &Refusal{Status: http.StatusForbidden, Type: "forbidden-origin", Title: "Cross-origin request refused", Header: "Origin",
			Detail: fmt.Sprintf("Origin %q is another site: caphub answers requests from loopback origins only, so that a web page cannot use it; to allow a web app at that origin, start caphub with %s %s", origin, g.originFlag, origin)}
	}
	if !safeMethod(r.Method) && strings.EqualFold(r.Header.Get("Sec-Fetch-Site"), "cross-site") && r.Header.Get("Origin") == "" {
		return &Refusal{Status: http.StatusForbidden, Type: "forbidden-origin", Title: "Cross-origin request refused", Header: "Sec-Fetch-Site",
			Detail: "the browser marked this request cross-site (Sec-Fetch-Site: cross-site): caphub refuses state-changing requests from other sites"}
	}
	if hasBody(r) {
		ct := r.Header.Get("Content-Type")
		mt, _, err := mime.ParseMediaType(ct)
		switch {
		case ct == "":
			return g.mediaRefusal(r, "the request has a body but no Content-Type")
		case err != nil:
			return g.mediaRefusal(r, fmt.Sprintf("Content-Type %q cannot be parsed (%v)", ct, err))
		case isJSON(mt):
		case isYAML(mt) && g.yaml != nil && g.yaml(r):
		default:
			return g.mediaRefusal(r, fmt.Sprintf("Content-Type %q is not accepted", mt))
		}
	}
	return nil
}

func (g *Guard) mediaRefusal(r *http.Request, what string) *Refusal {
	want := "application/json"
	if g.yaml != nil && g.yaml(r) {
		want = "application/json or application/yaml"
	}
	return &Refusal{Status: http.StatusUnsupportedMediaType, Type: "unsupported-media-type", Title: "Unsupported request body type", Header: "Content-Type",
		Detail: fmt.Sprintf("%s: %s %s takes %s; send the header Content-Type: %s (browsers send text/plain and form bodies across sites, so caphub refuses them)", what, r.Method, r.URL.Path, want, strings.SplitN(want, " ", 2)[0])}
}

// HostAllowed reports whether a Host header value (host or host:port) names
// a loopback host or an allowed one. An empty Host (HTTP/1.0) is refused.
func (g *Guard) HostAllowed(hostport string) bool {
	hostport = strings.ToLower(strings.TrimSpace(hostport))
	if hostport == "" {
		return false
	}
	host := hostname(hostport)
	if allowlist.IsLoopback(host) || g.anyHost {
		return true
	}
	for _, h := range g.hosts {
		if h == hostport || h == host {
			return true
		}
	}
	return false
}

// OriginAllowed reports whether an Origin header value is a loopback http(s)
// origin or an allowed one.
func (g *Guard) OriginAllowed(origin string) bool {
	if g.anyOrigin {
		return true
	}
	origin = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(origin), "/"))
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if (u.Scheme == "http" || u.Scheme == "https") && allowlist.IsLoopback(u.Hostname()) {
		return true
	}
	for _, o := range g.origins {
		if o == origin {
			return true
		}
		if prefix, ok := strings.CutSuffix(o, ":*"); ok && prefix == u.Scheme+"://"+u.Hostname() {
			return true
		}
	}
	return false
}

// Write answers a refusal as an RFC 9457 problem document.
func Write(w http.ResponseWriter, r *http.Request, ref *Refusal) {
	_ = problem.Write(w, ref.Status, &problem.Document{Type: problem.Base + ref.Type, Title: ref.Title, Status: ref.Status,
		Detail: ref.Detail, Instance: r.URL.Path, Header: ref.Header})
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// hasBody reports whether a request carries a body: a positive length, or
// an unknown one (chunked).
func hasBody(r *http.Request) bool {
	return r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
}

func isJSON(mt string) bool {
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func isYAML(mt string) bool {
	switch mt {
	case "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
		return true
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

func lowerAll(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "/")); s != "" {
			out = append(out, s)
		}
	}
	return out
}
