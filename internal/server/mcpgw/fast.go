package mcpgw

//lint:file-ignore SA1019 session logging, deprecated from protocol 2026-07-28, is served through the deprecation window

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway answers the hot requests of an established streamable HTTP
// session itself: a POST holding one tools/call of a capability tool (and
// the notifications/cancelled of such a call), a tools/list or a ping (see
// fastlist.go). The MCP SDK's server decodes
// each message about six times, with a fresh 32 KiB buffer each time, which
// cost more CPU than the call itself; this path decodes it once, runs the
// same code as the SDK's tool handler (callTool: the caller the session
// was opened with, the approval, the pipeline, progress, the failure's log
// message, the trace span) and writes the same JSON-RPC answer, as
// application/json, or as an SSE stream once a notification (progress, a
// log message) goes ahead of it. Whatever else, and whatever it does not
// recognise as plainly well-formed (batches, another protocol version,
// Mcp-Method headers, a request id it would have to re-encode, a tool the
// SDK serves itself, …), goes to the SDK as before, which then answers
// exactly as it did.
//
// The gateway keeps its own table of the streamable sessions the SDK
// initialised (fastSessions, filled by sessionMiddleware), and their idle
// expiry, which must see the calls the SDK no longer does.

// fastSession is a streamable HTTP session of /mcp that the SDK
// initialised.
type fastSession struct {
	id      string
	ss      *mcp.ServerSession
	ctx     context.Context // the session's context (the caller of the request that opened it), never cancelled
	version string          // the protocol version negotiated at initialize
	closed  atomic.Bool     // ending: its requests go to the SDK, which answers 404
	// sdkOnly: the SDK answers all its requests (a client that asked for
	// a newer protocol at initialize); the table only expires it.
	sdkOnly bool

	mu       sync.Mutex
	level    mcp.LoggingLevel              // set by logging/setLevel ("" none: no log messages)
	inflight map[string]context.CancelFunc // its calls on the fast path, by request id (idKey)
	timeout  time.Duration                 // idle timeout, ≤ 0 none
	refs     int                           // POSTs in progress
	timer    *time.Timer                   // closes the session when idle; nil once stopped
}

// fastSessions is the table of the sessions.
type fastSessions struct {
	mu sync.RWMutex
	m  map[string]*fastSession
	// served counts the requests answered on the fast path (tests check
	// that it is taken).
	served atomic.Int64
}

func (t *fastSessions) get(id string) *fastSession {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m[id]
}

// add keeps ss, opened with ctx, in the table until it ends, closing it
// after timeout (> 0) without a request. A session of the gateway ends
// only through the table (idle expiry), a DELETE (serveStreamable) or
// Gateway.Close, which all remove it; sweep removes any other the SDK
// ended (none today), without a goroutine per session.
func (t *fastSessions) add(ss *mcp.ServerSession, ctx context.Context, version string, sdkOnly bool, timeout time.Duration) {
	s := &fastSession{id: ss.ID(), ss: ss, ctx: ctx, version: version, sdkOnly: sdkOnly, inflight: map[string]context.CancelFunc{}, timeout: timeout}
	if timeout > 0 {
		s.timer = time.AfterFunc(timeout, func() {
			s.closed.Store(true)
			_ = ss.Close()
			t.remove(s)
		})
	}
	t.mu.Lock()
	if t.m == nil {
		t.m = map[string]*fastSession{}
	}
	t.m[s.id] = s
	t.mu.Unlock()
}

// remove takes s out of the table, for good.
func (t *fastSessions) remove(s *fastSession) {
	s.closed.Store(true)
	s.stopTimer()
	t.mu.Lock()
	if t.m[s.id] == s {
		delete(t.m, s.id)
	}
	t.mu.Unlock()
}

// sweep removes the sessions the SDK no longer serves (live: the ids of
// those it does).
func (t *fastSessions) sweep(live map[string]bool) {
	t.mu.RLock()
	var gone []*fastSession
	for id, s := range t.m {
		if !live[id] {
			gone = append(gone, s)
		}
	}
	t.mu.RUnlock()
	for _, s := range gone {
		t.remove(s)
	}
}

// sweepSessions sweeps the table against the SDK's sessions.
func (g *Gateway) sweepSessions() {
	live := map[string]bool{}
	for ss := range g.server.Sessions() {
		live[ss.ID()] = true
	}
	g.fast.sweep(live)
}

// sweepInterval is how often the table is swept.
const sweepInterval = time.Minute

// sweepLoop sweeps the table until ctx ends.
func (g *Gateway) sweepLoop(ctx context.Context) {
	tick := time.NewTicker(sweepInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			g.sweepSessions()
		}
	}
}

