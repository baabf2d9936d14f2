package stdiorelay

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/wire"
)

// What the relay reads and changes of the messages it passes on. It
// rewrites only what must change (ids, progress tokens, the requestId of a
// cancellation) and keeps every other byte of a message as it came, but
// for line breaks between tokens of a client's message, which the
// newline-delimited stdio transport cannot carry.

// edit replaces msg[start:end] with with.
type edit struct {
	start, end int
	with       []byte
}

// offset is where part, a subslice of msg, starts in msg.
func offset(msg, part []byte) int { return cap(msg) - cap(part) }

// span is the edit that replaces part, a subslice of msg, with with.
func span(msg, part, with []byte) edit {
	start := offset(msg, part)
	return edit{start, start + len(part), with}
}

// rewrite appends msg with edits applied (sorted by start, apart) to dst.
func rewrite(dst, msg []byte, edits ...edit) []byte {
	at := 0
	for _, e := range edits {
		dst = append(dst, msg[at:e.start]...)
		dst = append(dst, e.with...)
		at = e.end
	}
	return append(dst, msg[at:]...)
}

// sorted orders two edits (a zero edit, with == nil and start == end == 0,
// is dropped).
func sorted(a, b edit) []edit {
	switch {
	case a.with == nil:
		return []edit{b}
	case b.with == nil:
		return []edit{a}
	case b.start < a.start:
		return []edit{b, a}
	}
	return []edit{a, b}
}

// line appends msg to dst as one line for the stdio transport: a message
// spread over lines (a client may send indented JSON) is compacted, which
// changes only the white space between its tokens (JSON strings hold no
// raw line breaks).
func line(dst, msg []byte) []byte {
	if bytes.IndexByte(msg, '\n') < 0 && bytes.IndexByte(msg, '\r') < 0 {
		return append(append(dst, msg...), '\n')
	}
	var b bytes.Buffer
	if json.Compact(&b, msg) != nil {
		b.Reset()
		b.Write(bytes.ReplaceAll(bytes.ReplaceAll(msg, []byte{'\r'}, []byte{' '}), []byte{'\n'}, []byte{' '}))
	}
	return append(append(dst, b.Bytes()...), '\n')
}

// member returns the value of the member name (matched exactly) of the JSON
// object obj, a subslice of it; nil when absent.
func member(obj []byte, name string) []byte {
	var v []byte
	wire.EachMember(obj, func(n, value []byte) bool {
		if string(n) == name {
			v = value
			return false
		}
		return true
	})
	return v
}

// progressToken returns the progress token of request params
// (params._meta.progressToken), a subslice of params; nil when none.
func progressToken(params []byte) []byte {
	if len(params) == 0 {
		return nil
	}
	meta := member(params, "_meta")
	if len(meta) == 0 || meta[0] != '{' {
		return nil
	}
	t := member(meta, "progressToken")
	if wire.IsNull(t) {
		return nil
	}
	return t
}

// head is what the relay reads of a message from the upstream: its id,
// method and params (subslices of the message; nil when absent), and
// whether it holds a result or an error.
type head struct {
	id, method, params []byte
	answer             bool
}

// readHead reads the head of a message from the upstream.
func readHead(msg []byte) (h head, ok bool) {
	ok = wire.EachMember(msg, func(name, value []byte) bool {
		switch string(name) {
		case "id":
			if !wire.IsNull(value) {
				h.id = value
			}
		case "method":
			h.method = wire.Unquote(value)
		case "params":
			h.params = value
		case "result", "error":
			h.answer = true
		}
		return true
	})
	return h, ok
}

// upID reads an id the relay gave (a positive integer); 0 for another.
func upID(raw []byte) int64 {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// errorMessage is a JSON-RPC error response with id (raw JSON; null when
// empty).
func errorMessage(id []byte, code int64, msg string) []byte {
	if len(id) == 0 {
		id = []byte("null")
	}
	m, _ := json.Marshal(msg)
	b := make([]byte, 0, 64+len(id)+len(m))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, code, 10)
	b = append(b, `,"message":`...)
	b = append(b, m...)
	return append(b, `}}`...)
}

// resultMessage is a JSON-RPC response with id and result (raw JSON).
func resultMessage(id, result []byte) []byte {
	if len(id) == 0 {
		id = []byte("null")
	}
	b := make([]byte, 0, 40+len(id)+len(result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}
