package mcpfront

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The HTTP relay: a reverse proxy for the streamable HTTP transport, used
// when the saved server speaks it and the client uses the streamable
// endpoint (see the package documentation).

// HTTP headers of the streamable transport.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerLastEventID     = "Last-Event-Id" // canonical form of Last-Event-ID
)

// maxBodyBytes bounds a request body the HTTP relay accepts: it reads each
// body whole, to apply the policy to the tools/call requests in it.
const maxBodyBytes = 4 << 20

// deleteTimeout bounds the DELETE that ends an upstream session.
const deleteTimeout = 5 * time.Second

// forwardedHeaders are the request headers relayed upstream. Nothing else
// is: not Authorization or Cookie (they carry caphub's own credentials),
// not hop-by-hop headers, not the client's other headers. The saved
// server's headers are added to these.
var forwardedHeaders = []string{"Content-Type", "Accept", headerProtocolVersion, headerLastEventID}

// relayedHeaders are the response headers relayed downstream, besides the
// session id, which is mapped.
var relayedHeaders = []string{"Content-Type", "Cache-Control", "Allow", "Retry-After"}

// httpSession is a downstream session relayed at the HTTP level to one
// session of a streamable HTTP server.
type httpSession struct {
	f       *Front
	name    string // the saved server's
	id      string // the session id the client sees, made by the front
	upID    string // the upstream's session id; "" for a server without sessions
	url     *url.URL
	headers http.Header // the saved server's headers, expanded

	// ctx ends with the session, and every relayed request with it.
	ctx    context.Context
	cancel context.CancelFunc

	last   atomic.Int64 // when a request last came or ended (Unix nanoseconds)
	active atomic.Int32 // POSTs being relayed: the session is not idle

	mu       sync.Mutex
	timer    *time.Timer             // the idle timeout; nil without one
	pending  map[string]*pendingCall // forwarded requests awaiting a response, by id key
	npending atomic.Int32            // len(pending), read without the lock

	closeOnce sync.Once
}

// pendingCall is a forwarded request whose response the relay watches
// for: a tools/call, to record its outcome, or the initialize that opens
// a session, to close the session if it fails.
type pendingCall struct {
	key    string          // idKey of the request's id
	ctx    context.Context // the carrying request's (its values), for the hooks
	tool   string          // the called tool; "" for initialize
	caller string          // the X-Caphub-Agent of the carrying request
	start  time.Time

	once sync.Once
	done atomic.Bool
	err  *invoke.Error // the outcome once done; nil for success
}

// serveRelay serves a request on the streamable endpoint of a saved
// server with the HTTP relay. It reports handled false, having written
// nothing, when the SDK relay is to serve the request: the saved server is
// not a streamable HTTP server, the request belongs to one of the SDK
// relay's sessions, or it opens no session (the SDK relay then answers as
// a session-based server does, e.g. to the sessionless server/discover);
// checked then says whether the server was just found saved.
func (f *Front) serveRelay(w http.ResponseWriter, r *http.Request, name string) (handled, checked bool) {
	if sid := r.Header.Get(headerSessionID); sid != "" {
		f.mu.Lock()
		closed, s, sdk := f.closed, f.httpSessions[sid], f.fronts[name] != nil
		f.mu.Unlock()
		switch {
		case closed:
			writeError(w, http.StatusServiceUnavailable, "caphub is shutting down: reconnect later")
		case s != nil && s.name == name:
			s.serve(w, r)
		case s != nil || !sdk:
			writeError(w, http.StatusNotFound, fmt.Sprintf("session not found: %s has no session %q (it ended, or never existed): initialize a new one", r.URL.Path, sid))
		default:
			return false, false // the SDK relay's session, or one it answers 404 for
		}
		return true, false
	}
	if r.Method != http.MethodPost {
		return false, false
	}
	body, ok := readBody(w, r)
	if !ok {
		return true, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body)) // for the SDK relay, if it serves the request
	msgs, batch, err := parseBody(body)
	if err != nil || batch || msgs[0].method != methodInitialize || !msgs[0].isCall() {
		return false, false
	}
	saved, status, err := f.savedServer(r, name)
	if err != nil {
		writeError(w, status, err.Error())
		return true, false
	}
	srv := saved.Server
	if err := srv.Validate(); err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("caphub could not connect to the MCP server %q: its saved connection is invalid: %v", name, err))
		return true, true
	}
	if srv.Transport != mcpconn.TransportHTTP {
		return false, true
	}
	return f.open(w, r, name, &srv, body, &msgs[0]), true
}

