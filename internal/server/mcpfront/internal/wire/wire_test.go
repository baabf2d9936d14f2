package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
)

func TestWireParsing(t *testing.T) {
	for _, tc := range []struct{ a, b string }{{`1`, `1.0`}, {`1`, `1e0`}, {`"a"`, `"\u0061"`}, {`-2`, `-2.0`}} {
		if IDKey([]byte(tc.a)) != IDKey([]byte(tc.b)) {
			t.Errorf("IDKey(%s) != IDKey(%s)", tc.a, tc.b)
		}
	}
	for _, tc := range []struct{ a, b string }{{`1`, `"1"`}, {`1`, `2`}, {`"a"`, `"A"`}} {
		if IDKey([]byte(tc.a)) == IDKey([]byte(tc.b)) {
			t.Errorf("IDKey(%s) == IDKey(%s)", tc.a, tc.b)
		}
	}
	msgs, batch, err := ParseBody([]byte(` {"jsonrpc":"2.0","ID":7,"Method":"tools\/call","params":{"Name":"echo","arguments":{"a":1,"A":2}}} `))
	if err != nil || batch || len(msgs) != 1 || msgs[0].Method != "tools/call" || IDKey(msgs[0].ID) != "n:7" {
		t.Fatalf("ParseBody = %+v, %v, %v", msgs, batch, err)
	}
	if name, args, ok := CallParams(msgs[0].Params); !ok || name != "echo" || string(args) != `{"a":1,"A":2}` {
		t.Errorf("CallParams = %q, %s, %v", name, args, ok)
	}
	id, result, rpcErr, ok := Response([]byte(`{"jsonrpc":"2.0","id":"x","result":{"isError":true,"content":[{"type":"text","text":"bad"}]}}`))
	if !ok || string(id) != `"x"` || rpcErr != nil || !IsToolError(result) || ToolErrorText(result) != "bad" {
		t.Errorf("response = %s %s %s %v", id, result, rpcErr, ok)
	}
	if _, _, _, ok := Response([]byte(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`)); ok {
		t.Error("a request read as a response")
	}
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
		_, _, _, _ = Response(body)
		_ = IsToolError(body)
		_ = IDKey(body)
		EachMessage(body, func([]byte) bool { return true })
		msgs, _, err := ParseBody(body)
		if err != nil {
			return
		}
		for _, m := range msgs {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(m.Raw, &fields); err != nil {
				t.Fatalf("accepted %s, which encoding/json refuses: %v", m.Raw, err)
			}
			var want struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			hasMethod := false
			for k := range fields {
				hasMethod = hasMethod || strings.EqualFold(k, "method")
			}
			if err := json.Unmarshal(m.Raw, &want); err != nil && hasMethod {
				continue // a method that is not a string is refused below
			}
			if m.Method != want.Method {
				t.Fatalf("%s: method %q, encoding/json reads %q", m.Raw, m.Method, want.Method)
			}
			if !bytes.Equal(bytes.TrimSpace(m.Params), bytes.TrimSpace(want.Params)) {
				t.Fatalf("%s: params %s, encoding/json reads %s", m.Raw, m.Params, want.Params)
			}
			if m.Method == relay.MethodCallTool {
				var p struct {
					Name string `json:"name"`
				}
				name, _, ok := CallParams(m.Params)
				if json.Unmarshal(m.Params, &p) == nil && ok && name != p.Name {
					t.Fatalf("%s: tool %q, encoding/json reads %q", m.Raw, name, p.Name)
				}
				var withMeta struct {
					Meta map[string]any `json:"_meta"`
				}
				if json.Unmarshal(m.Params, &withMeta) == nil && !reflect.DeepEqual(CallMeta(m.Params), withMeta.Meta) {
					t.Fatalf("%s: _meta %v, encoding/json reads %v", m.Raw, CallMeta(m.Params), withMeta.Meta)
				}
			}
		}
	})
}

// TestParseBodyAllocs checks that reading a tools/call body allocates only
// the message list: the relays read every body of every call, and its
// duplicate check allocated a list of names per object it met.
func TestParseBodyAllocs(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ping","n":[1,{"a":2}]},"_meta":{"progressToken":3}}}`)
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := ParseBody(body); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 { // its []Msg; the race detector keeps one more off the stack
		t.Errorf("ParseBody of a tools/call allocates %v times, want at most 2", allocs)
	}
	if meta := CallMeta([]byte(`{"name":"x","arguments":{"_meta":1},"_Meta":{"a":"b"}}`)); meta["a"] != "b" {
		t.Errorf("CallMeta = %v, want the _meta object", meta)
	}
	if meta := CallMeta([]byte(`{"name":"x","_meta":[1]}`)); meta != nil {
		t.Errorf("CallMeta of a _meta that is no object = %v, want nil", meta)
	}
}
