package mcpconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/internal/tracing"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/segmentio/encoding/json"
)

// HTTPProtocolVersion is the protocol version an HTTPSession offers in its
// initialize request.
const HTTPProtocolVersion = "2025-11-25"

// httpProtocolVersions are the versions an HTTPSession accepts from a
// server's initialize answer: those the Go SDK's client accepts, up to the
// one it offers (later ones are negotiated with server/discover, which it
// does not speak).
var httpProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// DefaultMaxMessageBytes bounds one message an HTTPSession reads: a JSON
// answer's body, or one SSE event's data.
const DefaultMaxMessageBytes = 32 << 20

// maxDepth bounds the nesting of a message an HTTPSession decodes, as the
// Go SDK does.
const maxDepth = 1000

// maxResumes bounds how often an HTTPSession resumes the SSE stream of one
// request (GET with Last-Event-ID) without receiving an event in between.
const maxResumes = 3

// HTTPOptions tune an HTTPSession.
type HTTPOptions struct {
	// ClientVersion is the version in the clientInfo sent to the server
	// (name "caphub").
	ClientVersion string
	// MaxMessageBytes bounds one message read (DefaultMaxMessageBytes when
	// 0).
	MaxMessageBytes int
	// StartTimeout bounds initialising a session (DefaultStartTimeout when
	// 0).
	StartTimeout time.Duration
}

// HTTPSession is a lean MCP client session over streamable HTTP, for
// callers that make many requests on one session (the mcp binding's
// pool): each request is a POST carrying the session's Mcp-Session-Id and
// Mcp-Protocol-Version, and its answer is read as application/json or as
// an SSE stream, decoding only the envelope of each message. It sends the
// saved server's headers and reaches only the hosts the server's Permits
// allow, as the Go SDK's transport does here (see Server.httpClient), over
// a shared keep-alive transport. A session the server forgot (HTTP 404)
// is initialised again and the request sent once more. It is safe for
// concurrent use.
type HTTPSession struct {
	name, url string
	client    *http.Client
	initBody  []byte
	maxBytes  int
	timeout   time.Duration
	ids       atomic.Int64

	ctx    context.Context // ends with Close: requests in flight end with it
	cancel context.CancelFunc

	renewMu sync.Mutex // one initialisation at a time

	mu        sync.Mutex
	sessionID []string // the Mcp-Session-Id header's value; nil when the server gave none
	protocol  []string // the Mcp-Protocol-Version header's value
	server    mcp.Implementation
	closed    bool
}

// Shared header values (net/http only reads them).
var (
	hdrJSON   = []string{"application/json"}
	hdrAccept = []string{"application/json, text/event-stream"}
	hdrSSE    = []string{"text/event-stream"}
)

// DialHTTP initialises an MCP session with a saved server whose transport
// is streamable HTTP (TransportHTTP): initialize with caphub's client info
// and HTTPProtocolVersion, notifications/initialized, then a ping, which
// a server that speaks only the SSE transport fails, all within the
// options' StartTimeout. ctx bounds nothing after DialHTTP returns.
func DialHTTP(ctx context.Context, s *Server, opts *HTTPOptions) (*HTTPSession, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Transport != TransportHTTP {
		return nil, fmt.Errorf("MCP server %q: transport %q is not streamable HTTP (%s)", s.Name, s.Transport, TransportHTTP)
	}
	if opts == nil {
		opts = &HTTPOptions{}
	}
	hc, err := s.httpClient()
	if err != nil {
		return nil, err
	}
	version := opts.ClientVersion
	if version == "" {
		version = "dev"
	}
	init, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": HTTPProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      mcp.Implementation{Name: "caphub", Version: version},
	}})
	if err != nil {
		return nil, err
	}
	hs := &HTTPSession{name: s.Name, url: s.URL, client: hc, initBody: init, maxBytes: opts.MaxMessageBytes, timeout: opts.StartTimeout}
	if hs.maxBytes <= 0 {
		hs.maxBytes = DefaultMaxMessageBytes
	}
	if hs.timeout <= 0 {
		hs.timeout = DefaultStartTimeout
	}
	hs.ctx, hs.cancel = context.WithCancel(context.Background())
	ctx, cancel := context.WithTimeout(ctx, hs.timeout)
	defer cancel()
	if err := hs.initialize(ctx); err != nil {
		hs.cancel()
		return nil, err
	}
	if _, err := hs.Request(ctx, "ping", nil, nil); err != nil {
		_ = hs.Close()
		return nil, fmt.Errorf("MCP server %q at %s: ping after initialize: %w", s.Name, s.URL, err)
	}
	return hs, nil
}

