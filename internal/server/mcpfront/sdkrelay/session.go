package sdkrelay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP method names the relay treats specially (and relay.MethodInitialize,
// relay.MethodCallTool, relay.NotifyCancelled).
const (
	methodPing          = "ping"
	notifyInitialized   = "notifications/initialized"
	notifyProgress      = "notifications/progress"
	notifyMessage       = "notifications/message"
	notificationsPrefix = "notifications/"
)

// session is one downstream session and the upstream session it is relayed
// to.
type session struct {
	rl   *Relay
	fr   *front
	down *mcp.ServerSession
	up   *mcp.ClientSession
	cmd  *exec.Cmd // the started stdio server; nil over HTTP
	// sendUp is the upstream client's own sending handler: it sends any
	// server-bound method the SDK knows.
	sendUp mcp.MethodHandler

	last atomic.Int64 // when the client last sent a message (Unix nanoseconds)
	// ending is cancelled as the session starts to close: what is sent
	// downstream for the upstream (a roots/list the client may never
	// answer) gives up then, or closing either side would wait for it.
	ending context.Context
	end    context.CancelFunc
	idle   *time.Timer

	mu       sync.Mutex
	inflight []*inflight // downstream requests being relayed, oldest first

	closeOnce sync.Once
}

// inflight is a downstream request being relayed: upstream traffic that
// belongs to it is sent with its context, which routes it to the request's
// own response stream.
type inflight struct {
	ctx    context.Context
	method string
	token  string // the progress token's key; "" without one
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
	s.last.Store(time.Now().UnixNano())
	if method == relay.MethodCallTool {
		return s.callTool(ctx, req)
	}
	return s.forward(ctx, method, req.GetParams())
}

// session returns the relayed session of a downstream session.
func (rl *Relay) session(ss *mcp.ServerSession) *session {
	s, _ := rl.env.Sessions.Get(ss).(*session)
	return s
}

// initialize connects a new upstream session for a downstream session that
// initialises, offering the client's protocol version and capabilities, and
// answers with the upstream's capabilities, server info and instructions.
func (rl *Relay) initialize(ctx context.Context, fr *front, next mcp.MethodHandler, req mcp.Request) (mcp.Result, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	params, _ := req.GetParams().(*mcp.InitializeParams)
	if ss == nil || params == nil {
		return next(ctx, relay.MethodInitialize, req) // the SDK says what is wrong
	}
	if rl.session(ss) != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "duplicate initialize: the session is already initialised"}
	}
	s, err := rl.connect(ctx, fr, ss, params)
	if err != nil {
		return nil, err
	}
	out, err := s.initialized(ctx, next, req)
	if err != nil {
		s.closeUpstream()
		return nil, err
	}
	s.last.Store(time.Now().UnixNano())
	// Each side ending ends the other: two watchers per session, both gone
	// once it is closed.
	if err := rl.env.Sessions.Add(ss, s, s.closeWith(ss.Wait), s.closeWith(s.up.Wait)); err != nil {
		s.closeUpstream()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	if idle := rl.env.IdleTimeout; idle > 0 {
		s.mu.Lock()
		s.idle = time.AfterFunc(idle, s.checkIdle)
		s.mu.Unlock()
	}
	rl.env.Log.Info("mcpfront: session relayed", "server", fr.name, "session", ss.ID(), "upstream_session", s.up.ID(),
		"protocol_version", out.ProtocolVersion, "client", clientName(params))
	return out, nil
}

