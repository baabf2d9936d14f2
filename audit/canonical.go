package audit

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds how deeply arrays and objects may nest in Canonicalize,
// so that hostile input cannot exhaust the stack.
const maxDepth = 1000

// Canonicalize returns the canonical form of one JSON text, as the JSON
// Canonicalization Scheme (RFC 8785) defines it:
//
//   - no whitespace between tokens;
//   - object members sorted by name, comparing names as arrays of UTF-16
//     code units (so U+1F600, the surrogates D83D DE00, sorts before
//     U+FB33);
//   - numbers as ECMAScript's Number.prototype.toString writes them: the
//     shortest digits that read back as the same IEEE 754 double, "1e+21"
//     from 1e21, "0.1", "0" from -0, "100" from 1E2;
//   - strings with only '"', '\\' and the control characters U+0000 to
//     U+001F escaped: \b \t \n \f \r by their short forms, the others as
//     \u00XX in lowercase hex; everything else, "/" and U+2028 included, as
//     UTF-8.
//
// The input must be I-JSON (RFC 7493), as RFC 8785 requires: valid UTF-8,
// no duplicate member names, no lone surrogate escapes, and no number
// beyond the range of a double. The error names the byte offset of the
// problem.
func Canonicalize(data []byte) ([]byte, error) {
	p := &canonParser{data: data}
	var out bytes.Buffer
	out.Grow(len(data))
	p.space()
	if err := p.value(&out, 0); err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(p.data) {
		return nil, p.errorf("unexpected %s after the JSON value", p.describe())
	}
	return out.Bytes(), nil
}

// canonParser reads one JSON text and writes its canonical form.
type canonParser struct {
	data []byte
	pos  int
}