// initialize opens a new session: initialize, then
// notifications/initialized.
func (hs *HTTPSession) initialize(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, hs.timeout)
	defer cancel()
	resp, err := hs.post(ctx, hs.initBody, nil, nil)
	if err != nil {
		return fmt.Errorf("MCP server %q at %s: initialize: %w", hs.name, hs.url, err)
	}
	var sid []string
	if v := resp.Header.Get("Mcp-Session-Id"); v != "" {
		sid = []string{v}
	}
	m, err := hs.answer(ctx, resp, 0, nil)
	if err != nil {
		return fmt.Errorf("MCP server %q at %s: initialize: %w", hs.name, hs.url, err)
	}
	if m.Error != nil {
		return fmt.Errorf("MCP server %q at %s refused initialize: %w", hs.name, hs.url, m.Error)
	}
	res, err := readInitialized(m.Result)
	if err != nil {
		return fmt.Errorf("MCP server %q at %s: %w", hs.name, hs.url, err)
	}
	proto := []string{res.ProtocolVersion}
	resp, err = hs.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), sid, proto)
	if err != nil {
		return fmt.Errorf("MCP server %q at %s: notifications/initialized: %w", hs.name, hs.url, err)
	}
	drain(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("MCP server %q at %s: notifications/initialized answered %s", hs.name, hs.url, resp.Status)
	}
	hs.mu.Lock()
	hs.sessionID, hs.protocol, hs.server = sid, proto, res.ServerInfo
	hs.mu.Unlock()
	return nil
}

// SessionID is the session's Mcp-Session-Id ("" when the server gave
// none).
func (hs *HTTPSession) SessionID() string {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.sessionID == nil {
		return ""
	}
	return hs.sessionID[0]
}

// ProtocolVersion is the protocol version the server chose.
func (hs *HTTPSession) ProtocolVersion() string {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.protocol[0]
}

// ServerInfo is the server's name and version from its initialize answer.
func (hs *HTTPSession) ServerInfo() mcp.Implementation {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.server
}

func (hs *HTTPSession) state() (sid, proto []string, closed bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.sessionID, hs.protocol, hs.closed
}

// renew initialises a new session in place of stale, the one the server
// forgot, unless a concurrent request already did.
func (hs *HTTPSession) renew(ctx context.Context, stale []string) error {
	hs.renewMu.Lock()
	defer hs.renewMu.Unlock()
	sid, _, closed := hs.state()
	if closed {
		return errClosed
	}
	if len(sid) == 0 || len(stale) == 0 || sid[0] != stale[0] {
		return nil
	}
	return hs.initialize(ctx)
}

var errClosed = errors.New("the MCP session is closed")

// Notification is a JSON-RPC notification a server sent on a request's
// stream.
type Notification struct {
	Method string
	Params json.RawMessage
}

// ErrStreamEnded is the error of a request whose SSE stream ended before
// its answer, and could not be resumed.
var ErrStreamEnded = errors.New("the server ended the answer's stream before the answer")

