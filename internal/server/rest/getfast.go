package rest

import (
	"net/http"
	"strconv"
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
	scheme := ""
	if r.URL.RawQuery != "" {
		scheme = r.URL.Query().Get("scheme")
	}
	var v *registry.CachedVersion
	if scheme != "" {
		v, ok = s.svc.CachedRaw(scheme, domain, name, version)
	} else {
		// As getCapability: ossa first, then mcp when ossa has none.
		v, ok = s.svc.CachedRaw(capability.SchemeOSSA, domain, name, version)
		if !ok && s.svc.CachedAbsent(capability.SchemeOSSA, domain, name, version) {
			v, ok = s.svc.CachedRaw(capability.SchemeMCP, domain, name, version)
		}
	}
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

// writeRawPage answers a page of a list as ListResponse encodes it, each
// item the stored JSON of its version written as it is (as a GET of it
// answers), without decoding and encoding the definitions again.
func writeRawPage(w http.ResponseWriter, p registry.RawPage) {
	n := 64 + len(p.NextCursor)
	for _, r := range p.Items {
		n += len(r.Definition) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, `{"items":[`...)
	for i, r := range p.Items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, r.Definition...)
	}
	buf = append(buf, ']')
	if p.Total >= 0 {
		buf = append(buf, `,"total":`...)
		buf = strconv.AppendInt(buf, int64(p.Total), 10)
	}
	if p.NextCursor != "" {
		buf = append(buf, `,"next_cursor":`...)
		buf = strconv.AppendQuote(buf, p.NextCursor)
	}
	buf = append(buf, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf)
}
