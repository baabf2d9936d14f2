//lint:file-ignore SA1019 the relay carries logging, sampling, elicitation and roots (deprecated from protocol 2026-07-28) to clients that use them through the deprecation window.

package sdkrelay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstream is an upstream client session and the downstream sessions
// relayed to it: one (per-client mode) or any number (shared mode).
type upstream struct {
	rl     *Relay
	fr     *front
	shared bool
	cs     *mcp.ClientSession
	cmd    *exec.Cmd // the started stdio server; nil over HTTP
	// sendUp is the upstream client's own sending handler: it sends any
	// server-bound method the SDK knows.
	sendUp mcp.MethodHandler

	mu       sync.Mutex
	members  []*session  // the sessions relayed to it, oldest first
	inflight []*inflight // their requests being relayed, oldest first
	// Shared mode only.
	tokens  uint64                // progress tokens handed out upstream
	subs    map[string][]*session // resource URI → the sessions subscribed to it
	elicits map[string]*session   // URL elicitation id → the session asked
	grace   *time.Timer           // ends the upstream once no session is left
	closing bool                  // ending: sessions can no longer join

	closeOnce sync.Once
}

// inflight is a downstream request being relayed: upstream traffic that
// belongs to it is sent with its context, which routes it to the request's
// own response stream.
type inflight struct {
	ctx    context.Context
	s      *session
	method string
	token  string // the key of the progress token sent upstream; "" without one
	// downToken is the client's own progress token, restored on the
	// progress a shared upstream sends with the one it was given instead.
	downToken any
}

// connect connects an upstream session to a saved server, offering version
// and caps. first is the session it is connected for (per-client mode), nil
// for a shared upstream.
func (rl *Relay) connect(fr *front, srv *mcpconn.Server, caps *mcp.ClientCapabilities, version string, first *session) (*upstream, error) {
	u := &upstream{rl: rl, fr: fr, shared: first == nil}
	if first != nil {
		u.members = []*session{first}
	} else {
		u.subs, u.elicits = map[string][]*session{}, map[string]*session{}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "caphub", Version: rl.env.Version}, &mcp.ClientOptions{
		Logger:         rl.env.SDKLog,
		Capabilities:   caps,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // relay results as they are
	})
	client.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		u.sendUp = next
		return next
	})
	client.AddReceivingMiddleware(u.relayDown)
	cs, cmd, err := mcpconn.ConnectClient(rl.env.Ctx, srv, client, &mcpconn.ConnectOptions{
		Session:       &mcp.ClientSessionOptions{ProtocolVersion: version},
		WrapTransport: u.ordered,
		StartTimeout:  rl.env.StartTimeout,
		Spawner:       rl.env.Spawner,
	})
	if err != nil {
		rl.env.Log.Warn("mcpfront: upstream connection failed", "server", fr.name, "shared", u.shared, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("caphub could not connect to the MCP server %q: %v", fr.name, err)}
	}
	u.cs, u.cmd = cs, cmd
	return u, nil
}

// track records a downstream request of s in flight until the returned
// function is called, and returns the params to send upstream: on a shared
// upstream, a progress token is replaced by one unique on it.
func (u *upstream) track(ctx context.Context, s *session, method string, params mcp.Params) (mcp.Params, func()) {
	e := &inflight{ctx: ctx, s: s, method: method}
	u.mu.Lock()
	if tok := meta(params)["progressToken"]; tok != nil {
		if u.shared {
			u.tokens++
			upTok := "caphub-" + strconv.FormatUint(u.tokens, 10)
			e.downToken = tok
			params = withMeta(params, "progressToken", upTok)
			tok = upTok
		}
		e.token = tokenKey(tok)
	}
	u.inflight = append(u.inflight, e)
	u.mu.Unlock()
	return params, func() {
		u.mu.Lock()
		u.inflight = slices.DeleteFunc(u.inflight, func(x *inflight) bool { return x == e })
		u.mu.Unlock()
	}
}