// Request sends a JSON-RPC request and returns its result. The
// notifications the server sends on the request's stream before the
// answer are handed to notify (when not nil), in order, before Request
// returns. A JSON-RPC error answer is returned as a *jsonrpc.Error. When
// ctx ends first, the server is sent notifications/cancelled for the
// request, and the error wraps ctx's.
func (hs *HTTPSession) Request(ctx context.Context, method string, params any, notify func(Notification)) (json.RawMessage, error) {
	id := hs.ids.Add(1)
	body, err := json.Marshal(request{JSONRPC: "2.0", ID: id, Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("MCP request %s to %q: %w", method, hs.name, err)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	unlink := context.AfterFunc(hs.ctx, stop) // Close ends it
	defer unlink()

	for attempt := 0; ; attempt++ {
		sid, proto, closed := hs.state()
		if closed {
			return nil, errClosed
		}
		resp, err := hs.post(ctx, body, sid, proto)
		if err != nil {
			return nil, hs.ended(ctx, id, sid, proto, fmt.Errorf("%s: %w", method, err))
		}
		if attempt == 0 && sid != nil && forgotten(resp) {
			drain(resp)
			if err := hs.renew(ctx, sid); err != nil {
				return nil, hs.ended(ctx, id, nil, nil, fmt.Errorf("%s: the server ended the session (HTTP %d), and a new one failed: %w", method, resp.StatusCode, err))
			}
			continue
		}
		m, err := hs.answer(ctx, resp, id, notify)
		if err != nil {
			return nil, hs.ended(ctx, id, sid, proto, fmt.Errorf("%s: %w", method, err))
		}
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	}
}

// ended returns err, after telling the server that request id is
// cancelled when ctx ended (with the ctx error wrapped in err).
func (hs *HTTPSession) ended(ctx context.Context, id int64, sid, proto []string, err error) error {
	if ctx.Err() == nil {
		return err
	}
	if sid != nil || proto != nil {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": id, "reason": context.Cause(ctx).Error()}})
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if resp, perr := hs.post(nctx, body, sid, proto); perr == nil {
			drain(resp)
		}
		cancel()
	}
	if errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w (%v)", ctx.Err(), err)
}

// forgotten reports whether a response says the server no longer knows
// the session: HTTP 404, as the protocol says, or HTTP 400 with a JSON-RPC
// error about the session id, as servers built on the TypeScript SDK's
// example (npm server-everything) answer an unknown id.
func forgotten(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusNotFound:
		return true
	case http.StatusBadRequest:
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data), resp.Body))
		var m message
		return decode(data, &m) == nil && m.Error != nil && strings.Contains(strings.ToLower(m.Error.Message), "session")
	}
	return false
}

// request is a JSON-RPC request as sent.
type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// message is any JSON-RPC message as read, decoded only as far as routing
// needs.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
	// raw is the message as read, valid only until the reader's callback
	// returns (its buffer is reused): for relaying it unchanged.
	raw []byte
}

func (m *message) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// idIs reports whether a response's id is the request id.
func (m *message) idIs(id int64) bool {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(m.ID)), 10, 64)
	return err == nil && n == id
}

// Decode reads JSON as the Go SDK does (field names matched exactly,
// nesting bounded), without its per-message buffer: for code that reads MCP
// messages itself and must read them as the SDK would (the mcp gateway's
// tools/call path, see server/mcpgw).
func Decode(data []byte, v any) error { return decode(data, v) }

// decode is Decode.
func decode(data []byte, v any) error {
	if err := checkDepth(data); err != nil {
		return err
	}
	rest, err := json.Parse(data, v, json.DontMatchCaseInsensitiveStructFields)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return fmt.Errorf("unexpected data after the JSON value: %.40q", rest)
	}
	return nil
}

// checkDepth fails JSON nested deeper than maxDepth.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			if depth++; depth > maxDepth {
				return fmt.Errorf("the message nests deeper than %d levels", maxDepth)
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return nil
}

// post sends one message.
func (hs *HTTPSession) post(ctx context.Context, body []byte, sid, proto []string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = http.Header{"Content-Type": hdrJSON, "Accept": hdrAccept}
	if sid != nil {
		req.Header["Mcp-Session-Id"] = sid
	}
	if proto != nil {
		req.Header["Mcp-Protocol-Version"] = proto
	}
	tracing.Inject(ctx, req.Header)
	return hs.client.Do(req)
}

// drain reads what is left of a body (so that its connection is reused)
// and closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// answer reads the answer to request id (0: initialize) from resp,
// resuming its SSE stream when the server ends it early with event ids.
func (hs *HTTPSession) answer(ctx context.Context, resp *http.Response, id int64, notify func(Notification)) (*message, error) {
	var got *message
	each := func(m *message) (bool, error) {
		switch {
		case m.isResponse():
			if m.idIs(id) {
				got = m
				return true, nil
			}
		case len(m.ID) > 0: // a request from the server
			hs.refuse(ctx, m)
		case notify != nil:
			notify(Notification{Method: m.Method, Params: m.Params})
		}
		return false, nil
	}
	lastID, resumes := "", 0
	for {
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return nil, hs.statusError(resp)
		}
		evID, retry, err := readAnswer(resp.Body, resp.Header.Get("Content-Type"), hs.maxBytes, each)
		drain(resp)
		if got != nil {
			return got, nil
		}
		if err != nil {
			return nil, err
		}
		if evID == "" || (evID == lastID && resumes >= maxResumes) {
			return nil, ErrStreamEnded
		}
		if evID != lastID {
			lastID, resumes = evID, 0
		}
		resumes++
		if resp, err = hs.resume(ctx, lastID, retry); err != nil {
			return nil, fmt.Errorf("%w; resuming it after event %q failed: %w", ErrStreamEnded, lastID, err)
		}
	}
}

