package mcpgw

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/caphub/caphub/invoke"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkEncoded is res as the SDK encodes it.
func sdkEncoded(t testing.TB, res *mcp.CallToolResult) []byte {
	t.Helper()
	b, err := res.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAppendCallResult: the results of the fast path's common shape are
// encoded, byte for byte, as the SDK encodes them (strings needing escapes,
// HTML characters, invalid UTF-8, _meta keys in any order, isError), and
// every other result is declined, leaving dst as it was.
func TestAppendCallResult(t *testing.T) {
	meta := resultMeta(&invoke.Result{URI: "cap://x.dev/echo@1.2.0", Version: "1.2.0", Binding: "mcp"})
	text := func(s ...string) []mcp.Content {
		var c []mcp.Content
		for _, x := range s {
			c = append(c, &mcp.TextContent{Text: x})
		}
		return c
	}
	encoded := map[string]*mcp.CallToolResult{
		"simple":      {Content: text("This is a simple text response for testing."), Meta: meta},
		"no meta":     {Content: text("hi")},
		"empty":       {Content: []mcp.Content{}},
		"empty text":  {Content: text("")},
		"blocks":      {Content: text("a", "b", "c"), Meta: mcp.Meta{"z": "1", "a": "2", "m": "3"}},
		"error":       {Content: text("NOT_FOUND: no such capability"), IsError: true},
		"escapes":     {Content: text("quote \" backslash \\ tab \t nl \n cr \r nul \x00 bell \x07 del \x7f"), Meta: mcp.Meta{"k\"<": "v&>"}},
		"html":        {Content: text("<b>a & b</b>")},
		"unicode":     {Content: text("héllo – 日本 \u2028 \u2029 😀")},
		"invalid utf": {Content: text("bad \xff\xfe byte")},
		"meta escape": {Content: text("x"), Meta: mcp.Meta{"dev.caphub/uri": "cap://a.dev/b?<x>"}},
	}
	for name, res := range encoded {
		prefix := []byte(`{"jsonrpc":"2.0","id":1,"result":`)
		got, ok := appendCallResult(bytes.Clone(prefix), res)
		if !ok {
			t.Errorf("%s: declined, want it encoded", name)
			continue
		}
		if want := append(bytes.Clone(prefix), sdkEncoded(t, res)...); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	declined := map[string]*mcp.CallToolResult{
		"nil content":  {},
		"structured":   {Content: text("{}"), StructuredContent: map[string]any{"a": 1}},
		"raw struct":   {Content: text("{}"), StructuredContent: json.RawMessage(`{"a":1}`)},
		"image":        {Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}}},
		"text meta":    {Content: []mcp.Content{&mcp.TextContent{Text: "x", Meta: mcp.Meta{"a": "b"}}}},
		"annotations":  {Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Priority: 1}}}},
		"meta list":    {Content: text("x"), Meta: mcp.Meta{MetaWarnings: []string{"deprecated"}}},
		"meta object":  {Content: text("x"), Meta: mcp.Meta{MetaError: ToolError{Code: "X"}}},
		"state":        {Content: text("x"), RequestState: "s"},
		"nil text ptr": {Content: []mcp.Content{(*mcp.TextContent)(nil)}},
	}
	for name, res := range declined {
		got, ok := appendCallResult([]byte("kept"), res)
		if ok || string(got) != "kept" {
			t.Errorf("%s: encoded as %q (ok %v), want it declined", name, got, ok)
		}
	}
}

// FuzzAppendCallResult: text blocks and _meta strings of any bytes encode
// as the SDK encodes them.
func FuzzAppendCallResult(f *testing.F) {
	f.Add("hello", "dev.caphub/uri", "cap://a.dev/b@1.0.0", false)
	f.Add("<\x00\xff\"\\\u2028", "k&", ">", true)
	f.Fuzz(func(t *testing.T, text, key, value string, isError bool) {
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}, &mcp.TextContent{Text: value}}, Meta: mcp.Meta{key: value, "b": text}, IsError: isError}
		got, ok := appendCallResult(nil, res)
		if !ok {
			t.Fatal("declined")
		}
		if want := sdkEncoded(t, res); !bytes.Equal(got, want) {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkFinishResult measures encoding the fast path's common result:
// appendCallResult (path=append) against the SDK's MarshalJSON
// (path=sdk).
func BenchmarkFinishResult(b *testing.B) {
	res := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: "This is a simple text response for testing."}},
		Meta:    resultMeta(&invoke.Result{URI: "cap://mcp.everything.local/test_simple_text@1.0.0", Version: "1.0.0", Binding: "mcp"}),
	}
	b.Run("path=sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = sdkEncoded(b, res)
		}
	})
	b.Run("path=append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf, _ = appendCallResult(buf[:0], res)
		}
	})
}
