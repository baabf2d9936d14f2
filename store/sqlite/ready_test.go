package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReady checks that Ready holds on a migrated database and names the
// missing migration once one is gone.
func TestReady(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ready(t.Context()); err != nil {
		t.Fatalf("Ready on a fresh database: %v", err)
	}
	if _, err := s.writer.Exec(`DELETE FROM schema_migrations WHERE version = 2`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(t.Context()); err == nil || !strings.Contains(err.Error(), "0002_docs is missing") {
		t.Fatalf("Ready without migration 2: %v; want it named", err)
	}
}