// resume reopens an SSE stream after the event lastID, after the delay
// the server asked for (retry).
func (hs *HTTPSession) resume(ctx context.Context, lastID string, retry time.Duration) (*http.Response, error) {
	if retry <= 0 {
		retry = 100 * time.Millisecond
	}
	t := time.NewTimer(min(retry, 10*time.Second))
	select {
	case <-ctx.Done():
		t.Stop()
		return nil, ctx.Err()
	case <-t.C:
	}
	sid, proto, _ := hs.state()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header = http.Header{"Accept": hdrSSE, "Last-Event-Id": {lastID}}
	if sid != nil {
		req.Header["Mcp-Session-Id"] = sid
	}
	if proto != nil {
		req.Header["Mcp-Protocol-Version"] = proto
	}
	tracing.Inject(ctx, req.Header)
	return hs.client.Do(req)
}

// refuse answers a server's request on a request's stream: ping with an
// empty result, anything else (sampling, elicitation, roots) with "method
// not found", since caphub advertises none of them.
func (hs *HTTPSession) refuse(ctx context.Context, m *message) {
	answer := map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}}
	if m.Method != "ping" {
		delete(answer, "result")
		answer["error"] = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "caphub does not offer " + m.Method + " to the MCP servers it calls"}
	}
	body, err := json.Marshal(answer)
	if err != nil {
		return
	}
	sid, proto, _ := hs.state()
	if resp, err := hs.post(ctx, body, sid, proto); err == nil {
		drain(resp)
	}
}

// statusError describes an unsuccessful HTTP answer: the JSON-RPC error
// its body carries when it has one (a *jsonrpc.Error, wrapped), else the
// status.
func (hs *HTTPSession) statusError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var m message
	if decode(data, &m) == nil && m.Error != nil {
		return fmt.Errorf("HTTP %s: %w", resp.Status, m.Error)
	}
	return &HTTPStatusError{Status: resp.Status, Code: resp.StatusCode, Body: string(bytes.TrimSpace(data[:min(len(data), 200)]))}
}

// HTTPStatusError is an unsuccessful HTTP answer that carries no JSON-RPC
// error.
type HTTPStatusError struct {
	Status string
	Code   int
	Body   string // its start
}

func (e *HTTPStatusError) Error() string {
	if e.Body == "" {
		return "HTTP " + e.Status
	}
	return fmt.Sprintf("HTTP %s: %s", e.Status, e.Body)
}

// readAnswer reads the messages of an answer whose Content-Type is
// contentType: one JSON message (application/json) or the data of each
// event of an SSE stream (text/event-stream), each at most limit bytes,
// handing them to each until it returns true. For an SSE stream it
// returns the id of the last event and the reconnection delay the server
// set.
func readAnswer(body io.Reader, contentType string, limit int, each func(*message) (bool, error)) (lastID string, retry time.Duration, err error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(body, int64(limit)+1))
		if err != nil {
			return "", 0, err
		}
		if len(data) > limit {
			return "", 0, fmt.Errorf("the answer is larger than %d bytes", limit)
		}
		m := new(message)
		if err := decode(data, m); err != nil {
			return "", 0, fmt.Errorf("unreadable JSON answer: %w", err)
		}
		m.raw = data
		_, err = each(m)
		return "", 0, err
	case "text/event-stream":
		return readSSE(body, limit, each)
	}
	return "", 0, fmt.Errorf("unexpected answer of type %q (want application/json or text/event-stream)", contentType)
}

// readSSE reads an SSE stream (see readAnswer).
func readSSE(body io.Reader, limit int, each func(*message) (bool, error)) (lastID string, retry time.Duration, err error) {
	bufs := sseBuffers.Get().(*sseBuffer)
	defer func() {
		if cap(bufs.line) <= 64<<10 && cap(bufs.data) <= 64<<10 {
			sseBuffers.Put(bufs)
		}
	}()
	sc := bufio.NewScanner(body)
	sc.Buffer(bufs.line[:0], limit+64)
	sc.Split(scanLines)
	ev := sseEvent{data: bufs.data[:0], limit: limit}
	defer func() { bufs.data = ev.data }()
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) != 0 {
			if err := ev.field(line); err != nil {
				return ev.lastID, ev.retry, err
			}
			continue
		}
		if done, err := ev.dispatch(each); done || err != nil {
			return ev.lastID, ev.retry, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return ev.lastID, ev.retry, fmt.Errorf("an event line is longer than %d bytes", limit)
		}
		return ev.lastID, ev.retry, err
	}
	return ev.lastID, ev.retry, nil
}

