package registry

import (
	"errors"
	"testing"
)

// FuzzCursor: any cursor a client sends is decoded to a page of the query
// that made it, or refused with ErrInvalidCursor; never a panic or a
// negative offset, and a decoded search offset round-trips.
func FuzzCursor(f *testing.F) {
	fp := fingerprint("search", ListFilter{}, "create issue")
	f.Add(Cursor{Kind: "search", Query: fp, Offset: 20}.Encode())
	f.Add(Cursor{Kind: "search", Query: "other", Offset: 1}.Encode())
	f.Add(Cursor{Kind: "list", Query: fp, After: []string{"a", "b", "c", "d", "e"}}.Encode())
	f.Add("eyJrIjoic2VhcmNoIiwibyI6LTF9")
	f.Add("not a cursor")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s, "search", fp)
		switch {
		case err != nil && !errors.Is(err, ErrInvalidCursor):
			t.Fatalf("cursor %q: %v is not ErrInvalidCursor", s, err)
		case err == nil && c.Offset < 0:
			t.Fatalf("cursor %q: offset %d", s, c.Offset)
		case err == nil && s != "":
			if again, err := decodeCursor(Cursor{Kind: "search", Query: fp, Offset: c.Offset}.Encode(), "search", fp); err != nil || again.Offset != c.Offset {
				t.Fatalf("cursor %q: offset %d does not round-trip: %d %v", s, c.Offset, again.Offset, err)
			}
		}
	})
}