func (p *canonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("canonical JSON: offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// describe names the byte at the current position for messages.
func (p *canonParser) describe() string {
	if p.pos >= len(p.data) {
		return "end of input"
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return strconv.QuoteRune(r)
}

// space skips the whitespace RFC 8259 allows between tokens.
func (p *canonParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *canonParser) value(out *bytes.Buffer, depth int) error {
	if p.pos >= len(p.data) {
		return p.errorf("unexpected end of input: expected a JSON value")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(out, depth+1)
	case c == '[':
		return p.array(out, depth+1)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		writeString(out, s)
		return nil
	case c == '-' || c >= '0' && c <= '9':
		return p.number(out)
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
				p.pos += len(lit)
				out.WriteString(lit)
				return nil
			}
		}
		return p.errorf("unexpected %s: expected a JSON value", p.describe())
	}
}

// member is one object member: its name and its canonical value.
type member struct {
	name  string
	value []byte
}

func (p *canonParser) object(out *bytes.Buffer, depth int) error {
	if depth > maxDepth {
		return p.errorf("arrays and objects nest more than %d deep", maxDepth)
	}
	p.pos++ // {
	var members []member
	seen := map[string]bool{}
	p.space()
	if p.skipByte('}') {
		out.WriteString("{}")
		return nil
	}
	for {
		m, err := p.member(depth, seen)
		if err != nil {
			return err
		}
		members = append(members, m)
		p.space()
		if p.pos >= len(p.data) {
			return p.errorf("unexpected end of input: expected ',' or '}'")
		}
		if p.skipByte('}') {
			break
		}
		if !p.skipByte(',') {
			return p.errorf("unexpected %s: expected ',' or '}'", p.describe())
		}
	}
	writeObject(out, members)
	return nil
}

// member reads one member of an object, name and value, refusing a name
// already seen.
func (p *canonParser) member(depth int, seen map[string]bool) (member, error) {
	p.space()
	if p.pos >= len(p.data) || p.data[p.pos] != '"' {
		return member{}, p.errorf("unexpected %s: expected a member name (a string)", p.describe())
	}
	at := p.pos
	name, err := p.str()
	if err != nil {
		return member{}, err
	}
	if seen[name] {
		p.pos = at
		return member{}, p.errorf("duplicate member name %q: I-JSON (RFC 7493) objects have unique names", name)
	}
	seen[name] = true
	p.space()
	if !p.skipByte(':') {
		return member{}, p.errorf("unexpected %s: expected ':' after a member name", p.describe())
	}
	p.space()
	var v bytes.Buffer
	if err := p.value(&v, depth); err != nil {
		return member{}, err
	}
	return member{name, v.Bytes()}, nil
}

// writeObject writes the members in RFC 8785 order (by the UTF-16 code
// units of their names).
func writeObject(out *bytes.Buffer, members []member) {
	slices.SortFunc(members, func(a, b member) int { return compareUTF16(a.name, b.name) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		writeString(out, m.name)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
}

func (p *canonParser) array(out *bytes.Buffer, depth int) error {
	if depth > maxDepth {
		return p.errorf("arrays and objects nest more than %d deep", maxDepth)
	}
	p.pos++ // [
	out.WriteByte('[')
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		out.WriteByte(']')
		return nil
	}
	for first := true; ; first = false {
		if !first {
			out.WriteByte(',')
		}
		p.space()
		if err := p.value(out, depth); err != nil {
			return err
		}
		p.space()
		if p.pos >= len(p.data) {
			return p.errorf("unexpected end of input: expected ',' or ']'")
		}
		if p.data[p.pos] == ']' {
			p.pos++
			out.WriteByte(']')
			return nil
		}
		if p.data[p.pos] != ',' {
			return p.errorf("unexpected %s: expected ',' or ']'", p.describe())
		}
		p.pos++
	}
}

// str reads a string token and returns its decoded value.
func (p *canonParser) str() (string, error) {
	p.pos++ // "
	var b strings.Builder
	for {
		if p.pos >= len(p.data) {
			return "", p.errorf("unexpected end of input in a string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
		case c < 0x20:
			return "", p.errorf("control character U+%04X in a string: write it escaped (\\u%04x)", c, c)
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", p.errorf("invalid UTF-8 in a string: JSON text is UTF-8 (RFC 8259)")
			}
			b.WriteRune(r)
			p.pos += size
		}
	}
}

// shortEscapes are the one-letter escape sequences and the runes they
// stand for.
var shortEscapes = map[byte]rune{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape reads one escape sequence (at the backslash) and returns the rune
// it stands for; a surrogate pair in two \u escapes makes one rune.
func (p *canonParser) escape() (rune, error) {
	if p.pos+1 >= len(p.data) {
		return 0, p.errorf("unexpected end of input in an escape sequence")
	}
	c := p.data[p.pos+1]
	if r, ok := shortEscapes[c]; ok {
		p.pos += 2
		return r, nil
	}
	if c != 'u' {
		return 0, p.errorf("invalid escape sequence \\%c", c)
	}
	r, err := p.hex4()
	if err != nil {
		return 0, err
	}
	switch {
	case utf16.IsSurrogate(r) && r < 0xDC00: // high surrogate: a low one must follow
		return p.lowSurrogate(r)
	case utf16.IsSurrogate(r):
		p.pos -= 6
		return 0, p.errorf("lone surrogate \\u%04x: I-JSON (RFC 7493) strings hold only Unicode characters", r)
	}
	return r, nil
}

// lowSurrogate reads the \u escape of the low surrogate that must follow
// the high surrogate hi (just read) and returns the rune of the pair.
func (p *canonParser) lowSurrogate(hi rune) (rune, error) {
	at := p.pos - 6
	if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
		lo, err := p.hex4()
		if err != nil {
			return 0, err
		}
		if lo >= 0xDC00 && lo <= 0xDFFF {
			return utf16.DecodeRune(hi, lo), nil
		}
	}
	p.pos = at
	return 0, p.errorf("lone surrogate \\u%04x: I-JSON (RFC 7493) strings hold only Unicode characters", hi)
}

// hex4 reads \uXXXX (at the backslash).
func (p *canonParser) hex4() (rune, error) {
	if p.pos+6 > len(p.data) {
		return 0, p.errorf("unexpected end of input in a \\u escape")
	}
	v, err := strconv.ParseUint(string(p.data[p.pos+2:p.pos+6]), 16, 32)
	if err != nil {
		return 0, p.errorf("invalid \\u escape %q: write four hex digits", p.data[p.pos:p.pos+6])
	}
	p.pos += 6
	return rune(v), nil
}

// number reads a number token (RFC 8259 grammar) and writes its ECMAScript
// form.
func (p *canonParser) number(out *bytes.Buffer) error {
	start := p.pos
	if err := p.numberToken(); err != nil {
		return err
	}
	text := string(p.data[start:p.pos])
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		p.pos = start
		return p.errorf("number %s is beyond the range of an IEEE 754 double, which I-JSON (RFC 7493) numbers must fit: write it as a string", text)
	}
	out.WriteString(FormatNumber(f))
	return nil
}

// numberToken moves past a number token: sign, integer part, fraction
// and exponent.
func (p *canonParser) numberToken() error {
	p.skipByte('-')
	switch {
	case p.skipByte('0'):
	case p.digits() == 0:
		return p.errorf("invalid number: expected a digit")
	}
	if p.skipByte('.') && p.digits() == 0 {
		return p.errorf("invalid number: expected a digit after '.'")
	}
	if p.skipByte('e') || p.skipByte('E') {
		if !p.skipByte('+') {
			p.skipByte('-')
		}
		if p.digits() == 0 {
			return p.errorf("invalid number: expected a digit in the exponent")
		}
	}
	return nil
}

// skipByte moves past c when it is next, and reports whether it was.
func (p *canonParser) skipByte(c byte) bool {
	if p.pos < len(p.data) && p.data[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// digits moves past a run of decimal digits and returns its length.
func (p *canonParser) digits() int {
	n := 0
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}

// FormatNumber writes a finite double as ECMAScript's
// Number.prototype.toString does, which RFC 8785 uses for JSON numbers:
// the shortest decimal digits that read back as f; plain notation for
// magnitudes in [1e-6, 1e21), otherwise exponent notation ("1e+21",
// "1.5e-7"); -0 as "0". It panics on NaN and infinities, which JSON cannot
// write.
func FormatNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		panic("audit.FormatNumber: " + strconv.FormatFloat(f, 'g', -1, 64) + " is not a JSON number")
	}
	var buf [32]byte
	return string(appendNumber(buf[:0], f))
}

// maxExactInt is 2^53: every integer of smaller magnitude is a float64
// exactly, and ECMAScript writes it as its plain digits.
const maxExactInt = 1 << 53

// appendNumber appends f (finite) as FormatNumber writes it, with no
// allocation of its own: the invocation records the audit writer encodes
// hold three numbers each (recordJSON).
func appendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0') // and -0
	}
	if f == math.Trunc(f) && f > -maxExactInt && f < maxExactInt {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Go's shortest round-trip digits are ECMAScript's: d.ddde±XX.
	var eb [32]byte
	e := strconv.AppendFloat(eb[:0], f, 'e', -1, 64)
	at := bytes.IndexByte(e, 'e')
	x := 0 // the exponent: e±XX
	for _, c := range e[at+2:] {
		x = 10*x + int(c-'0')
	}
	if e[at+1] == '-' {
		x = -x
	}
	var db [24]byte
	digits := append(db[:0], e[0])
	if at > 1 {
		digits = append(digits, e[2:at]...) // after the point
	}
	k, n := len(digits), x+1 // f = 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, "0."...)
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// writeString writes s as an RFC 8785 string.
func writeString(out *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	out.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\b':
			out.WriteString(`\b`)
		case '\f':
			out.WriteString(`\f`)
		case '\n':
			out.WriteString(`\n`)
		case '\r':
			out.WriteString(`\r`)
		case '\t':
			out.WriteString(`\t`)
		default:
			if c < 0x20 {
				out.WriteString(`\u00`)
				out.WriteByte(hex[c>>4])
				out.WriteByte(hex[c&0xf])
			} else {
				out.WriteByte(c)
			}
		}
	}
	out.WriteByte('"')
}

// compareUTF16 compares two strings as arrays of UTF-16 code units, the
// order RFC 8785 sorts member names in. It differs from byte (code point)
// order only where a character above U+FFFF, whose high surrogate is
// D800–DBFF, meets one in E000–FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return cmp.Compare(utf16Units(ra), utf16Units(rb))
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// utf16Units returns the UTF-16 code units of r, the first in the high 16
// bits, so that comparing two runes' values compares their code units in
// order.
func utf16Units(r rune) uint32 {
	if r >= 0x10000 {
		hi, lo := utf16.EncodeRune(r)
		return uint32(hi)<<16 | uint32(lo)
	}
	return uint32(r) << 16
}
