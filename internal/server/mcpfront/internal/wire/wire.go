// Package wire reads the JSON-RPC messages the front's relays pass on
// without decoding them whole: the messages of a request body (to apply
// the policy to tools/call and, for a stdio upstream, to rewrite ids),
// and the members of upstream messages it needs (ids, methods, results).
// Messages are relayed as they are; these functions only look.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
)

// Msg is one JSON-RPC message of a request body.
type Msg struct {
	Raw    json.RawMessage // the message as received
	ID     json.RawMessage // nil for a notification
	Method string          // "" for a response
	Params json.RawMessage
}

func (m *Msg) IsCall() bool { return m.Method != "" && len(m.ID) > 0 }

// ParseBody reads the JSON-RPC message or batch of a request body. It
// refuses what the policy could misread: invalid JSON, an empty batch, an
// element that is not an object, a method that is not a string, and
// duplicate members (a member repeated, or differing only in case at the
// levels where decoders match names case-insensitively), which parsers
// resolve differently, so that the upstream could see another method,
// tool or argument than the policy did. Member names are matched without
// regard to case, as the most lenient decoder (encoding/json) does.
func ParseBody(body []byte) (msgs []Msg, batch bool, err error) {
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
		return []Msg{m}, false, nil
	}
	EachElement(body, func(raw []byte) bool {
		var m Msg
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
func parseMessage(raw []byte) (Msg, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return Msg{}, errors.New("a JSON-RPC message must be an object")
	}
	if key, ok := duplicateKey(raw); ok {
		return Msg{}, fmt.Errorf("the member %q appears twice: send it once", key)
	}
	m := Msg{Raw: raw}
	var err error
	EachMember(raw, func(name, value []byte) bool {
		switch {
		case bytes.EqualFold(name, []byte("id")):
			if !IsNull(value) {
				m.ID = value
			}
		case bytes.EqualFold(name, []byte("method")):
			if len(value) == 0 || value[0] != '"' {
				err = errors.New("the method must be a string")
				return false
			}
			m.Method = methodName(Unquote(value))
		case bytes.EqualFold(name, []byte("params")):
			m.Params = value
		}
		return true
	})
	return m, err
}

// methodName is a method as a string, without allocating one for the
// methods of most messages.
func methodName(b []byte) string {
	switch string(b) { // compared without a copy
	case relay.MethodCallTool:
		return relay.MethodCallTool
	case relay.NotifyCancelled:
		return relay.NotifyCancelled
	case "notifications/progress":
		return "notifications/progress"
	case "ping":
		return "ping"
	}
	return string(b)
}

// CallParams reads the tool name and arguments of tools/call params.
func CallParams(params []byte) (name string, args []byte, ok bool) {
	ok = EachMember(params, func(n, v []byte) bool {
		switch {
		case bytes.EqualFold(n, []byte("name")):
			if len(v) == 0 || v[0] != '"' {
				return false
			}
			name = string(Unquote(v))
		case bytes.EqualFold(n, []byte("arguments")):
			args = v
		}
		return true
	})
	return name, args, ok && name != ""
}

// CallMeta decodes the _meta object of request params (its name matched
// regardless of case, as CallParams matches members and encoding/json
// decodes structs); nil when there is none or it is not an object. It
// decodes _meta alone: the arguments may be large.
func CallMeta(params []byte) map[string]any {
	var meta map[string]any
	EachMember(params, func(n, v []byte) bool {
		if !bytes.EqualFold(n, []byte("_meta")) {
			return true
		}
		if len(v) > 0 && v[0] == '{' {
			_ = json.Unmarshal(v, &meta)
		}
		return false
	})
	return meta
}

func IsNull(raw []byte) bool { return len(raw) == 0 || string(raw) == "null" }

// A small JSON scanner: a relay looks at a few members of each message
// it relays, and decoding whole messages with encoding/json would cost
// more than the rest of the relay. It expects valid JSON (ParseBody checks
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

// SkipValue returns the index just past the JSON value at or after b[i].
func SkipValue(b []byte, i int) int {
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

// EachMember calls fn with the name (unquoted) and value of each member
// of the JSON object b holds, until fn returns false. It returns false
// when b holds no object, or fn returned false.
func EachMember(b []byte, fn func(name, value []byte) bool) bool {
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
		name := Unquote(b[i : end+1])
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return true
		}
		start := skipSpace(b, i+1)
		i = SkipValue(b, start)
		if !fn(name, b[start:i]) {
			return false
		}
	}
}

