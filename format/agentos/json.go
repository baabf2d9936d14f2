package agentos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// A manifest is decoded into a tree of nodes that remember where each value
// starts, so that every failure can name its line and column. The tree is
// built from encoding/json's token stream rather than from a YAML parser:
// JSON is almost YAML, but not quite (YAML refuses tab indentation and
// surrogate-pair escapes such as "\ud83d\ude00"), and the positions of a
// JSON file are best taken from a JSON decoder.

// kind is the JSON type of a node.
type kind int

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}

// node is one JSON value and its position (1-based line and column, the
// column counted in characters, a tab counting one).
type node struct {
	kind      kind
	line, col int
	b         bool
	num       json.Number
	str       string
	keys      []string // object keys, in document order (duplicates kept)
	vals      []*node  // object values, parallel to keys
	items     []*node  // array elements
}

// get returns the value of key in an object node, or nil. (Import refuses
// a manifest with a key written twice before anything reads it.)
func (n *node) get(key string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	for i := len(n.keys) - 1; i >= 0; i-- {
		if n.keys[i] == key {
			return n.vals[i]
		}
	}
	return nil
}

// value returns the node as a plain decoded JSON value (map[string]any,
// []any, string, bool, nil, json.Number), to be normalised by the caller.
func (n *node) value() any {
	switch n.kind {
	case kindBool:
		return n.b
	case kindNumber:
		return n.num
	case kindString:
		return n.str
	case kindArray:
		out := make([]any, len(n.items))
		for i, it := range n.items {
			out[i] = it.value()
		}
		return out
	case kindObject:
		out := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			out[k] = n.vals[i].value()
		}
		return out
	}
	return nil
}

// maxDepth bounds the nesting of a manifest. The token decoder itself has no
// limit, and a file of a million "[" must be refused, not recursed into.
const maxDepth = 512

// parseError is a JSON syntax problem at a position.
type parseError struct {
	line, col int
	msg       string
}

// parseJSON decodes data (one JSON value, nothing after it) into a node tree.
func parseJSON(data []byte) (*node, *parseError) {
	p := &parser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	root, err := p.value(0)
	if err != nil {
		return nil, err
	}
	off := p.next()
	if _, e := p.dec.Token(); e != io.EOF {
		line, col := position(data, off)
		return nil, &parseError{line, col, "unexpected data after the top-level JSON value: a manifest is one JSON object"}
	}
	return root, nil
}

type parser struct {
	data []byte
	dec  *json.Decoder
	// The last position computed: offsets only grow while parsing, so each
	// position is counted on from the previous one, not from the start.
	off, line, col int
}

// pos returns the line and column of offset off, counting on from the last
// position asked for (offsets asked for never decrease).
func (p *parser) pos(off int) (line, col int) {
	if p.line == 0 {
		p.line, p.col = 1, 1
	}
	if off < p.off {
		return position(p.data, off)
	}
	for ; p.off < off && p.off < len(p.data); p.off++ {
		switch c := p.data[p.off]; {
		case c == '\n':
			p.line, p.col = p.line+1, 1
		case c&0xC0 != 0x80: // not a UTF-8 continuation byte: a new character
			p.col++
		}
	}
	return p.line, p.col
}

// next returns the offset where the next token starts: after the end of the
// last token, past white space and the ':' or ',' separators.
func (p *parser) next() int {
	off := int(p.dec.InputOffset())
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ':', ',':
			off++
			continue
		}
		break
	}
	return off
}

func (p *parser) fail(err error) *parseError {
	off, msg := p.next(), err.Error()
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		off, msg = len(p.data), "unexpected end of file: the JSON is cut short (a missing '}' or ']'?)"
	case errors.As(err, &se):
		// The token decoder's offsets leave out the bytes of delimiters, so
		// they are not positions; checking the whole input gives an exact one
		// (the offset of a syntax error is just past the offending byte).
		var raw json.RawMessage
		if e := json.Unmarshal(p.data, &raw); errors.As(e, &se) {
			msg = se.Error()
			off = int(se.Offset) - 1
			if int(se.Offset) >= len(p.data) {
				off, msg = len(p.data), "unexpected end of file: the JSON is cut short (a missing '}' or ']'?)"
			}
		}
	}
	line, col := position(p.data, off)
	return &parseError{line, col, "invalid JSON: " + msg + "; fix the JSON syntax"}
}

// value reads one value whose first token is next in the stream.
func (p *parser) value(depth int) (*node, *parseError) {
	if depth > maxDepth {
		line, col := p.pos(p.next())
		return nil, &parseError{line, col, fmt.Sprintf("nesting deeper than %d levels: this is not an Agent OS manifest", maxDepth)}
	}
	line, col := p.pos(p.next())
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.fail(err)
	}
	n := &node{line: line, col: col}
	switch t := tok.(type) {
	case nil:
		n.kind = kindNull
	case bool:
		n.kind, n.b = kindBool, t
	case json.Number:
		n.kind, n.num = kindNumber, t
	case string:
		n.kind, n.str = kindString, t
	case json.Delim:
		if perr := p.collection(n, t, depth); perr != nil {
			return nil, perr
		}
	}
	return n, nil
}

// collection reads the values of an array or object whose opening
// delimiter was just read, and its closing delimiter.
func (p *parser) collection(n *node, open json.Delim, depth int) *parseError {
	var perr *parseError
	switch open {
	case '[':
		n.kind = kindArray
		perr = p.items(n, depth)
	case '{':
		n.kind = kindObject
		perr = p.members(n, depth)
	default:
		return p.fail(fmt.Errorf("unexpected %q", rune(open)))
	}
	if perr != nil {
		return perr
	}
	if _, err := p.dec.Token(); err != nil { // the closing delimiter
		return p.fail(err)
	}
	return nil
}

// items reads an array's values.
func (p *parser) items(n *node, depth int) *parseError {
	for p.dec.More() {
		it, perr := p.value(depth + 1)
		if perr != nil {
			return perr
		}
		n.items = append(n.items, it)
	}
	return nil
}

// members reads an object's keys and values.
func (p *parser) members(n *node, depth int) *parseError {
	for p.dec.More() {
		kt, err := p.dec.Token()
		if err != nil {
			return p.fail(err)
		}
		key, ok := kt.(string)
		if !ok { // the decoder reports this itself; kept for safety
			return p.fail(fmt.Errorf("object key is not a string"))
		}
		v, perr := p.value(depth + 1)
		if perr != nil {
			return perr
		}
		n.keys = append(n.keys, key)
		n.vals = append(n.vals, v)
	}
	return nil
}

// position converts a byte offset of data to a 1-based line and column, the
// column counted in characters (a tab is one column).
func position(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return line, 1 + utf8.RuneCount(data[start:off])
}
