package sdkrelay

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
)

func TestTokenKey(t *testing.T) {
	for _, tc := range []struct {
		tok  any
		want string
	}{{"a", "s:a"}, {float64(1), "n:1"}, {int64(1), "n:1"}, {json.Number("1"), "n:1"}, {nil, ""}} {
		if got := tokenKey(tc.tok); got != tc.want {
			t.Errorf("tokenKey(%#v) = %q, want %q", tc.tok, got, tc.want)
		}
	}
}

// An outbox delivers in order from its own goroutine, refuses deliveries
// beyond its size while one is held up (never blocking the sender), and a
// flush returns once what was queued before it went out.
func TestOutbox(t *testing.T) {
	o := newOutbox()
	defer o.stop()
	started, release := make(chan struct{}), make(chan struct{})
	if !o.enqueue(func() { close(started); <-release }) {
		t.Fatal("the first delivery was refused")
	}
	<-started
	var got []int
	for i := range outboxSize {
		if !o.enqueue(func() { got = append(got, i) }) {
			t.Fatalf("delivery %d refused: the outbox holds %d", i, outboxSize)
		}
	}
	if o.enqueue(func() {}) {
		t.Errorf("a delivery beyond the outbox's size (%d) was queued", outboxSize)
	}
	o.flush(context.Background()) // full: returns without waiting
	close(release)
	// Once a place is free, a flush waits for everything before it.
	for len(o.ch) == cap(o.ch) {
		runtime.Gosched()
	}
	o.flush(context.Background())
	if len(got) != outboxSize {
		t.Fatalf("after flush: %d of %d deliveries went out", len(got), outboxSize)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("deliveries out of order: %v", got)
		}
	}
	o.stop()
	if o.enqueue(func() {}) || !o.stopped() {
		t.Error("a stopped outbox queued a delivery")
	}
}
