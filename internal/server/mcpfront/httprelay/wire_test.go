package httprelay

import (
	"slices"
	"testing"
)

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
