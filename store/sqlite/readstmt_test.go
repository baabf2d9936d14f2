package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/storetest"
)

// TestReadStatementsPrepared checks that the reads a registration, a GET
// and a list make over and over are prepared once and then reused (not
// parsed by SQLite on every call), that their answers do not change, and
// that the statements kept are bounded however many distinct queries run.
func TestReadStatementsPrepared(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, err := storetest.Load(ctx, s, 60)
	if err != nil {
		t.Fatal(err)
	}
	k := recs[0].Key
	for i := range 20 {
		if r, err := s.Get(ctx, k); err != nil || r.Key != k {
			t.Fatalf("call %d: Get(%s) = %s, %v", i, k, r.Key, err)
		}
		if raw, err := s.GetRaw(ctx, k); err != nil || len(raw.Definition) == 0 {
			t.Fatalf("call %d: GetRaw(%s): %d bytes, %v", i, k, len(raw.Definition), err)
		}
		if vs, err := s.Versions(ctx, k.Scheme, k.Domain, k.Name); err != nil || len(vs) == 0 {
			t.Fatalf("call %d: Versions: %d, %v", i, len(vs), err)
		}
		if vs, err := s.PrecedingVersions(ctx, []registry.Key{k}); err != nil || len(vs) != 1 || vs[0] == nil || vs[0].Key != k {
			t.Fatalf("call %d: PrecedingVersions: %v, %v", i, vs, err)
		}
		if keys, err := s.KeysWithPrefix(ctx, registry.KeyPrefix{Scheme: k.Scheme, Domain: k.Domain, Name: k.Name}); err != nil || len(keys) == 0 {
			t.Fatalf("call %d: KeysWithPrefix: %v, %v", i, keys, err)
		}
		for _, count := range []bool{false, true} {
			p, err := s.ListRaw(ctx, registry.ListFilter{Limit: 10, CountTotal: count})
			if err != nil || len(p.Items) != 10 || p.NextCursor == "" || count != (p.Total > 0) {
				t.Fatalf("call %d: ListRaw(count %v): %d items, total %d, %v", i, count, len(p.Items), p.Total, err)
			}
		}
	}
	// Get, GetRaw, Versions, PrecedingVersions, KeysWithPrefix and the page's
	// query (the same text with and without the count).
	if n := s.reads.len(); n != 6 {
		t.Errorf("%d read statements kept after 20 rounds of 6 distinct queries, want 6", n)
	}
	for i := range 2 * maxReadStmts {
		var got int
		if err := s.reads.queryRow(ctx, fmt.Sprintf("SELECT %d", i)).Scan(&got); err != nil || got != i {
			t.Fatalf("SELECT %d = %d, %v", i, got, err)
		}
	}
	if n := s.reads.len(); n != maxReadStmts {
		t.Errorf("%d read statements kept after %d distinct queries, want the bound %d", n, 2*maxReadStmts+6, maxReadStmts)
	}
}
