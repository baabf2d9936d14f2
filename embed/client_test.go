package embed_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/embed"
	"github.com/caphub/caphub/embed/embedtest"
)

// newClient returns a client of srv with quick retries, o's other fields
// kept.
func newClient(t *testing.T, srv *embedtest.Server, o embed.ClientOptions) *embed.Client {
	t.Helper()
	o.URL = srv.URL
	if o.Model == "" {
		o.Model = srv.Model()
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = time.Millisecond
	}
	c, err := embed.NewClient(o)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("text number %d about topic %d", i, i%7)
	}
	return out
}

// More texts than a batch go in several requests, and come back in the
// order of the texts even when the provider answers them out of order.
func TestClientBatches(t *testing.T) {
	srv := embedtest.New(t, embedtest.Options{MaxBatch: 10, Reverse: true})
	c := newClient(t, srv, embed.ClientOptions{MaxBatch: 10})
	in := texts(25)
	got, err := c.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if b := srv.Batches(); !slices.Equal(b, []int{10, 10, 5}) {
		t.Errorf("batches = %v, want [10 10 5]", b)
	}
	if len(got) != len(in) {
		t.Fatalf("%d vectors for %d texts", len(got), len(in))
	}
	for i, text := range in {
		if !slices.Equal(got[i], srv.Vector(text)) {
			t.Errorf("vector %d is not the vector of %q", i, text)
		}
	}
	if got, err := c.Embed(context.Background(), nil); err != nil || len(got) != 0 || srv.Requests() != 3 {
		t.Errorf("Embed(nil) = %d vectors, %v after %d requests; want none, no request", len(got), err, srv.Requests())
	}
}

func TestClientDimensions(t *testing.T) {
	srv := embedtest.New(t, embedtest.Options{Dimensions: 64})
	ctx := context.Background()

	c := newClient(t, srv, embed.ClientOptions{Dimensions: 128})
	_, err := c.Embed(ctx, []string{"hello"})
	if err == nil || !strings.Contains(err.Error(), "64 dimensions, not the 128 expected") || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("a 64-long vector when 128 are expected: err = %v; want one naming both lengths and the provider", err)
	}

	c = newClient(t, srv, embed.ClientOptions{Dimensions: 32, SendDimensions: true})
	got, err := c.Embed(ctx, []string{"hello"})
	if err != nil || len(got[0]) != 32 {
		t.Errorf("asking for 32 dimensions: %v, %v", got, err)
	}

	if _, err := embed.NewClient(embed.ClientOptions{URL: srv.URL, Model: "m", SendDimensions: true}); err == nil {
		t.Error("SendDimensions without Dimensions was accepted")
	}
}

