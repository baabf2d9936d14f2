package registry_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/caphub/caphub/store/storetest"
)

func cacheDef(version string) capability.Definition {
	v := capability.MustParseVersion(version)
	return capability.Definition{
		URI: "ossa:cache/thing@" + v.Short(), Name: "thing", Domain: "cache", Version: version, Description: "a thing",
		Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "thing"}},
	}
}

// watchSignal is a store whose started is closed once Watch has
// subscribed.
type watchSignal struct {
	registry.Store
	started chan struct{}
	once    sync.Once
}

func (w *watchSignal) Watch(ctx context.Context) (<-chan registry.Event, error) {
	ch, err := w.Store.Watch(ctx)
	w.once.Do(func() { close(w.started) })
	return ch, err
}

// twoStores opens two stores on one new SQLite database: a write through
// one reaches the other's Watch.
func twoStores(t *testing.T) (registry.Store, registry.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "two.db")
	var sts [2]registry.Store
	for i := range sts {
		st, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		sts[i] = st
	}
	return sts[0], sts[1]
}

// A cached service sees its own writes at once and another store's writes
// on the same database as soon as their notification arrives.
func TestCacheFollowsWrites(t *testing.T) {
	ctx := context.Background()
	stA, stB := twoStores(t)
	watched := &watchSignal{Store: stA, started: make(chan struct{})}
	a := registry.NewService(watched, registry.WithCache())
	defer a.Close()
	b := registry.NewService(stB)
	defer b.Close()
	<-watched.started // the cache's watch is established

	if _, err := a.Register(ctx, cacheDef("1.0.0")); err != nil {
		t.Fatal(err)
	}
	resolve := func() string {
		r, err := a.Resolve(ctx, "ossa:cache/thing@1")
		if err != nil {
			t.Fatal(err)
		}
		return r.Version
	}
	if v := resolve(); v != "1.0.0" {
		t.Fatalf("resolved %s", v)
	}
	// Its own write: visible immediately.
	if _, err := a.Register(ctx, cacheDef("1.0.1")); err != nil {
		t.Fatal(err)
	}
	if v := resolve(); v != "1.0.1" {
		t.Errorf("own write not visible: %s", v)
	}
	// Another store's write: visible once notified.
	if _, err := b.Register(ctx, cacheDef("1.1.0")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for resolve() != "1.1.0" {
		if time.Now().After(deadline) {
			t.Fatalf("the other store's write never became visible")
		}
		time.Sleep(time.Millisecond)
	}
	// Deprecation through the other store reaches the cached resolution too.
	if _, err := b.Deprecate(ctx, "ossa", "cache", "thing", "1.1", registry.DeprecateRequest{MigrationGuide: "stop"}); err != nil {
		t.Fatal(err)
	}
	for {
		r, _ := a.Resolve(ctx, "ossa:cache/thing@1.1")
		if len(r.Warnings) > 0 {
			break
		}
		if time.Now().After(deadline.Add(2 * time.Second)) {
			t.Fatalf("deprecation never became visible")
		}
		time.Sleep(time.Millisecond)
	}
}

// countingStore counts the GetRaw calls that reach the store.
type countingStore struct {
	registry.Store
	getRaw atomic.Int64
}

func (c *countingStore) GetRaw(ctx context.Context, k registry.Key) (registry.RawRecord, error) {
	c.getRaw.Add(1)
	return c.Store.GetRaw(ctx, k)
}

// A version the store does not hold is remembered as absent until the
// capability changes: a GET without a scheme (ossa, then mcp) of an mcp
// capability reads the store once, not on every request.
func TestCacheRemembersAbsentVersions(t *testing.T) {
	ctx := context.Background()
	stA, stB := twoStores(t)
	counted := &countingStore{Store: stA}
	watched := &watchSignal{Store: counted, started: make(chan struct{})}
	a := registry.NewService(watched, registry.WithCache())
	defer a.Close()
	b := registry.NewService(stB)
	defer b.Close()
	<-watched.started
	deadline := time.Now().Add(2 * time.Second)
	for !a.CachedAbsent("ossa", "cache", "thing", "1.0.0") { // once the cache is on
		if _, _, err := a.GetRaw(ctx, "ossa", "cache", "thing", "1.0.0"); !errors.Is(err, registry.ErrNotFound) {
			t.Fatalf("GetRaw of a missing version: %v; want ErrNotFound", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the missing version is never known absent")
		}
		time.Sleep(time.Millisecond)
	}
	before := counted.getRaw.Load()
	for range 3 {
		if _, _, err := a.GetRaw(ctx, "ossa", "cache", "thing", "1.0.0"); !errors.Is(err, registry.ErrNotFound) {
			t.Fatalf("GetRaw of a missing version: %v; want ErrNotFound", err)
		}
	}
	if n := counted.getRaw.Load() - before; n != 0 {
		t.Errorf("GetRaw of a version known absent read the store %d times; want 0", n)
	}
	// Registered through the other store: found once notified.
	if _, err := b.Register(ctx, cacheDef("1.0.0")); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(2 * time.Second)
	for {
		_, _, err := a.GetRaw(ctx, "ossa", "cache", "thing", "1.0.0")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other store's registration never became visible: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	if a.CachedAbsent("ossa", "cache", "thing", "1.0.0") {
		t.Error("CachedAbsent after the registration")
	}
}

// BenchmarkReads measures the Service's read paths over a SQLite store of
// 2,000 synthetic versions, with the cache (WithCache) and without: the
// first page of the latest versions, the stored JSON of one version, and
// resolving a URI.
func BenchmarkReads(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "reads.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	loaded, err := storetest.Load(ctx, st, 2000)
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	k := loaded[len(loaded)/2].Key
	uri := capability.NewURI(k.Scheme, k.Domain, k.Name, capability.MustParseVersion(k.Version)).String()
	for _, tc := range []struct {
		name string
		opts []registry.Option
	}{{"cached", []registry.Option{registry.WithCache()}}, {"store", nil}} {
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		svc := registry.NewService(st, tc.opts...)
		for range 1000 { // the cache turns on once its watch is established
			if _, ok := svc.CachedRaw(k.Scheme, k.Domain, k.Name, k.Version); ok || tc.opts == nil {
				break
			}
			_, _, _ = svc.GetRaw(ctx, k.Scheme, k.Domain, k.Name, k.Version)
			time.Sleep(time.Millisecond)
		}
		b.Run("list/"+tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := svc.List(ctx, registry.ListFilter{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("get/"+tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := svc.GetRaw(ctx, k.Scheme, k.Domain, k.Name, k.Version); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("resolve/"+tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := svc.Resolve(ctx, uri); err != nil {
					b.Fatal(err)
				}
			}
		})
		svc.Close()
	}
}
