// Package wordvec holds English word vectors for package search: one
// 100-dimensional vector per search stem (about 26,000 stems of the 40,000
// most frequent English words), averaged from GloVe's word vectors and
// quantised to bytes, so that a query's word can find the index's words
// that mean nearly the same ("song" and "track", "picture" and "image").
//
// vectors.bin is generated (go generate; see gen) and committed; it is
// decoded on first use.
package wordvec

//go:generate go run ./gen -o vectors.bin

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
)

//go:embed vectors.bin
var vectorsBin []byte

// Budgets of the vector file.
const (
	maxStems      = 1 << 17
	maxDims       = 512
	maxStemBytes  = 64
	maxBytesTotal = 64 << 20 // decompressed
)

// Vec is a quantised unit vector: its value in dimension i is Q[i] × Scale.
type Vec struct {
	Q     []int8
	Scale float32
}

// Sim is the cosine similarity of a and b, both unit vectors of the same
// length.
func Sim(a, b Vec) float32 {
	return float32(DotQ(a.Q, b.Q)) * a.Scale * b.Scale
}

// DotQ is the dot product of two byte vectors of the same length.
func DotQ(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}

// Table is a set of stem vectors.
type Table struct {
	dims  int
	index map[string]int32
	q     []int8 // dims bytes per stem
	scale []float32
}

// Lookup returns the vector of stem.
func (t *Table) Lookup(stem string) (Vec, bool) {
	if t == nil {
		return Vec{}, false
	}
	i, ok := t.index[stem]
	if !ok {
		return Vec{}, false
	}
	return Vec{Q: t.q[int(i)*t.dims : int(i+1)*t.dims : int(i+1)*t.dims], Scale: t.scale[i]}, true
}

// Len is the number of stems.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.scale)
}

// Dims is the vectors' length.
func (t *Table) Dims() int { return t.dims }

var (
	once    sync.Once
	builtin *Table
	loadErr error
)

// Builtin returns the table compiled into the binary, decoded on first use.
// It is nil, with the error, only if vectors.bin is damaged (a test fails
// then).
func Builtin() (*Table, error) {
	once.Do(func() { builtin, loadErr = Decode(vectorsBin) })
	return builtin, loadErr
}

const header = "caphub word vectors 1\n"

// Decode reads a gzipped vector file as gen writes it: a header line, the
// number of stems and of dimensions, the stems, then per stem a float32
// scale and its dimensions as signed bytes.
func Decode(data []byte) (*Table, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("word vectors: %w", err)
	}
	r := bufio.NewReader(io.LimitReader(zr, maxBytesTotal))
	h := make([]byte, len(header))
	if _, err := io.ReadFull(r, h); err != nil || string(h) != header {
		return nil, errors.New("word vectors: not a caphub word vector file (regenerate it: go generate ./search/internal/wordvec)")
	}
	n, err := binary.ReadUvarint(r)
	if err != nil || n == 0 || n > maxStems {
		return nil, fmt.Errorf("word vectors: %d stems (err %v), want 1 to %d", n, err, maxStems)
	}
	dims, err := binary.ReadUvarint(r)
	if err != nil || dims == 0 || dims > maxDims {
		return nil, fmt.Errorf("word vectors: %d dimensions (err %v), want 1 to %d", dims, err, maxDims)
	}
	t := &Table{dims: int(dims), index: make(map[string]int32, n), q: make([]int8, 0, int(n)*int(dims)), scale: make([]float32, 0, n)}
	buf := make([]byte, max(maxStemBytes, int(dims)))
	for i := range int(n) {
		l, err := binary.ReadUvarint(r)
		if err != nil || l == 0 || l > maxStemBytes {
			return nil, fmt.Errorf("word vectors: stem %d: length %d (err %v), want 1 to %d", i, l, err, maxStemBytes)
		}
		if _, err := io.ReadFull(r, buf[:l]); err != nil {
			return nil, fmt.Errorf("word vectors: stem %d: %w", i, err)
		}
		s := string(buf[:l])
		if _, dup := t.index[s]; dup {
			return nil, fmt.Errorf("word vectors: stem %q is written twice", s)
		}
		t.index[s] = int32(i)
	}
	var sb [4]byte
	for i := range int(n) {
		if _, err := io.ReadFull(r, sb[:]); err != nil {
			return nil, fmt.Errorf("word vectors: vector %d: %w", i, err)
		}
		sc := math.Float32frombits(binary.LittleEndian.Uint32(sb[:]))
		if math.IsNaN(float64(sc)) || sc < 0 || sc > 1 {
			return nil, fmt.Errorf("word vectors: vector %d: scale %v, want 0 to 1", i, sc)
		}
		if _, err := io.ReadFull(r, buf[:dims]); err != nil {
			return nil, fmt.Errorf("word vectors: vector %d: %w", i, err)
		}
		for _, b := range buf[:dims] {
			t.q = append(t.q, int8(b))
		}
		t.scale = append(t.scale, sc)
	}
	return t, nil
}
