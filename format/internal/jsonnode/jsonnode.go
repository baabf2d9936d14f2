// Package jsonnode parses a JSON document into the yaml.Node tree that
// gopkg.in/yaml.v3 makes of it, with the same kinds, tags, styles, values,
// lines and columns, several times faster than the YAML parser (JSON is
// YAML, but the YAML parser reads it a character at a time through a
// general grammar). Readers that accept YAML or JSON and report positions
// from the node tree use it for JSON and get the same answers.
package jsonnode

import (
	"bytes"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxDepth bounds nesting, as the YAML parser's own limit does (a deeper
// document is left to it, which refuses it with its message).
const maxDepth = 1000

// errDecline says the document is one Parse leaves to the YAML parser.
var errDecline = errors.New("jsonnode: not plain JSON")

// Parse returns the document node of data when data is exactly one JSON
// value (and whitespace), as yaml.v3 decodes it; ok is false for anything
// else — invalid JSON, several values, nesting deeper than the YAML parser
// accepts, or what the two parsers read differently (see readsAlike) —
// which the caller hands to the YAML parser for its answer or its error.
func Parse(data []byte) (doc *yaml.Node, ok bool) {
	if !readsAlike(data) {
		return nil, false
	}
	p := &parser{data: data, line: 1, col: 1}
	root, err := p.value(0)
	if err != nil {
		return nil, false
	}
	if p.skipSpace(); p.off != len(data) {
		return nil, false // more than one value
	}
	return &yaml.Node{Kind: yaml.DocumentNode, Line: root.Line, Column: root.Column, Content: []*yaml.Node{root}}, true
}

// parser reads data from off on; line and col (1-based, the column in
// characters) are off's position.
type parser struct {
	data           []byte
	off, line, col int
}

// skipSpace moves past JSON whitespace, counting lines.
func (p *parser) skipSpace() {
	for p.off < len(p.data) {
		switch p.data[p.off] {
		case '\n':
			p.line, p.col = p.line+1, 1
		case ' ', '\t', '\r':
			p.col++
		default:
			return
		}
		p.off++
	}
}

// advance moves past the n bytes of a token that holds no line break,
// counting its characters.
func (p *parser) advance(n int) {
	for _, b := range p.data[p.off : p.off+n] {
		if utf8.RuneStart(b) {
			p.col++
		}
	}
	p.off += n
}

// expect moves past the byte c after whitespace, or fails.
func (p *parser) expect(c byte) error {
	p.skipSpace()
	if p.off >= len(p.data) || p.data[p.off] != c {
		return errDecline
	}
	p.advance(1)
	return nil
}

// value reads the next value into a node.
func (p *parser) value(depth int) (*yaml.Node, error) {
	if depth > maxDepth {
		return nil, errDecline
	}
	p.skipSpace()
	if p.off >= len(p.data) {
		return nil, errDecline
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Line: p.line, Column: p.col}
	switch c := p.data[p.off]; {
	case c == '{' || c == '[':
		return n, p.collection(n, depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		n.Tag, n.Style, n.Value = "!!str", yaml.DoubleQuotedStyle, s
	case c == '-' || '0' <= c && c <= '9':
		num, err := p.number()
		if err != nil {
			return nil, err
		}
		n.Value = num
		n.Tag = n.ShortTag() // !!int or !!float, by YAML's own rules
	default:
		for _, lit := range [...]struct{ text, tag string }{{"true", "!!bool"}, {"false", "!!bool"}, {"null", "!!null"}} {
			if bytes.HasPrefix(p.data[p.off:], []byte(lit.text)) {
				p.advance(len(lit.text))
				n.Tag, n.Value = lit.tag, lit.text
				return n, nil
			}
		}
		return nil, errDecline
	}
	return n, nil
}

// collection reads an object's members or an array's items into n, from
// its opening delimiter to its closing one.
func (p *parser) collection(n *yaml.Node, depth int) error {
	n.Style, n.Kind, n.Tag = yaml.FlowStyle, yaml.SequenceNode, "!!seq"
	end := byte(']')
	if p.data[p.off] == '{' {
		n.Kind, n.Tag, end = yaml.MappingNode, "!!map", '}'
	}
	p.advance(1)
	p.skipSpace()
	if p.off < len(p.data) && p.data[p.off] == end {
		p.advance(1)
		return nil
	}
	for {
		if n.Kind == yaml.MappingNode {
			p.skipSpace()
			if p.off >= len(p.data) || p.data[p.off] != '"' {
				return errDecline // a key is a string
			}
			k, err := p.value(depth + 1)
			if err != nil {
				return err
			}
			if err := p.expect(':'); err != nil {
				return err
			}
			n.Content = append(n.Content, k)
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return err
		}
		n.Content = append(n.Content, v)
		p.skipSpace()
		if p.off >= len(p.data) {
			return errDecline
		}
		switch p.data[p.off] {
		case ',':
			p.advance(1)
		case end:
			p.advance(1)
			return nil
		default:
			return errDecline
		}
	}
}

// str reads a string from its opening quote to its closing one and
// returns its value (escapes decoded).
func (p *parser) str() (string, error) {
	start := p.off + 1
	i := start
	plain := true // no escape: the value is the bytes as they are
	for ; i < len(p.data); i++ {
		switch c := p.data[i]; {
		case c == '"':
			raw := p.data[start:i]
			p.advance(i + 1 - p.off)
			if plain {
				return string(raw), nil
			}
			return unescape(raw)
		case c == '\\':
			plain = false
			i++ // the escaped character: never the closing quote
		case c < 0x20:
			return "", errDecline // JSON has no raw control character in a string
		}
	}
	return "", errDecline
}

// unescape decodes the escapes of a string's raw text.
func unescape(raw []byte) (string, error) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(raw) {
			return "", errDecline
		}
		switch raw[i] {
		case '"', '\\', '/':
			out = append(out, raw[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw, i+1)
			if !ok {
				return "", errDecline
			}
			i += 4
			if utf16.IsSurrogate(r) {
				// A character beyond the BMP is escaped as a pair (as
				// Python's json.dumps writes every one); a lone half is
				// left to the YAML parser, which refuses it.
				lo, ok := rune(0), i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u'
				if ok {
					lo, ok = hex4(raw, i+3)
				}
				if r = utf16.DecodeRune(r, lo); !ok || r == utf8.RuneError {
					return "", errDecline
				}
				i += 6
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", errDecline
		}
	}
	return string(out), nil
}

// hex4 reads the four hex digits of a \u escape at raw[at:].
func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	r, err := strconv.ParseUint(string(raw[at:at+4]), 16, 32)
	return rune(r), err == nil
}

// number reads a number as JSON writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() (string, error) {
	d := p.data
	i := p.off
	if d[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case digits() == 0:
		return "", errDecline
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			return "", errDecline
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			return "", errDecline
		}
	}
	num := string(d[p.off:i])
	p.advance(i - p.off)
	return num, nil
}

// readsAlike reports whether data holds none of what the YAML parser reads
// otherwise than JSON: invalid UTF-8 (YAML refuses it and caphub names its
// position) and line breaks YAML counts that JSON does not (a CR alone,
// NEL, LS, PS), which would move every later position. (YAML also refuses
// every surrogate escape, even a pair; Parse reads a pair as JSON does.)
func readsAlike(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for i := bytes.IndexByte(data, '\r'); i >= 0; {
		if i+1 == len(data) || data[i+1] != '\n' {
			return false
		}
		j := bytes.IndexByte(data[i+1:], '\r')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return !bytes.Contains(data, []byte("\u0085")) && !bytes.Contains(data, []byte("\u2028")) && !bytes.Contains(data, []byte("\u2029"))
}