// connect connects the upstream session of a downstream session that
// initialises with params.
func (rl *Relay) connect(ctx context.Context, fr *front, ss *mcp.ServerSession, params *mcp.InitializeParams) (*session, error) {
	saved, err := rl.env.Servers.GetServer(ctx, fr.name)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
	}
	s := &session{rl: rl, fr: fr, down: ss}
	s.ending, s.end = context.WithCancel(context.Background())
	client := mcp.NewClient(&mcp.Implementation{Name: "caphub", Version: rl.env.Version}, &mcp.ClientOptions{
		Logger:         rl.env.SDKLog,
		Capabilities:   clientCapabilities(params.Capabilities),
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // relay results as they are
	})
	client.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		s.sendUp = next
		return next
	})
	client.AddReceivingMiddleware(s.relayDown)
	cs, cmd, err := mcpconn.ConnectClient(rl.env.Ctx, &saved.Server, client, &mcpconn.ConnectOptions{
		Session:       &mcp.ClientSessionOptions{ProtocolVersion: offeredVersion(params.ProtocolVersion)},
		WrapTransport: s.ordered,
		StartTimeout:  rl.env.StartTimeout,
		Spawner:       rl.env.Spawner,
		Wait:          ctx, // the client's initialize
	})
	if err != nil {
		rl.env.Log.Warn("mcpfront: upstream connection failed", "server", fr.name, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("caphub could not connect to the MCP server %q: %v", fr.name, err)}
	}
	s.up, s.cmd = cs, cmd
	return s, nil
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
	upInit := s.up.InitializeResult()
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
// the upstream asks for sampling, elicitation and roots exactly when the
// client can answer.
func clientCapabilities(c *mcp.ClientCapabilities) *mcp.ClientCapabilities {
	if c == nil {
		return &mcp.ClientCapabilities{}
	}
	cp := *c
	//lint:ignore SA1019 roots, deprecated from protocol 2026-07-28, are relayed to clients that use them through the deprecation window; Roots is what older clients fill
	if cp.RootsV2 == nil && cp.Roots.ListChanged {
		//lint:ignore SA1019 roots, deprecated from protocol 2026-07-28, are relayed through the deprecation window
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
// client's own sending handler, the request tracked while in flight.
func (s *session) relayUp(ctx context.Context, method string, params mcp.Params) (mcp.Result, error) {
	if !strings.HasPrefix(method, notificationsPrefix) {
		defer s.track(ctx, method, params)()
	}
	return s.sendUp(ctx, method, &mcp.ClientRequest[mcp.Params]{Session: s.up, Params: present(params)})
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

// track records a downstream request in flight until the returned function
// is called.
func (s *session) track(ctx context.Context, method string, params mcp.Params) func() {
	e := &inflight{ctx: ctx, method: method, token: tokenKey(meta(params)["progressToken"])}
	s.mu.Lock()
	s.inflight = append(s.inflight, e)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.inflight = slices.DeleteFunc(s.inflight, func(x *inflight) bool { return x == e })
		s.mu.Unlock()
	}
}

// causes lists the requests during which a server sends log messages and
// requests of its own.
var causes = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true, "completion/complete": true}

// related returns the context of the downstream request an upstream message
// belongs to, or nil when it belongs to none (it then goes to the session's
// standalone stream).
func (s *session) related(method string, params mcp.Params) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case method == notifyProgress:
		p, _ := params.(*mcp.ProgressNotificationParams)
		if p == nil {
			return nil
		}
		key := tokenKey(p.ProgressToken)
		for _, e := range s.inflight {
			if key != "" && e.token == key {
				return e.ctx
			}
		}
		return nil
	case strings.HasSuffix(method, "/list_changed"), method == "notifications/resources/updated", method == "notifications/elicitation/complete":
		return nil
	}
	for _, e := range s.inflight {
		if causes[e.method] {
			return e.ctx
		}
	}
	return nil
}

// relayDown is the upstream client's receiving middleware: it relays every
// request and notification of the upstream to the downstream session, with
// the context of the downstream request it belongs to.
func (s *session) relayDown(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case methodPing, relay.NotifyCancelled:
			// caphub answers the upstream's pings itself; cancellation is done
			// (the handler's context is cancelled, and the downstream request
			// sent with it).
			return next(ctx, method, req)
		}
		params := present(req.GetParams())
		dctx, stop := s.downContext(ctx, s.related(method, params))
		defer stop()
		res, err := s.fr.sendDown(dctx, method, &mcp.ServerRequest[mcp.Params]{Session: s.down, Params: params})
		if strings.HasPrefix(method, notificationsPrefix) {
			if err != nil {
				s.rl.env.Log.Debug("mcpfront: notification not delivered", "server", s.fr.name, "method", method, "error", err)
			}
			return nil, nil
		}
		if err != nil {
			var wire *jsonrpc.Error
			if errors.As(err, &wire) {
				return nil, wire
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("caphub could not relay %s to its client: %v", method, err)}
		}
		return res, nil
	}
}

// downContext is the context to send an upstream message downstream with:
// the values of the related downstream request (which route it to that
// request's stream), cancelled when the upstream's own request is.
func (s *session) downContext(upCtx, related context.Context) (context.Context, func()) {
	base := context.Background()
	if related != nil {
		base = context.WithoutCancel(related)
	}
	ctx, cancel := context.WithCancel(base)
	stop := context.AfterFunc(upCtx, cancel)
	stopEnding := context.AfterFunc(s.ending, cancel)
	return ctx, func() {
		stop()
		stopEnding()
		cancel()
	}
}

// close ends both sides of the session (once).
func (s *session) close() {
	s.closeOnce.Do(func() {
		s.end()
		if s.idle != nil {
			s.idle.Stop()
		}
		s.rl.env.Sessions.Remove(s.down, s)
		s.closeUpstream()
		_ = s.down.Close()
		s.rl.env.Log.Info("mcpfront: session ended", "server", s.fr.name, "session", s.down.ID())
	})
}

