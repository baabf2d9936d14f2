//lint:file-ignore SA1019 the relay carries logging, sampling, elicitation and roots (deprecated from protocol 2026-07-28) to clients that use them through the deprecation window.

package sdkrelay

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP method names the relay treats specially (and relay.MethodInitialize,
// relay.MethodCallTool, relay.NotifyCancelled).
const (
	methodPing                = "ping"
	methodSetLevel            = "logging/setLevel"
	methodSubscribe           = "resources/subscribe"
	methodUnsubscribe         = "resources/unsubscribe"
	methodCreateMessage       = "sampling/createMessage"
	methodElicit              = "elicitation/create"
	methodListRoots           = "roots/list"
	notifyInitialized         = "notifications/initialized"
	notifyProgress            = "notifications/progress"
	notifyMessage             = "notifications/message"
	notifyResourceUpdated     = "notifications/resources/updated"
	notifyElicitationComplete = "notifications/elicitation/complete"
	notificationsPrefix       = "notifications/"
)

// session is one downstream session and the upstream it is relayed to (its
// own, or one it shares with other sessions).
type session struct {
	rl   *Relay
	fr   *front
	down *mcp.ServerSession
	up   *upstream
	// caps are the client's capabilities, as it initialised (never nil): a
	// shared upstream's requests go only to a client that declared it can
	// answer them.
	caps *mcp.ClientCapabilities

	// ending is cancelled as the session starts to close: what is sent
	// downstream for the upstream (a roots/list the client may never
	// answer) gives up then, or closing either side would wait for it.
	ending context.Context
	end    context.CancelFunc
	// idle ends the session after IdleTimeout without a request in
	// flight. (The SDK's own session timeout is off: it would close the
	// downstream side first, which waits for anything sent downstream to
	// be answered.)
	idle relay.Idle

	// out delivers a shared upstream's notifications to the session (nil
	// for an upstream of its own, which delivers them as it reads them).
	out *outbox

	// level is the logging level the client set, by which a shared
	// upstream's log messages are filtered for it ("" until it sets one).
	// Guarded by up.mu.
	level mcp.LoggingLevel

	closeOnce sync.Once
}

// receive is the downstream server's receiving middleware: it relays every
// request and notification of an initialised session to its upstream.
func (rl *Relay) receive(ctx context.Context, fr *front, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	switch method {
	case relay.MethodInitialize:
		return rl.initialize(ctx, fr, next, req)
	case notifyInitialized, relay.NotifyCancelled:
		// Session state of the downstream side; cancellation is already done
		// (the request's context is cancelled, and the upstream call with it).
		return next(ctx, method, req)
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	s := rl.session(ss)
	if s == nil {
		switch {
		case method == methodPing:
			return next(ctx, method, req)
		case strings.HasPrefix(method, notificationsPrefix):
			return nil, nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("%s before the session was initialised: send initialize first", method)}
	}
	s.idle.Touch()
	switch method {
	case relay.MethodCallTool:
		return s.callTool(ctx, req)
	case methodSetLevel, methodSubscribe, methodUnsubscribe:
		if s.up.shared {
			return s.sharedState(ctx, method, present(req.GetParams()))
		}
	}
	return s.forward(ctx, method, req.GetParams())
}

// session returns the relayed session of a downstream session.
func (rl *Relay) session(ss *mcp.ServerSession) *session {
	s, _ := rl.env.Sessions.Get(ss).(*session)
	return s
}

// initialize relays a downstream session that initialises: for a server
// saved with per-client sessions, it connects an upstream session of its
// own, offering the client's protocol version and capabilities; for a
// shared one, it joins the server's shared upstream (connected on the
// first client). It answers with the upstream's capabilities, server info
// and instructions.
func (rl *Relay) initialize(ctx context.Context, fr *front, next mcp.MethodHandler, req mcp.Request) (mcp.Result, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	params, _ := req.GetParams().(*mcp.InitializeParams)
	if ss == nil || params == nil {
		return next(ctx, relay.MethodInitialize, req) // the SDK says what is wrong
	}
	if rl.session(ss) != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "duplicate initialize: the session is already initialised"}
	}
	saved, err := rl.env.Servers.GetServer(ctx, fr.name)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
	}
	s := &session{rl: rl, fr: fr, down: ss, caps: params.Capabilities}
	s.ending, s.end = context.WithCancel(context.Background())
	if s.caps == nil {
		s.caps = &mcp.ClientCapabilities{}
	}
	if saved.Server.Shared() {
		s.up, err = rl.joinShared(ctx, fr, &saved.Server, s)
	} else {
		s.up, err = rl.connect(fr, &saved.Server, clientCapabilities(params.Capabilities), offeredVersion(params.ProtocolVersion), s)
	}
	if err != nil {
		return nil, err
	}
	out, err := s.initialized(ctx, next, req)
	if err != nil {
		s.up.leave(s)
		return nil, err
	}
	// Each side ending ends the other: a watcher of the downstream session,
	// and of an upstream of its own (a shared upstream has one watcher for
	// all its sessions); all are gone once the session is closed.
	watchers := []func(){s.closeWith(ss.Wait)}
	if !s.up.shared {
		watchers = append(watchers, s.closeWith(s.up.cs.Wait))
	}
	if err := rl.env.Sessions.Add(ss, s, watchers...); err != nil {
		s.up.leave(s)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	s.idle.Start(rl.env.IdleTimeout, s.expire)
	rl.env.Log.Info("mcpfront: session relayed", "server", fr.name, "session", ss.ID(), "upstream_session", s.up.cs.ID(),
		"shared", s.up.shared, "protocol_version", out.ProtocolVersion, "client", clientName(params))
	return out, nil
}

