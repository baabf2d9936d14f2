package discover

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// TestServerChangesRecorded: with a recorder, saving and removing a server
// each commit an audit event naming the actor and what caphub will run —
// never the values of its environment or headers — and removing a server
// that is not saved records nothing.
func TestServerChangesRecorded(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := audit.New(st)
	s := NewServers(st, WithRecorder(log))
	ctx := identity.With(context.Background(), identity.Caller{Actor: "local:alice"})
	srv := &mcpconn.Server{Name: "files", Command: "npx", Args: []string{"-y", "server-filesystem"}, Env: map[string]string{"ROOT": "/tmp", "API_TOKEN": "${API_TOKEN}"}}
	if err := s.SaveServer(ctx, srv); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveServer(ctx, "files"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveServer(ctx, "files"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
	events, err := log.List(ctx, chain.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		audit.KindServerSaved + ` local:alice {"args":["-y","server-filesystem"],"command":"npx","env":["API_TOKEN","ROOT"],"server":"files","transport":"stdio"}`,
		audit.KindServerDeleted + ` local:alice {"server":"files"}`,
	}
	if len(events) != len(want) {
		t.Fatalf("events = %+v, want %d", events, len(want))
	}
	for i, e := range events {
		if got := e.Kind + " " + e.Actor + " " + string(e.Data); got != want[i] {
			t.Errorf("event %d = %s, want %s", i+1, got, want[i])
		}
	}
}