// beginPOST and endPOST bracket a POST of the session: the idle timer
// stops while one is in progress and starts again when the last ends.
func (s *fastSession) beginPOST() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer == nil {
		return
	}
	if s.refs == 0 {
		s.timer.Stop()
	}
	s.refs++
}

func (s *fastSession) endPOST() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer == nil {
		return
	}
	if s.refs--; s.refs == 0 {
		s.timer.Reset(s.timeout)
	}
}

func (s *fastSession) stopTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// logs reports whether a log message of level goes to the client, as the
// SDK's ServerSession.Log decides: only once the client set a level, and
// at that level or above.
func (s *fastSession) logs(level mcp.LoggingLevel) bool {
	s.mu.Lock()
	min := s.level
	s.mu.Unlock()
	return min != "" && levelRank(level) >= levelRank(min)
}

// levelRank orders the MCP log levels (RFC 5424's, least severe first).
func levelRank(l mcp.LoggingLevel) int {
	switch l {
	case "debug":
		return 0
	case "info":
		return 1
	case "notice":
		return 2
	case "warning":
		return 3
	case "error":
		return 4
	case "critical":
		return 5
	case "alert":
		return 6
	case "emergency":
		return 7
	}
	return -1
}

// streamableKey marks the context of a request of the streamable HTTP
// transport that may open a session: the SDK keeps that context for the
// session, where sessionMiddleware finds it (the SSE transport's sessions,
// and stdio's, are not in the table).
type streamableKey struct{}

// newProtocol is the first protocol version whose sessions the fast path
// leaves to the SDK (per-request metadata, results with a resultType).
const newProtocol = "2026-07-28"

// sessionMiddleware keeps the table of sessions: a streamable session
// enters it once initialize succeeded, and its log level follows
// logging/setLevel.
func (g *Gateway) sessionMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		switch method {
		case "initialize":
			ss, ok := req.GetSession().(*mcp.ServerSession)
			p, _ := req.GetParams().(*mcp.InitializeParams)
			r, _ := res.(*mcp.InitializeResult)
			if !ok || ss.ID() == "" || ctx.Value(streamableKey{}) == nil {
				break
			}
			sdkOnly := p == nil || r == nil || p.ProtocolVersion >= newProtocol || r.ProtocolVersion >= newProtocol
			version := ""
			if r != nil {
				version = r.ProtocolVersion
			}
			g.fast.add(ss, context.WithoutCancel(ctx), version, sdkOnly, max(g.opts.IdleTimeout, 0))
		case "logging/setLevel":
			p, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
			if s := req.GetSession(); s != nil && p != nil {
				if fs := g.fast.get(s.ID()); fs != nil {
					fs.mu.Lock()
					fs.level = p.Level
					fs.mu.Unlock()
				}
			}
		}
		return res, err
	}
}

// serveStreamable serves the streamable HTTP transport: the fast path for
// what it answers, the SDK for the rest.
func (g *Gateway) serveStreamable(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		if r.Method == http.MethodPost {
			r = r.WithContext(context.WithValue(r.Context(), streamableKey{}, true))
		}
		g.streamable.ServeHTTP(w, r)
		return
	}
	s := g.fast.get(sid)
	if s == nil {
		g.streamable.ServeHTTP(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.beginPOST()
		defer s.endPOST()
		if !s.sdkOnly && !s.closed.Load() && !g.fastOff.Load() && g.serveFast(w, r, s) {
			g.fast.served.Add(1)
			return
		}
	case http.MethodDelete:
		s.closed.Store(true)         // no new calls on the fast path
		g.streamable.ServeHTTP(w, r) // the SDK ends it
		g.fast.remove(s)
		return
	}
	g.streamable.ServeHTTP(w, r)
}

// maxFastBody bounds the body the fast path reads (the SDK's bound): a
// larger one goes to the SDK, which refuses it.
const maxFastBody = mcp.DefaultMaxRequestBodyBytes

// fastMessage is the envelope of a JSON-RPC message.
type fastMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// fastCallParams are the params of a tools/call.
type fastCallParams struct {
	Meta           map[string]any  `json:"_meta"`
	Name           string          `json:"name"`
	Arguments      json.RawMessage `json:"arguments"`
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   string          `json:"requestState"`
}

// fastCancel are the params of notifications/cancelled.
type fastCancel struct {
	RequestID json.RawMessage `json:"requestId"`
}

