package registry_test

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/caphub/caphub/store/storetest"
)

// gappyStore is a store whose watches the test can break, as a watcher
// that falls behind sees them closed, and that calls atBuild when a
// search index starts reading every version.
type gappyStore struct {
	registry.Store
	mu        sync.Mutex
	stop      chan struct{}
	atBuild   func()
	delivered atomic.Int64 // events the watcher took
}

func (g *gappyStore) Watch(ctx context.Context) (<-chan registry.Event, error) {
	in, err := g.Store.Watch(ctx)
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	g.mu.Lock()
	g.stop = stop
	g.mu.Unlock()
	out := make(chan registry.Event)
	go func() {
		defer close(out)
		for {
			select {
			case ev, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- ev:
					g.delivered.Add(1)
				case <-stop:
					return
				}
			case <-stop:
				return
			}
		}
	}()
	return out, nil
}

// gap closes the current watch.
func (g *gappyStore) gap() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.stop)
}

func (g *gappyStore) List(ctx context.Context, f registry.ListFilter) (registry.Page, error) {
	g.mu.Lock()
	hook := g.atBuild
	g.mu.Unlock()
	if hook != nil && f.AllVersions && f.Cursor == "" {
		hook()
	}
	return g.Store.List(ctx, f)
}

func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestSearchIndexRebuildHoldsOneIndex checks that when the store's
// notifications have a gap (the index fell behind a large batch), the
// index rebuilt from the store does not sit beside the stale one: the
// stale one is let go first, so that the registry's index is never held
// twice.
func TestSearchIndexRebuildHoldsOneIndex(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Load(ctx, st, 4000); err != nil {
		t.Fatal(err)
	}
	g := &gappyStore{Store: st}
	before := liveHeap()
	svc := registry.NewService(g, registry.WithSearchIndex(true))
	defer svc.Close()
	// A search waits for the first build.
	if p, err := svc.Search(ctx, registry.SearchQuery{Text: "create", Filter: registry.ListFilter{Limit: 5}}); err != nil || len(p.Items) == 0 {
		t.Fatalf("search: %d items, %v", len(p.Items), err)
	}
	built := liveHeap()
	index := built - before
	if index < 2<<20 {
		t.Fatalf("the index of 4000 versions takes %d bytes: too little to tell one index from two", index)
	}
	atRebuild := make(chan int64, 1)
	g.mu.Lock()
	g.atBuild = func() {
		select {
		case atRebuild <- liveHeap():
		default:
		}
	}
	g.mu.Unlock()
	g.gap()
	select {
	case h := <-atRebuild:
		if held := h - before; held > index/2 {
			t.Errorf("when the rebuild starts the heap holds %d bytes more than before the index (%d bytes): the stale index is still held", held, index)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no rebuild after the watch closed")
	}
	runtime.KeepAlive(svc)
}

// TestSearchIndexFollowsWhileBuilding checks that the index takes the
// store's notifications while it is being built: a build of a large
// registry takes seconds, and a watch not read meanwhile falls behind a
// large batch and closes, which starts the build all over again, for as
// long as the batch lasts. What changed during the build is indexed after
// it.
func TestSearchIndexFollowsWhileBuilding(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Load(ctx, st, 200); err != nil {
		t.Fatal(err)
	}
	g := &gappyStore{Store: st}
	inBuild, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	g.atBuild = func() {
		once.Do(func() { close(inBuild); <-release })
	}
	svc := registry.NewService(g, registry.WithSearchIndex(false))
	defer svc.Close()
	<-inBuild
	def := capability.Definition{
		URI: "ossa:during/zebrafish@1.0", Name: "zebrafish", Domain: "during", Version: "1.0.0",
		Description: "Count the zebrafish in a tank.", Input: capability.Schema{"type": "object"}, Output: capability.Schema{},
		Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: "https://fish.example.com/count"}},
	}
	if _, err := svc.RegisterBatch(ctx, []capability.Definition{def}); err != nil {
		close(release)
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for g.delivered.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	took := g.delivered.Load()
	close(release)
	if took == 0 {
		t.Fatal("the registration's notification was not taken while the index was being built")
	}
	// Once built, the index has what was registered during the build.
	deadline = time.Now().Add(10 * time.Second)
	for {
		p, err := svc.Search(ctx, registry.SearchQuery{Text: "zebrafish", Filter: registry.ListFilter{Limit: 5}, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) == 1 && p.Items[0].Key.Name == "zebrafish" && len(p.Hits) == 1 && len(p.Hits[0].Why) > 0 {
			break // Why: ranked by the index
		}
		if time.Now().After(deadline) {
			t.Fatalf("the index does not find the capability registered while it was built: %+v %+v", p.Items, p.Hits)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
