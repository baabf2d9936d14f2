package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/jsoncheck"
	"gopkg.in/yaml.v3"
)

// maxDocumentBytes is the largest document Fetch reads (64 MiB; GitHub's
// spec, among the largest public ones, is 13 MB).
const maxDocumentBytes = 64 << 20

// fetchTimeout bounds a Fetch of a URL when the context has no earlier
// deadline.
const fetchTimeout = 60 * time.Second

// Fetch returns the bytes of an OpenAPI document: the body of an http(s)
// GET when fileOrURL starts with http:// or https:// (bounded by
// 60 seconds and 64 MiB, and failing on a non-2xx status), else the content
// of the file (at most 64 MiB).
func Fetch(ctx context.Context, fileOrURL string) ([]byte, error) {
	if isHTTPURL(fileOrURL) {
		return fetchURL(ctx, fileOrURL)
	}
	f, err := os.Open(fileOrURL)
	if err != nil {
		return nil, fmt.Errorf("read OpenAPI document: %w", err)
	}
	defer f.Close()
	return readCapped(f, fileOrURL)
}

func isHTTPURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

func fetchURL(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch OpenAPI document %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, text/yaml;q=0.9, */*;q=0.5")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch OpenAPI document %s: %w (check the URL and your network, or download the file and import it)", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("fetch OpenAPI document %s: the server answered %s: check the URL", url, resp.Status)
	}
	return readCapped(resp.Body, url)
}

func readCapped(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read OpenAPI document %s: %w", name, err)
	}
	if len(data) > maxDocumentBytes {
		return nil, fmt.Errorf("OpenAPI document %s is larger than %d MiB: split it, or import the parts you need", name, maxDocumentBytes>>20)
	}
	return data, nil
}

// document is a decoded OpenAPI document: the generic tree (map[string]any,
// []any, string, bool, nil, int64, float64) and a way back to positions.
type document struct {
	root map[string]any
	yaml *yaml.Node // the YAML tree, for positions; nil for JSON
	raw  []byte     // the JSON text, for positions
	pos  map[[2]string][2]int
}

// maxNesting bounds the nesting of a YAML document (encoding/json has its own
// limit of 10000) so that converting it cannot exhaust the stack.
const maxNesting = 10000

// decode reads JSON (when the first non-blank byte is "{") or YAML into a
// generic tree. An error means the bytes are neither.
func decode(data []byte) (*document, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line, col := jsoncheck.Position(data, int(se.Offset))
				return nil, fmt.Errorf("line %d, column %d: not valid JSON: %v", line, col, err)
			}
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		root, ok := v.(map[string]any)
		if !ok {
			return nil, errors.New("the document is not a JSON object")
		}
		if e := jsoncheck.Check(data); e != nil {
			return nil, &textError{line: e.Line, col: e.Column, path: e.Path, msg: e.Message}
		}
		return &document{root: root, raw: data}, nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		if off := jsoncheck.InvalidUTF8(data); off >= 0 {
			line, col := jsoncheck.Position(data, off)
			return nil, &textError{line: line, col: col, msg: fmt.Sprintf("invalid UTF-8 byte 0x%02X: save the file as UTF-8", data[off])}
		}
		return nil, fmt.Errorf("not valid YAML or JSON: %v", err)
	}
	if n.Kind == 0 {
		return nil, errors.New("the document is empty")
	}
	c := yamlConverter{seen: map[*yaml.Node]any{}, active: map[*yaml.Node]bool{}}
	v, err := c.convert(&n, 0)
	if err != nil {
		return nil, err
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the document is not a YAML mapping")
	}
	return &document{root: root, yaml: &n}, nil
}

// textError is a document whose text is ambiguous: a key written twice in
// one object or mapping (readers disagree on which value counts), invalid
// UTF-8 or a lone surrogate escape (decoded as U+FFFD). It is an OpenAPI
// document, but not one caphub guesses about, so the import fails whole.
type textError struct {
	line, col int
	path, msg string
}

func (e *textError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

// yamlConverter turns a yaml.Node tree into the generic tree. Aliases share
// the converted value of their anchor (so an "alias bomb" stays small here;
// later stages bound the work of expanding it). A key written twice in one
// mapping is a *textError naming its path (kept as a stack of segments).
type yamlConverter struct {
	seen   map[*yaml.Node]any
	active map[*yaml.Node]bool
	path   []string
}

// pathString joins the segments of the current path ("paths./a.get").
func (c *yamlConverter) pathString() string { return capability.JoinPath(c.path) }

// convert converts a node (one method per node kind); an anchored node's
// value is remembered for its aliases.
func (c *yamlConverter) convert(n *yaml.Node, depth int) (any, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("line %d, column %d: the document nests deeper than %d levels", n.Line, n.Column, maxNesting)
	}
	var (
		v   any
		err error
	)
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.convert(n.Content[0], depth+1)
	case yaml.AliasNode:
		return c.alias(n, depth)
	case yaml.MappingNode:
		v, err = c.mapping(n, depth)
	case yaml.SequenceNode:
		v, err = c.sequence(n, depth)
	case yaml.ScalarNode:
		v = scalar(n)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if n.Anchor != "" {
		c.seen[n] = v
	}
	return v, nil
}

// alias shares the converted value of its anchor.
func (c *yamlConverter) alias(n *yaml.Node, depth int) (any, error) {
	if n.Alias == nil || c.active[n.Alias] {
		return nil, nil // an anchor that contains itself: nothing to share
	}
	if v, ok := c.seen[n.Alias]; ok {
		return v, nil
	}
	return c.convert(n.Alias, depth+1)
}

// mapping converts a mapping; a key written twice is a *textError.
func (c *yamlConverter) mapping(n *yaml.Node, depth int) (map[string]any, error) {
	c.active[n] = true
	defer delete(c.active, n)
	m := make(map[string]any, len(n.Content)/2)
	keyAt := make(map[string]*yaml.Node, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		c.path = append(c.path, k.Value)
		if first, dup := keyAt[k.Value]; dup {
			return nil, &textError{line: k.Line, col: k.Column, path: c.pathString(),
				msg: fmt.Sprintf("key %q is already defined at line %d: remove one of them", k.Value, first.Line)}
		}
		keyAt[k.Value] = k
		val, err := c.convert(v, depth+1)
		c.path = c.path[:len(c.path)-1]
		if err != nil {
			return nil, err
		}
		m[k.Value] = val
	}
	for _, mv := range merges {
		if err := c.merge(m, mv, depth); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// merge applies a merge key (<<: *base, or a list of them): it adds the
// keys the mapping does not set itself.
func (c *yamlConverter) merge(m map[string]any, mv *yaml.Node, depth int) error {
	src, err := c.convert(mv, depth+1)
	if err != nil {
		return err
	}
	list, ok := src.([]any)
	if !ok {
		list = []any{src}
	}
	for _, e := range list {
		em, _ := e.(map[string]any)
		for k, v := range em {
			if _, set := m[k]; !set {
				m[k] = v
			}
		}
	}
	return nil
}

// sequence converts a sequence.
func (c *yamlConverter) sequence(n *yaml.Node, depth int) ([]any, error) {
	c.active[n] = true
	defer delete(c.active, n)
	s := make([]any, 0, len(n.Content))
	for i, e := range n.Content {
		c.path = append(c.path, "["+strconv.Itoa(i)+"]")
		v, err := c.convert(e, depth+1)
		c.path = c.path[:len(c.path)-1]
		if err != nil {
			return nil, err
		}
		s = append(s, v)
	}
	return s, nil
}

// scalar converts a YAML scalar by its resolved tag; timestamps and binary
// stay text, non-finite floats become their text (JSON cannot carry them).
func scalar(n *yaml.Node) any {
	var (
		v  any
		ok bool
	)
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		ok = n.Decode(&b) == nil
		v = b
	case "!!int":
		v, ok = intScalar(n)
	case "!!float":
		v, ok = floatScalar(n)
	}
	if !ok {
		return n.Value
	}
	return v
}

// intScalar converts an !!int scalar: an int64, or a float64 when it does
// not fit.
func intScalar(n *yaml.Node) (any, bool) {
	if i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
		return i, true
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, false
	}
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return nil, false
}

// floatScalar converts a !!float scalar: a whole value below 2^53 becomes
// an int64, a non-finite one its text.
func floatScalar(n *yaml.Node) (any, bool) {
	var f float64
	if err := n.Decode(&f); err != nil {
		return nil, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return n.Value, true
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f), true
	}
	return f, true
}

// position returns the line and column of the operation paths[path][method]
// (or of the path item when method is ""), 0, 0 when unknown.
func (d *document) position(path, method string) (int, int) {
	if d.yaml != nil {
		n := d.yaml
		if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
			n = n.Content[0]
		}
		keys := []string{"paths", path}
		if method != "" {
			keys = append(keys, method)
		}
		var key *yaml.Node
		for _, k := range keys {
			key, n = yamlChild(n, k)
			if n == nil {
				return 0, 0
			}
		}
		return key.Line, key.Column
	}
	if d.raw == nil {
		return 0, 0
	}
	if d.pos == nil {
		d.pos = jsonOperationPositions(d.raw)
	}
	p := d.pos[[2]string{path, method}]
	return p[0], p[1]
}

func yamlChild(n *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// jsonOperationPositions scans a JSON document once and returns the
// position of every key at paths.<path> and paths.<path>.<method> (column in
// characters), converting offsets with one jsoncheck.Index. It is used only
// when an operation fails, to say where it is.
func jsonOperationPositions(data []byte) map[[2]string][2]int {
	out := map[[2]string][2]int{}
	ix := jsoncheck.NewIndex(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	var st jsonKeyStack
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		// Depth 2 is paths.<path>, depth 3 is paths.<path>.<method>.
		if n := len(st); st.next(tok) && (n == 2 || n == 3) && st[0].key == "paths" {
			end := int(dec.InputOffset())
			start := bytes.LastIndexByte(data[:end-1], '"')
			line, col := ix.Position(start)
			op := [2]string{st[1].key, ""}
			if n == 3 {
				op[1] = st[2].key
			}
			out[op] = [2]int{line, col}
		}
	}
}

// jsonKeyStack is the stack of open objects and arrays of a JSON token
// stream, with the current key of each object and whether it expects a key
// next.
type jsonKeyStack []jsonFrame

// jsonFrame is an open object or array.
type jsonFrame struct {
	object bool
	key    string
	wantK  bool
}

// next takes the next token and reports whether it was an object key (now
// the key of the innermost object).
func (st *jsonKeyStack) next(tok json.Token) bool {
	s := *st
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{', '[':
			*st = append(s, jsonFrame{object: t == '{', wantK: t == '{'})
			return false
		}
		s = s[:len(s)-1]
		*st = s
	case string:
		if n := len(s); n > 0 && s[n-1].object && s[n-1].wantK {
			s[n-1].key, s[n-1].wantK = t, false
			return true
		}
	}
	// A value ends: the enclosing object expects a key next.
	if n := len(s); n > 0 && s[n-1].object {
		s[n-1].wantK = true
	}
	return false
}
