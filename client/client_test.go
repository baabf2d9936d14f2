package client_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/client"
	"github.com/caphub/caphub/internal/server/rest"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// TestGaveUp: a client that stops waiting for a change the server received
// says that the server may still complete it (*client.GaveUpError); a
// request that never reached a server, and a read it gave up on, are
// ordinary errors.
func TestGaveUp(t *testing.T) {
	received := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		received <- struct{}{}
		<-release // the server is still working
	}))
	defer srv.Close()
	defer close(release)

	c, err := client.New(srv.URL, client.WithTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	def := capability.Definition{URI: "ossa:text/echo@1.0", Name: "echo", Domain: "text", Version: "1.0.0"}
	_, err = c.RegisterBatch(t.Context(), []capability.Definition{def, def})
	var gu *client.GaveUpError
	if !errors.As(err, &gu) || gu.Method != http.MethodPost || gu.Path != "/registry/capabilities" || gu.Status != 0 {
		t.Fatalf("RegisterBatch against a server still working: %v (%T), want a *client.GaveUpError for POST /registry/capabilities", err, err)
	}
	<-received
	if _, err := c.List(t.Context(), registry.ListFilter{Limit: 1}); err == nil || errors.As(err, &gu) {
		t.Errorf("List against a server still working: %v, want an ordinary error (a read changes nothing)", err)
	}
	<-received

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	c, err = client.New(down.URL, client.WithTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterBatch(t.Context(), []capability.Definition{def}); err == nil || errors.As(err, &gu) {
		t.Errorf("RegisterBatch against no server: %v, want an ordinary error (nothing was sent)", err)
	}
}

// TestSearchGivesDefinitions: Search returns whole definitions from a real
// server, whose search answers summaries unless asked for view=full.
func TestSearchGivesDefinitions(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	svc := registry.NewService(st, registry.WithSearchIndex(true))
	srv := httptest.NewServer(rest.New(svc, slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { srv.Close(); svc.Close() })
	def := capability.Definition{URI: "ossa:text/echo@1.0", Name: "echo", Domain: "text", Version: "1.0.0", Description: "Echoes its text back.",
		Input:    capability.Schema{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
		Output:   capability.Schema{"type": "object"},
		Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "POST", URL: "http://127.0.0.1:9/echo"}}}
	if _, err := svc.Register(t.Context(), def); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Search(t.Context(), registry.SearchQuery{Text: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 1 || p.Total != 1 {
		t.Fatalf("Search(echo): %d items, total %d", len(p.Items), p.Total)
	}
	got := p.Items[0]
	if got.Key.Name != "echo" || got.Key.Version != "1.0.0" || got.Definition.Input["properties"] == nil || got.Definition.Bindings.HTTP == nil {
		t.Errorf("Search(echo) = %+v, want the whole definition", got)
	}
	// What the ranking says comes through too: the unknown words, and
	// with Explain each hit's parts.
	p, err = c.Search(t.Context(), registry.SearchQuery{Text: "show the echos of my txt", Explain: true})
	if err != nil || len(p.Items) != 1 || len(p.Hits) != 1 || len(p.Hits[0].Why) == 0 || p.Action != "crud.read" ||
		len(p.Unknown) != 1 || p.Unknown[0].Word != "txt" || len(p.Unknown[0].DidYouMean) == 0 || p.Unknown[0].DidYouMean[0] != "text" {
		t.Errorf("Search with Explain: %+v %v", p, err)
	}
}
