package httprelay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/caphub/caphub/internal/server/mcpfront/internal/wire"
	"github.com/caphub/caphub/invoke"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// pendingCall is a forwarded request whose response the relay watches
// for: a tools/call, to record its outcome, or the initialize that opens
// a session, to close the session if it fails.
type pendingCall struct {
	key  string          // wire.IDKey of the request's id
	ctx  context.Context // the carrying request's (its values), for the hooks
	call relay.Call      // the tools/call to record; Tool "" for initialize

	once sync.Once
	done atomic.Bool
	err  *invoke.Error // the outcome once done; nil for success
}

// authorize applies the policy to a tools/call. It returns the call to
// watch for, or the front's own response: the refusal (a tool error, as
// the SDK relay answers it), or an error for params without a tool name.
func (s *Session) authorize(ctx context.Context, hdr http.Header, m *wire.Msg) (*pendingCall, []byte) {
	name, args, ok := wire.CallParams(m.Params)
	if !ok {
		return nil, errorResponse(m.ID, jsonrpc.CodeInvalidParams, "tools/call needs params with the name of the tool to call")
	}
	// A _meta that is not an object carries no approval.
	call, denied := s.rl.env.Authorize(relay.WithApproval(ctx, hdr, wire.CallMeta(m.Params)), s.name, name, args)
	if denied != "" {
		return nil, resultResponse(m.ID, relay.RefusedResult(denied))
	}
	return &pendingCall{key: wire.IDKey(m.ID), ctx: ctx, call: call}, nil
}

// cancelled ends the pending call a client's notifications/cancelled
// names (it is forwarded all the same).
func (s *Session) cancelled(params json.RawMessage) {
	if s.npending.Load() == 0 {
		return
	}
	var id []byte
	wire.EachMember(params, func(name, value []byte) bool {
		if string(name) == "requestId" {
			id = value
			return false
		}
		return true
	})
	if id == nil {
		return
	}
	s.mu.Lock()
	pc := s.pending[wire.IDKey(id)]
	s.mu.Unlock()
	if pc != nil && pc.call.Tool != "" {
		s.finish(pc, relay.Classify(s.name, relay.Outcome{Cancelled: true}))
	}
}

// track starts watching for the responses of calls. A call whose id is
// already pending is not watched by id (the upstream refuses it, and the
// refusal ends it).
func (s *Session) track(calls []*pendingCall) {
	if len(calls) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pc := range calls {
		if _, dup := s.pending[pc.key]; !dup && pc.key != "" {
			s.pending[pc.key] = pc
			s.npending.Add(1)
		}
	}
}

// observe reads a relayed message (or batch) and ends the pending call it
// answers.
func (s *Session) observe(data []byte) {
	if s.npending.Load() == 0 {
		return
	}
	wire.EachMessage(data, func(msg []byte) bool {
		id, result, rpcErr, ok := wire.Response(msg)
		if !ok {
			return true // a request or notification
		}
		s.mu.Lock()
		pc := s.pending[wire.IDKey(id)]
		s.mu.Unlock()
		if pc != nil {
			s.finish(pc, relay.Classify(s.name, outcome(pc, result, rpcErr)))
		}
		return true
	})
}

// outcome is what a call's response says of it: a JSON-RPC error, a tool
// error (for a tools/call), or a success.
func outcome(pc *pendingCall, result, rpcErr []byte) relay.Outcome {
	if rpcErr != nil && !wire.IsNull(rpcErr) {
		var e jsonrpc.Error
		_ = json.Unmarshal(rpcErr, &e)
		return relay.Outcome{RPCError: &e}
	}
	if pc.call.Tool == "" || !wire.IsToolError(result) {
		return relay.Outcome{}
	}
	return relay.Outcome{ToolError: true, ToolText: wire.ToolErrorText(result)}
}

// settle ends the calls of a relayed request whose response did not pass
// on its stream: cancelled when the client went away, failed when the
// stream broke or the answer was complete without it. After an SSE stream
// that the upstream ended cleanly they stay pending: the client may resume
// the stream (GET with Last-Event-ID) and the response pass there.
func (s *Session) settle(r *http.Request, calls []*pendingCall, err error, resumable bool) {
	for _, pc := range calls {
		if pc.done.Load() {
			continue
		}
		if o, ends := s.unanswered(r, pc, err, resumable); ends {
			s.finish(pc, relay.Classify(s.name, o))
		}
	}
}

// unanswered is the outcome of a call whose response did not pass on the
// stream of request r (err is how the stream ended), and whether it ends
// the call now (see settle).
func (s *Session) unanswered(r *http.Request, pc *pendingCall, err error, resumable bool) (relay.Outcome, bool) {
	switch {
	case r.Context().Err() != nil || errors.Is(err, errDownstream):
		return relay.Outcome{Cancelled: true}, true
	case s.ctx.Err() != nil:
		return relay.Outcome{SessionEnded: true}, true
	case err != nil:
		return relay.Outcome{Failure: fmt.Errorf("the response of the MCP server %q broke off: %v", s.name, err)}, true
	case !resumable || pc.call.Tool == "":
		return relay.Outcome{Failure: fmt.Errorf("the MCP server %q answered without a response to the request", s.name)}, true
	}
	return relay.Outcome{}, false
}

// fail ends calls with one outcome.
func (s *Session) fail(calls []*pendingCall, o relay.Outcome) {
	if len(calls) == 0 {
		return
	}
	e := relay.Classify(s.name, o)
	for _, pc := range calls {
		s.finish(pc, e)
	}
}

// finish ends a pending call (once) and records a tools/call.
func (s *Session) finish(pc *pendingCall, e *invoke.Error) {
	pc.once.Do(func() {
		s.mu.Lock()
		if s.pending[pc.key] == pc {
			delete(s.pending, pc.key)
			s.npending.Add(-1)
		}
		s.mu.Unlock()
		pc.err = e
		pc.done.Store(true)
		if pc.call.Tool != "" {
			s.rl.env.Emit(pc.ctx, pc.call, e)
		}
	})
}
