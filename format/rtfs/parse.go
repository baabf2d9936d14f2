package rtfs

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/caphub/caphub/format/internal/naming"
)

// Kind is the kind of an RTFS value.
type Kind uint8

// The kinds of Value.
const (
	KindNil       Kind = iota + 1 // nil
	KindBool                      // true, false (Bool)
	KindInt                       // 42, -7, +3 (Int)
	KindFloat                     // 1.5, -2e10, ##Inf, ##-Inf, ##NaN (Float)
	KindString                    // "text" (Str holds the decoded text)
	KindKeyword                   // :name, :ns/name, :string? (Str holds the name without ':')
	KindSymbol                    // name, ns/name, + (Str)
	KindTimestamp                 // 2025-10-23T21:35:43Z (Str holds the text)
	KindUUID                      // 123e4567-e89b-12d3-a456-426614174000 (Str)
	KindList                      // ( … ) (Items)
	KindVector                    // [ … ] (Items)
	KindMap                       // { k v … } (Items: keys and values alternating)
	KindPrefixed                  // a reader macro: 'x `x ~x ~@x @x #(…) ^meta x (Str: the prefix; Items: its forms)
)

var kindNames = map[Kind]string{
	KindNil: "nil", KindBool: "boolean", KindInt: "integer", KindFloat: "float", KindString: "string",
	KindKeyword: "keyword", KindSymbol: "symbol", KindTimestamp: "timestamp", KindUUID: "uuid",
	KindList: "list", KindVector: "vector", KindMap: "map", KindPrefixed: "reader macro",
}

func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Value is one RTFS form with its position in the source.
type Value struct {
	Kind Kind
	// Line and Column (1-based; the column counts characters) locate the
	// first character of the form.
	Line, Column int
	// Offset and End are the byte offsets of the form in the source: the
	// exact text of the form is data[Offset:End] (see Text).
	Offset, End int

	Str   string  // KindString: the decoded text; KindKeyword, KindSymbol: the name; KindTimestamp, KindUUID: the text; KindPrefixed: the prefix
	Int   int64   // KindInt
	Float float64 // KindFloat
	Bool  bool    // KindBool
	Items []Value // KindList, KindVector, KindMap (k1 v1 k2 v2 …), KindPrefixed

	// Comment is the text of a `;` comment that follows the form on the same
	// line, without the semicolons and surrounding blanks. In a brace-map
	// type, `:k :string ;; optional` marks the key optional.
	Comment string
}

// Text returns the exact source text of v from the data it was parsed from.
func (v Value) Text(data []byte) string {
	if v.Offset < 0 || v.End > len(data) || v.Offset > v.End {
		return ""
	}
	return string(data[v.Offset:v.End])
}

// Pos returns "line:column".
func (v Value) Pos() string { return fmt.Sprintf("%d:%d", v.Line, v.Column) }

// IsKeyword reports whether v is the keyword :name.
func (v Value) IsKeyword(name string) bool { return v.Kind == KindKeyword && v.Str == name }

// IsSymbol reports whether v is the symbol name.
func (v Value) IsSymbol(name string) bool { return v.Kind == KindSymbol && v.Str == name }

// Describe names v for messages: `keyword :foo`, `list (…)`, `string "x"`.
func (v Value) Describe() string {
	if describe, ok := describers[v.Kind]; ok {
		return describe(v)
	}
	return v.Kind.String() + " " + v.Str
}