// initialized initialises the downstream session's own state and returns
// the answer to its initialize: the upstream's capabilities, server info
// and instructions.
func (s *session) initialized(ctx context.Context, next mcp.MethodHandler, req mcp.Request) (*mcp.InitializeResult, error) {
	res, err := next(ctx, relay.MethodInitialize, req)
	if err != nil {
		return nil, err
	}
	downInit, _ := res.(*mcp.InitializeResult)
	upInit := s.up.cs.InitializeResult()
	if downInit == nil || upInit == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "initialize produced no result"}
	}
	out := &mcp.InitializeResult{
		Meta:            upInit.Meta,
		ProtocolVersion: downInit.ProtocolVersion,
		Capabilities:    upInit.Capabilities,
		ServerInfo:      upInit.ServerInfo,
		Instructions:    upInit.Instructions,
	}
	if out.Capabilities == nil {
		out.Capabilities = &mcp.ServerCapabilities{}
	}
	if out.ServerInfo == nil {
		out.ServerInfo = downInit.ServerInfo
	}
	return out, nil
}

// closeWith returns a watcher that closes the session once wait returns
// (one side of it ended).
func (s *session) closeWith(wait func() error) func() {
	return func() {
		_ = wait()
		s.close()
	}
}

// clientCapabilities mirrors the downstream client's capabilities, so that
// an upstream of its own asks for sampling, elicitation and roots exactly
// when the client can answer.
func clientCapabilities(c *mcp.ClientCapabilities) *mcp.ClientCapabilities {
	if c == nil {
		return &mcp.ClientCapabilities{}
	}
	cp := *c
	if cp.RootsV2 == nil && cp.Roots.ListChanged {
		cp.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	return &cp
}

// offeredVersion is the protocol version the downstream session negotiates
// (the client's, when the front supports it, else the newest), offered to
// the upstream in turn.
func offeredVersion(v string) string {
	if slices.Contains(legacyVersions, v) {
		return v
	}
	return legacyVersions[0]
}

func clientName(p *mcp.InitializeParams) string {
	if p.ClientInfo == nil {
		return ""
	}
	return p.ClientInfo.Name + " " + p.ClientInfo.Version
}

// forward relays a downstream request or notification upstream and returns
// the upstream's answer as it is.
func (s *session) forward(ctx context.Context, method string, params mcp.Params) (mcp.Result, error) {
	res, err := s.relayUp(ctx, method, params)
	if err != nil {
		return nil, s.upstreamError(err)
	}
	return res, nil
}

// relayUp sends a downstream request or notification upstream through the
// client's own sending handler, the request tracked while in flight (with
// its progress token made unique on a shared upstream).
func (s *session) relayUp(ctx context.Context, method string, params mcp.Params) (mcp.Result, error) {
	params = present(params)
	if strings.HasPrefix(method, notificationsPrefix) {
		return s.up.sendUp(ctx, method, &mcp.ClientRequest[mcp.Params]{Session: s.up.cs, Params: params})
	}
	s.idle.Begin()
	defer s.idle.End()
	params, done := s.up.track(ctx, s, method, params)
	defer done()
	res, err := s.up.sendUp(ctx, method, &mcp.ClientRequest[mcp.Params]{Session: s.up.cs, Params: params})
	if s.out != nil {
		// The request's progress and log messages, read before its response,
		// go out before it.
		s.out.flush(ctx)
	}
	return res, err
}

// upstreamError returns the upstream's JSON-RPC error as it is, and says
// which server failed otherwise.
func (s *session) upstreamError(err error) error {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return wire
	}
	if errors.Is(err, context.Canceled) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "request cancelled"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("MCP server %q: %v", s.fr.name, err)}
}

// close ends the session: it leaves its upstream (which ends an upstream
// of its own, and a shared one after a grace once no session is left) and
// closes the downstream session.
func (s *session) close() {
	s.rl.env.Sessions.Remove(s.down, s)
	s.closeOnce.Do(func() {
		s.end()
		s.idle.Stop()
		s.up.leave(s)
		_ = s.down.Close()
		s.rl.env.Log.Info("mcpfront: session ended", "server", s.fr.name, "session", s.down.ID())
	})
}

// expire closes the session, idle for IdleTimeout.
func (s *session) expire() {
	s.rl.env.Log.Info("mcpfront: closing an idle session", "server", s.fr.name, "session", s.down.ID(), "idle_timeout", s.rl.env.IdleTimeout)
	s.close()
}

// The session as the front's table sees it.

func (s *session) Server() string { return s.fr.name }
func (s *session) ID() string     { return s.down.ID() }
func (s *session) Close()         { s.close() }

// present returns params, or an empty value of its type when it is a nil
// pointer (the message had no params): the SDK would send a nil pointer as
// "params": null, which JSON-RPC does not allow, and which the TypeScript
// SDK's servers and clients drop without an answer, so the call would hang.
func present(p mcp.Params) mcp.Params {
	v := reflect.ValueOf(p)
	if p == nil || v.Kind() != reflect.Pointer || !v.IsNil() {
		return p
	}
	fresh, _ := reflect.New(v.Type().Elem()).Interface().(mcp.Params)
	if fresh == nil {
		return p
	}
	return fresh
}

// meta returns the _meta of params (nil for absent params).
func meta(p mcp.Params) map[string]any {
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p.GetMeta()
}
