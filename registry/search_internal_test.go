package registry

import (
	"errors"
	"testing"
)

// FuzzRankCursor: any cursor a client sends is decoded to an offset of the
// search that made it, or refused with ErrInvalidCursor; never a panic or a
// negative offset.
func FuzzRankCursor(f *testing.F) {
	fp := rankFingerprint(SearchQuery{Text: "create issue"})
	f.Add(rankCursor{Query: fp, Offset: 20}.encode())
	f.Add(rankCursor{Query: "other", Offset: 1}.encode())
	f.Add("eyJrIjoicmFuayIsIm8iOi0xfQ")
	f.Add("not a cursor")
	f.Fuzz(func(t *testing.T, s string) {
		off, err := decodeRankCursor(s, fp)
		switch {
		case err != nil && !errors.Is(err, ErrInvalidCursor):
			t.Fatalf("cursor %q: %v is not ErrInvalidCursor", s, err)
		case err == nil && off < 0:
			t.Fatalf("cursor %q: offset %d", s, off)
		case err == nil && s != "":
			if again, err := decodeRankCursor(rankCursor{Query: fp, Offset: off}.encode(), fp); err != nil || again != off {
				t.Fatalf("cursor %q: offset %d does not round-trip: %d %v", s, off, again, err)
			}
		}
	})
}