// describers name a value of each kind for Describe.
var describers = map[Kind]func(v Value) string{
	KindKeyword: func(v Value) string { return "keyword :" + v.Str },
	KindSymbol:  func(v Value) string { return "symbol " + v.Str },
	KindString: func(v Value) string {
		s := v.Str
		if utf8.RuneCountInString(s) > 40 {
			s = string([]rune(s)[:39]) + "…"
		}
		return "string " + strconv.Quote(s)
	},
	KindInt:      func(v Value) string { return "integer " + strconv.FormatInt(v.Int, 10) },
	KindFloat:    func(v Value) string { return "float " + strconv.FormatFloat(v.Float, 'g', -1, 64) },
	KindBool:     func(v Value) string { return "boolean " + strconv.FormatBool(v.Bool) },
	KindNil:      func(Value) string { return "nil" },
	KindList:     func(Value) string { return "list (…)" },
	KindVector:   func(Value) string { return "vector […]" },
	KindMap:      func(Value) string { return "map {…}" },
	KindPrefixed: func(v Value) string { return "reader macro " + v.Str },
}

// SyntaxError is a problem that stops a file from being read. Line and
// Column (1-based, characters) say where it is; Message says what is wrong
// and what to do.
type SyntaxError struct {
	File         string
	Line, Column int
	Message      string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
}

// MaxDepth bounds the nesting of collections and reader macros, so that a
// pathological input cannot exhaust the stack.
const MaxDepth = 512

// Parse reads every top-level form of an RTFS source. name is the file name
// used in errors. It never panics; every error is a *SyntaxError.
//
// The syntax is RTFS 2.0's (Clojure's, minus sets): `;` line comments and
// `#| … |#` block comments; commas are whitespace; strings with the escapes
// \n \t \r \b \f \" \\ \/ \0 and \uXXXX (other escaped characters are kept
// with their backslash, as RTFS does); keywords (:name, :ns/name, :string?);
// symbols; integers and floats with sign and exponent, ##Inf ##-Inf ##NaN;
// true, false and nil; timestamps and UUIDs; lists, vectors and maps; and the
// reader macros 'x `x ~x ~@x @x #(…) and ^meta x.
func Parse(name string, data []byte) ([]Value, error) {
	out, err := parse(name, data, false)
	if err == nil {
		return out, nil
	}
	// Some CCOS-generated files hold descriptions with unescaped quotes
	// ("… If "event" parameter is …"). When the strict reading fails, read
	// again taking a quote inside a :description string as closing it only
	// when what follows can come after a string (a keyword, a closing
	// bracket, another string, a comment or the end); if that reading
	// succeeds, use it.
	if lenient, lerr := parse(name, data, true); lerr == nil {
		return lenient, nil
	}
	return nil, err
}

func parse(name string, data []byte, lenient bool) ([]Value, error) {
	p := &parser{name: name, data: data, line: 1, col: 1, lenient: lenient}
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		p.pos = 3 // a UTF-8 byte order mark
	}
	var out []Value
	for {
		if err := p.skip(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.data) {
			return out, nil
		}
		c := p.data[p.pos]
		if c == ')' || c == ']' || c == '}' {
			return nil, p.errorf(p.line, p.col, "unexpected %q: no bracket is open here; remove it", string(c))
		}
		v, err := p.form()
		if err != nil {
			return nil, err
		}
		p.trailingComment(&v)
		out = append(out, v)
	}
}

type parser struct {
	name      string
	data      []byte
	pos       int
	line, col int
	depth     int
	stack     []Value // items of the collections being read
	lenient   bool    // quotes inside description strings need not be escaped (see Parse)
	base      int     // where the innermost collection's items start on stack
}

// closesString reports whether the quote at p.pos ends the string being
// read: always in strict reading; in lenient reading only when the next
// thing after it can follow a string.
func (p *parser) closesString() bool {
	if !p.lenient || len(p.stack) <= p.base {
		return true
	}
	// Only a :description value is read this way: code strings such as
	// (str "Bearer " token) end at their first quote.
	if prev := p.stack[len(p.stack)-1]; prev.Kind != KindKeyword || prev.Str != "description" {
		return true
	}
	for i := p.pos + 1; i < len(p.data); i++ {
		switch c := p.data[i]; c {
		case ' ', '\t', '\n', '\r', ',':
			continue
		case ':', ')', ']', '}', '"', ';':
			return true
		default:
			return false
		}
	}
	return true
}

