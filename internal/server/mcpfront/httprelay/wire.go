package httprelay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What the HTTP relay reads of the bytes it relays: the JSON-RPC messages
// of a request body (to apply the policy to tools/call), and the messages
// of the upstream's answers, JSON bodies or SSE events (to record the
// outcome of the calls it forwarded). Bodies are relayed as they are; these
// functions only look.

// wireMsg is one JSON-RPC message of a request body.
type wireMsg struct {
	raw    json.RawMessage // the message as received
	id     json.RawMessage // nil for a notification
	method string          // "" for a response
	params json.RawMessage
}

func (m *wireMsg) isCall() bool { return m.method != "" && len(m.id) > 0 }

// parseBody reads the JSON-RPC message or batch of a request body. It
// refuses what the policy could misread: invalid JSON, an empty batch, an
// element that is not an object, a method that is not a string, and
// duplicate members (a member repeated, or differing only in case at the
// levels where decoders match names case-insensitively), which parsers
// resolve differently, so that the upstream could see another method,
// tool or argument than the policy did. Member names are matched without
// regard to case, as the most lenient decoder (encoding/json) does.
func parseBody(body []byte) (msgs []wireMsg, batch bool, err error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, false, errors.New("the request body is empty: send a JSON-RPC message")
	}
	if !json.Valid(body) {
		var v any
		return nil, false, fmt.Errorf("the request body is not valid JSON: %v", json.Unmarshal(body, &v))
	}
	if !utf8.Valid(body) {
		return nil, false, errors.New("the request body is not valid UTF-8, as JSON must be")
	}
	if body[0] != '[' {
		m, err := parseMessage(body)
		if err != nil {
			return nil, false, err
		}
		return []wireMsg{m}, false, nil
	}
	eachElement(body, func(raw []byte) bool {
		var m wireMsg
		if m, err = parseMessage(raw); err != nil {
			err = fmt.Errorf("batch element %d: %v", len(msgs), err)
			return false
		}
		msgs = append(msgs, m)
		return true
	})
	if err == nil && len(msgs) == 0 {
		err = errors.New("the request body is an empty batch")
	}
	return msgs, true, err
}

// parseMessage reads one message of a body that is valid JSON.
func parseMessage(raw []byte) (wireMsg, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return wireMsg{}, errors.New("a JSON-RPC message must be an object")
	}
	if key, ok := duplicateKey(raw); ok {
		return wireMsg{}, fmt.Errorf("the member %q appears twice: send it once", key)
	}
	m := wireMsg{raw: raw}
	var err error
	eachMember(raw, func(name, value []byte) bool {
		switch {
		case bytes.EqualFold(name, []byte("id")):
			if !isNull(value) {
				m.id = value
			}
		case bytes.EqualFold(name, []byte("method")):
			if len(value) == 0 || value[0] != '"' {
				err = errors.New("the method must be a string")
				return false
			}
			m.method = string(unquote(value))
		case bytes.EqualFold(name, []byte("params")):
			m.params = value
		}
		return true
	})
	return m, err
}

// callParams reads the tool name and arguments of tools/call params.
func callParams(params []byte) (name string, args []byte, ok bool) {
	ok = eachMember(params, func(n, v []byte) bool {
		switch {
		case bytes.EqualFold(n, []byte("name")):
			if len(v) == 0 || v[0] != '"' {
				return false
			}
			name = string(unquote(v))
		case bytes.EqualFold(n, []byte("arguments")):
			args = v
		}
		return true
	})
	return name, args, ok && name != ""
}

func isNull(raw []byte) bool { return len(raw) == 0 || string(raw) == "null" }

// A small JSON scanner: the relay looks at a few members of each message
// it relays, and decoding whole messages with encoding/json would cost
// more than the rest of the relay. It expects valid JSON (parseBody checks
// bodies; upstream messages are only looked at) and never panics on
// anything else.

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// isSpace reports whether c is JSON white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipValue returns the index just past the JSON value at or after b[i].
func skipValue(b []byte, i int) int {
	i = skipSpace(b, i)
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i) + 1
	case '{', '[':
		return skipComposite(b, i)
	}
	return skipLiteral(b, i)
}

// skipComposite returns the index just past the object or array opening
// at b[i].
func skipComposite(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return len(b)
}

