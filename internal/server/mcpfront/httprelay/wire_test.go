package httprelay

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
)

func TestWireParsing(t *testing.T) {
	for _, tc := range []struct{ a, b string }{{`1`, `1.0`}, {`1`, `1e0`}, {`"a"`, `"\u0061"`}, {`-2`, `-2.0`}} {
		if idKey([]byte(tc.a)) != idKey([]byte(tc.b)) {
			t.Errorf("idKey(%s) != idKey(%s)", tc.a, tc.b)
		}
	}
	for _, tc := range []struct{ a, b string }{{`1`, `"1"`}, {`1`, `2`}, {`"a"`, `"A"`}} {
		if idKey([]byte(tc.a)) == idKey([]byte(tc.b)) {
			t.Errorf("idKey(%s) == idKey(%s)", tc.a, tc.b)
		}
	}
	msgs, batch, err := parseBody([]byte(` {"jsonrpc":"2.0","ID":7,"Method":"tools\/call","params":{"Name":"echo","arguments":{"a":1,"A":2}}} `))
	if err != nil || batch || len(msgs) != 1 || msgs[0].method != "tools/call" || idKey(msgs[0].id) != "n:7" {
		t.Fatalf("parseBody = %+v, %v, %v", msgs, batch, err)
	}
	if name, args, ok := callParams(msgs[0].params); !ok || name != "echo" || string(args) != `{"a":1,"A":2}` {
		t.Errorf("callParams = %q, %s, %v", name, args, ok)
	}
	id, result, rpcErr, ok := response([]byte(`{"jsonrpc":"2.0","id":"x","result":{"isError":true,"content":[{"type":"text","text":"bad"}]}}`))
	if !ok || string(id) != `"x"` || rpcErr != nil || !isToolError(result) || toolErrorText(result) != "bad" {
		t.Errorf("response = %s %s %s %v", id, result, rpcErr, ok)
	}
	if _, _, _, ok := response([]byte(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`)); ok {
		t.Error("a request read as a response")
	}
}

// sseEvents feeds a stream to an sseParser in the given chunks and returns
// the data of its events.
func sseEvents(chunks [][]byte) []string {
	var events []string
	p := sseParser{onEvent: func(d []byte) { events = append(events, string(d)) }}
	for _, c := range chunks {
		p.feed(c)
	}
	return events
}

func TestSSEParser(t *testing.T) {
	stream := "id: 1\nevent: message\ndata: {\"a\":1}\n\n" + // LF
		": a comment\r\ndata:two\r\ndata: lines\r\n\r\n" + // CRLF, no space after the colon
		"event: other\ndata: skipped\n\n" + // another event type
		"data: cr\r\rretry: 10\n" + // CR alone; no blank line yet
		"\n" +
		"data: unterminated"
	want := []string{`{"a":1}`, "two\nlines", "cr"}
	if got := sseEvents([][]byte{[]byte(stream)}); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	for i := range len(stream) {
		if got := sseEvents([][]byte{[]byte(stream[:i]), []byte(stream[i:])}); !slices.Equal(got, want) {
			t.Fatalf("split at %d: events = %q, want %q", i, got, want)
		}
	}
}

// FuzzSSEScan checks that the SSE parser never panics and reads the same
// events however the stream is split into chunks.
func FuzzSSEScan(f *testing.F) {
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"), uint16(3))
	f.Add([]byte("event: message\r\nid: 7_1\r\ndata: a\r\ndata: b\r\n\r\n:\r\r\n"), uint16(9))
	f.Add([]byte("data\n\ndata:\r\n\r\revent:x\ndata: y\n\n"), uint16(1))
	f.Fuzz(func(t *testing.T, stream []byte, step uint16) {
		whole := sseEvents([][]byte{stream})
		n := int(step%64) + 1
		var chunks [][]byte
		for rest := stream; len(rest) > 0; {
			k := min(n, len(rest))
			chunks = append(chunks, rest[:k])
			rest = rest[k:]
		}
		if split := sseEvents(chunks); !slices.Equal(whole, split) {
			t.Fatalf("events %q whole, %q in chunks of %d", whole, split, n)
		}
	})
}

// FuzzParseBody checks that reading a request body never panics, and that
// what it reads of an accepted body is what encoding/json reads (matching
// names regardless of case, as encoding/json does for structs).
func FuzzParseBody(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}]`))
	f.Add([]byte(`{"ID":1,"Method":"tools\/call","PARAMS":{"Name":"x\u0041"}}`))
	f.Add([]byte(`{"id":1,"result":{"isError":true,"content":[{"type":"text","text":"no"}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		// The scanner's other readers never panic either, on anything.
		_, _, _, _ = response(body)
		_ = isToolError(body)
		_ = idKey(body)
		eachMessage(body, func([]byte) bool { return true })
		msgs, _, err := parseBody(body)
		if err != nil {
			return
		}
		for _, m := range msgs {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(m.raw, &fields); err != nil {
				t.Fatalf("accepted %s, which encoding/json refuses: %v", m.raw, err)
			}
			var want struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			hasMethod := false
			for k := range fields {
				hasMethod = hasMethod || strings.EqualFold(k, "method")
			}
			if err := json.Unmarshal(m.raw, &want); err != nil && hasMethod {
				continue // a method that is not a string is refused below
			}
			if m.method != want.Method {
				t.Fatalf("%s: method %q, encoding/json reads %q", m.raw, m.method, want.Method)
			}
			if !bytes.Equal(bytes.TrimSpace(m.params), bytes.TrimSpace(want.Params)) {
				t.Fatalf("%s: params %s, encoding/json reads %s", m.raw, m.params, want.Params)
			}
			if m.method == relay.MethodCallTool {
				var p struct {
					Name string `json:"name"`
				}
				name, _, ok := callParams(m.params)
				if json.Unmarshal(m.params, &p) == nil && ok && name != p.Name {
					t.Fatalf("%s: tool %q, encoding/json reads %q", m.raw, name, p.Name)
				}
			}
		}
	})
}