func (p *parser) errorf(line, col int, format string, args ...any) error {
	return &SyntaxError{File: p.name, Line: line, Column: col, Message: fmt.Sprintf(format, args...)}
}

// advance moves past one character, keeping line and column.
func (p *parser) advance() {
	if p.pos >= len(p.data) {
		return
	}
	c := p.data[p.pos]
	if c == '\n' {
		p.pos++
		p.line++
		p.col = 1
		return
	}
	if c < utf8.RuneSelf {
		p.pos++
	} else {
		_, n := utf8.DecodeRune(p.data[p.pos:])
		p.pos += n
	}
	p.col++
}

func isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v', ',':
		return true
	}
	return false
}

// isDelimiter reports whether c ends a token.
func isDelimiter(c byte) bool {
	if isSpace(c) {
		return true
	}
	switch c {
	case '(', ')', '[', ']', '{', '}', '"', ';':
		return true
	}
	return false
}

// checkUTF8 reports invalid UTF-8 at the current position.
func (p *parser) checkUTF8() error {
	if c := p.data[p.pos]; c >= utf8.RuneSelf {
		if r, n := utf8.DecodeRune(p.data[p.pos:]); r == utf8.RuneError && n <= 1 {
			return p.errorf(p.line, p.col, "invalid UTF-8 byte 0x%02x: save the file as UTF-8", c)
		}
	}
	return nil
}

