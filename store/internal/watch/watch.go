// Package watch is the subscription both stores' Watch hands out: a
// queue per watcher that publishing never blocks on.
package watch

import (
	"context"
	"sync"

	"github.com/caphub/caphub/registry"
)

// maxPending is how many events a watcher may fall behind before its
// channel is closed (it must then Watch again and re-read what it caches).
const maxPending = 10000

// Watcher is one Watch subscription of either store: publishing queues
// events without blocking, and Run, in the watcher's own goroutine,
// delivers them on Out in order.
type Watcher struct {
	Out      chan registry.Event
	wake     chan struct{} // capacity 1: something was queued
	stopped  chan struct{} // closed by Halt
	haltOnce sync.Once

	mu    sync.Mutex
	queue []registry.Event
}

// New returns a watcher; its owner runs Run and closes Out after.
func New() *Watcher {
	return &Watcher{Out: make(chan registry.Event), wake: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// Push queues events, or halts the watcher when it has fallen more than
// maxPending events behind.
func (w *Watcher) Push(events []registry.Event) {
	w.mu.Lock()
	overflow := len(w.queue)+len(events) > maxPending
	if !overflow {
		w.queue = append(w.queue, events...)
	}
	w.mu.Unlock()
	if overflow {
		w.Halt()
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Halt stops the watcher: Run returns.
func (w *Watcher) Halt() {
	w.haltOnce.Do(func() { close(w.stopped) })
}

// Run delivers queued events until ctx ends or the watcher is halted.
func (w *Watcher) Run(ctx context.Context) {
	for {
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, e := range batch {
			select {
			case w.Out <- e:
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
