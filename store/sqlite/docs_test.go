package sqlite

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/migrate"
	"github.com/caphub/caphub/store/internal/read"
)

// TestDocsMigration checks that a database made before the docs table
// existed (schema version 1) gets it on Open, keeping its capabilities, and
// that reopening applies nothing again.
func TestDocsMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "caphub.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	rec := record("text", "echo", "1.0.0")
	if _, err := s.Put(t.Context(), []registry.Record{rec}); err != nil {
		t.Fatal(err)
	}
	// Take the database back to version 1, as a caphub without the docs
	// table left it.
	if _, err := s.writer.ExecContext(t.Context(), `DROP TABLE docs; DELETE FROM schema_migrations WHERE version = 2`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.writer.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE name = 'docs'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("docs table still there after dropping it: %d, %v", n, err)
	}
	s.Close()

	s = open(t, path)
	if _, err := s.Get(t.Context(), rec.Key); err != nil {
		t.Errorf("Get after the upgrade: %v", err)
	}
	var name string
	if err := s.reader.QueryRowContext(t.Context(), `SELECT name FROM schema_migrations WHERE version = 2`).Scan(&name); err != nil || name != "docs" {
		t.Errorf("schema_migrations version 2 = %q, %v; want docs", name, err)
	}
	if err := s.PutDoc(t.Context(), "agent", "a", []byte(`{"a":1}`)); err != nil {
		t.Fatalf("PutDoc after the upgrade: %v", err)
	}
	s.Close()

	s = open(t, path)
	migs, _ := migrate.Load(migrationFiles)
	if err := s.reader.QueryRowContext(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(migs) {
		t.Errorf("schema_migrations has %d rows (%v), want %d", n, err, len(migs))
	}
	if d, err := s.GetDoc(t.Context(), "agent", "a"); err != nil || string(d.Value) != `{"a":1}` {
		t.Errorf("GetDoc after reopening = %q, %v", d.Value, err)
	}
}

// TestDocsListUsesIndex checks that ListDocs reads a range of the primary
// key's index, in order, for every shape of prefix.
func TestDocsListUsesIndex(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "caphub.db"))
	for _, tt := range []struct{ prefix, want string }{
		{"a%_", "(kind=? AND key>? AND key<?)"},
		{"\U0010ffff", "(kind=? AND key>?)"},
		{"", "(kind=?)"},
	} {
		query, args := read.DocListQuery(dialect, docColumns, "k", tt.prefix)
		got := queryPlan(t, s, query, args)
		t.Logf("ListDocs(k, %+q): %s", tt.prefix, got)
		if !strings.Contains(got, "SEARCH docs USING INDEX") || !strings.Contains(got, tt.want) ||
			strings.Contains(got, "TEMP B-TREE") || strings.Contains(got, "SCAN") {
			t.Errorf("ListDocs(k, %q) plan %q; want a search of the primary key %s, no sort", tt.prefix, got, tt.want)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tt := range []struct {
		prefix, end string
		ok          bool
	}{
		{"a", "b", true},
		{"a%", "a&", true},
		{"a_", "a`", true},
		{"a\u007f", "a\u0080", true},
		{"aé", "aê", true},
		{"a\u07ff", "a\u0800", true},
		{"a\ud7ff", "a\ue000", true},
		{"a\uffff", "a\U00010000", true},
		{"a\U0010ffff", "b", true},
		{"ab\U0010ffff\U0010ffff", "ac", true},
		{"\U0010ffff", "", false},
		{"\U0010ffff\U0010ffff", "", false},
	} {
		end, ok := read.PrefixEnd(tt.prefix)
		if end != tt.end || ok != tt.ok {
			t.Errorf("read.PrefixEnd(%+q) = %+q, %v; want %+q, %v", tt.prefix, end, ok, tt.end, tt.ok)
		}
		if ok && (!utf8.ValidString(end) || end <= tt.prefix) {
			t.Errorf("read.PrefixEnd(%+q) = %+q: not valid UTF-8 above the prefix", tt.prefix, end)
		}
	}
}

// TestDocsClosedMessage checks that the closed store says so.
func TestDocsClosedMessage(t *testing.T) {
	s := open(t, ":memory:")
	s.Close()
	_, err := s.GetDoc(t.Context(), "k", "x")
	if err == nil || errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), "closed") {
		t.Errorf("GetDoc after Close: %v; want an error saying the store is closed", err)
	}
}

// queryPlan is SQLite's plan of query with args on s's readers: the
// details of EXPLAIN QUERY PLAN's steps, joined by "; ".
func queryPlan(t *testing.T, s *Store, query string, args []any) string {
	t.Helper()
	rows, err := s.reader.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}
