package jsoncheck

import (
	"bytes"
	"strings"
	"testing"
)

// checkIndex compares Index.Position with Position at every offset of data
// (and just outside it).
func checkIndex(t *testing.T, data []byte) {
	t.Helper()
	ix := NewIndex(data)
	for off := -1; off <= len(data)+1; off++ {
		l1, c1 := Position(data, off)
		l2, c2 := ix.Position(off)
		if l1 != l2 || c1 != c2 {
			t.Fatalf("offset %d of %q: index says %d:%d, Position %d:%d", off, data, l2, c2, l1, c1)
		}
	}
}

func TestIndex(t *testing.T) {
	for _, doc := range []string{
		"",
		"\n",
		"a\nbc\n\ndef",
		"{\"é\": 1,\n \"k\xc3\": 2}",
		"\xff\xfe\n\x80\x80é\n",
	} {
		checkIndex(t, []byte(doc))
	}
	// One long line whose characters (1 to 4 bytes, some invalid) straddle
	// many checkpoints, then a few short lines.
	var b bytes.Buffer
	for i := 0; b.Len() < 5*runeCheckpointBytes; i++ {
		b.WriteString([]string{"a", "é", "€", "😀", "\xe2\x82", "\x80"}[i%6])
	}
	b.WriteString("\nx\n€€\n")
	checkIndex(t, b.Bytes())
}

// TestIndexPositions checks a few answers by hand: lines count from 1,
// columns in characters from 1.
func TestIndexPositions(t *testing.T) {
	data := []byte("ab\né€x\n" + strings.Repeat("é", 3*runeCheckpointBytes) + "z")
	ix := NewIndex(data)
	for _, c := range []struct{ off, line, col int }{
		{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {5, 2, 2}, {8, 2, 3}, {10, 3, 1},
		{len(data) - 1, 3, 3*runeCheckpointBytes + 1},
	} {
		if l, col := ix.Position(c.off); l != c.line || col != c.col {
			t.Errorf("offset %d: %d:%d, want %d:%d", c.off, l, col, c.line, c.col)
		}
	}
}

// FuzzIndex: an Index answers as Position does, for any bytes.
func FuzzIndex(f *testing.F) {
	f.Add([]byte("a\nbc\n\ndef"))
	f.Add([]byte("{\"é\": 1,\n \"k\xc3\": 2}"))
	f.Add(bytes.Repeat([]byte("€\xe2\n\x80"), runeCheckpointBytes))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 16<<10 {
			t.Skip("larger than the fuzz size guard (16 KiB: the check is quadratic)")
		}
		checkIndex(t, data)
	})
}

// BenchmarkIndex indexes 20 MB on one line and finds 10,000 positions
// spread over it.
func BenchmarkIndex(b *testing.B) {
	data := bytes.Repeat([]byte(`{"k": "välue", "n": 1},`), 20<<20/24)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		ix := NewIndex(data)
		for off := 0; off < len(data); off += len(data) / 10000 {
			ix.Position(off)
		}
	}
}