// withMeta returns a copy of params with _meta[key] set to v.
func withMeta(params mcp.Params, key string, v any) mcp.Params {
	rv := reflect.ValueOf(params)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return params
	}
	cp := reflect.New(rv.Type().Elem())
	cp.Elem().Set(rv.Elem())
	out, ok := cp.Interface().(mcp.Params)
	if !ok {
		return params
	}
	m := maps.Clone(params.GetMeta())
	if m == nil {
		m = map[string]any{}
	}
	m[key] = v
	out.SetMeta(m)
	return out
}

// causes lists the requests during which a server sends log messages and
// requests of its own.
var causes = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true, "completion/complete": true}

// route is where an upstream message goes: a downstream session, with the
// context of its request the message belongs to (nil: the session's
// standalone stream).
type route struct {
	s   *session
	ctx context.Context
	// token is the client's own progress token to send progress with (nil:
	// the one the upstream sent).
	token any
}

// routes returns where an upstream notification goes. Progress goes to the
// request that carries its token; list_changed notifications to every
// session; resource updates and the completion of a URL elicitation on a
// shared upstream to the sessions that subscribed or were asked (on one of
// its own, to the session); log messages and other notifications to the
// oldest request in flight that can cause them, else every session (on a
// shared upstream, log messages only to sessions whose level they reach).
func (u *upstream) routes(method string, params mcp.Params) []route {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case method == notifyProgress:
		p, _ := params.(*mcp.ProgressNotificationParams)
		if p == nil {
			return nil
		}
		if key := tokenKey(p.ProgressToken); key != "" {
			for _, e := range u.inflight {
				if e.token == key {
					return []route{{s: e.s, ctx: e.ctx, token: e.downToken}}
				}
			}
		}
		if u.shared {
			return nil // no client asked for it
		}
		return u.standaloneLocked(nil)
	case method == notifyResourceUpdated && u.shared:
		p, _ := params.(*mcp.ResourceUpdatedNotificationParams)
		if p == nil {
			return nil
		}
		var rs []route
		for _, s := range u.subs[p.URI] {
			rs = append(rs, route{s: s})
		}
		return rs
	case method == notifyElicitationComplete && u.shared:
		p, _ := params.(*mcp.ElicitationCompleteParams)
		if p == nil || u.elicits[p.ElicitationID] == nil {
			return nil
		}
		s := u.elicits[p.ElicitationID]
		delete(u.elicits, p.ElicitationID)
		return []route{{s: s}}
	case strings.HasSuffix(method, "/list_changed"), method == notifyResourceUpdated, method == notifyElicitationComplete:
		return u.standaloneLocked(nil)
	}
	wants := func(*session) bool { return true }
	if p, ok := params.(*mcp.LoggingMessageParams); ok && u.shared {
		wants = func(s *session) bool { return levelReaches(p.Level, s.level) }
	}
	for _, e := range u.inflight {
		if causes[e.method] {
			if !wants(e.s) {
				return nil
			}
			return []route{{s: e.s, ctx: e.ctx}}
		}
	}
	return u.standaloneLocked(wants)
}

// standaloneLocked routes to the standalone stream of every session that
// wants the message (every session when wants is nil). u.mu is held.
func (u *upstream) standaloneLocked(wants func(*session) bool) []route {
	var rs []route
	for _, s := range u.members {
		if wants == nil || wants(s) {
			rs = append(rs, route{s: s})
		}
	}
	return rs
}