func TestClientRetries(t *testing.T) {
	ctx := context.Background()
	t.Run("recovers", func(t *testing.T) {
		srv := embedtest.New(t, embedtest.Options{})
		c := newClient(t, srv, embed.ClientOptions{Retries: 3})
		srv.Fail(1, http.StatusTooManyRequests, "")
		srv.Fail(2, http.StatusServiceUnavailable, "")
		if _, err := c.Embed(ctx, []string{"hello"}); err != nil {
			t.Fatalf("three failures then success, with 3 retries: %v", err)
		}
		if n := srv.Requests(); n != 4 {
			t.Errorf("%d requests, want 4", n)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		srv := embedtest.New(t, embedtest.Options{})
		c := newClient(t, srv, embed.ClientOptions{Retries: 2})
		srv.Down(http.StatusInternalServerError)
		_, err := c.Embed(ctx, []string{"hello"})
		var he *embed.HTTPError
		if !errors.As(err, &he) || he.Status != 500 || !he.Temporary() {
			t.Fatalf("err = %v; want an HTTPError 500", err)
		}
		for _, want := range []string{srv.URL + "/v1/embeddings", "HTTP 500", "embedtest: simulated failure"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if n := srv.Requests(); n != 3 {
			t.Errorf("%d requests, want 3 (one and two retries)", n)
		}
	})
	t.Run("not on 400", func(t *testing.T) {
		srv := embedtest.New(t, embedtest.Options{})
		c := newClient(t, srv, embed.ClientOptions{})
		srv.Fail(1, http.StatusBadRequest, "")
		if _, err := c.Embed(ctx, []string{"hello"}); err == nil || srv.Requests() != 1 {
			t.Errorf("400: err = %v after %d requests; want an error after 1", err, srv.Requests())
		}
	})
	t.Run("none", func(t *testing.T) {
		srv := embedtest.New(t, embedtest.Options{})
		c := newClient(t, srv, embed.ClientOptions{Retries: -1})
		srv.Fail(1, http.StatusTooManyRequests, "")
		if _, err := c.Embed(ctx, []string{"hello"}); err == nil || srv.Requests() != 1 {
			t.Errorf("Retries -1: err = %v after %d requests; want an error after 1", err, srv.Requests())
		}
	})
	t.Run("honours Retry-After", func(t *testing.T) {
		srv := embedtest.New(t, embedtest.Options{})
		c := newClient(t, srv, embed.ClientOptions{MaxRetryAfter: 5 * time.Second})
		srv.Fail(1, http.StatusTooManyRequests, "1")
		start := time.Now()
		if _, err := c.Embed(ctx, []string{"hello"}); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < time.Second {
			t.Errorf("retried after %v; the provider asked for 1s", waited)
		}
	})
	t.Run("Retry-After too long", func(t *testing.T) {
		srv := embedtest.New(t, embedtest.Options{})
		c := newClient(t, srv, embed.ClientOptions{MaxRetryAfter: 5 * time.Second})
		srv.Fail(1, http.StatusTooManyRequests, "120")
		_, err := c.Embed(ctx, []string{"hello"})
		var he *embed.HTTPError
		if !errors.As(err, &he) || he.RetryAfter != 120*time.Second || srv.Requests() != 1 {
			t.Fatalf("Retry-After 120 over a limit of 5s: err = %v after %d requests; want the HTTPError with its wait, after 1", err, srv.Requests())
		}
		if !strings.Contains(err.Error(), "retry after 2m0s") {
			t.Errorf("error %q does not say when to retry", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		srv := embedtest.New(t, embedtest.Options{})
		c := newClient(t, srv, embed.ClientOptions{MinBackoff: time.Minute})
		srv.Down(http.StatusBadGateway)
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := c.Embed(ctx, []string{"hello"}); err == nil || ctx.Err() != nil || srv.Requests() != 1 {
			t.Errorf("a retry due after the deadline: err = %v, ctx %v, %d requests; want the error at once", err, ctx.Err(), srv.Requests())
		}
	})
}

func TestClientAnswerLimit(t *testing.T) {
	srv := embedtest.New(t, embedtest.Options{Dimensions: 256})
	c := newClient(t, srv, embed.ClientOptions{MaxAnswerBytes: 300})
	_, err := c.Embed(context.Background(), []string{"hello"})
	if err == nil || !strings.Contains(err.Error(), "larger than 300 bytes") {
		t.Errorf("a 256-long vector within 300 bytes: err = %v; want the answer refused", err)
	}
	c = newClient(t, srv, embed.ClientOptions{MaxAnswerBytes: 64 << 10})
	if _, err := c.Embed(context.Background(), []string{"hello"}); err != nil {
		t.Errorf("within 64 KiB: %v", err)
	}
}

func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	srv := embedtest.New(t, embedtest.Options{APIKey: "sk-right"})

	c := newClient(t, srv, embed.ClientOptions{APIKey: "sk-wrong-secret"})
	_, err := c.Embed(ctx, []string{"hello"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "Incorrect API key") || !strings.Contains(err.Error(), "check the API key") {
		t.Errorf("wrong key: err = %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "sk-wrong-secret") {
		t.Errorf("the error shows the API key: %v", err)
	}
	if srv.Requests() != 1 {
		t.Errorf("401 was retried: %d requests", srv.Requests())
	}

	c = newClient(t, srv, embed.ClientOptions{APIKey: "sk-right", Model: "no-such-model"})
	_, err = c.Embed(ctx, []string{"hello"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), "`no-such-model` does not exist") {
		t.Errorf("unknown model: err = %v", err)
	}

	c = newClient(t, srv, embed.ClientOptions{APIKey: "sk-right", MaxInputBytes: 10})
	if _, err := c.Embed(ctx, []string{"short", "far longer than ten bytes"}); err == nil || !strings.Contains(err.Error(), "text 1: 25 bytes, over the limit of 10") {
		t.Errorf("a text over the limit: err = %v", err)
	}
	if _, err := c.Embed(ctx, []string{"ok", ""}); err == nil || !strings.Contains(err.Error(), "text 1: it is empty") {
		t.Errorf("an empty text: err = %v", err)
	}

	down := embedtest.New(t, embedtest.Options{})
	c = newClient(t, down, embed.ClientOptions{})
	down.Close()
	if _, err := c.Embed(ctx, []string{"hello"}); err == nil || !strings.Contains(err.Error(), down.URL) || !strings.Contains(err.Error(), "is it running") {
		t.Errorf("provider down: err = %v", err)
	}
}

func TestNewClient(t *testing.T) {
	tests := []struct {
		url, endpoint, err string
	}{
		{url: "https://api.example.com", endpoint: "https://api.example.com/v1/embeddings"},
		{url: "https://api.example.com/", endpoint: "https://api.example.com/v1/embeddings"},
		{url: "http://127.0.0.1:11434/v1", endpoint: "http://127.0.0.1:11434/v1/embeddings"},
		{url: "http://h/proxy/v1/embeddings", endpoint: "http://h/proxy/v1/embeddings"},
		{url: "http://h/proxy?api-version=2&key=secret", endpoint: "http://h/proxy/v1/embeddings?…"},
		{url: "ftp://h", err: "give an http:// or https:// URL"},
		{url: "api.example.com", err: "give an http:// or https:// URL"},
		{url: "https://user:pw@h", err: "remove the user and password"},
	}
	for _, tt := range tests {
		c, err := embed.NewClient(embed.ClientOptions{URL: tt.url, Model: "m"})
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("NewClient(%q): err = %v; want %q", tt.url, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "pw") {
				t.Errorf("NewClient(%q): the error shows the password: %v", tt.url, err)
			}
		case err != nil:
			t.Errorf("NewClient(%q): %v", tt.url, err)
		case c.Endpoint() != tt.endpoint:
			t.Errorf("NewClient(%q).Endpoint() = %q, want %q", tt.url, c.Endpoint(), tt.endpoint)
		}
	}
	for _, model := range []string{"", "two words", "tab\there", strings.Repeat("m", 201)} {
		if _, err := embed.NewClient(embed.ClientOptions{URL: "http://h", Model: model}); err == nil {
			t.Errorf("model %q was accepted", model)
		}
	}
}
