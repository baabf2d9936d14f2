package sqlite

import (
	"context"
	"fmt"
	"sync"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/watch"
)

// hubs holds one hub per database file, shared by every Store of this
// process open on it, so that each sees the others' changes.
var (
	hubsMu sync.Mutex
	hubs   = map[string]*hub{}
)

// hub fans events out to watchers. Publishing never blocks: each watcher
// has its own queue, drained by its own goroutine.
type hub struct {
	path string // key in hubs; "" for a private (in-memory) hub
	refs int    // Stores using it, guarded by hubsMu

	mu   sync.Mutex
	subs map[*watcher]struct{}
}

// watcher is a subscription and the Store whose Close ends it.
type watcher struct {
	*watch.Watcher
	owner *Store
}

func newHub(path string) *hub { return &hub{path: path, subs: map[*watcher]struct{}{}, refs: 1} }

// acquireHub returns the hub of a database file, creating it.
func acquireHub(path string) *hub {
	hubsMu.Lock()
	defer hubsMu.Unlock()
	if h, ok := hubs[path]; ok {
		h.refs++
		return h
	}
	h := newHub(path)
	hubs[path] = h
	return h
}

// detach stops the watchers of owner and releases owner's reference.
func (h *hub) detach(owner *Store) {
	h.mu.Lock()
	for w := range h.subs {
		if w.owner == owner {
			w.Halt()
			delete(h.subs, w)
		}
	}
	h.mu.Unlock()
	if h.path == "" {
		return
	}
	hubsMu.Lock()
	defer hubsMu.Unlock()
	if h.refs--; h.refs == 0 && hubs[h.path] == h {
		delete(hubs, h.path)
	}
}

// subscribe adds a watcher that lives until ctx ends or owner closes.
func (h *hub) subscribe(ctx context.Context, owner *Store) <-chan registry.Event {
	w := &watcher{Watcher: watch.New(), owner: owner}
	h.mu.Lock()
	if owner.closed.Load() {
		// Close ran (or is running) detach: it would not see this watcher.
		h.mu.Unlock()
		close(w.Out)
		return w.Out
	}
	h.subs[w] = struct{}{}
	h.mu.Unlock()
	go func() {
		defer close(w.Out)
		defer func() {
			h.mu.Lock()
			delete(h.subs, w)
			h.mu.Unlock()
		}()
		w.Run(ctx)
	}()
	return w.Out
}

// publish queues events for every watcher.
func (h *hub) publish(events []registry.Event) {
	if len(events) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.subs {
		w.Push(events)
	}
}

// Watch reports changes made through any Store of this process on the same
// database file; see registry.Store.
func (s *Store) Watch(ctx context.Context) (<-chan registry.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("watch sqlite database %s: %w", s.path, err)
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("watch sqlite database %s: the store is closed", s.path)
	}
	return s.hub.subscribe(ctx, s), nil
}
