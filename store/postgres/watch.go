package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/watch"
)

// Watch reports every change to the schema, made by this or any other
// Store, in this or any other process; see registry.Store.
//
// The first Watch opens a dedicated connection that LISTENs on the schema's
// channel; writers NOTIFY it inside their transactions, so an event arrives
// only once its change is committed. If that connection fails, every
// watcher's channel is closed (events may have been missed) and the next
// Watch connects again.
func (s *Store) Watch(ctx context.Context) (<-chan registry.Event, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("watch postgres %s: %w", s.where, err)
	}
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	if s.closed.Load() {
		return nil, fmt.Errorf("postgres store %s is closed", s.where)
	}
	if s.listener == nil || s.listener.failed.Load() {
		l, err := s.listen(ctx)
		if err != nil {
			return nil, fmt.Errorf("watch postgres %s: %w", s.where, err)
		}
		s.listener = l
	}
	return s.hub.subscribe(ctx), nil
}

// listener owns the LISTEN connection.
type listener struct {
	cancel context.CancelFunc
	done   chan struct{}
	failed atomic.Bool // the connection failed; the next Watch replaces it
}

func (l *listener) stop() {
	l.cancel()
	<-l.done
}

// listen opens the LISTEN connection and starts delivering notifications to
// the hub. Called with listenMu held.
func (s *Store) listen(ctx context.Context) (*listener, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("connect for LISTEN: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("LISTEN %s: %w", s.channel, err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	l := &listener{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			conn.Close(ctx)
		}()
		for {
			n, err := conn.WaitForNotification(lctx)
			if err != nil {
				if lctx.Err() == nil {
					slog.Warn("caphub postgres store: the LISTEN connection failed; closing watchers so they resubscribe",
						"where", s.where, "error", err)
					l.failed.Store(true)
					s.hub.haltAll()
				}
				return
			}
			var p notification
			if err := json.Unmarshal([]byte(n.Payload), &p); err != nil {
				slog.Warn("caphub postgres store: ignoring a notification that is not caphub's", "channel", n.Channel, "payload", n.Payload)
				continue
			}
			s.hub.publish([]registry.Event{{Kind: p.Kind, Key: registry.Key{Scheme: p.Scheme, Domain: p.Domain, Name: p.Name, Version: p.Version}}})
		}
	}()
	return l, nil
}

// hub fans events out to watchers. Publishing never blocks: each watcher
// has its own queue, drained by its own goroutine.
type hub struct {
	mu   sync.Mutex
	subs map[*watch.Watcher]struct{}
}

func newHub() *hub { return &hub{subs: map[*watch.Watcher]struct{}{}} }

// subscribe adds a watcher that lives until ctx ends or it is halted.
func (h *hub) subscribe(ctx context.Context) <-chan registry.Event {
	w := watch.New()
	h.mu.Lock()
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

// haltAll stops every watcher.
func (h *hub) haltAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.subs {
		w.Halt()
		delete(h.subs, w)
	}
}

// publish queues events for every watcher.
func (h *hub) publish(events []registry.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.subs {
		w.Push(events)
	}
}
