package registry

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Paging, as both stores and the search index do it: one cursor format, so
// that a search page read from a store continues from the index and the
// other way round.

// Cursor is the decoded form of a page cursor. List cursors are keyset
// cursors (the sort key of the last item seen, so that records added or
// removed before it do not shift the next page); Search cursors are
// offsets, since ranks change as the index grows.
type Cursor struct {
	Kind   string   `json:"k"`           // "list" or "search"
	Query  string   `json:"q"`           // fingerprint of the filter and text
	After  []string `json:"a,omitempty"` // list: scheme, domain, name, version_key, version
	Offset int      `json:"o,omitempty"` // search
}

// fingerprint identifies a query without its page size and cursor, so that
// a cursor is only accepted by the query that made it.
func fingerprint(kind string, f ListFilter, text string) string {
	f.Limit, f.Cursor, f.CountTotal = 0, "", false
	b, _ := json.Marshal(struct {
		Kind   string
		Filter ListFilter
		Text   string
	}{kind, f, text})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Encode returns the cursor as NextCursor carries it.
func (c Cursor) Encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor decodes s ("" gives the zero cursor) and checks it was made
// by a query of this kind with this fingerprint.
func decodeCursor(s, kind, fp string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	var c Cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	switch {
	case err != nil:
		return Cursor{}, fmt.Errorf("%w: it is not a cursor this store made: pass NextCursor from the previous page unchanged", ErrInvalidCursor)
	case c.Kind != kind || c.Query != fp:
		return Cursor{}, fmt.Errorf("%w: it was made by another query: a cursor continues only the %s that returned it, with the same filter", ErrInvalidCursor, kindName(c.Kind))
	case kind == "list" && len(c.After) != 5, c.Offset < 0:
		return Cursor{}, fmt.Errorf("%w: it is damaged: pass NextCursor from the previous page unchanged", ErrInvalidCursor)
	}
	return c, nil
}

func kindName(kind string) string {
	if kind == "search" {
		return "search"
	}
	return "list"
}

// Page sizes of every List and Search: a filter without Limit gets
// DefaultPageSize items; a Limit above MaxPageSize is refused, so that no
// query reads, decodes and holds the whole registry at once. NextCursor
// continues past the page (ListAll follows it).
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// PageSize returns the page size of limit: DefaultPageSize for 0, an
// error (wrapping ErrInvalid) below 0 or above MaxPageSize.
func PageSize(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("%w: page limit %d is negative: give 0 for the default page of %d, or a page size up to %d", ErrInvalid, limit, DefaultPageSize, MaxPageSize)
	case limit > MaxPageSize:
		return 0, fmt.Errorf("%w: page limit %d is above the maximum page size of %d: ask for at most %d and follow NextCursor for the rest", ErrInvalid, limit, MaxPageSize, MaxPageSize)
	case limit == 0:
		return DefaultPageSize, nil
	}
	return limit, nil
}

// OpenPage starts a page of a List (kind "list", text "") or Search (kind
// "search"): it sets f.Limit to the page size (DefaultPageSize for 0,
// refusing a negative one or one above MaxPageSize) and decodes the
// cursor, and returns it with the fingerprint the page's NextCursor must
// carry.
func OpenPage(kind string, f *ListFilter, text string) (Cursor, string, error) {
	n, err := PageSize(f.Limit)
	if err != nil {
		return Cursor{}, "", err
	}
	f.Limit = n
	fp := fingerprint(kind, *f, text)
	cur, err := decodeCursor(f.Cursor, kind, fp)
	return cur, fp, err
}

// Lister is what ListAll reads: a Store, a Service or any API.
type Lister interface {
	List(ctx context.Context, f ListFilter) (Page, error)
}

// ListAll returns every record f selects, reading MaxPageSize a page and
// following NextCursor from f.Cursor on (f.Limit is ignored): for callers
// that need the whole of a selection they know to be bounded, such as the
// capabilities of one MCP server.
func ListAll(ctx context.Context, l Lister, f ListFilter) ([]Record, error) {
	f.Limit, f.CountTotal = MaxPageSize, false
	var out []Record
	for {
		p, err := l.List(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Items...)
		if p.NextCursor == "" || len(p.Items) == 0 {
			return out, nil
		}
		f.Cursor = p.NextCursor
	}
}
