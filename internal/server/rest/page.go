package rest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// Page sizes of every list and search of the API. A request without limit
// gets DefaultPageSize items; a limit above MaxPageSize is refused (400), so
// that no request makes the server read, encode and send the whole registry
// at once. Past the page, next_cursor in the body and a Link rel="next"
// header continue.
const (
	DefaultPageSize = registry.DefaultPageSize
	MaxPageSize     = registry.MaxPageSize
)

// pageParams are the paging query parameters of every list.
var pageParams = []param{
	{name: "limit", in: "query", desc: fmt.Sprintf("page size, 1 to %d (default %d); a larger limit is refused with 400: follow next_cursor instead", MaxPageSize, DefaultPageSize),
		schema: map[string]any{"type": "integer", "minimum": 1, "maximum": MaxPageSize, "default": DefaultPageSize}},
	{name: "cursor", in: "query", desc: "continue from the next_cursor of the previous page (also in its Link rel=\"next\" header)"},
}

// pageLimit reads the limit query parameter: DefaultPageSize when absent,
// a 400 naming the parameter and the bounds when it is not a whole number
// from 1 to MaxPageSize.
func pageLimit(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return DefaultPageSize, nil
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil || n < 1:
		return 0, badRequest(fmt.Sprintf("limit=%q: use a whole number from 1 to %d (default %d)", v, MaxPageSize, DefaultPageSize))
	case n > MaxPageSize:
		return 0, badRequest(fmt.Sprintf("limit=%d is above the maximum page size of %d: ask for at most limit=%d and follow next_cursor for the rest", n, MaxPageSize, MaxPageSize))
	}
	return n, nil
}

// setNextLink advertises the next page, when there is one, in a Link
// header (RFC 8288): the request's own path and query with the cursor
// replaced.
func setNextLink(w http.ResponseWriter, r *http.Request, cursor string) {
	if cursor == "" {
		return
	}
	w.Header().Set("Link", "<"+nextURL(r, cursor)+`>; rel="next"`)
}

// nextURL is the request's path and query with the cursor replaced.
func nextURL(r *http.Request, cursor string) string {
	q := r.URL.Query()
	q.Set("cursor", cursor)
	return r.URL.Path + "?" + q.Encode()
}

// pageOf pages a list kept in memory (approvals, agents, saved servers,
// the versions of one capability) the way the store pages capabilities:
// items must be sorted by key, ascending and unique; the page holds up to
// limit items after the cursor's key, and the cursor it returns continues
// after its last item (still valid when items before it were added or
// removed). kind tells the lists' cursors apart.
func pageOf[T any](items []T, key func(T) string, kind string, limit int, cursor string) (page []T, next string, err error) {
	start := 0
	if cursor != "" {
		b, derr := base64.RawURLEncoding.DecodeString(cursor)
		k, after, ok := strings.Cut(string(b), "\x00")
		if derr != nil || !ok || k != kind {
			return nil, "", fmt.Errorf("%w: cursor %q was not made by this list: start again without it", registry.ErrInvalidCursor, cursor)
		}
		start = sort.Search(len(items), func(i int) bool { return key(items[i]) > after })
	}
	end := min(start+limit, len(items))
	page = items[start:end]
	if end < len(items) && len(page) > 0 {
		next = base64.RawURLEncoding.EncodeToString([]byte(kind + "\x00" + key(page[len(page)-1])))
	}
	return page, next, nil
}

// pageQuery reads limit and cursor for pageOf.
func pageQuery(r *http.Request) (limit int, cursor string, err error) {
	q := r.URL.Query()
	limit, err = pageLimit(q)
	return limit, q.Get("cursor"), err
}

// pageRefused documents the 400 of a list.
const pageRefused = "limit out of range, or a cursor from another list"

// versionsPage answers a page of one capability's versions (ascending).
func (s *Server) versionsPage(w http.ResponseWriter, r *http.Request, versions []registry.Record) error {
	limit, cursor, err := pageQuery(r)
	if err != nil {
		return err
	}
	key := func(rec registry.Record) string {
		v, _ := capability.ParseVersion(rec.Key.Version)
		return registry.VersionKey(v) + "\x00" + rec.Key.Version
	}
	page, next, err := pageOf(versions, key, "versions", limit, cursor)
	if err != nil {
		return err
	}
	setNextLink(w, r, next)
	writeJSON(w, http.StatusOK, pageResponse(registry.Page{Items: page, Total: len(versions), NextCursor: next}), s.log)
	return nil
}
