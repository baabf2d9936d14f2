package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/embed/embedtest"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/registry"
)

// serveConfigOf reads the config of `caphub serve args...`.
func serveConfigOf(t *testing.T, args ...string) (config, error) {
	t.Helper()
	root := newRootCmd()
	cmd, rest, err := root.Find(append([]string{"serve"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatal(err)
	}
	return configFrom(cmd, slog.LevelWarn)
}

func TestEmbedConfig(t *testing.T) {
	for _, v := range []string{"CAPHUB_EMBED_URL", "CAPHUB_EMBED_MODEL", "CAPHUB_EMBED_API_KEY_ENV", "CAPHUB_EMBED_DIMENSIONS"} {
		t.Setenv(v, "")
	}
	cfg, err := serveConfigOf(t)
	if err != nil || cfg.embed.url != "" {
		t.Fatalf("no setting: %+v, %v; want off", cfg.embed, err)
	}

	t.Setenv("TEST_EMBED_KEY", "sk-secret")
	cfg, err = serveConfigOf(t, "--embed-url", "http://127.0.0.1:1", "--embed-model", "m1", "--embed-api-key-env", "TEST_EMBED_KEY", "--embed-dimensions", "256")
	if err != nil {
		t.Fatal(err)
	}
	if e := cfg.embed; e.url != "http://127.0.0.1:1" || e.model != "m1" || e.apiKey != "sk-secret" || e.dimensions != 256 {
		t.Errorf("flags: %+v", e)
	}

	t.Setenv("CAPHUB_EMBED_URL", "https://env.example")
	t.Setenv("CAPHUB_EMBED_MODEL", "env-model")
	t.Setenv("CAPHUB_EMBED_DIMENSIONS", "64")
	cfg, err = serveConfigOf(t, "--embed-model", "flag-model")
	if err != nil {
		t.Fatal(err)
	}
	if e := cfg.embed; e.url != "https://env.example" || e.model != "flag-model" || e.dimensions != 64 || e.apiKey != "" {
		t.Errorf("variables under a flag: %+v", e)
	}
	if mcp, err := mcpConfig(t); err != nil || mcp.embed.url != "" {
		t.Errorf("caphub mcp read the embedding settings: %+v, %v", mcp.embed, err)
	}

	t.Setenv("CAPHUB_EMBED_URL", "")
	t.Setenv("CAPHUB_EMBED_MODEL", "")
	t.Setenv("CAPHUB_EMBED_DIMENSIONS", "")
	t.Setenv("TEST_EMBED_EMPTY", "")
	for _, tt := range []struct {
		args []string
		env  [2]string
		err  string
	}{
		{args: []string{"--embed-url", "http://h"}, err: "--embed-url needs --embed-model"},
		{args: []string{"--embed-model", "m"}, err: "need --embed-url"},
		{args: []string{"--embed-url", "ftp://h", "--embed-model", "m"}, err: "give an http:// or https:// URL"},
		{args: []string{"--embed-url", "http://h", "--embed-model", "two words"}, err: "space"},
		{args: []string{"--embed-url", "http://h", "--embed-model", "m", "--embed-dimensions", "-1"}, err: "--embed-dimensions -1"},
		{args: []string{"--embed-url", "http://h", "--embed-model", "m"}, env: [2]string{"CAPHUB_EMBED_DIMENSIONS", "many"}, err: `CAPHUB_EMBED_DIMENSIONS="many"`},
		{args: []string{"--embed-url", "http://h", "--embed-model", "m", "--embed-api-key-env", "TEST_EMBED_EMPTY"}, err: "names TEST_EMBED_EMPTY, which is not set or empty"},
	} {
		if tt.env[0] != "" {
			t.Setenv(tt.env[0], tt.env[1])
		}
		_, err := serveConfigOf(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%v: err = %v; want %q", tt.args, err, tt.err)
		}
		if tt.env[0] != "" {
			t.Setenv(tt.env[0], "")
		}
	}
}

// With an embedding provider, the app embeds the built-ins and each
// capability registered, and ranks them by meaning.
func TestAppEmbedding(t *testing.T) {
	srv := embedtest.New(t, embedtest.Options{Dimensions: 128, APIKey: "sk-test"})
	var logs lockedBuffer
	cfg := config{
		db:    filepath.Join(t.TempDir(), "caphub.db"),
		log:   slog.New(slog.NewTextHandler(&logs, nil)),
		embed: embedConfig{url: srv.URL, model: srv.Model(), apiKey: "sk-test", apiKeyEnv: "TEST_EMBED_KEY"},
	}
	ctx := context.Background()
	a, err := newApp(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.ranker == nil {
		t.Fatal("the app has no ranker")
	}
	def := capability.Definition{
		URI: "ossa:messaging/send_email@1.0", Name: "send_email", Domain: "messaging", Version: "1.0.0",
		Title: "Send an email", Description: "Sends an email to a recipient through SMTP.",
		Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "send_email"}},
	}
	if _, err := a.svc.RegisterBatch(identity.With(ctx, identity.Caller{Actor: "test"}), []capability.Definition{def}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for s := a.indexer.Status(); !s.Loaded || s.Pending > 0 || s.Scanning || s.Vectors < 2; s = a.indexer.Status() {
		if time.Now().After(deadline) {
			t.Fatalf("the indexer is not done: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, err := a.ranker.Rank(ctx, "mail my colleague a note", 3)
	if err != nil || len(got) == 0 || got[0].Key.Name != "send_email" {
		t.Errorf("Rank = %v, %v; want send_email first", got, err)
	}
	if !strings.Contains(logs.String(), "semantic search on") || strings.Contains(logs.String(), "sk-test") {
		t.Errorf("the log does not say semantic search is on, or shows the key:\n%s", logs.String())
	}
}

// lockedBuffer is a log written by the app's goroutines and read by the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// With an embedding provider and the search index, search is hybrid: a
// capability that shares no word with the query (tldr, summarize) is found
// by meaning, and the lexical hits keep their place when the words match.
func TestHybridSearch(t *testing.T) {
	srv := embedtest.New(t, embedtest.Options{Dimensions: 128})
	cfg := config{
		db:    filepath.Join(t.TempDir(), "caphub.db"),
		log:   slog.New(slog.DiscardHandler),
		embed: embedConfig{url: srv.URL, model: srv.Model()},
	}
	ctx := context.Background()
	a, err := newApp(ctx, cfg, registry.WithSearchIndex(true))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var defs []capability.Definition
	for _, d := range [][3]string{
		{"send_email", "Send an email", "Sends an email to a recipient through SMTP."},
		{"summarize_text", "Summarize a text", "Writes a short summary of a long text."},
	} {
		defs = append(defs, capability.Definition{
			URI: "ossa:text/" + d[0] + "@1.0", Name: d[0], Domain: "text", Version: "1.0.0", Title: d[1], Description: d[2],
			Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
			Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: d[0]}},
		})
	}
	if _, err := a.svc.RegisterBatch(identity.With(ctx, identity.Caller{Actor: "test"}), defs); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for s := a.indexer.Status(); !s.Loaded || s.Pending > 0 || s.Scanning || !a.ranker.Has(registry.Key{Scheme: "ossa", Domain: "text", Name: "summarize_text", Version: "1.0.0"}); s = a.indexer.Status() {
		if time.Now().After(deadline) {
			t.Fatalf("the indexer is not done: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	page, err := a.svc.Search(ctx, registry.SearchQuery{Text: "tldr please", Filter: registry.ListFilter{Limit: 5}, Explain: true})
	if err != nil || len(page.Items) == 0 || page.Items[0].Key.Name != "summarize_text" || !strings.Contains(strings.Join(page.Hits[0].Why, " "), "semantic similarity") {
		t.Errorf("a query with no word in common: %+v %v", page, err)
	}
	page, err = a.svc.Search(ctx, registry.SearchQuery{Text: "send an email", Filter: registry.ListFilter{Limit: 5}})
	if err != nil || len(page.Items) == 0 || page.Items[0].Key.Name != "send_email" {
		t.Errorf("a query of the capability's own words: %+v %v", page, err)
	}
	// Without the provider, the same words find nothing to rank.
	lex := registry.NewService(a.store, registry.WithSearchIndex(true))
	if p, err := lex.Search(ctx, registry.SearchQuery{Text: "tldr please", Filter: registry.ListFilter{Limit: 5}}); err != nil || len(p.Items) != 0 {
		t.Errorf("words only: %+v %v", p, err)
	}
}