// readBody reads a request body whole, up to maxBodyBytes; it answers the
// request itself and returns false when it cannot.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	if r.ContentLength > maxBodyBytes {
		writeTooLarge(w)
		return nil, false
	}
	size := r.ContentLength
	if size < 0 {
		size = 512
	}
	// One byte more than announced, so that the read ends with io.EOF
	// (which lifts the read deadline, see liftDeadlines) without growing.
	body := make([]byte, 0, size+1)
	rd := http.MaxBytesReader(w, r.Body, maxBodyBytes)
	for {
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
		n, err := rd.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			return body, true
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeTooLarge(w)
			} else {
				writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
			}
			return nil, false
		}
	}
}

func writeTooLarge(w http.ResponseWriter) {
	writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d MiB, the most caphub relays to an MCP server in one request: send smaller messages", maxBodyBytes>>20))
}

// open relays an initialize request to a streamable HTTP server and, when
// the server accepts it, opens a session relayed at the HTTP level. It
// returns false, having written nothing, when the server answers the POST
// with 400, 404 or 405, as servers that speak only the SSE transport do:
// the SDK relay then connects, trying SSE too.
func (f *Front) open(w http.ResponseWriter, r *http.Request, name string, srv *mcpconn.Server, body []byte, init *wireMsg) bool {
	if err := srv.CheckURL(); err != nil {
		writeError(w, http.StatusForbidden, fmt.Sprintf("caphub does not connect to the MCP server %q: %v", name, err))
		return true
	}
	headers, err := srv.HTTPHeaders()
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("caphub could not connect to the MCP server %q: %v", name, err))
		return true
	}
	u, err := url.Parse(srv.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("caphub could not connect to the MCP server %q: its URL %q is not an absolute http(s) URL: save it again with a valid one", name, srv.URL))
		return true
	}
	ctx, cancel := context.WithCancel(f.ctx)
	s := &httpSession{
		f: f, name: name, id: rand.Text(), url: u, headers: headers,
		ctx: ctx, cancel: cancel, pending: map[string]*pendingCall{},
	}
	s.last.Store(time.Now().UnixNano())
	s.active.Add(1)
	defer s.requestEnded()
	pc := &pendingCall{key: idKey(init.id), ctx: r.Context(), start: time.Now()}
	s.track([]*pendingCall{pc})

	rctx, stop := s.requestContext(r)
	defer stop()
	resp, err := f.upstream.RoundTrip(s.request(rctx, http.MethodPost, r, body))
	if err != nil {
		s.unreachable(w, r, err, nil)
		cancel()
		return true
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		cancel()
		f.log.Debug("mcpfront: the server refused a streamable HTTP initialize; trying the SDK relay", "server", s.name, "status", resp.StatusCode)
		return false
	default:
		s.relayFailure(w, r, resp, nil)
		cancel()
		return true
	}
	s.upID = resp.Header.Get(headerSessionID)

	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		cancel()
		s.deleteUpstream()
		writeError(w, http.StatusServiceUnavailable, "caphub is shutting down: reconnect later")
		return true
	}
	s.last.Store(time.Now().UnixNano())
	f.httpSessions[s.id] = s
	victim := f.evictLocked(s.name, s)
	if victim != nil {
		f.wg.Add(1)
	}
	if idle := f.opts.IdleTimeout; idle > 0 {
		s.mu.Lock()
		s.timer = time.AfterFunc(idle, s.checkIdle)
		s.mu.Unlock()
	}
	f.mu.Unlock()
	if victim != nil {
		go func() {
			defer f.wg.Done()
			victim()
		}()
	}

	s.relayOK(w, r, resp, []*pendingCall{pc}, nil)
	if !pc.done.Load() || pc.err != nil {
		reason := "no answer"
		if pc.err != nil {
			reason = pc.err.Message
		}
		f.log.Info("mcpfront: initialize failed upstream; session closed", "server", s.name, "session", s.id, "reason", reason)
		s.close(true)
		return true
	}
	f.log.Info("mcpfront: session relayed", "server", s.name, "session", s.id, "upstream_session", s.upID, "relay", "http")
	return true
}

