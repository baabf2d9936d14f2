package rest

import (
	"net/http"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// The fast path of a GET of one version (GET
// /registry/capabilities/{domain}/{name}@{version}): when the registry's
// cache holds the version's stored JSON, it is written as it is, before
// the time budget, the caller's identity and the route mux are set up,
// none of which a read from memory needs. Authentication and the scope
// check have already run: the auth middleware wraps this handler. Every
// other request, and a version the cache does not hold, takes the usual
// path (getCapability), which fills the cache.

// digestHeader is registry.DigestHeader in its canonical form.
var digestHeader = http.CanonicalHeaderKey(registry.DigestHeader)

// capabilitiesPrefix is the path of the capability routes.
const capabilitiesPrefix = "/registry/capabilities/"

// serveCached answers a GET of one version from the cache and reports
// whether it did.
func (s *Server) serveCached(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet || r.URL.RawPath != "" {
		return false // an escaped path: the mux unescapes it segment by segment
	}
	rest, ok := strings.CutPrefix(r.URL.Path, capabilitiesPrefix)
	if !ok {
		return false
	}
	domain, nameVersion, ok := strings.Cut(rest, "/")
	if !ok || domain == "" || strings.IndexByte(nameVersion, '/') >= 0 {
		return false
	}
	name, version, ok := strings.Cut(nameVersion, "@")
	if !ok || name == "" || version == "" {
		return false
	}
	scheme := capability.SchemeOSSA // as getCapability: ossa first, then mcp
	if r.URL.RawQuery != "" {
		if sc := r.URL.Query().Get("scheme"); sc != "" {
			scheme = sc
		}
	}
	v, ok := s.svc.CachedRaw(scheme, domain, name, version)
	if !ok {
		return false
	}
	writeVersion(w, r, v)
	return true
}

// writeVersion answers with one version's stored JSON, its ETag and trust
// tier, or 304 Not Modified when the request's If-None-Match names the
// ETag.
func writeVersion(w http.ResponseWriter, r *http.Request, v *registry.CachedVersion) {
	h := w.Header()
	h["Etag"] = []string{v.ETag}
	h[digestHeader] = []string{v.Digest}
	setTier(w, v.TrustTier)
	if noneMatch(r.Header.Get("If-None-Match"), v.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Type"] = []string{"application/json"}
	_, _ = w.Write(v.Definition)
}

// noneMatch reports whether an If-None-Match header value (RFC 9110
// §13.1.2) matches etag (a quoted strong ETag): it is "*", or a list of
// entity tags one of which equals etag in the weak comparison (a W/
// prefix is ignored). A malformed list matches nothing from its first
// malformed tag on.
func noneMatch(header, etag string) bool {
	for header != "" {
		header = strings.TrimLeft(header, " \t,")
		if header == "" {
			return false
		}
		if header[0] == '*' {
			return true
		}
		header = strings.TrimPrefix(header, "W/")
		if header == "" || header[0] != '"' {
			return false
		}
		end := strings.IndexByte(header[1:], '"')
		if end < 0 {
			return false
		}
		if header[:end+2] == etag {
			return true
		}
		header = header[end+2:]
	}
	return false
}
