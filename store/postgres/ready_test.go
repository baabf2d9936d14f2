package postgres

import (
	"strings"
	"testing"
)

// TestReady checks that Ready holds on a migrated schema and names the
// missing migration once one is gone.
func TestReady(t *testing.T) {
	s := open(t, newSchema(t))
	if err := s.Ready(t.Context()); err != nil {
		t.Fatalf("Ready on a fresh schema: %v", err)
	}
	if _, err := s.pool.Exec(t.Context(), `DELETE FROM schema_migrations WHERE version = 2`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(t.Context()); err == nil || !strings.Contains(err.Error(), "0002_docs is missing") {
		t.Fatalf("Ready without migration 2: %v; want it named", err)
	}
}