// sseEvent is the event an SSE stream is reading, and what the stream's
// fields said so far (the last event id, the retry delay).
type sseEvent struct {
	data   []byte
	event  string
	has    bool // the event has a data field
	limit  int
	lastID string
	retry  time.Duration
}

// field reads one field line of the event.
func (ev *sseEvent) field(line []byte) error {
	field, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(field) {
	case "data":
		if ev.has {
			ev.data = append(ev.data, '\n')
		}
		if len(ev.data)+len(value) > ev.limit {
			return fmt.Errorf("an event is larger than %d bytes", ev.limit)
		}
		ev.data, ev.has = append(ev.data, value...), true
	case "event":
		ev.event = string(value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			ev.lastID = string(value)
		}
	case "retry":
		if n, err := strconv.ParseUint(string(value), 10, 31); err == nil {
			ev.retry = time.Duration(n) * time.Millisecond
		}
	}
	return nil
}

// dispatch hands a complete message event to each (and reports what each
// said), then starts the next event.
func (ev *sseEvent) dispatch(each func(*message) (bool, error)) (done bool, err error) {
	if ev.has && (ev.event == "" || ev.event == "message") && len(bytes.TrimSpace(ev.data)) > 0 {
		m := new(message)
		if err := decode(ev.data, m); err != nil {
			return false, fmt.Errorf("unreadable event: %w", err)
		}
		m.raw = ev.data
		done, err = each(m)
	}
	ev.data, ev.event, ev.has = ev.data[:0], "", false
	return done, err
}

// sseBuffer is what readSSE reuses from one stream to the next: its line
// buffer and its event data.
type sseBuffer struct{ line, data []byte }

var sseBuffers = sync.Pool{New: func() any { return &sseBuffer{line: make([]byte, 0, 4096)} }}

// scanLines splits SSE lines, which end with CRLF, LF or CR.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\r' {
			if i+1 == len(data) && !atEOF {
				return 0, nil, nil // a CRLF may be split
			}
			if i+1 < len(data) && data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
		}
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// Close ends the session: requests in flight end, and the server is sent
// a DELETE for the session.
func (hs *HTTPSession) Close() error {
	hs.mu.Lock()
	if hs.closed {
		hs.mu.Unlock()
		return nil
	}
	hs.closed = true
	sid, proto := hs.sessionID, hs.protocol
	hs.mu.Unlock()
	hs.cancel()
	if sid == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, hs.url, nil)
	if err != nil {
		return err
	}
	req.Header = http.Header{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": proto}
	resp, err := hs.client.Do(req)
	if err != nil {
		return fmt.Errorf("MCP server %q: end the session: %w", hs.name, err)
	}
	drain(resp)
	return nil
}

// CallTool calls a tool: tools/call with args (a JSON object; nil sends
// {}) and, when progressToken is not "", that token in _meta. The
// notifications on the call's stream (its progress) go to notify, in
// order, before CallTool returns. The result is decoded as the Go SDK's
// client decodes it (see DecodeToolResult).
func (hs *HTTPSession) CallTool(ctx context.Context, name string, args map[string]any, progressToken string, notify func(Notification)) (*mcp.CallToolResult, error) {
	p := newCallParams(ctx, name, args, progressToken)
	raw, err := hs.Request(ctx, "tools/call", p, notify)
	if err != nil {
		return nil, err
	}
	res, err := DecodeToolResult(raw)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: unreadable tools/call result: %w", hs.name, err)
	}
	return res, nil
}

