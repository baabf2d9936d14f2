package postgres

import (
	"bytes"
	"testing"
	"time"

	"github.com/caphub/caphub/registry"
)

// The registry's read cache over two replicas: what one replica serves
// from memory (a version's stored JSON, a list's decoded definitions)
// follows a deprecation made through the other, as soon as its
// LISTEN/NOTIFY event arrives.
func TestCachedReadsAcrossReplicas(t *testing.T) {
	url := newSchema(t)
	ctx := t.Context()
	a := registry.NewService(open(t, url), registry.WithCache())
	t.Cleanup(func() { a.Close() }) // its watch ends before the store closes
	b := registry.NewService(open(t, url))
	r := record("text", "echo", "1.0.0")
	if _, err := b.Store().Put(ctx, []registry.Record{r}); err != nil {
		t.Fatal(err)
	}
	k := r.Key
	var before *registry.CachedVersion
	eventually(t, "A caches the version", func() bool {
		v, _, err := a.GetRaw(ctx, k.Scheme, k.Domain, k.Name, k.Version)
		if err != nil {
			t.Fatal(err)
		}
		before = v
		_, ok := a.CachedRaw(k.Scheme, k.Domain, k.Name, k.Version)
		return ok
	})
	if _, err := a.List(ctx, registry.ListFilter{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Store().Deprecate(ctx, []registry.Deprecation{{Key: k, MigrationGuide: "stop"}}); err != nil {
		t.Fatal(err)
	}
	// A list reads the store and notices the changed JSON at once.
	p, err := a.List(ctx, registry.ListFilter{})
	if err != nil || len(p.Items) != 1 || p.Items[0].Definition.Stability != "deprecated" {
		t.Fatalf("A's list right after B's deprecation = %+v, %v; want it deprecated", p.Items, err)
	}
	// The cached GET follows once notified.
	eventually(t, "A's cached GET follows B's deprecation", func() bool {
		v, _, err := a.GetRaw(ctx, k.Scheme, k.Domain, k.Name, k.Version)
		if err != nil {
			t.Fatal(err)
		}
		return !bytes.Equal(v.Definition, before.Definition) && v.ETag != before.ETag && bytes.Contains(v.Definition, []byte(`"deprecated"`))
	})
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
