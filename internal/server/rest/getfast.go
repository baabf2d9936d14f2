package rest

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// The fast path of a GET of one full version (GET
// /registry/capabilities/{domain}/{name}@MAJOR.MINOR.PATCH): when the
// registry's cache holds the version's stored JSON, it is written as it
// is, before the time budget, the caller's identity and the route mux are
// set up, none of which a read from memory needs. When the cache does not
// hold it, the version is read from the store (which caches it) here too,
// within the time budget but without the budget's goroutine and buffer,
// which a read of one row does not need. Authentication and the scope
// check have already run: the auth middleware wraps this handler. Every
// other request, and a version the store does not hold, takes the usual
// path (getCapability).

// digestHeader is registry.DigestHeader in its canonical form.
var digestHeader = http.CanonicalHeaderKey(registry.DigestHeader)

// capabilitiesPrefix is the path of the capability routes.
const capabilitiesPrefix = "/registry/capabilities/"

// serveVersion answers a GET of one full version from the cache or the
// store and reports whether it answered.
func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) bool {
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
	if ok {
		writeVersion(w, r, v)
		return true
	}
	return s.readVersion(w, r, scheme, domain, name, version)
}

// readVersion answers a GET of one full version from the store (through
// the cache) within the time budget, as getCapability would, and reports
// whether it answered: not for a version that is not a full one or that
// no scheme holds, which getCapability answers.
func (s *Server) readVersion(w http.ResponseWriter, r *http.Request, scheme, domain, name, version string) bool {
	ctx, cancel := s.budgetContext(w, r)
	defer cancel()
	try := []string{capability.SchemeOSSA, capability.SchemeMCP}
	if scheme != "" {
		try = []string{scheme}
	}
	for _, sc := range try {
		v, full, err := s.svc.GetRaw(ctx, sc, domain, name, version)
		switch {
		case !full:
			return false
		case errors.Is(err, registry.ErrNotFound):
			continue
		case err == nil:
			writeVersion(w, r, v)
		case ctx.Err() == context.DeadlineExceeded:
			s.writeProblem(w, s.budgetProblem(r))
		case r.Context().Err() == nil: // else the client went away: nobody to answer
			s.writeError(w, r, err)
		}
		return true
	}
	return false
}

// writeVersion answers with one version's stored JSON, its length, ETag,
// digest and trust tier, or 304 Not Modified when the request's
// If-None-Match names the ETag. It allocates nothing: the header values
// are the version's own (CachedVersion.Headers).
func writeVersion(w http.ResponseWriter, r *http.Request, v *registry.CachedVersion) {
	etag, digest, tier, length := v.Headers()
	h := w.Header()
	h["Etag"] = etag
	h[digestHeader] = digest
	if v.TrustTier != "" {
		h[trustTierHeader] = tier
	}
	if noneMatch(r.Header.Get("If-None-Match"), v.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = length
	_, _ = w.Write(v.Definition)
}

// trustTierHeader is TrustTierHeader in its canonical form.
var trustTierHeader = http.CanonicalHeaderKey(TrustTierHeader)

// jsonContentType is the Content-Type value of a version's JSON, shared
// by every answer (its capacity is its length: appending copies it).
var jsonContentType = []string{"application/json"}

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
