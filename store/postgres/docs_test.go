package postgres

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/migrate"
	"github.com/caphub/caphub/store/internal/read"
)

// TestDocsMigration checks that a schema made before the docs table existed
// (schema version 1) gets it on Open, keeping its capabilities, and that
// reopening applies nothing again.
func TestDocsMigration(t *testing.T) {
	url := newSchema(t)
	s, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	rec := record("text", "echo", "1.0.0")
	if _, err := s.Put(t.Context(), []registry.Record{rec}); err != nil {
		t.Fatal(err)
	}
	// Take the schema back to version 1, as a caphub without the docs table
	// left it.
	if _, err := s.pool.Exec(t.Context(), `DROP TABLE docs`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(t.Context(), `DELETE FROM schema_migrations WHERE version = 2`); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, url)
	if _, err := s.Get(t.Context(), rec.Key); err != nil {
		t.Errorf("Get after the upgrade: %v", err)
	}
	var name string
	if err := s.pool.QueryRow(t.Context(), `SELECT name FROM schema_migrations WHERE version = 2`).Scan(&name); err != nil || name != "docs" {
		t.Errorf("schema_migrations version 2 = %q, %v; want docs", name, err)
	}
	if err := s.PutDoc(t.Context(), "agent", "a", []byte(`{"a":1}`)); err != nil {
		t.Fatalf("PutDoc after the upgrade: %v", err)
	}
	s.Close()

	s = open(t, url)
	migs, _ := migrate.Load(migrationFiles)
	var n int
	if err := s.pool.QueryRow(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(migs) {
		t.Errorf("schema_migrations has %d rows (%v), want %d", n, err, len(migs))
	}
	if d, err := s.GetDoc(t.Context(), "agent", "a"); err != nil || string(d.Value) != `{"a":1}` {
		t.Errorf("GetDoc after reopening = %q, %v", d.Value, err)
	}
}

// TestDocsCollation checks that kinds and keys compare byte-wise whatever
// the database's default collation (the test database's may already sort
// like "C", so the behaviour suite alone would not notice).
func TestDocsCollation(t *testing.T) {
	s := open(t, newSchema(t))
	rows, err := s.pool.Query(t.Context(), `SELECT a.attname || ' ' || coalesce(c.collname, '') FROM pg_attribute a
		LEFT JOIN pg_collation c ON c.oid = a.attcollation
		WHERE a.attrelid = 'docs'::regclass AND a.attname IN ('kind', 'key') ORDER BY a.attname`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || strings.Join(got, ", ") != "key C, kind C" {
		t.Errorf("docs column collations = %q, %v; want kind and key COLLATE \"C\"", got, err)
	}
}

// TestDocsListUsesIndex checks that ListDocs reads a range of the primary
// key's index, in key order, with the bounds as index conditions (the
// parameters take on the column's "C" collation).
func TestDocsListUsesIndex(t *testing.T) {
	s := open(t, newSchema(t))
	var ops []registry.DocOp
	for i := 0; i < 5000; i++ {
		ops = append(ops, registry.DocOp{Kind: fmt.Sprint("k", i%5), Key: fmt.Sprintf("key%05d", i), Value: []byte(`{}`)})
	}
	if err := s.ApplyDocs(t.Context(), ops); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(t.Context(), `ANALYZE docs`); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"key012", "key0%_", "key\U0010ffff"} {
		query, args := read.DocListQuery(dialect, docColumns, "k1", prefix)
		rows, err := s.pool.Query(t.Context(), `EXPLAIN `+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		t.Logf("ListDocs(k1, %+q):\n%s", prefix, plan)
		if !strings.Contains(plan, "Index Scan using docs_pkey") || !strings.Contains(plan, "(key >= ") ||
			strings.Contains(plan, "Sort") || strings.Contains(plan, "Filter") {
			t.Errorf("ListDocs(k1, %+q) is not a range scan of docs_pkey in order", prefix)
		}
	}
	docs, err := s.ListDocs(t.Context(), "k1", "key012")
	if err != nil || len(docs) != 20 {
		t.Errorf("ListDocs(k1, key012) = %d documents, %v; want 20", len(docs), err)
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
	s := open(t, newSchema(t))
	s.Close()
	_, err := s.GetDoc(t.Context(), "k", "x")
	if err == nil || errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), "closed") {
		t.Errorf("GetDoc after Close: %v; want an error saying the store is closed", err)
	}
}