// requestRoute returns where an upstream request (sampling, elicitation,
// roots) goes: the oldest request in flight that can cause it. On a shared
// upstream that is the oldest one whose client declared it can answer (an
// error when none of those in flight can), and with none in flight, the
// standalone stream of the most recently active session that can answer.
func (u *upstream) requestRoute(method string, params mcp.Params) (route, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	can := func(s *session) bool { return !u.shared || canAnswer(s.caps, method, params) }
	found, inFlight := route{}, false
	for _, e := range u.inflight {
		if !causes[e.method] {
			continue
		}
		inFlight = true
		if can(e.s) {
			found = route{s: e.s, ctx: e.ctx}
			break
		}
	}
	if found.s == nil && !inFlight {
		for _, s := range u.members {
			if can(s) && (found.s == nil || s.idle.Last() > found.s.idle.Last()) {
				found = route{s: s}
			}
		}
	}
	if found.s == nil {
		why := "no client is connected"
		if inFlight || len(u.members) > 0 {
			why = "no client whose request is in flight declared the capability"
			if !inFlight {
				why = "no connected client declared the capability"
			}
		}
		return route{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("caphub cannot relay %s from the shared MCP server %q: %s", method, u.fr.name, why)}
	}
	if p, ok := params.(*mcp.ElicitParams); ok && u.shared && p.ElicitationID != "" && len(u.elicits) < maxElicits {
		u.elicits[p.ElicitationID] = found.s
	}
	return found, nil
}

// maxElicits bounds the URL elicitations a shared upstream remembers the
// client of, until each completes.
const maxElicits = 1024

// canAnswer reports whether a client with capabilities c can answer the
// upstream request method.
func canAnswer(c *mcp.ClientCapabilities, method string, params mcp.Params) bool {
	switch method {
	case methodCreateMessage:
		return c.Sampling != nil
	case methodElicit:
		if c.Elicitation == nil {
			return false
		}
		if p, _ := params.(*mcp.ElicitParams); p != nil && (p.Mode == "url" || (p.Mode == "" && p.URL != "")) {
			return c.Elicitation.URL != nil
		}
		// A client that names neither mode supports forms (2025-06-18).
		return c.Elicitation.Form != nil || c.Elicitation.URL == nil
	case methodListRoots:
		return c.RootsV2 != nil
	}
	return true
}

// relayDown is the upstream client's receiving middleware: it relays every
// request and notification of the upstream to the downstream session it
// belongs to, with the context of the downstream request it belongs to.
func (u *upstream) relayDown(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case methodPing, relay.NotifyCancelled:
			// caphub answers the upstream's pings itself; cancellation is done
			// (the handler's context is cancelled, and the downstream request
			// sent with it).
			return next(ctx, method, req)
		}
		params := present(req.GetParams())
		if strings.HasPrefix(method, notificationsPrefix) {
			u.notify(ctx, method, params)
			return nil, nil
		}
		rt, err := u.requestRoute(method, params)
		if err != nil {
			return nil, err
		}
		dctx, stop := downContext(ctx, rt)
		defer stop()
		res, err := u.fr.sendDown(dctx, method, &mcp.ServerRequest[mcp.Params]{Session: rt.s.down, Params: params})
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

// notify relays an upstream notification to where routes sends it.
func (u *upstream) notify(upCtx context.Context, method string, params mcp.Params) {
	for _, rt := range u.routes(method, params) {
		p := params
		if pp, ok := params.(*mcp.ProgressNotificationParams); ok && rt.token != nil {
			restored := *pp
			restored.ProgressToken = rt.token
			p = &restored
		}
		if !u.shared {
			u.deliver(upCtx, rt, method, p)
			continue
		}
		// A notification cannot be cancelled: delivered later, it needs no
		// context of the upstream's.
		if !rt.s.out.enqueue(func() { u.deliver(context.Background(), rt, method, p) }) && !rt.s.out.stopped() {
			u.rl.env.Log.Warn("mcpfront: a client of a shared upstream does not keep up: notification dropped", "server", u.fr.name, "method", method, "session", rt.s.down.ID())
		}
	}
}

// deliver sends an upstream notification downstream.
func (u *upstream) deliver(upCtx context.Context, rt route, method string, params mcp.Params) {
	dctx, stop := downContext(upCtx, rt)
	defer stop()
	if _, err := u.fr.sendDown(dctx, method, &mcp.ServerRequest[mcp.Params]{Session: rt.s.down, Params: params}); err != nil {
		u.rl.env.Log.Debug("mcpfront: notification not delivered", "server", u.fr.name, "method", method, "session", rt.s.down.ID(), "error", err)
	}
}