// EachElement calls fn with each element of the JSON array b holds,
// until fn returns false.
func EachElement(b []byte, fn func(value []byte) bool) {
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
		if i = SkipValue(b, i); i == start {
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
// The frames and names live in arrays on the stack while a message nests
// shallowly and has few members (every message of a relayed call): it runs
// on every message, and allocating them cost more than the scan.
func duplicateKey(b []byte) (string, bool) {
	var frameBuf [8]keyFrame
	var keyBuf [32][]byte
	stack, keys := frameBuf[:0], keyBuf[:0]
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			stack = append(stack, keyFrame{object: true, expectKey: true, first: len(keys)})
		case '[':
			stack = append(stack, keyFrame{first: len(keys)})
		case '}', ']':
			if n := len(stack); n > 0 {
				keys = keys[:stack[n-1].first] // the object's names are done with
				stack = stack[:n-1]
			}
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].expectKey = true
			}
		case '"':
			end := stringEnd(b, i)
			var key []byte
			var dup bool
			if key, keys, dup = memberName(stack, keys, b[i:end+1]); dup {
				return string(key), true
			}
			i = end
		}
	}
	return "", false
}

// keyFrame is an array or object duplicateKey is in; the member names
// seen so far of an object are keys[first:].
type keyFrame struct {
	object    bool
	expectKey bool // the next string is a member name
	first     int
}

// memberName records the string literal lit in keys when it is a member
// name of the innermost object of stack, and reports whether that object
// already has the name (up to case within foldDepth).
func memberName(stack []keyFrame, keys [][]byte, lit []byte) (key []byte, _ [][]byte, dup bool) {
	n := len(stack)
	if n == 0 || !stack[n-1].object || !stack[n-1].expectKey {
		return nil, keys, false
	}
	top := &stack[n-1]
	top.expectKey = false
	key = Unquote(lit)
	for _, k := range keys[top.first:] {
		if bytes.Equal(k, key) || (n <= foldDepth && bytes.EqualFold(k, key)) {
			return key, keys, true
		}
	}
	return key, append(keys, key), false
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

// Unquote decodes a JSON string literal (quotes included) as
// encoding/json does (invalid UTF-8 becomes U+FFFD); it returns the bytes
// between the quotes when there is nothing to decode, or they do not
// decode.
func Unquote(lit []byte) []byte {
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

// IDKey identifies a JSON-RPC id whatever its spelling (1, 1.0 and 1e0 are
// one id; "1" is another), so that a response is matched to its request
// even when the upstream re-encodes the id. "" for no id.
func IDKey(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if IsNull(raw) {
		return ""
	}
	switch raw[0] {
	case '"':
		return "s:" + string(Unquote(raw))
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
func Response(msg []byte) (id, result, rpcErr []byte, ok bool) {
	isResponse := true
	EachMember(msg, func(name, value []byte) bool {
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
	return id, result, rpcErr, isResponse && !IsNull(id) && (result != nil || rpcErr != nil)
}

// EachMessage calls fn with each JSON-RPC message of data (a message or a
// batch).
func EachMessage(data []byte, fn func(msg []byte) bool) {
	i := skipSpace(data, 0)
	if i < len(data) && data[i] == '[' {
		EachElement(data, fn)
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

// IsToolError reports whether a tools/call result says isError: true.
func IsToolError(result []byte) bool {
	isErr := false
	EachMember(result, func(name, value []byte) bool {
		if string(name) == "isError" {
			isErr = string(value) == "true"
			return false
		}
		return true
	})
	return isErr
}

// ToolErrorText joins the text blocks of a tool result.
func ToolErrorText(result []byte) string {
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

// MaxBodyBytes bounds a request body the relays accept: they read each
// body whole, to apply the policy to the tools/call requests in it.
const MaxBodyBytes = 4 << 20

// ReadBody reads a request body whole, up to MaxBodyBytes; it answers the
// request itself (413, 400) and returns false when it cannot.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	if r.ContentLength > MaxBodyBytes {
		WriteTooLarge(w)
		return nil, false
	}
	size := r.ContentLength
	if size < 0 {
		size = 512
	}
	// One byte more than announced, so that the read ends with io.EOF
	// (which lifts the read deadline, see mcpfront's liftDeadlines) without
	// growing.
	body := make([]byte, 0, size+1)
	rd := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	for {
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
		n, err := rd.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			return body, true
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				WriteTooLarge(w)
			} else {
				relay.WriteError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
			}
			return nil, false
		}
	}
}

// WriteTooLarge answers a request whose body is over MaxBodyBytes (413).
func WriteTooLarge(w http.ResponseWriter) {
	relay.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d MiB, the most caphub relays to an MCP server in one request: send smaller messages", MaxBodyBytes>>20))
}
