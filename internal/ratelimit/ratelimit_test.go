package ratelimit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// clock is a settable time for the buckets.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestBucket(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := New(2, 3) // 2 per second, bursts of 3
	l.now = c.now
	for i := range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	ok, wait := l.Allow("a")
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("4th request at once: %v, retry after %v; want refused, 500ms", ok, wait)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("another key shares a's bucket")
	}
	c.t = c.t.Add(500 * time.Millisecond)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("refused after the refill time")
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("one refill allowed two")
	}
	c.t = c.t.Add(time.Hour)
	for range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatal("a quiet hour did not refill the burst")
		}
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("the bucket filled above its burst")
	}
	if New(0, 5) != nil || New(-1, 5) != nil {
		t.Fatal("a rate of 0 or less is no limit (nil)")
	}
	if ok, _ := (*Limiter)(nil).Allow("x"); !ok {
		t.Fatal("a nil limiter refused")
	}
}

// TestBucketsBounded checks that keys from requests cannot grow the
// buckets past MaxKeys.
func TestBucketsBounded(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := New(1, 1)
	l.now = c.now
	for i := range MaxKeys + 5000 {
		l.Allow(fmt.Sprint("k", i)) // each empties its bucket
		if i%1000 == 0 {
			c.t = c.t.Add(time.Millisecond)
		}
	}
	if n := len(l.buckets); n > MaxKeys {
		t.Fatalf("%d buckets, more than %d", n, MaxKeys)
	}
}

func TestMiddleware(t *testing.T) {
	l := New(1, 1)
	var limited []string
	h := Middleware([]Rule{{Kind: "agent", Limiter: l, Key: func(r *http.Request) string { return r.Header.Get("X-Agent") }}},
		func(kind string) { limited = append(limited, kind) },
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	do := func(agent string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/registry/capabilities", nil)
		r.Header.Set("X-Agent", agent)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := do("scanner"); w.Code != 204 {
		t.Fatalf("first: %d", w.Code)
	}
	w := do("scanner")
	var doc map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &doc)
	if w.Code != 429 || w.Header().Get("Retry-After") != "1" || doc["status"] != float64(429) || w.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("second: %d, Retry-After %q, %s; want 429, 1, a problem document", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if len(limited) != 1 || limited[0] != "agent" {
		t.Errorf("limited calls %v", limited)
	}
	for range 3 {
		if w := do(""); w.Code != 204 {
			t.Fatalf("a request without a key was limited: %d", w.Code)
		}
	}
}
