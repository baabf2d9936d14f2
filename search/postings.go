package search

import (
	"math/bits"
	"sort"
)

// posting is one document's term frequencies per field (saturated at 255),
// as a posting list's iterator decodes it.
type posting struct {
	doc int32
	tf  [numFields]uint8
}

// postingList is one term's postings in document order, packed: each is
// the uvarint of its document's distance from the previous one's (the
// first's from -1), a byte with a bit for each field the term is in, and
// its frequency in each of those fields, a byte each. A posting takes 3 to
// 4 bytes where a struct took 12 (and a slice grown by appending a third
// more): the index of a large registry is mostly its postings.
type postingList struct {
	data []byte
	n    int32 // postings held (a dead document's too, until compaction)
	last int32 // the document of the last posting
	// skips mark every skipEvery-th posting, so that a document's
	// posting is found without decoding the whole list (explain).
	skips []postingSkip
}

// postingSkip is where in a list's data a posting starts, and the
// document of the one before it, from which its distance is counted.
type postingSkip struct {
	before int32
	off    uint32
}

// skipEvery is how many postings a skip spans.
const skipEvery = 128

// add appends p, whose document follows the list's last.
func (pl *postingList) add(p *posting) {
	prev := int32(-1)
	if pl.n > 0 {
		prev = pl.last
	}
	if pl.n > 0 && pl.n%skipEvery == 0 {
		pl.skips = append(pl.skips, postingSkip{before: prev, off: uint32(len(pl.data))})
	}
	d := uint32(p.doc - prev)
	for d >= 0x80 {
		pl.data = append(pl.data, byte(d)|0x80)
		d >>= 7
	}
	pl.data = append(pl.data, byte(d))
	var mask byte
	for f, tf := range p.tf {
		if tf > 0 {
			mask |= 1 << f
		}
	}
	pl.data = append(pl.data, mask)
	for _, tf := range p.tf {
		if tf > 0 {
			pl.data = append(pl.data, tf)
		}
	}
	pl.n++
	pl.last = p.doc
}

// postingIter reads a posting list in order.
type postingIter struct {
	data []byte
	i    int
	doc  int32
}

// iter returns an iterator at the list's first posting.
func (pl *postingList) iter() postingIter { return postingIter{data: pl.data, doc: -1} }

// next decodes the next posting into p, and reports whether there was one.
func (it *postingIter) next(p *posting) bool {
	var one [1]posting
	if it.decode(one[:]) == 0 {
		return false
	}
	*p = one[0]
	return true
}

// decode decodes the next postings into buf, as many as it holds, and
// returns how many it decoded: 0 at the end of the list. Scoring decodes a
// block at a time and then reads the block as it read the old postings'
// slice, which costs less than a call a posting.
func (it *postingIter) decode(buf []posting) int {
	data, i, doc := it.data, it.i, it.doc
	n := 0
	for ; n < len(buf) && i < len(data); n++ {
		d := uint32(data[i])
		i++
		if d >= 0x80 {
			d &= 0x7f
			for shift := 7; ; shift += 7 {
				b := data[i]
				i++
				d |= uint32(b&0x7f) << shift
				if b < 0x80 {
					break
				}
			}
		}
		doc += int32(d)
		p := &buf[n]
		p.doc = doc
		p.tf = [numFields]uint8{}
		for m := uint(data[i]); m != 0; m &= m - 1 {
			i++
			p.tf[bits.TrailingZeros(m)] = data[i]
		}
		i++
	}
	it.i, it.doc = i, doc
	return n
}

// find returns document d's posting, and whether the list has one.
func (pl *postingList) find(d int32) (posting, bool) {
	it := pl.iter()
	// The last skip that starts before d.
	if k := sort.Search(len(pl.skips), func(k int) bool { return pl.skips[k].before >= d }); k > 0 {
		it.i, it.doc = int(pl.skips[k-1].off), pl.skips[k-1].before
	}
	var p posting
	for it.next(&p) && p.doc <= d {
		if p.doc == d {
			return p, true
		}
	}
	return posting{}, false
}
