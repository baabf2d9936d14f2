package registry

import (
	"context"
	"time"

	"github.com/caphub/caphub/internal/wait"
)

// Subscriber receives what Subscribe sees of a store's changes. Every
// function is optional, and all are called from one goroutine.
type Subscriber struct {
	// Watching is called each time a watch is established. resumed is
	// false for the first one and true after it: changes may have been
	// missed since the previous watch closed or failed, and what was read
	// from the store should be read again.
	Watching func(resumed bool)
	// Event is called with each change.
	Event func(Event)
	// Closed is called when a watch's channel closes: the store closed, ctx
	// ended, or the receiver fell behind.
	Closed func()
	// Failed is called when Watch fails, with the wait before it is tried
	// again.
	Failed func(err error, retryIn time.Duration)
	// MinRetry is the first wait after a failed Watch, doubled after each
	// failure in a row up to MaxRetry (100ms and 30s when zero).
	MinRetry, MaxRetry time.Duration
}

// Subscribe follows store's changes until ctx ends. It makes the first
// Watch before it returns, so that no change made after it returns goes
// unnoticed, and then follows the store from a goroutine of its own: a
// watch whose channel closes while ctx lives is established again at once,
// and a failed Watch is tried again after a wait that doubles from
// sub.MinRetry to sub.MaxRetry, back to sub.MinRetry once a watch is
// established. The returned channel is closed when that goroutine ends.
func Subscribe(ctx context.Context, store Store, sub Subscriber) <-chan struct{} {
	if sub.MinRetry <= 0 {
		sub.MinRetry = 100 * time.Millisecond
	}
	if sub.MaxRetry < sub.MinRetry {
		sub.MaxRetry = max(30*time.Second, sub.MinRetry)
	}
	events, err := store.Watch(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sub.follow(ctx, store, events, err)
	}()
	return done
}

// follow is Subscribe's loop; events and err are the first Watch's.
func (sub *Subscriber) follow(ctx context.Context, store Store, events <-chan Event, err error) {
	retry, resumed := sub.MinRetry, false
	for {
		if err == nil {
			retry = sub.MinRetry
			sub.receive(events, resumed)
		} else {
			if sub.Failed != nil {
				sub.Failed(err, retry)
			}
			if !wait.Sleep(ctx, retry) {
				return
			}
			retry = min(retry*2, sub.MaxRetry)
		}
		resumed = true
		if ctx.Err() != nil {
			return
		}
		events, err = store.Watch(ctx)
	}
}

// receive hands over one watch's events until its channel closes.
func (sub *Subscriber) receive(events <-chan Event, resumed bool) {
	if sub.Watching != nil {
		sub.Watching(resumed)
	}
	for ev := range events {
		if sub.Event != nil {
			sub.Event(ev)
		}
	}
	if sub.Closed != nil {
		sub.Closed()
	}
}