// serveFast answers a POST of the session s when it is one tools/call of
// a capability tool the SDK serves, the cancellation of a call it runs, a
// tools/list or a ping (fastlist.go), and reports whether it did. When it did not, r's body is as it
// came (what was read is put back), for the SDK.
func (g *Gateway) serveFast(w http.ResponseWriter, r *http.Request, s *fastSession) bool {
	if !fastHeaders(r.Header, s.version) || r.ContentLength > maxFastBody {
		return false
	}
	body, ok := readFastBody(r)
	if !ok {
		return false
	}
	var m fastMessage
	if i := skipJSONSpace(body); i == len(body) || body[i] != '{' || mcpconn.Decode(body, &m) != nil || m.JSONRPC != "2.0" {
		return false
	}
	switch {
	case m.Method == "tools/call" && len(m.ID) > 0:
		return g.fastCall(w, r, s, &m)
	case m.Method == "notifications/cancelled" && m.ID == nil:
		return fastCancelCall(w, s, &m)
	case m.Method == "tools/list" && len(m.ID) > 0:
		return g.fastList(w, r, s, &m)
	case m.Method == "ping" && len(m.ID) > 0:
		return g.fastPing(w, r, s, &m)
	}
	return false
}

// readFastBody reads r's body whole, up to maxFastBody; ok is false when
// it is larger or unreadable, r's body then reading as it came.
func readFastBody(r *http.Request) (body []byte, ok bool) {
	// The claimed length sizes the buffer, never beyond the budget: a
	// client may claim any length.
	size := min(r.ContentLength, maxFastBody)
	if size < 0 {
		size = 512
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+1))
	_, err := buf.ReadFrom(io.LimitReader(r.Body, maxFastBody+1))
	body = buf.Bytes()
	if err != nil || len(body) > maxFastBody {
		var rest io.Reader = r.Body
		if err != nil {
			rest = errReader{err}
		}
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), rest), r.Body}
		return nil, false
	}
	r.Body = readCloser{bytes.NewReader(body), r.Body}
	return body, true
}

type readCloser struct {
	io.Reader
	c io.Closer
}

func (rc readCloser) Close() error { return rc.c.Close() }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// fastHeaders reports whether the headers of a POST are the plain ones
// of a session's request: a JSON body, an Accept that takes both answers,
// no Last-Event-ID, the session's protocol version (or none), and no other
// Mcp- header (the newer protocols' Mcp-Method and the like, which the SDK
// checks).
func fastHeaders(h http.Header, version string) bool {
	for k := range h {
		if len(k) >= 4 && strings.EqualFold(k[:4], "mcp-") && k != "Mcp-Session-Id" && k != "Mcp-Protocol-Version" {
			return false
		}
	}
	if len(h["Last-Event-Id"]) > 0 {
		return false
	}
	if v := h["Mcp-Protocol-Version"]; len(v) > 1 || len(v) == 1 && v[0] != version {
		return false
	}
	ct := h.Get("Content-Type")
	if ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return false
		}
	}
	jsonOK, streamOK := accepts(h["Accept"])
	return jsonOK && streamOK
}

// accepts reads an Accept header as the SDK does: whether it takes JSON
// and whether it takes an event stream.
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

func skipJSONSpace(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// idKey identifies a request id the fast path echoes as it came: a
// string of printable ASCII without escapes, or an integer the SDK reads
// exactly; ok is false for any other (the SDK would re-encode it).
func idKey(raw json.RawMessage) (key string, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 1 {
		return "", false
	}
	if raw[0] == '"' {
		if len(raw) < 2 || raw[len(raw)-1] != '"' {
			return "", false
		}
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c > 0x7e || c == '\\' || c == '"' {
				return "", false
			}
		}
		return "s:" + string(raw[1:len(raw)-1]), true
	}
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(raw) > 1) {
		return "", false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return "n:" + string(raw), true
}

// cancelKey is the idKey of a notifications/cancelled requestId, read as
// the SDK reads ids (a number is truncated to an integer).
func cancelKey(raw json.RawMessage) (string, bool) {
	var v any
	if mcpconn.Decode(raw, &v) != nil {
		return "", false
	}
	switch x := v.(type) {
	case string:
		return "s:" + x, true
	case float64:
		return fmt.Sprintf("n:%d", int64(x)), true
	}
	return "", false
}

// fastCall runs a tools/call on the fast path, unless it is not one of a
// capability tool served now, or asks what the SDK handles.
func (g *Gateway) fastCall(w http.ResponseWriter, r *http.Request, s *fastSession, m *fastMessage) bool {
	key, ok := idKey(m.ID)
	if !ok {
		return false
	}
	var p fastCallParams
	if i := skipJSONSpace(m.Params); i == len(m.Params) || m.Params[i] != '{' || mcpconn.Decode(m.Params, &p) != nil {
		return false
	}
	if p.Name == "" || len(p.InputResponses) > 0 || p.RequestState != "" || p.Meta[mcp.MetaKeyProtocolVersion] != nil {
		return false
	}
	served := g.servedNow.Load()
	if served == nil {
		return false
	}
	e := (*served)[p.Name]
	if e == nil || e.refused.Load() {
		return false
	}
	id := bytes.TrimSpace(m.ID)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.mu.Lock()
	_, dup := s.inflight[key]
	if !dup {
		s.inflight[key] = cancel
	}
	s.mu.Unlock()
	if dup {
		writeDuplicate(w, id)
		return true
	}
	defer func() {
		s.mu.Lock()
		delete(s.inflight, key)
		s.mu.Unlock()
	}()
	ctx, end := tracing.StartMCP(ctx, "tools/call", p.Name, s.id, p.Meta, r.Header)
	out := &fastAnswer{w: w, s: s}
	res := g.callTool(callerContext(ctx, p.Meta, r.Header, "", ""), e, p.Arguments, p.Meta["progressToken"], out)
	end(nil, res.IsError)
	out.finish(id, res)
	return true
}

