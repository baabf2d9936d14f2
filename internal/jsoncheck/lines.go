package jsoncheck

import (
	"sort"
	"unicode/utf8"
)

// runeCheckpointBytes is the spacing of an Index's character counts: a
// column costs at most this many bytes of counting, however long its line
// (a whole spec on one line is common).
const runeCheckpointBytes = 4096

// Index converts byte offsets of one document to lines and columns in time
// that does not grow with the document: it is built in one pass (the start
// of every line, and the number of characters before every
// runeCheckpointBytes-th byte), then each Position is a binary search and a
// count of at most runeCheckpointBytes bytes. Position, which counts from
// the document's start, is for one answer; an Index is for many.
//
// Offsets are int32: documents are bounded far below 2 GiB by their
// readers; NewIndex of anything larger indexes its first 2 GiB.
type Index struct {
	data  []byte
	lines []int32 // byte offset of each line's start; lines[0] is 0
	// checkpoints are offsets where a character starts (never a UTF-8
	// continuation byte), about runeCheckpointBytes apart, and runes the
	// number of characters before each.
	checkpoints []int32
	runes       []int32
}

// NewIndex indexes data, which it keeps (it must not change afterwards).
func NewIndex(data []byte) *Index {
	if len(data) > 1<<31-1 {
		data = data[:1<<31-1]
	}
	ix := &Index{data: data, lines: []int32{0}, checkpoints: []int32{0}, runes: []int32{0}}
	next := runeCheckpointBytes
	count := 0 // characters before off
	for off := 0; off < len(data); {
		if off >= next {
			ix.checkpoints = append(ix.checkpoints, int32(off))
			ix.runes = append(ix.runes, int32(count))
			next = off + runeCheckpointBytes
		}
		b := data[off]
		if b < utf8.RuneSelf {
			if b == '\n' {
				ix.lines = append(ix.lines, int32(off+1))
			}
			off++
		} else {
			_, n := utf8.DecodeRune(data[off:])
			off += n
		}
		count++
	}
	return ix
}

// Position returns the 1-based line and column (in characters) of a byte
// offset, as Position(data, off) does.
func (ix *Index) Position(off int) (line, col int) {
	off = min(max(off, 0), len(ix.data))
	// The last line that starts at or before off.
	l := sort.Search(len(ix.lines), func(i int) bool { return int(ix.lines[i]) > off }) - 1
	start := int(ix.lines[l])
	return l + 1, 1 + ix.runesBefore(off) - ix.runesBefore(start)
}

// runesBefore counts the characters of data[:off]: the count at the last
// checkpoint at or before off, plus those from there.
func (ix *Index) runesBefore(off int) int {
	c := sort.Search(len(ix.checkpoints), func(i int) bool { return int(ix.checkpoints[i]) > off }) - 1
	return int(ix.runes[c]) + utf8.RuneCount(ix.data[ix.checkpoints[c]:off])
}