// checkIdle closes the session once it has had no request in flight for
// IdleTimeout, and waits again otherwise. (The SDK's own session timeout
// is off: it would close the downstream side first, which waits for
// anything sent downstream to be answered.)
func (s *session) checkIdle() {
	idle := s.rl.env.IdleTimeout
	since := time.Since(time.Unix(0, s.last.Load()))
	s.mu.Lock()
	busy := len(s.inflight) > 0
	s.mu.Unlock()
	if !busy && since >= idle {
		s.rl.env.Log.Info("mcpfront: closing an idle session", "server", s.fr.name, "session", s.down.ID(), "idle_timeout", idle)
		s.close()
		return
	}
	wait := idle - since
	if busy || wait <= 0 {
		wait = idle
	}
	s.mu.Lock()
	if s.ending.Err() == nil {
		s.idle.Reset(wait)
	}
	s.mu.Unlock()
}

// The session as the front's table sees it.

func (s *session) Server() string { return s.fr.name }
func (s *session) ID() string     { return s.down.ID() }
func (s *session) Close()         { s.close() }

// closeUpstream closes the upstream session and kills the process group of
// its stdio server.
func (s *session) closeUpstream() {
	if s.up != nil {
		_ = s.up.Close()
	}
	if s.cmd != nil {
		_ = mcpconn.KillGroup(s.cmd)
	}
}

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

// tokenKey identifies a progress token (a string or a number) whatever Go
// type it was decoded to; "" for no token.
func tokenKey(t any) string {
	switch v := t.(type) {
	case nil:
		return ""
	case string:
		return "s:" + v
	case float64:
		return "n:" + strconv.FormatFloat(v, 'f', -1, 64)
	case float32:
		return "n:" + strconv.FormatFloat(float64(v), 'f', -1, 64)
	case int:
		return "n:" + strconv.Itoa(v)
	case int64:
		return "n:" + strconv.FormatInt(v, 10)
	case int32:
		return "n:" + strconv.FormatInt(int64(v), 10)
	case uint64:
		return "n:" + strconv.FormatUint(v, 10)
	case fmt.Stringer: // json.Number
		return "n:" + v.String()
	}
	return fmt.Sprintf("%T:%v", t, t)
}

// ordered wraps a stdio upstream's transport so that its progress and log
// notifications are relayed as soon as they are read, ahead of the response
// that follows them. The SDK hands notifications to a handler goroutine but
// responses straight to the waiting call, so without this a response could
// reach the client before the last notifications of its request, which are
// then lost with the request's stream. Other transports are left as they
// are: the SDK's streamable HTTP client needs its own connection type (an
// unexported interface of it tracks the session), which a wrapper would
// hide.
func (s *session) ordered(t mcp.Transport) mcp.Transport {
	if _, ok := t.(*mcp.CommandTransport); !ok {
		return t
	}
	return orderedTransport{Transport: t, s: s}
}

type orderedTransport struct {
	mcp.Transport
	s *session
}

func (t orderedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &orderedConn{Connection: c, s: t.s}, nil
}

type orderedConn struct {
	mcp.Connection
	s *session
}

// Read returns the upstream's next message, relaying the progress and log
// notifications before it on the way.
func (c *orderedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && c.s.relayNow(req) {
			continue
		}
		return msg, nil
	}
}

// relayNow relays a progress or log notification to the downstream session
// and reports whether it did (other messages take the SDK's path).
func (s *session) relayNow(req *jsonrpc.Request) bool {
	var params mcp.Params
	switch req.Method {
	case notifyProgress:
		p := new(mcp.ProgressNotificationParams)
		if json.Unmarshal(req.Params, p) != nil {
			return false
		}
		params = p
	case notifyMessage:
		//lint:ignore SA1019 log messages, deprecated from protocol 2026-07-28, are relayed to clients that use them through the deprecation window
		p := new(mcp.LoggingMessageParams)
		if json.Unmarshal(req.Params, p) != nil {
			return false
		}
		params = p
	default:
		return false
	}
	ctx, stop := s.downContext(context.Background(), s.related(req.Method, params))
	defer stop()
	if _, err := s.fr.sendDown(ctx, req.Method, &mcp.ServerRequest[mcp.Params]{Session: s.down, Params: params}); err != nil {
		s.rl.env.Log.Debug("mcpfront: notification not delivered", "server", s.fr.name, "method", req.Method, "error", err)
	}
	return true
}
