//lint:file-ignore SA1019 the relay carries logging, sampling, elicitation and roots (deprecated from protocol 2026-07-28) to clients that use them through the deprecation window.

package sdkrelay

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sharedGrace is how long a shared upstream outlives its last session
// (the front's idle timeout when that is shorter), so that a client that
// reconnects, or the next one, finds it running.
const sharedGrace = time.Minute

// sharedCapabilities are what a shared upstream is told its client can do:
// everything a client may be asked (sampling, form and URL elicitation,
// roots with list_changed), since clients that can come and go share it.
// Each request is relayed to a client that declared it can answer; when
// none can, the upstream gets an error.
var sharedCapabilities = &mcp.ClientCapabilities{
	Sampling:    &mcp.SamplingCapabilities{},
	Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
	RootsV2:     &mcp.RootCapabilities{ListChanged: true},
}

// sharedSlot is a saved server's shared upstream, or its connection under
// way: the sessions that initialise meanwhile wait for ready.
type sharedSlot struct {
	key   string // the saved connection it is made from
	ready chan struct{}
	up    *upstream // once ready: nil when connecting failed (err)
	err   error
}

// joinShared makes s a session of the shared upstream of a saved server,
// connecting it when there is none (the first client, or the next one once
// it ended or the saved connection changed). The connection is the
// relay's, not the request's: a client that gives up waiting does not end
// it for the others.
func (rl *Relay) joinShared(ctx context.Context, fr *front, srv *mcpconn.Server, s *session) (*upstream, error) {
	key := connectionKey(srv)
	for range 3 {
		rl.mu.Lock()
		if rl.closed {
			rl.mu.Unlock()
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: relay.ShuttingDown}
		}
		slot := rl.shared[fr.name]
		if slot == nil || slot.key != key {
			slot = &sharedSlot{key: key, ready: make(chan struct{})}
			rl.shared[fr.name] = slot
			rl.wg.Go(func() { rl.connectShared(fr, srv, slot) })
		}
		rl.mu.Unlock()
		select {
		case <-slot.ready:
		case <-ctx.Done():
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("initialize cancelled while caphub connected to the MCP server %q", fr.name)}
		}
		if slot.err != nil {
			return nil, slot.err
		}
		if slot.up.join(s) {
			return slot.up, nil
		}
		// It is ending: connect another (it forgets itself only once ended).
		rl.mu.Lock()
		if rl.shared[fr.name] == slot {
			delete(rl.shared, fr.name)
		}
		rl.mu.Unlock()
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the shared upstream session of the MCP server %q kept ending while clients joined it: see caphub's log", fr.name)}
}

// connectionKey identifies a saved connection, so that a server saved
// again with another one gets a new shared upstream.
func connectionKey(srv *mcpconn.Server) string {
	b, _ := json.Marshal(srv)
	return string(b)
}

// connectShared connects the shared upstream of slot.
func (rl *Relay) connectShared(fr *front, srv *mcpconn.Server, slot *sharedSlot) {
	up, err := rl.connect(fr, srv, sharedCapabilities, legacyVersions[0], nil)
	rl.mu.Lock()
	closed := rl.closed
	if err != nil {
		slot.err = err
		if rl.shared[fr.name] == slot {
			delete(rl.shared, fr.name) // the next client tries again
		}
	} else {
		slot.up = up
		up.mu.Lock()
		up.armGraceLocked() // until the first session joins
		up.mu.Unlock()
		rl.live[up] = true
		rl.wg.Go(up.watch)
	}
	close(slot.ready)
	rl.mu.Unlock()
	if err == nil {
		rl.env.Log.Info("mcpfront: shared upstream session connected", "server", fr.name, "upstream_session", up.cs.ID())
		if closed {
			up.close()
		}
	}
}

// join adds s to a shared upstream, unless it is ending (false).
func (u *upstream) join(s *session) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closing {
		return false
	}
	s.out = newOutbox()
	if u.grace != nil {
		u.grace.Stop()
		u.grace = nil
	}
	u.members = append(u.members, s)
	return true
}

// armGraceLocked ends the shared upstream after the relay's grace unless a
// session joins it meanwhile. u.mu is held.
func (u *upstream) armGraceLocked() {
	if u.grace != nil {
		u.grace.Stop()
	}
	u.grace = time.AfterFunc(u.rl.grace, u.expire)
}

// expire ends a shared upstream that no session joined during its grace.
func (u *upstream) expire() {
	u.mu.Lock()
	idle := len(u.members) == 0 && !u.closing
	if idle {
		u.closing = true
	}
	u.mu.Unlock()
	if idle {
		u.rl.env.Log.Info("mcpfront: shared upstream session idle: ending it", "server", u.fr.name, "grace", u.rl.grace)
		u.closeOnce.Do(u.end)
	}
}

// watch ends a shared upstream, and its sessions, once its upstream
// session ends (the server exited or went away); the next client to
// initialise connects a new one.
func (u *upstream) watch() {
	_ = u.cs.Wait()
	u.close()
}

// forget takes an ending shared upstream out of the relay.
func (rl *Relay) forget(u *upstream) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	delete(rl.live, u)
	if slot := rl.shared[u.fr.name]; slot != nil && slot.up == u {
		delete(rl.shared, u.fr.name)
	}
}