// downContext is the context to send an upstream message downstream with
// along rt: the values of the related downstream request (which route it
// to that request's stream), cancelled when the upstream's own request is
// or when the downstream session starts to end.
func downContext(upCtx context.Context, rt route) (context.Context, func()) {
	base := context.Background()
	if rt.ctx != nil {
		base = context.WithoutCancel(rt.ctx)
	}
	ctx, cancel := context.WithCancel(base)
	stop := context.AfterFunc(upCtx, cancel)
	stopEnding := context.AfterFunc(rt.s.ending, cancel)
	return ctx, func() {
		stop()
		stopEnding()
		cancel()
	}
}

// leave takes a session out of the upstream: an upstream of its own ends
// with it; a shared one ends after the relay's grace once no session is
// left (at once when the front is closing), and its subscriptions that no
// other session holds are ended upstream.
func (u *upstream) leave(s *session) {
	u.mu.Lock()
	u.members = slices.DeleteFunc(u.members, func(x *session) bool { return x == s })
	var orphaned []string
	for uri, subs := range u.subs {
		if subs = slices.DeleteFunc(subs, func(x *session) bool { return x == s }); len(subs) == 0 {
			delete(u.subs, uri)
			orphaned = append(orphaned, uri)
		} else {
			u.subs[uri] = subs
		}
	}
	maps.DeleteFunc(u.elicits, func(_ string, x *session) bool { return x == s })
	end := len(u.members) == 0 && !u.closing
	if end && u.shared && u.rl.env.Ctx.Err() == nil {
		end = false
		u.armGraceLocked()
	}
	closing := u.closing
	u.mu.Unlock()
	if s.out != nil {
		s.out.stop()
	}
	if !closing && len(orphaned) > 0 && u.rl.env.Ctx.Err() == nil {
		u.unsubscribe(orphaned)
	}
	if end {
		u.close()
	}
}

// close ends the upstream session (the process group of its stdio server
// too) and every session relayed to it.
func (u *upstream) close() {
	u.mu.Lock()
	u.closing = true
	u.mu.Unlock()
	u.closeOnce.Do(u.end)
}

func (u *upstream) end() {
	u.mu.Lock()
	if u.grace != nil {
		u.grace.Stop()
	}
	members := slices.Clone(u.members)
	u.mu.Unlock()
	if u.shared {
		u.rl.forget(u)
	}
	_ = u.cs.Close()
	if u.cmd != nil {
		_ = mcpconn.KillGroup(u.cmd)
	}
	for _, s := range members {
		s.close()
	}
	if u.shared {
		u.rl.env.Log.Info("mcpfront: shared upstream session ended", "server", u.fr.name, "upstream_session", u.cs.ID(), "sessions", len(members))
	}
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
func (u *upstream) ordered(t mcp.Transport) mcp.Transport {
	if _, ok := t.(*mcp.CommandTransport); !ok {
		return t
	}
	return orderedTransport{Transport: t, u: u}
}

type orderedTransport struct {
	mcp.Transport
	u *upstream
}

func (t orderedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &orderedConn{Connection: c, u: t.u}, nil
}

type orderedConn struct {
	mcp.Connection
	u *upstream
}

// Read returns the upstream's next message, relaying the progress and log
// notifications before it on the way.
func (c *orderedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && c.u.relayNow(req) {
			continue
		}
		return msg, nil
	}
}

// relayNow relays a progress or log notification downstream and reports
// whether it did (other messages take the SDK's path).
func (u *upstream) relayNow(req *jsonrpc.Request) bool {
	var params mcp.Params
	switch req.Method {
	case notifyProgress:
		p := new(mcp.ProgressNotificationParams)
		if json.Unmarshal(req.Params, p) != nil {
			return false
		}
		params = p
	case notifyMessage:
		p := new(mcp.LoggingMessageParams)
		if json.Unmarshal(req.Params, p) != nil {
			return false
		}
		params = p
	default:
		return false
	}
	u.notify(context.Background(), req.Method, params)
	return true
}
