package client_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/client"
	"github.com/caphub/caphub/registry"
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