// fastCancelCall cancels a call running on the fast path, as
// notifications/cancelled asks (202, no body), unless it names none.
func fastCancelCall(w http.ResponseWriter, s *fastSession, m *fastMessage) bool {
	var p fastCancel
	if mcpconn.Decode(m.Params, &p) != nil || p.RequestID == nil {
		return false
	}
	key, ok := cancelKey(p.RequestID)
	if !ok {
		return false
	}
	s.mu.Lock()
	cancel := s.inflight[key]
	s.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel()
	w.WriteHeader(http.StatusAccepted)
	return true
}

// writeDuplicate answers a call whose id is that of a call in progress on
// the session, as the SDK does.
func writeDuplicate(w http.ResponseWriter, id json.RawMessage) {
	raw := string(id)
	if raw[0] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	msg, _ := json.Marshal(fmt.Sprintf("duplicate in-flight request ID %v", raw))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32600,"message":` + string(msg) + `}}`))
}

// fastAnswer writes the answer of a call on the fast path: the result as
// application/json, or, once a notification goes ahead of it, an SSE
// stream of its notifications and then its result, as the SDK writes them.
type fastAnswer struct {
	w  http.ResponseWriter
	s  *fastSession
	mu sync.Mutex
	// sse: the answer is an SSE stream (its header is written); done: the
	// result is written, and nothing more goes.
	sse, done bool
}

func (a *fastAnswer) progress(_ context.Context, p *mcp.ProgressNotificationParams) {
	a.notify("notifications/progress", p)
}

func (a *fastAnswer) log(_ context.Context, p *mcp.LoggingMessageParams) {
	if a.s.logs(p.Level) {
		a.notify("notifications/message", p)
	}
}

// notify sends a notification ahead of the result, on the SSE stream it
// starts if need be.
func (a *fastAnswer) notify(method string, params any) {
	data, err := marshalNoEscape(params)
	if err != nil {
		return
	}
	msg := make([]byte, 0, len(data)+64)
	msg = append(msg, `{"jsonrpc":"2.0","method":"`...)
	msg = append(msg, method...)
	msg = append(msg, `","params":`...)
	msg = append(msg, data...)
	msg = append(msg, '}')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done {
		return
	}
	a.startSSE()
	a.event(msg)
}

func (a *fastAnswer) startSSE() {
	if a.sse {
		return
	}
	a.sse = true
	h := a.w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	a.w.WriteHeader(http.StatusOK)
}

// event writes one SSE event of the stream, and flushes it.
func (a *fastAnswer) event(msg []byte) {
	b := make([]byte, 0, len(msg)+len("event: message\ndata: \n\n"))
	b = append(b, "event: message\ndata: "...)
	b = append(b, msg...)
	b = append(b, "\n\n"...)
	_, _ = a.w.Write(b)
	_ = http.NewResponseController(a.w).Flush()
}

// finish writes the result (a JSON-RPC internal error, should it not
// encode, as the SDK answers).
func (a *fastAnswer) finish(id json.RawMessage, res *mcp.CallToolResult) {
	// The SDK encodes the result with its MarshalJSON, whose output (compact
	// JSON) its encoder then writes as it is: the same bytes, encoded once
	// (by appendCallResult when it can).
	msg := make([]byte, 0, 256+len(id))
	msg = append(msg, `{"jsonrpc":"2.0","id":`...)
	msg = append(msg, id...)
	msg = append(msg, `,"result":`...)
	msg, ok := appendCallResult(msg, res)
	if !ok {
		data, err := res.MarshalJSON()
		if err != nil {
			e, _ := json.Marshal(fmt.Sprintf("marshaling the result: %v", err))
			msg = []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32603,"message":` + string(e) + `}`)
		} else {
			msg = append(msg, data...)
		}
	}
	msg = append(msg, '}')
	a.mu.Lock()
	defer a.mu.Unlock()
	a.done = true
	if a.sse {
		a.event(msg)
		return
	}
	h := a.w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	_, _ = a.w.Write(msg)
}

// marshalNoEscape encodes v as the SDK encodes messages: without
// escaping HTML characters.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
