// Package jsoncheck finds what encoding/json lets through silently in a
// JSON document: a key written twice in one object (encoding/json keeps the
// last value, other readers the first), invalid UTF-8 and lone UTF-16
// surrogate escapes (both decoded as U+FFFD, changing the text). The
// readers of user files (Agent OS manifests, OpenAPI documents) refuse
// them, as the OSSA, agent and RTFS readers do, with the position and the
// path of the offending value.
package jsoncheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is one problem, at a 1-based line and column (the column counted
// in characters) and the dotted path of the value it concerns
// ("paths./pets.get.operationId", "capabilities[2].id"; "" for the
// document itself).
type Error struct {
	Line, Column int
	Path         string
	Message      string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// frame is one open object or array.
type frame struct {
	object bool
	keys   map[string]int // object: the line of each key seen
	key    string         // object: the current key ("" before the first)
	hasKey bool
	index  int  // array: the current item
	want   bool // object: the next string is a key
}

// checker scans a document once.
type checker struct {
	data  []byte
	pos   int
	line  int // the line of pos, counted as the scan goes
	stack []frame
}

// Check returns the first duplicate key, invalid UTF-8 sequence or lone
// surrogate escape of data, nil when there is none. data should be JSON
// that a decoder accepted (Check does not report syntax errors); on any
// other bytes it still returns, without panicking.
func Check(data []byte) *Error {
	c := &checker{data: data, line: 1}
	return c.run()
}

func (c *checker) run() *Error {
	for c.pos < len(c.data) {
		b := c.data[c.pos]
		switch b {
		case '{':
			c.stack = append(c.stack, frame{object: true, want: true})
		case '[':
			c.stack = append(c.stack, frame{})
		case '}', ']':
			if len(c.stack) > 0 {
				c.stack = c.stack[:len(c.stack)-1]
			}
		case ',':
			if n := len(c.stack); n > 0 {
				if c.stack[n-1].object {
					c.stack[n-1].want = true
				} else {
					c.stack[n-1].index++
				}
			}
		case '"':
			if err := c.str(); err != nil {
				return err
			}
			continue // str moved past the closing quote
		case '\n':
			c.line++
		default:
			if b >= utf8.RuneSelf {
				if err := c.multibyte(); err != nil {
					return err
				}
				continue
			}
		}
		c.pos++
	}
	return nil
}

// multibyte checks the UTF-8 sequence at c.pos and moves past it.
func (c *checker) multibyte() *Error {
	if err := c.utf8At(c.pos); err != nil {
		return err
	}
	_, n := utf8.DecodeRune(c.data[c.pos:])
	c.pos += n
	return nil
}

// str reads the string starting at c.pos (its opening quote): a key is
// checked against the keys of its object, and every string's text for
// invalid UTF-8 and lone surrogates.
func (c *checker) str() *Error {
	start, line := c.pos, c.line
	c.pos++
	escaped := false
	for c.pos < len(c.data) {
		b := c.data[c.pos]
		switch {
		case b == '"':
			c.pos++
			return c.stringDone(start, line, escaped)
		case b == '\n': // invalid in a string, but counted all the same
			c.line++
		case b == '\\':
			escaped = true
			if err := c.escape(); err != nil {
				return err
			}
			continue
		case b >= utf8.RuneSelf:
			if err := c.multibyte(); err != nil {
				return err
			}
			continue
		}
		c.pos++
	}
	return nil // unterminated: a syntax error the decoder reports
}

// escape steps over the escape sequence at c.pos, refusing a \u escape of
// a lone surrogate (a high one not followed by a low one, or a low one
// alone), which decoders turn into U+FFFD.
func (c *checker) escape() *Error {
	at := c.pos
	if c.pos+1 >= len(c.data) || c.data[c.pos+1] != 'u' {
		c.pos += 2
		return nil
	}
	r, ok := hex4(c.data, c.pos+2)
	if !ok {
		c.pos += 2
		return nil
	}
	c.pos += 6
	switch {
	case r >= 0xD800 && r < 0xDC00:
		if c.pos+1 < len(c.data) && c.data[c.pos] == '\\' && c.data[c.pos+1] == 'u' {
			if r2, ok := hex4(c.data, c.pos+2); ok && r2 >= 0xDC00 && r2 < 0xE000 {
				c.pos += 6
				return nil
			}
		}
		return c.errorf(at, `\u%04X is half of a UTF-16 surrogate pair without its other half: it is not a character (a decoder would replace it with U+FFFD); fix the escape`, r)
	case r >= 0xDC00 && r < 0xE000:
		return c.errorf(at, `\u%04X is half of a UTF-16 surrogate pair without its other half: it is not a character (a decoder would replace it with U+FFFD); fix the escape`, r)
	}
	return nil
}

func hex4(data []byte, at int) (rune, bool) {
	if at+4 > len(data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(data[at:at+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}

// utf8At refuses an invalid UTF-8 sequence at off.
func (c *checker) utf8At(off int) *Error {
	if r, n := utf8.DecodeRune(c.data[off:]); r == utf8.RuneError && n <= 1 {
		return c.errorf(off, "invalid UTF-8 byte 0x%02X: save the file as UTF-8 (a decoder would replace it with U+FFFD)", c.data[off])
	}
	return nil
}

// stringDone handles a string that ended: in key position it becomes the
// current key of its object, and a key seen before in that object is an
// error.
func (c *checker) stringDone(start, line int, escaped bool) *Error {
	n := len(c.stack)
	if n == 0 || !c.stack[n-1].object || !c.stack[n-1].want {
		return nil
	}
	f := &c.stack[n-1]
	raw := c.data[start:c.pos]
	key := string(raw[1 : len(raw)-1])
	if escaped {
		if err := json.Unmarshal(raw, &key); err != nil {
			return nil // not a valid string: the decoder reports it
		}
	}
	f.want = false
	f.key, f.hasKey = key, true
	if first, dup := f.keys[key]; dup {
		return c.errorf(start, "key %q is already defined at line %d: remove one of them", key, first)
	}
	if f.keys == nil {
		f.keys = map[string]int{}
	}
	f.keys[key] = line
	return nil
}

func (c *checker) errorf(off int, format string, args ...any) *Error {
	line, col := Position(c.data, off)
	return &Error{Line: line, Column: col, Path: c.path(), Message: fmt.Sprintf(format, args...)}
}

// path joins the keys and indexes of the open objects and arrays; while a
// key is being read, the path is its object's.
func (c *checker) path() string {
	var b strings.Builder
	for _, f := range c.stack {
		switch {
		case f.object && f.hasKey && !f.want:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		case !f.object:
			fmt.Fprintf(&b, "[%d]", f.index)
		}
	}
	return b.String()
}

// Position converts a byte offset of data to a 1-based line and column, the
// column counted in characters.
func Position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return line, 1 + utf8.RuneCount(data[start:off])
}

// InvalidUTF8 returns the offset of the first byte of data that is not
// valid UTF-8, -1 when all of it is.
func InvalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for off := 0; off < len(data); {
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n <= 1 {
			return off
		}
		off += n
	}
	return -1
}
