package sqlite

import (
	"context"
	"fmt"
	"sync"

	"github.com/caphub/caphub/registry"
)

// maxPending is how many events a watcher may fall behind before its channel
// is closed (it must then Watch again and re-read what it caches).
const maxPending = 10000

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

type watcher struct {
	owner    *Store
	out      chan registry.Event
	wake     chan struct{} // capacity 1: something was queued
	stopped  chan struct{} // closed by halt
	haltOnce sync.Once

	mu    sync.Mutex
	queue []registry.Event
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
			w.halt()
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
	w := &watcher{owner: owner, out: make(chan registry.Event), wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	h.mu.Lock()
	if owner.closed.Load() {
		// Close ran (or is running) detach: it would not see this watcher.
		h.mu.Unlock()
		close(w.out)
		return w.out
	}
	h.subs[w] = struct{}{}
	h.mu.Unlock()
	go func() {
		defer close(w.out)
		defer func() {
			h.mu.Lock()
			delete(h.subs, w)
			h.mu.Unlock()
		}()
		w.run(ctx)
	}()
	return w.out
}

// publish queues events for every watcher.
func (h *hub) publish(events []registry.Event) {
	if len(events) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.subs {
		w.push(events)
	}
}

// push queues events, or stops the watcher when it has fallen more than
// maxPending events behind.
func (w *watcher) push(events []registry.Event) {
	w.mu.Lock()
	overflow := len(w.queue)+len(events) > maxPending
	if !overflow {
		w.queue = append(w.queue, events...)
	}
	w.mu.Unlock()
	if overflow {
		w.halt()
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// halt stops the watcher; its goroutine closes its channel.
func (w *watcher) halt() {
	w.haltOnce.Do(func() { close(w.stopped) })
}

// run delivers queued events until ctx ends or the watcher is halted.
func (w *watcher) run(ctx context.Context) {
	for {
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, e := range batch {
			select {
			case w.out <- e:
			case <-ctx.Done():
				return
			case <-w.stopped:
				return
			}
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			return
		case <-w.stopped:
			return
		}
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