// skip passes whitespace and comments.
func (p *parser) skip() error {
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		var err error
		switch {
		case isSpace(c):
			p.advance()
		case c == ';':
			err = p.lineComment()
		case p.at("#|"):
			err = p.blockComment()
		default:
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// at reports whether the text at the current position starts with s.
func (p *parser) at(s string) bool {
	return len(p.data)-p.pos >= len(s) && string(p.data[p.pos:p.pos+len(s)]) == s
}

// lineComment passes a `;` comment up to the end of the line.
func (p *parser) lineComment() error {
	for p.pos < len(p.data) && p.data[p.pos] != '\n' {
		if err := p.checkUTF8(); err != nil {
			return err
		}
		p.advance()
	}
	return nil
}

// blockComment passes a #| … |# comment.
func (p *parser) blockComment() error {
	line, col := p.line, p.col
	p.advance()
	p.advance()
	for {
		if p.pos >= len(p.data) {
			return p.errorf(line, col, "block comment #| is never closed: add |# where it ends")
		}
		if p.at("|#") {
			p.advance()
			p.advance()
			return nil
		}
		if err := p.checkUTF8(); err != nil {
			return err
		}
		p.advance()
	}
}

// trailingComment attaches a `;` comment on the rest of the current line to v.
func (p *parser) trailingComment(v *Value) {
	i := p.pos
	for i < len(p.data) && (p.data[i] == ' ' || p.data[i] == '\t' || p.data[i] == ',') {
		i++
	}
	if i >= len(p.data) || p.data[i] != ';' {
		return
	}
	j := i
	for j < len(p.data) && p.data[j] != '\n' {
		j++
	}
	text := strings.TrimLeft(string(p.data[i:j]), ";")
	if utf8.ValidString(text) {
		v.Comment = strings.TrimSpace(text)
	}
}

// form reads one form at the current position (which is not blank).
func (p *parser) form() (Value, error) {
	if err := p.checkUTF8(); err != nil {
		return Value{}, err
	}
	line, col, start := p.line, p.col, p.pos
	c := p.data[p.pos]
	switch c {
	case '(', '[', '{':
		return p.collection(c)
	case ')', ']', '}':
		return Value{}, p.errorf(line, col, "unexpected %q: no bracket is open here; remove it", string(c))
	case '"':
		return p.stringLit()
	case '\'', '`', '~', '@', '^':
		return p.readerMacro(c, line, col, start)
	case '#':
		return p.hashForm(line, col, start)
	}
	return p.token()
}

// readerMacro reads 'x `x ~x ~@x @x and ^meta x.
func (p *parser) readerMacro(c byte, line, col, start int) (Value, error) {
	prefix := string(c)
	p.advance()
	if c == '~' && p.pos < len(p.data) && p.data[p.pos] == '@' {
		prefix = "~@"
		p.advance()
	}
	n := 1
	if c == '^' {
		n = 2 // ^meta form
	}
	return p.prefixed(prefix, n, line, col, start)
}

// hashForm reads what starts with '#': #( … ) or ##Inf, ##-Inf, ##NaN.
func (p *parser) hashForm(line, col, start int) (Value, error) {
	switch {
	case p.at("#("):
		p.advance()
		return p.prefixed("#", 1, line, col, start)
	case p.at("##"):
		return p.token()
	}
	next := "the end of the file"
	if p.pos+1 < len(p.data) {
		next = strconv.Quote(string(p.data[p.pos+1]))
	}
	return Value{}, p.errorf(line, col, "unsupported reader macro '#' followed by %s: RTFS knows #( … ), #| … |# and ##Inf, ##-Inf, ##NaN", next)
}

// prefixed reads the n forms after a reader-macro prefix.
func (p *parser) prefixed(prefix string, n, line, col, start int) (Value, error) {
	if p.depth >= MaxDepth {
		return Value{}, p.errorf(line, col, "nesting deeper than %d levels: flatten the data", MaxDepth)
	}
	p.depth++
	defer func() { p.depth-- }()
	v := Value{Kind: KindPrefixed, Str: prefix, Line: line, Column: col, Offset: start}
	for i := 0; i < n; i++ {
		if err := p.skip(); err != nil {
			return Value{}, err
		}
		if p.pos >= len(p.data) {
			return Value{}, p.errorf(line, col, "%s at the end of the file: write the form it applies to after it", prefix)
		}
		if c := p.data[p.pos]; c == ')' || c == ']' || c == '}' {
			return Value{}, p.errorf(line, col, "%s is followed by %q: write the form it applies to after it", prefix, string(c))
		}
		f, err := p.form()
		if err != nil {
			return Value{}, err
		}
		v.Items = append(v.Items, f)
	}
	v.End = p.pos
	return v, nil
}

// collection reads a list, vector or map.
func (p *parser) collection(open byte) (Value, error) {
	line, col, start := p.line, p.col, p.pos
	if p.depth >= MaxDepth {
		return Value{}, p.errorf(line, col, "nesting deeper than %d levels: flatten the data", MaxDepth)
	}
	p.depth++
	defer func() { p.depth-- }()
	kind, closer := collectionKinds[open].kind, collectionKinds[open].closer
	p.advance()
	v := Value{Kind: kind, Line: line, Column: col, Offset: start}
	base := len(p.stack)
	outer := p.base
	p.base = base
	defer func() { p.base = outer }()
	if err := p.items(open, closer, line, col); err != nil {
		return Value{}, err
	}
	// Items gather on a shared stack (inner collections finish first) and
	// are copied out once, at their final size.
	v.Items = append([]Value(nil), p.stack[base:]...)
	p.stack = p.stack[:base]
	v.End = p.pos
	if kind == KindMap && len(v.Items)%2 != 0 {
		last := v.Items[len(v.Items)-1]
		return Value{}, p.errorf(line, col, "map has %d forms, an odd number: every key needs a value (the last form, %s at %s, has none); add the missing key or value",
			len(v.Items), last.Describe(), last.Pos())
	}
	return v, nil
}

// collectionKinds are the kind and closing bracket of each opening one.
var collectionKinds = map[byte]struct {
	kind   Kind
	closer byte
}{'(': {KindList, ')'}, '[': {KindVector, ']'}, '{': {KindMap, '}'}}

// items reads the forms of a collection onto the stack, up to and past its
// closing bracket.
func (p *parser) items(open, closer byte, line, col int) error {
	for {
		if err := p.skip(); err != nil {
			return err
		}
		if p.pos >= len(p.data) {
			return p.errorf(line, col, "%q opened here is never closed (the file ends at %d:%d): add %q", string(open), p.line, p.col, string(closer))
		}
		c := p.data[p.pos]
		if c == closer {
			p.advance()
			return nil
		}
		if c == ')' || c == ']' || c == '}' {
			return p.errorf(p.line, p.col, "%q does not close %q opened at %d:%d: close it with %q first", string(c), string(open), line, col, string(closer))
		}
		item, err := p.form()
		if err != nil {
			return err
		}
		p.trailingComment(&item)
		p.stack = append(p.stack, item)
	}
}

// stringLit reads a string literal.
func (p *parser) stringLit() (Value, error) {
	line, col, start := p.line, p.col, p.pos
	p.advance()
	var b strings.Builder
	for {
		if p.pos >= len(p.data) {
			return Value{}, p.errorf(line, col, "string opened here is never closed: add the closing \"")
		}
		c := p.data[p.pos]
		if c == '"' && p.closesString() {
			p.advance()
			break
		}
		var err error
		if c == '\\' {
			err = p.escape(&b, line, col)
		} else {
			err = p.char(&b, "")
		}
		if err != nil {
			return Value{}, err
		}
	}
	return Value{Kind: KindString, Str: b.String(), Line: line, Column: col, Offset: start, End: p.pos}, nil
}

// char copies the character at the current position to b, after prefix.
func (p *parser) char(b *strings.Builder, prefix string) error {
	if err := p.checkUTF8(); err != nil {
		return err
	}
	s := p.pos
	p.advance()
	b.WriteString(prefix)
	b.Write(p.data[s:p.pos])
	return nil
}

// escapes are the characters of the one-character escapes.
var escapes = map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', 'b': '\b', 'f': '\f', '0': 0, '"': '"', '\\': '\\', '/': '/'}

// escape reads one escape of a string opened at line:col (the parser is on
// the backslash) and writes what it stands for to b.
func (p *parser) escape(b *strings.Builder, line, col int) error {
	eline, ecol := p.line, p.col
	p.advance()
	if p.pos >= len(p.data) {
		return p.errorf(line, col, "string opened here is never closed: add the closing \"")
	}
	e := p.data[p.pos]
	if c, ok := escapes[e]; ok {
		b.WriteByte(c)
		p.advance()
		return nil
	}
	if e != 'u' {
		return p.char(b, "\\") // RTFS keeps unknown escapes as written
	}
	r, err := p.unicodeEscape(eline, ecol)
	if err != nil {
		return err
	}
	b.WriteRune(r)
	return nil
}

// unicodeEscape reads the XXXX of \uXXXX (the parser is on the 'u'), and a
// following low surrogate when XXXX is a high one.
func (p *parser) unicodeEscape(line, col int) (rune, error) {
	r, ok := p.hex4()
	if !ok {
		return 0, p.errorf(line, col, "invalid \\u escape: write \\u and four hexadecimal digits, e.g. \\u00e9")
	}
	switch {
	case r >= 0xD800 && r < 0xDC00:
		return p.lowSurrogate(r, line, col)
	case r >= 0xDC00 && r < 0xE000:
		return 0, p.errorf(line, col, "\\u%04X is a lone low surrogate: write the character itself", r)
	}
	return r, nil
}

// hex4 reads the XXXX after the 'u' of \uXXXX the parser is on, and moves
// past them.
func (p *parser) hex4() (rune, bool) {
	if p.pos+5 > len(p.data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.data[p.pos+1:p.pos+5]), 16, 32)
	if err != nil {
		return 0, false
	}
	for i := 0; i < 5; i++ {
		p.advance()
	}
	return rune(n), true
}

// lowSurrogate reads the \uXXXX low surrogate that must follow the high
// one hi, and returns the character they make.
func (p *parser) lowSurrogate(hi rune, line, col int) (rune, error) {
	if p.at("\\u") {
		p.advance()
		lo, ok := p.hex4()
		if ok && lo >= 0xDC00 && lo < 0xE000 {
			return (hi-0xD800)<<10 + (lo - 0xDC00) + 0x10000, nil
		}
	}
	return 0, p.errorf(line, col, "\\u%04X is half of a UTF-16 surrogate pair without its low half: write the character itself or both halves", hi)
}

var (
	timestampRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}([._]\d+)?(Z|[+-]\d{2}:\d{2})$`)
	uuidRE      = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	numberRE    = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
)

// token reads an atom: number, keyword, symbol, boolean, nil, timestamp, UUID.
func (p *parser) token() (Value, error) {
	line, col, start := p.line, p.col, p.pos
	for p.pos < len(p.data) && !isDelimiter(p.data[p.pos]) {
		if err := p.checkUTF8(); err != nil {
			return Value{}, err
		}
		p.advance()
	}
	text := string(p.data[start:p.pos])
	v := Value{Line: line, Column: col, Offset: start, End: p.pos}
	if a, ok := specialAtoms[text]; ok {
		v.Kind, v.Bool, v.Float = a.Kind, a.Bool, a.Float
		return v, nil
	}
	switch {
	case strings.HasPrefix(text, "##"):
		return Value{}, p.errorf(line, col, "%q is not a special number: write ##Inf, ##-Inf or ##NaN", text)
	case timestampRE.MatchString(text):
		v.Kind, v.Str = KindTimestamp, text
	case uuidRE.MatchString(text):
		v.Kind, v.Str = KindUUID, text
	case text == ":":
		return Value{}, p.errorf(line, col, "':' alone is not a keyword: write a name after it, e.g. :name")
	case text[0] == ':':
		v.Kind, v.Str = KindKeyword, text[1:]
	case startsNumber(text):
		return p.number(v, text)
	default:
		v.Kind, v.Str = KindSymbol, text
	}
	return v, nil
}

// specialAtoms are the atoms that are words: nil, the booleans and the
// special floats.
var specialAtoms = map[string]Value{
	"nil":    {Kind: KindNil},
	"true":   {Kind: KindBool, Bool: true},
	"false":  {Kind: KindBool},
	"##Inf":  {Kind: KindFloat, Float: math.Inf(1)},
	"##-Inf": {Kind: KindFloat, Float: math.Inf(-1)},
	"##NaN":  {Kind: KindFloat, Float: math.NaN()},
}

// startsNumber reports whether a token is meant as a number: it starts
// with a digit, or a sign and a digit.
func startsNumber(text string) bool {
	c := text[0]
	return naming.IsDigit(c) || (c == '+' || c == '-') && len(text) > 1 && naming.IsDigit(text[1])
}

func (p *parser) number(v Value, text string) (Value, error) {
	if !numberRE.MatchString(text) {
		return Value{}, p.errorf(v.Line, v.Column, "%q is not a number: write an integer (42, -7) or a float (1.5, -2.0e10); quote it if it is text", text)
	}
	if !strings.ContainsAny(text, ".eE") {
		n, err := strconv.ParseInt(strings.TrimPrefix(text, "+"), 10, 64)
		if err != nil {
			return Value{}, p.errorf(v.Line, v.Column, "integer %s does not fit in 64 bits: write it as a float or a string", text)
		}
		v.Kind, v.Int = KindInt, n
		return v, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return Value{}, p.errorf(v.Line, v.Column, "float %s is out of range: write ##Inf or ##-Inf for infinity", text)
	}
	v.Kind, v.Float = KindFloat, f
	return v, nil
}