// skipLiteral returns the index just past the number, true, false or null
// at b[i]: the next delimiter or space.
func skipLiteral(b []byte, i int) int {
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && !isSpace(b[i]) {
		i++
	}
	return i
}

// eachMember calls fn with the name (unquoted) and value of each member
// of the JSON object b holds, until fn returns false. It returns false
// when b holds no object, or fn returned false.
func eachMember(b []byte, fn func(name, value []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	for i++; ; {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == '}' {
			return true
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] != '"' {
			return true
		}
		end := stringEnd(b, i)
		name := unquote(b[i : end+1])
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return true
		}
		start := skipSpace(b, i+1)
		i = skipValue(b, start)
		if !fn(name, b[start:i]) {
			return false
		}
	}
}

// eachElement calls fn with each element of the JSON array b holds,
// until fn returns false.
func eachElement(b []byte, fn func(value []byte) bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return
	}
	for i++; ; {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == ']' {
			return
		}
		if b[i] == ',' {
			i++
			continue
		}
		start := i
		if i = skipValue(b, i); i == start {
			return
		}
		if !fn(b[start:i]) {
			return
		}
	}
}

// foldDepth is how deep duplicateKey compares member names
// case-insensitively: the message and its params, whose members are
// matched regardless of case (here, and by encoding/json).
const foldDepth = 2

// duplicateKey reports the first member name that an object of a JSON
// value repeats: exactly, or (in the outer foldDepth objects) up to case.
func duplicateKey(b []byte) (string, bool) {
	var stack []keyFrame
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			stack = append(stack, keyFrame{object: true, expectKey: true})
		case '[':
			stack = append(stack, keyFrame{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].expectKey = true
			}
		case '"':
			end := stringEnd(b, i)
			if key, dup := memberName(stack, b[i:end+1]); dup {
				return string(key), true
			}
			i = end
		}
	}
	return "", false
}

// keyFrame is an array or object duplicateKey is in, with the member
// names seen so far of an object.
type keyFrame struct {
	object    bool
	expectKey bool // the next string is a member name
	keys      [][]byte
}

// memberName records the string literal lit when it is a member name of
// the innermost object of stack, and reports whether that object already
// has the name (up to case within foldDepth).
func memberName(stack []keyFrame, lit []byte) (key []byte, dup bool) {
	n := len(stack)
	if n == 0 || !stack[n-1].object || !stack[n-1].expectKey {
		return nil, false
	}
	top := &stack[n-1]
	top.expectKey = false
	key = unquote(lit)
	for _, k := range top.keys {
		if bytes.Equal(k, key) || (n <= foldDepth && bytes.EqualFold(k, key)) {
			return key, true
		}
	}
	top.keys = append(top.keys, key)
	return key, false
}

// stringEnd returns the index of the quote that closes the JSON string
// opening at b[start] (len(b)-1 when it is not closed).
func stringEnd(b []byte, start int) int {
	for j := start + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(b) - 1
}

// unquote decodes a JSON string literal (quotes included) as
// encoding/json does (invalid UTF-8 becomes U+FFFD); it returns the bytes
// between the quotes when there is nothing to decode, or they do not
// decode.
func unquote(lit []byte) []byte {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return lit
	}
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner
	}
	var s string
	if json.Unmarshal(lit, &s) != nil {
		return inner
	}
	return []byte(s)
}

// idKey identifies a JSON-RPC id whatever its spelling (1, 1.0 and 1e0 are
// one id; "1" is another), so that a response is matched to its request
// even when the upstream re-encodes the id. "" for no id.
func idKey(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return ""
	}
	switch raw[0] {
	case '"':
		return "s:" + string(unquote(raw))
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if !bytes.ContainsAny(raw, ".eE") && string(raw) != "-0" {
			return "n:" + string(raw)
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return "?" + string(raw)
		}
		if f == float64(int64(f)) {
			return "n:" + strconv.FormatInt(int64(f), 10)
		}
		return "n:" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	return "?" + string(raw)
}

// response reads what the relay needs of a message from the upstream: its
// id, result and error when it is a response (ok false otherwise).
func response(msg []byte) (id, result, rpcErr []byte, ok bool) {
	isResponse := true
	eachMember(msg, func(name, value []byte) bool {
		switch string(name) {
		case "id":
			id = value
		case "result":
			result = value
		case "error":
			rpcErr = value
		case "method":
			isResponse = false
			return false
		}
		return true
	})
	return id, result, rpcErr, isResponse && !isNull(id) && (result != nil || rpcErr != nil)
}