// callParams are a tools/call's; _meta holds the progress token and the
// trace context.
type callParams struct {
	Meta      map[string]any `json:"_meta,omitempty"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// newCallParams are a tools/call's parameters: args ({} when nil), the
// progress token in _meta when not "", and ctx's trace context.
func newCallParams(ctx context.Context, name string, args map[string]any, progressToken string) *callParams {
	if args == nil {
		args = map[string]any{}
	}
	p := &callParams{Name: name, Arguments: args}
	if progressToken != "" {
		p.Meta = map[string]any{"progressToken": progressToken}
	}
	p.Meta = tracing.InjectMap(ctx, p.Meta)
	return p
}

// initialized is what caphub reads of an initialize result.
type initialized struct {
	ProtocolVersion string             `json:"protocolVersion"`
	ServerInfo      mcp.Implementation `json:"serverInfo"`
}

// readInitialized decodes an initialize result and checks that caphub
// speaks the protocol version the server chose.
func readInitialized(raw json.RawMessage) (initialized, error) {
	var res initialized
	if err := decode(raw, &res); err != nil {
		return res, fmt.Errorf("unreadable initialize result: %w", err)
	}
	if !slices.Contains(httpProtocolVersions, res.ProtocolVersion) {
		return res, fmt.Errorf("unsupported protocol version %q (caphub speaks %s)", res.ProtocolVersion, strings.Join(httpProtocolVersions, ", "))
	}
	return res, nil
}

// ProgressParams are a notifications/progress's parameters.
type ProgressParams struct {
	ProgressToken any     `json:"progressToken"`
	Progress      float64 `json:"progress"`
	Total         float64 `json:"total,omitempty"`
	Message       string  `json:"message,omitempty"`
}

// DecodeProgress reads a notifications/progress's parameters.
func DecodeProgress(raw json.RawMessage) (*ProgressParams, error) {
	p := new(ProgressParams)
	if err := decode(raw, p); err != nil {
		return nil, err
	}
	return p, nil
}

// wireContent is a content block as sent: the fields of the block types a
// tool result carries (text, image, audio, resource_link, resource).
type wireContent struct {
	Type        string                `json:"type"`
	Text        string                `json:"text"`
	MIMEType    string                `json:"mimeType"`
	Data        []byte                `json:"data"`
	Resource    *mcp.ResourceContents `json:"resource"`
	URI         string                `json:"uri"`
	Name        string                `json:"name"`
	Title       string                `json:"title"`
	Description string                `json:"description"`
	Size        *int64                `json:"size"`
	Meta        mcp.Meta              `json:"_meta"`
	Annotations *mcp.Annotations      `json:"annotations"`
	Icons       []mcp.Icon            `json:"icons"`
}

// DecodeToolResult reads a tools/call result into what the Go SDK's client
// makes of it (the same content blocks, structured content and isError),
// without the SDK's per-message buffer. Blocks of other types than text,
// image, audio, resource_link and resource (sampling's tool_use and
// tool_result, or unknown ones) are left to the SDK's decoder, errors
// included.
func DecodeToolResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var wire struct {
		Meta              mcp.Meta       `json:"_meta"`
		Content           []*wireContent `json:"content"`
		StructuredContent any            `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	}
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	if err := decode(raw, &wire); err != nil {
		return nil, err
	}
	res := &mcp.CallToolResult{Meta: wire.Meta, Content: make([]mcp.Content, 0, len(wire.Content)), StructuredContent: wire.StructuredContent, IsError: wire.IsError}
	for _, w := range wire.Content {
		if w == nil {
			return nil, errors.New("nil content")
		}
		var c mcp.Content
		switch w.Type {
		case "text":
			c = &mcp.TextContent{Text: w.Text, Meta: w.Meta, Annotations: w.Annotations}
		case "image":
			c = &mcp.ImageContent{MIMEType: w.MIMEType, Data: w.Data, Meta: w.Meta, Annotations: w.Annotations}
		case "audio":
			c = &mcp.AudioContent{MIMEType: w.MIMEType, Data: w.Data, Meta: w.Meta, Annotations: w.Annotations}
		case "resource_link":
			c = &mcp.ResourceLink{URI: w.URI, Name: w.Name, Title: w.Title, Description: w.Description, MIMEType: w.MIMEType, Size: w.Size, Meta: w.Meta, Annotations: w.Annotations, Icons: w.Icons}
		case "resource":
			c = &mcp.EmbeddedResource{Resource: w.Resource, Meta: w.Meta, Annotations: w.Annotations}
		default:
			sdk := new(mcp.CallToolResult)
			if err := sdk.UnmarshalJSON(raw); err != nil {
				return nil, err
			}
			return sdk, nil
		}
		res.Content = append(res.Content, c)
	}
	return res, nil
}
