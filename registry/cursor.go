package registry

import (
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
	f.Limit, f.Cursor = 0, ""
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

// checkLimit refuses a negative page size.
func checkLimit(limit int) error {
	if limit < 0 {
		return fmt.Errorf("page limit %d is negative: give 0 for no limit, or a page size", limit)
	}
	return nil
}

// OpenPage starts a page of a List (kind "list", text "") or Search (kind
// "search"): it checks the limit and decodes the cursor, and returns it
// with the fingerprint the page's NextCursor must carry.
func OpenPage(kind string, f ListFilter, text string) (Cursor, string, error) {
	if err := checkLimit(f.Limit); err != nil {
		return Cursor{}, "", err
	}
	fp := fingerprint(kind, f, text)
	cur, err := decodeCursor(f.Cursor, kind, fp)
	return cur, fp, err
}