// unsubscribe ends upstream the subscriptions to uris that no session of a
// shared upstream holds any more.
func (u *upstream) unsubscribe(uris []string) {
	u.rl.wg.Go(func() {
		ctx, cancel := context.WithTimeout(u.rl.env.Ctx, 10*time.Second)
		defer cancel()
		for _, uri := range uris {
			if _, err := u.sendUp(ctx, methodUnsubscribe, &mcp.ClientRequest[mcp.Params]{Session: u.cs, Params: &mcp.UnsubscribeParams{URI: uri}}); err != nil {
				u.rl.env.Log.Debug("mcpfront: unsubscribing a shared upstream", "server", u.fr.name, "uri", uri, "error", err)
			}
		}
	})
}

// sharedState relays a request that changes the state of a shared
// upstream's session, which every client shares: logging/setLevel sets
// the upstream's level to the lowest any client asked for (each client gets
// the log messages of its own level and above), and resource subscriptions
// are counted, so that a client's unsubscribe ends the upstream's
// subscription only when no other client holds one.
func (s *session) sharedState(ctx context.Context, method string, params mcp.Params) (mcp.Result, error) {
	u := s.up
	switch p := params.(type) {
	case *mcp.SetLoggingLevelParams:
		if _, ok := levelRank[p.Level]; !ok {
			break // the upstream says what is wrong
		}
		u.mu.Lock()
		lowest := p.Level
		for _, m := range u.members {
			if m != s && m.level != "" && levelRank[m.level] < levelRank[lowest] {
				lowest = m.level
			}
		}
		u.mu.Unlock()
		sent := *p
		sent.Level = lowest
		res, err := s.forward(ctx, method, &sent)
		if err == nil {
			u.mu.Lock()
			s.level = p.Level
			u.mu.Unlock()
		}
		return res, err
	case *mcp.SubscribeParams:
		res, err := s.forward(ctx, method, p)
		if err == nil {
			u.mu.Lock()
			if !slices.Contains(u.subs[p.URI], s) {
				u.subs[p.URI] = append(u.subs[p.URI], s)
			}
			u.mu.Unlock()
		}
		return res, err
	case *mcp.UnsubscribeParams:
		u.mu.Lock()
		subs := slices.DeleteFunc(u.subs[p.URI], func(x *session) bool { return x == s })
		held := len(subs) > 0
		if held {
			u.subs[p.URI] = subs
		} else {
			delete(u.subs, p.URI)
		}
		u.mu.Unlock()
		if held {
			return &mcp.ResultBase{}, nil // another client still wants the updates
		}
	}
	return s.forward(ctx, method, params)
}

// levelRank orders the logging levels, least severe first.
var levelRank = map[mcp.LoggingLevel]int{"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7}

// levelReaches reports whether a log message of level msg reaches a client
// that set level min ("" for none: every message does).
func levelReaches(msg, min mcp.LoggingLevel) bool {
	r, ok := levelRank[msg]
	return min == "" || !ok || r >= levelRank[min]
}

// Close ends every shared upstream, and waits for what the relay started.
// Sessions of upstreams of their own end with the front's table.
func (rl *Relay) Close() {
	rl.mu.Lock()
	rl.closed = true
	live := make([]*upstream, 0, len(rl.live))
	for u := range rl.live {
		live = append(live, u)
	}
	rl.mu.Unlock()
	for _, u := range live {
		u.close()
	}
	rl.wg.Wait()
}

// outbox delivers a shared upstream's notifications to one session, in
// order, from a goroutine of its own: a client that does not read its
// streams holds up only itself (its notifications are dropped once
// outboxSize wait), never the upstream's other clients.
type outbox struct {
	ch   chan func()
	done chan struct{}
	once sync.Once
}

// outboxSize bounds the notifications waiting for one session.
const outboxSize = 256

// flushLimit bounds how long a response waits for the notifications
// before it to go out.
const flushLimit = 5 * time.Second

func newOutbox() *outbox {
	o := &outbox{ch: make(chan func(), outboxSize), done: make(chan struct{})}
	go o.run()
	return o
}

func (o *outbox) run() {
	for {
		select {
		case f := <-o.ch:
			f()
		case <-o.done:
			return
		}
	}
}

// enqueue queues a delivery, unless the outbox is full or stopped (false).
func (o *outbox) enqueue(f func()) bool {
	select {
	case <-o.done:
		return false
	default:
	}
	select {
	case o.ch <- f:
		return true
	default:
		return false
	}
}

// flush waits until what was queued before it went out (or ctx ends, or
// flushLimit passes).
func (o *outbox) flush(ctx context.Context) {
	sent := make(chan struct{})
	if !o.enqueue(func() { close(sent) }) {
		return
	}
	timer := time.NewTimer(flushLimit)
	defer timer.Stop()
	select {
	case <-sent:
	case <-ctx.Done():
	case <-o.done:
	case <-timer.C:
	}
}

// stop ends the outbox's goroutine; what is queued is dropped.
func (o *outbox) stop() { o.once.Do(func() { close(o.done) }) }

// stopped reports whether stop was called.
func (o *outbox) stopped() bool {
	select {
	case <-o.done:
		return true
	default:
		return false
	}
}