// serve relays a request of the session.
func (s *httpSession) serve(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		s.post(w, r)
	case http.MethodGet:
		s.get(w, r)
	case http.MethodDelete:
		s.close(true)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, r.Method+" is not a method of the streamable HTTP transport: use POST, GET or DELETE")
	}
}

// post relays a POST: its tools/call requests go through the policy first
// (a refused call is answered by the front and not forwarded), the rest of
// the body is forwarded as it is, and the upstream's answer is relayed as
// it comes, with the outcome of each forwarded call recorded when its
// response passes.
func (s *httpSession) post(w http.ResponseWriter, r *http.Request) {
	s.active.Add(1)
	s.last.Store(time.Now().UnixNano())
	defer s.requestEnded()
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	msgs, batch, err := parseBody(body)
	if err != nil {
		writeJSONRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "Bad Request: "+err.Error())
		return
	}
	var calls []*pendingCall
	var answers [][]byte // the front's own responses (refused calls)
	answered := make([]bool, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.method == methodCallTool && m.isCall() && s.f.hooks != nil:
			pc, answer := s.authorize(r.Context(), r.Header, m)
			if answer != nil {
				answers, answered[i] = append(answers, answer), true
				continue
			}
			calls = append(calls, pc)
		case m.method == notifyCancelled:
			s.cancelled(m.params)
		}
	}
	if len(answers) > 0 {
		if len(answers) == len(msgs) {
			if batch {
				writeJSON(w, http.StatusOK, joinBatch(answers))
			} else {
				writeJSON(w, http.StatusOK, answers[0])
			}
			return
		}
		// The rest of the batch is forwarded, as a batch.
		var forward []json.RawMessage
		for i := range msgs {
			if !answered[i] {
				forward = append(forward, msgs[i].raw)
			}
		}
		body = joinBatch(forward)
	}
	s.track(calls)

	ctx, stop := s.requestContext(r)
	defer stop()
	resp, err := s.f.upstream.RoundTrip(s.request(ctx, http.MethodPost, r, body))
	if err != nil {
		s.unreachable(w, r, err, calls)
		return
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		s.relayOK(w, r, resp, calls, answers)
	case resp.StatusCode == http.StatusAccepted && len(answers) > 0:
		// The rest of the batch were notifications and responses.
		writeJSON(w, http.StatusOK, joinBatch(answers))
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		s.relayAsIs(w, resp)
		s.settle(r, calls, nil, false)
	default:
		s.relayFailure(w, r, resp, calls)
	}
}

// get relays a GET: the session's standalone SSE stream, or a stream
// resumed with Last-Event-ID.
func (s *httpSession) get(w http.ResponseWriter, r *http.Request) {
	ctx, stop := s.requestContext(r)
	defer stop()
	resp, err := s.f.upstream.RoundTrip(s.request(ctx, http.MethodGet, r, nil))
	if err != nil {
		s.unreachable(w, r, err, nil)
		return
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		s.relayOK(w, r, resp, nil, nil)
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		s.relayAsIs(w, resp)
	default:
		s.relayFailure(w, r, resp, nil)
	}
}