// eachMessage calls fn with each JSON-RPC message of data (a message or a
// batch).
func eachMessage(data []byte, fn func(msg []byte) bool) {
	i := skipSpace(data, 0)
	if i < len(data) && data[i] == '[' {
		eachElement(data, fn)
		return
	}
	fn(data)
}

// toolOutcome is what a record keeps of a tool result.
type toolOutcome struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// isToolError reports whether a tools/call result says isError: true.
func isToolError(result []byte) bool {
	isErr := false
	eachMember(result, func(name, value []byte) bool {
		if string(name) == "isError" {
			isErr = string(value) == "true"
			return false
		}
		return true
	})
	return isErr
}

// toolErrorText joins the text blocks of a tool result.
func toolErrorText(result []byte) string {
	var o toolOutcome
	_ = json.Unmarshal(result, &o)
	var parts []string
	for _, c := range o.Content {
		if c.Type == "text" && c.Text != "" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// maxEventData bounds the data of one SSE event that sseParser keeps to
// look at; a longer event is relayed all the same, unread.
const maxEventData = 64 << 20

// sseParser follows a text/event-stream as it is relayed, chunk by chunk
// however the bytes are split, and calls onEvent with the data of each
// complete event of type "message" (the only type MCP sends). It keeps one
// event's data at most. Lines end with CRLF, LF or CR, as the SSE format
// allows.
type sseParser struct {
	onEvent func(data []byte)

	line    []byte // the current line when it spans chunks
	afterCR bool   // the last chunk ended with CR: a LF that follows is part of it
	data    []byte // the current event's data lines, joined by LF
	hasData bool
	other   bool // the current event has a type other than "message"
	tooLong bool // the current event's data outgrew maxEventData
}

// feed reads the next bytes of the stream.
func (p *sseParser) feed(b []byte) {
	for len(b) > 0 {
		if p.afterCR {
			p.afterCR = false
			if b[0] == '\n' {
				b = b[1:]
				continue
			}
		}
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			p.line = appendBounded(p.line, b)
			return
		}
		if len(p.line) == 0 {
			p.endLine(b[:i])
		} else {
			p.line = appendBounded(p.line, b[:i])
			p.endLine(p.line)
			p.line = p.line[:0]
			if cap(p.line) > 1<<20 {
				p.line = nil // a long event passed; a stream may idle long after it
			}
		}
		if b[i] == '\r' {
			if i+1 == len(b) {
				p.afterCR = true
			} else if b[i+1] == '\n' {
				i++
			}
		}
		b = b[i+1:]
	}
}

// appendBounded appends to a line, dropping what goes beyond maxEventData
// (such a line's event is not read anyway).
func appendBounded(line, b []byte) []byte {
	if room := maxEventData + 16 - len(line); len(b) > room {
		b = b[:max(room, 0)]
	}
	return append(line, b...)
}

// endLine handles one complete line.
func (p *sseParser) endLine(line []byte) {
	if len(line) == 0 {
		p.endEvent()
		return
	}
	if line[0] == ':' {
		return // a comment
	}
	field, value, found := bytes.Cut(line, []byte{':'})
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(field) {
	case "data":
		p.addData(value)
	case "event":
		p.other = string(value) != "message" && len(value) > 0
	}
}

// endEvent ends the current event at a blank line, handing its data to
// onEvent when it is a message event whose data was kept.
func (p *sseParser) endEvent() {
	if p.hasData && !p.other && !p.tooLong && p.onEvent != nil {
		p.onEvent(p.data)
	}
	if cap(p.data) > 1<<20 {
		p.data = nil
	}
	p.data, p.hasData, p.other, p.tooLong = p.data[:0], false, false, false
}

// addData adds a data line to the current event, unless its data outgrows
// maxEventData (it is then dropped).
func (p *sseParser) addData(value []byte) {
	switch {
	case p.tooLong:
	case len(p.data)+len(value)+1 > maxEventData:
		p.tooLong = true
		p.data = p.data[:0]
	default:
		if p.hasData {
			p.data = append(p.data, '\n')
		}
		p.data = append(p.data, value...)
	}
	p.hasData = true
}
