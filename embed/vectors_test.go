package embed_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/caphub/caphub/embed"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/postgres"
	"github.com/caphub/caphub/store/sqlite"
)

// stores are the stores the tests run on: SQLite always, PostgreSQL when
// CAPHUB_TEST_POSTGRES names a database.
var stores = []struct {
	name string
	open func(t testing.TB) registry.Store
}{
	{"sqlite", openSQLite},
	{"postgres", openPostgres},
}

func openSQLite(t testing.TB) registry.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openPostgres opens a store in a schema of its own in the database of
// CAPHUB_TEST_POSTGRES, dropped when the test ends; it skips the test when
// the variable is not set.
func openPostgres(t testing.TB) registry.Store {
	t.Helper()
	base := os.Getenv("CAPHUB_TEST_POSTGRES")
	if base == "" {
		t.Skip("CAPHUB_TEST_POSTGRES not set: skipping the PostgreSQL tests (set it to a postgres:// URL of a test database)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to CAPHUB_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "caphub_embed_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("CAPHUB_TEST_POSTGRES is not a URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	st, err := postgres.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func key(domain, name, version string) registry.Key {
	return registry.Key{Scheme: "ossa", Domain: domain, Name: name, Version: version}
}

func TestVectors(t *testing.T) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			st := s.open(t)
			const model = "text-embedding-3-small"
			var want []embed.Vector
			for i := range 600 { // over every shard
				v := make([]float32, 8)
				for j := range v {
					v[j] = float32(i) + float32(j)/3
				}
				want = append(want, embed.Vector{Key: key(fmt.Sprintf("d%d", i%7), fmt.Sprintf("cap_%d", i), "1.0.0"), Vector: v})
			}
			odd := []float32{float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, math.MaxFloat32, -1e-20}
			want = append(want, embed.Vector{Key: key("x", "odd", "2.0.0-rc.1"), Vector: odd})
			for i := 0; i < len(want); i += 100 {
				if err := embed.PutVectors(ctx, st, model, want[i:min(i+100, len(want))]); err != nil {
					t.Fatal(err)
				}
			}
			// Another model's vectors and a damaged document are not
			// loaded; the damaged one is counted.
			if err := embed.PutVectors(ctx, st, "other-model", want[:3]); err != nil {
				t.Fatal(err)
			}
			if err := st.PutDoc(ctx, embed.DocKind, model+" 00 damaged", []byte(`{"model":"text-embedding-3-small","dims":2,"vector":"!!"}`)); err != nil {
				t.Fatal(err)
			}

			got, err := embed.GetVector(ctx, st, model, want[len(want)-1].Key)
			if err != nil || !slices.Equal(got, odd) || math.Signbit(float64(got[0])) != true {
				t.Errorf("GetVector = %v, %v; want %v", got, err, odd)
			}
			if _, err := embed.GetVector(ctx, st, model, key("x", "none", "1.0.0")); !errors.Is(err, registry.ErrNotFound) {
				t.Errorf("GetVector of a version without one: err = %v; want ErrNotFound", err)
			}

			loaded := map[registry.Key][]float32{}
			skipped, err := embed.LoadVectors(ctx, st, model, func(v embed.Vector) error {
				loaded[v.Key] = v.Vector
				return nil
			})
			if err != nil || skipped != 1 {
				t.Fatalf("LoadVectors: skipped %d, %v; want 1 skipped", skipped, err)
			}
			if len(loaded) != len(want) {
				t.Fatalf("loaded %d vectors, want %d", len(loaded), len(want))
			}
			for _, w := range want {
				if !slices.Equal(loaded[w.Key], w.Vector) {
					t.Fatalf("vector of %s = %v, want %v", w.Key, loaded[w.Key], w.Vector)
				}
			}

			// A vector is replaced.
			want[0].Vector = []float32{1, 2, 3}
			if err := embed.PutVectors(ctx, st, model, want[:1]); err != nil {
				t.Fatal(err)
			}
			if got, err := embed.GetVector(ctx, st, model, want[0].Key); err != nil || !slices.Equal(got, want[0].Vector) {
				t.Errorf("replaced vector = %v, %v", got, err)
			}

			stop := errors.New("stop")
			if _, err := embed.LoadVectors(ctx, st, model, func(embed.Vector) error { return stop }); err != stop {
				t.Errorf("an error of each: LoadVectors returned %v", err)
			}
		})
	}
}

func TestPutVectorsRefuses(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	k := key("d", "n", "1.0.0")
	for _, tt := range []struct {
		model string
		v     []float32
		err   string
	}{
		{"m", []float32{float32(math.NaN())}, "dimension 0 is NaN"},
		{"m", []float32{float32(math.Inf(1))}, "dimension 0 is +Inf"},
		{"m", nil, "0 dimensions"},
		{"two words", []float32{1}, "space"},
	} {
		err := embed.PutVectors(ctx, st, tt.model, []embed.Vector{{Key: k, Vector: tt.v}})
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("PutVectors(%q, %v): err = %v; want %q", tt.model, tt.v, err, tt.err)
		}
	}
}