// request builds the upstream request for a downstream one: the body
// given, the downstream headers the streamable transport uses, the
// upstream's session id, and the saved server's headers.
func (s *httpSession) request(ctx context.Context, method string, down *http.Request, body []byte) *http.Request {
	h := make(http.Header, len(forwardedHeaders)+len(s.headers)+2)
	req := &http.Request{
		Method: method, URL: s.url, Host: s.url.Host, Header: h,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: http.NoBody, GetBody: func() (io.ReadCloser, error) { return http.NoBody, nil },
	}
	if body != nil {
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	for _, k := range forwardedHeaders {
		if v := down.Header[k]; len(v) > 0 {
			h[k] = v
		}
	}
	if s.upID != "" {
		h[headerSessionID] = []string{s.upID}
	}
	h["User-Agent"] = []string{"caphub/" + s.f.opts.Version}
	if u := s.url.User; u != nil {
		pass, _ := u.Password()
		req.SetBasicAuth(u.Username(), pass)
	}
	for k, v := range s.headers {
		h[k] = v
	}
	return req.WithContext(ctx)
}

// requestContext is the context of an upstream request: it ends when the
// downstream request does, or the session.
func (s *httpSession) requestContext(r *http.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// relayOK relays a 200 response: an SSE stream event by event, or a JSON
// body, watching both for the responses to pending calls. answers are the
// front's own responses to add (the refused calls of a batch).
func (s *httpSession) relayOK(w http.ResponseWriter, r *http.Request, resp *http.Response, calls []*pendingCall, answers [][]byte) {
	s.copyHeaders(w, resp)
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mediaType == "text/event-stream" {
		err := s.relaySSE(w, resp.Body, answers)
		if err != nil && !errors.Is(err, errDownstream) && r.Context().Err() == nil && s.ctx.Err() == nil {
			s.f.log.Debug("mcpfront: upstream stream broke", "server", s.name, "session", s.id, "error", err)
		}
		s.settle(r, calls, err, true)
		return
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		s.settle(r, calls, err, false)
		if r.Context().Err() == nil {
			writeError(w, http.StatusBadGateway, fmt.Sprintf("MCP server %q broke off its response: %v", s.name, err))
		}
		return
	}
	s.observe(data)
	if len(answers) > 0 {
		data = mergeBatch(data, answers)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
	s.settle(r, calls, nil, false)
}

// errDownstream marks a failed write to the client.
var errDownstream = errors.New("the client went away")

// bufPool holds the buffers SSE streams are relayed through.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// headerDelay is how long the relay holds the headers of an SSE response
// for its first bytes, to send both at once: a call answered at once then
// costs the client one read, not two. An upstream that sends nothing for
// longer (a standalone stream, a long call) gets its headers relayed
// alone.
const headerDelay = time.Millisecond

// relaySSE relays an SSE stream as it comes, flushing after each read, and
// reads its events on the way: the response to a pending call is recorded
// before the bytes that end it are relayed, so the record exists when the
// client has the response. answers are sent first, as events of their own.
func (s *httpSession) relaySSE(w http.ResponseWriter, body io.Reader, answers [][]byte) error {
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	var mu sync.Mutex // w is written by this goroutine, and by the timer that flushes the headers
	flushed := false
	if len(answers) > 0 {
		for _, a := range answers {
			_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", a)
		}
		if err := rc.Flush(); err != nil {
			return errDownstream
		}
		flushed = true
	} else {
		timer := time.AfterFunc(headerDelay, func() {
			mu.Lock()
			defer mu.Unlock()
			if !flushed {
				flushed = true
				_ = rc.Flush()
			}
		})
		defer func() {
			timer.Stop()
			mu.Lock() // waits for a flush under way: w is not to be used once the handler returns
			flushed = true
			mu.Unlock()
		}()
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	p := sseParser{onEvent: s.observe}
	for {
		n, err := body.Read(buf)
		if n > 0 {
			p.feed(buf[:n])
			mu.Lock()
			flushed = true
			_, werr := w.Write(buf[:n])
			if werr == nil {
				werr = rc.Flush()
			}
			mu.Unlock()
			if werr != nil {
				return errDownstream
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// relayAsIs relays a response with its status and body as they are.
func (s *httpSession) relayAsIs(w http.ResponseWriter, resp *http.Response) {
	s.copyHeaders(w, resp)
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// copyHeaders sets the response headers the client may see.
func (s *httpSession) copyHeaders(w http.ResponseWriter, resp *http.Response) {
	h := w.Header()
	for _, k := range relayedHeaders {
		if v := resp.Header[k]; len(v) > 0 {
			h[k] = v
		}
	}
	h.Set(headerSessionID, s.id) // the client's id for the session, whatever the upstream's
}

// relayFailure answers a request the upstream refused or failed. An
// upstream that refused caphub's credentials, redirected, or failed
// (5xx) is reported as 502 with what happened; a session the upstream
// no longer knows is ended (404, so that the client initialises anew);
// other refusals (400, 405, …) are relayed as they are.
func (s *httpSession) relayFailure(w http.ResponseWriter, r *http.Request, resp *http.Response, calls []*pendingCall) {
	status := resp.StatusCode
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	detail := string(bytes.TrimSpace(snippet))
	code := invoke.CodeBindingFailed
	var msg string
	switch {
	case status == http.StatusNotFound && s.upID != "":
		msg = fmt.Sprintf("session not found: the MCP server %q ended its session: initialize a new one", s.name)
		writeError(w, http.StatusNotFound, msg)
		s.close(false)
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusProxyAuthRequired:
		msg = fmt.Sprintf("the MCP server %q refused caphub's credentials (HTTP %d %s): check the headers saved for it (caphub keeps them as ${VAR} references to its environment)", s.name, status, http.StatusText(status))
		writeError(w, http.StatusBadGateway, msg)
	case status >= 300 && status < 400:
		msg = fmt.Sprintf("the MCP server %q answered HTTP %d, a redirect to %q: caphub does not follow redirects; save the server's final URL", s.name, status, resp.Header.Get("Location"))
		writeError(w, http.StatusBadGateway, msg)
	case status >= 500 || status < 200:
		msg = fmt.Sprintf("the MCP server %q failed: HTTP %d %s: %s", s.name, status, http.StatusText(status), detail)
		writeError(w, http.StatusBadGateway, msg)
	default:
		code = invoke.CodeUpstreamError
		msg = fmt.Sprintf("the MCP server %q refused the request: HTTP %d %s: %s", s.name, status, http.StatusText(status), detail)
		s.copyHeaders(w, resp)
		w.WriteHeader(status)
		_, _ = w.Write(snippet)
		_, _ = io.Copy(w, resp.Body)
	}
	s.fail(calls, &invoke.Error{Code: code, Binding: capability.BindingMCP, Message: msg})
}

// unreachable answers a request whose upstream round trip failed.
func (s *httpSession) unreachable(w http.ResponseWriter, r *http.Request, err error, calls []*pendingCall) {
	switch {
	case r.Context().Err() != nil:
		s.fail(calls, cancelledCall())
	case s.ctx.Err() != nil:
		writeError(w, http.StatusNotFound, "session not found: the session ended: initialize a new one")
		s.fail(calls, sessionEnded(s.name))
	default:
		msg := fmt.Sprintf("caphub could not reach the MCP server %q at %s: %v: check that it is running", s.name, s.url.Redacted(), err)
		s.f.log.Warn("mcpfront: upstream unreachable", "server", s.name, "url", s.url.Redacted(), "error", err)
		writeError(w, http.StatusBadGateway, msg)
		s.fail(calls, &invoke.Error{Code: invoke.CodeBindingFailed, Binding: capability.BindingMCP, Message: msg})
	}
}

// settle ends the calls of a relayed request whose response did not pass
// on its stream: cancelled when the client went away, failed when the
// stream broke or the answer was complete without it. After an SSE stream
// that the upstream ended cleanly they stay pending: the client may resume
// the stream (GET with Last-Event-ID) and the response pass there.
func (s *httpSession) settle(r *http.Request, calls []*pendingCall, err error, resumable bool) {
	for _, pc := range calls {
		if pc.done.Load() {
			continue
		}
		switch {
		case r.Context().Err() != nil || errors.Is(err, errDownstream):
			s.finish(pc, cancelledCall())
		case s.ctx.Err() != nil:
			s.finish(pc, sessionEnded(s.name))
		case err != nil:
			s.finish(pc, &invoke.Error{Code: invoke.CodeBindingFailed, Binding: capability.BindingMCP,
				Message: fmt.Sprintf("the response of the MCP server %q broke off: %v", s.name, err)})
		case !resumable || pc.tool == "":
			s.finish(pc, &invoke.Error{Code: invoke.CodeBindingFailed, Binding: capability.BindingMCP,
				Message: fmt.Sprintf("the MCP server %q answered without a response to the request", s.name)})
		}
	}
}

func cancelledCall() *invoke.Error {
	return &invoke.Error{Code: invoke.CodeTimeout, Binding: capability.BindingMCP, Message: "the call was cancelled"}
}

func sessionEnded(name string) *invoke.Error {
	return &invoke.Error{Code: invoke.CodeTimeout, Binding: capability.BindingMCP,
		Message: fmt.Sprintf("the session ended before the MCP server %q answered the call", name)}
}

// authorize applies the policy to a tools/call. It returns the call to
// watch for, or the front's own response: the refusal (a tool error, as
// the SDK relay answers it), or an error for params without a tool name.
func (s *httpSession) authorize(ctx context.Context, hdr http.Header, m *wireMsg) (*pendingCall, []byte) {
	name, args, ok := callParams(m.params)
	if !ok {
		return nil, errorResponse(m.id, jsonrpc.CodeInvalidParams, "tools/call needs params with the name of the tool to call")
	}
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	_ = json.Unmarshal(m.params, &p) // parseBody checked it is JSON; a _meta that is not an object carries no approval
	caller := hdr.Get(invoke.CallerHeader)
	start, denied := s.f.authorize(withApproval(ctx, hdr, p.Meta), s.name, name, args, caller)
	if denied != "" {
		return nil, resultResponse(m.id, refusedResult(denied))
	}
	return &pendingCall{key: idKey(m.id), ctx: ctx, tool: name, caller: caller, start: start}, nil
}

// cancelled ends the pending call a client's notifications/cancelled
// names (it is forwarded all the same).
func (s *httpSession) cancelled(params json.RawMessage) {
	if s.npending.Load() == 0 {
		return
	}
	var id []byte
	eachMember(params, func(name, value []byte) bool {
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
	pc := s.pending[idKey(id)]
	s.mu.Unlock()
	if pc != nil && pc.tool != "" {
		s.finish(pc, cancelledCall())
	}
}

// track starts watching for the responses of calls. A call whose id is
// already pending is not watched by id (the upstream refuses it, and the
// refusal ends it).
func (s *httpSession) track(calls []*pendingCall) {
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
func (s *httpSession) observe(data []byte) {
	if s.npending.Load() == 0 {
		return
	}
	eachMessage(data, func(msg []byte) bool {
		id, result, rpcErr, ok := response(msg)
		if !ok {
			return true // a request or notification
		}
		s.mu.Lock()
		pc := s.pending[idKey(id)]
		s.mu.Unlock()
		if pc != nil {
			s.finish(pc, s.outcome(pc, result, rpcErr))
		}
		return true
	})
}

// outcome classifies a call's response as the SDK relay does: a JSON-RPC
// error or a tool error is UPSTREAM_ERROR, a result success.
func (s *httpSession) outcome(pc *pendingCall, result, rpcErr []byte) *invoke.Error {
	if rpcErr != nil && !isNull(rpcErr) {
		var e struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(rpcErr, &e)
		return &invoke.Error{Code: invoke.CodeUpstreamError, Binding: capability.BindingMCP,
			Message: fmt.Sprintf("MCP server %q refused the call: %s (JSON-RPC %d)", s.name, e.Message, e.Code)}
	}
	if pc.tool == "" || !isToolError(result) {
		return nil
	}
	msg := toolErrorText(result)
	if msg == "" {
		msg = "the tool reported an error"
	}
	return &invoke.Error{Code: invoke.CodeUpstreamError, Binding: capability.BindingMCP, Message: msg}
}

// finish ends a pending call (once) and records a tools/call.
func (s *httpSession) finish(pc *pendingCall, e *invoke.Error) {
	pc.once.Do(func() {
		s.mu.Lock()
		if s.pending[pc.key] == pc {
			delete(s.pending, pc.key)
			s.npending.Add(-1)
		}
		s.mu.Unlock()
		pc.err = e
		pc.done.Store(true)
		if pc.tool != "" {
			s.f.emitCall(pc.ctx, toolURI(s.name, pc.tool), pc.caller, pc.start, e, true)
		}
	})
}

// fail ends calls with one outcome.
func (s *httpSession) fail(calls []*pendingCall, e *invoke.Error) {
	for _, pc := range calls {
		s.finish(pc, e)
	}
}

// requestEnded marks the end of a POST for the idle timeout.
func (s *httpSession) requestEnded() {
	s.last.Store(time.Now().UnixNano())
	s.active.Add(-1)
}

// checkIdle closes the session once it has had no POST in flight for
// IdleTimeout, and waits again otherwise.
func (s *httpSession) checkIdle() {
	idle := s.f.opts.IdleTimeout
	since := time.Since(time.Unix(0, s.last.Load()))
	if s.active.Load() == 0 && since >= idle {
		s.f.log.Info("mcpfront: closing an idle session", "server", s.name, "session", s.id, "idle_timeout", idle)
		s.close(true)
		return
	}
	wait := idle - since
	if s.active.Load() > 0 || wait <= 0 {
		wait = idle
	}
	s.mu.Lock()
	if s.timer != nil && s.ctx.Err() == nil {
		s.timer.Reset(wait)
	}
	s.mu.Unlock()
}

// lastActive is when the session last saw a request (for eviction).
func (s *httpSession) lastActive() int64 { return s.last.Load() }

// close ends the session (once): its relayed requests end, its pending
// calls are recorded as ended with it, and, when deleteUpstream is set,
// the upstream session is ended with a DELETE (best effort).
func (s *httpSession) close(deleteUpstream bool) {
	s.closeOnce.Do(func() {
		f := s.f
		f.mu.Lock()
		if f.httpSessions[s.id] == s {
			delete(f.httpSessions, s.id)
		}
		f.mu.Unlock()
		s.mu.Lock()
		if s.timer != nil {
			s.timer.Stop()
		}
		calls := make([]*pendingCall, 0, len(s.pending))
		for _, pc := range s.pending {
			calls = append(calls, pc)
		}
		s.mu.Unlock()
		s.cancel()
		s.fail(calls, sessionEnded(s.name))
		if deleteUpstream {
			s.deleteUpstream()
		}
		f.log.Info("mcpfront: session ended", "server", s.name, "session", s.id, "relay", "http")
	})
}

// deleteUpstream ends the upstream session with a DELETE, best effort.
func (s *httpSession) deleteUpstream() {
	if s.upID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	req := s.request(ctx, http.MethodDelete, &http.Request{Header: http.Header{}}, nil)
	resp, err := s.f.upstream.RoundTrip(req)
	if err != nil {
		s.f.log.Debug("mcpfront: ending the upstream session failed", "server", s.name, "upstream_session", s.upID, "error", err)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
}

// Responses the front writes itself.

// writeJSON answers with a JSON body.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeJSONRPCError answers with a JSON-RPC error response.
func writeJSONRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	writeJSON(w, status, append(errorResponse(id, code, msg), '\n'))
}

// rpcResponse is a JSON-RPC response the front writes.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

func resultResponse(id json.RawMessage, result any) []byte {
	b, err := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: nullID(id), Result: result})
	if err != nil {
		return errorResponse(id, jsonrpc.CodeInternalError, "caphub could not encode its response: "+err.Error())
	}
	return b
}

func errorResponse(id json.RawMessage, code int64, msg string) []byte {
	b, _ := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: nullID(id), Error: &rpcError{Code: code, Message: msg}})
	return b
}

func nullID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

// refusedResult is the tool error a refused call is answered with.
func refusedResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// joinBatch encodes messages as a batch.
func joinBatch[T ~[]byte](msgs []T) []byte {
	n := 2
	for _, m := range msgs {
		n += len(m) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, ']')
}

// mergeBatch adds the front's responses to the upstream's JSON answer (a
// batch, or a lone message).
func mergeBatch(data []byte, answers [][]byte) []byte {
	data = bytes.TrimSpace(data)
	msgs := answers
	switch {
	case len(data) == 0:
	case data[0] == '[':
		var upstream []json.RawMessage
		if json.Unmarshal(data, &upstream) == nil {
			msgs = make([][]byte, 0, len(upstream)+len(answers))
			for _, m := range upstream {
				msgs = append(msgs, m)
			}
			msgs = append(msgs, answers...)
		}
	default:
		msgs = append([][]byte{data}, answers...)
	}
	return joinBatch(msgs)
}
