package httprelay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Relaying the upstream's answers, and the responses the front writes
// itself.

// relayOK relays a 200 response: an SSE stream event by event, or a JSON
// body, watching both for the responses to pending calls. answers are the
// front's own responses to add (the refused calls of a batch).
func (s *Session) relayOK(w http.ResponseWriter, r *http.Request, resp *http.Response, calls []*pendingCall, answers [][]byte) {
	s.copyHeaders(w, resp)
	if mediaType, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); strings.EqualFold(strings.TrimSpace(mediaType), "text/event-stream") {
		err := s.relaySSE(w, resp.Body, calls, answers)
		if err != nil && !errors.Is(err, errDownstream) && r.Context().Err() == nil && s.ctx.Err() == nil {
			s.rl.env.Log.Debug("mcpfront: upstream stream broke", "server", s.name, "session", s.id, "error", err)
		}
		s.settle(r, calls, err, true)
		return
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		s.settle(r, calls, err, false)
		if r.Context().Err() == nil {
			relay.WriteError(w, http.StatusBadGateway, fmt.Sprintf("MCP server %q broke off its response: %v", s.name, err))
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

// headerDelay is how long the relay holds the bytes of an SSE response
// that it need not send at once, to send them with what follows: its
// headers, for its first bytes (a call answered at once then costs the
// client one read, not two), and the event that answers the last of the
// POST's calls, for the end of the stream (the upstream ends it then, and
// net/http sends both in one write). An upstream that sends nothing for
// longer (a standalone stream, a long call, a stream kept open) gets what
// was held relayed alone. Relay.HeaderDelay sets it for a relay.
const headerDelay = time.Millisecond

// relaySSE relays an SSE stream as it comes, and reads its events on the
// way: the response to a pending call is recorded before the bytes that
// end it are relayed, so the record exists when the client has the
// response. What it reads is flushed at once, unless it answers the last
// of calls (see headerDelay). answers are sent first, as events of their
// own.
func (s *Session) relaySSE(w http.ResponseWriter, body io.Reader, calls []*pendingCall, answers [][]byte) error {
	f := &heldFlush{w: w, rc: http.NewResponseController(w), delay: s.rl.headerDelay()}
	defer f.end()
	w.WriteHeader(http.StatusOK)
	if len(answers) > 0 {
		for _, a := range answers {
			_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", a)
		}
		if err := f.write(nil, false); err != nil {
			return errDownstream
		}
	} else {
		f.hold()
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	p := sseParser{onEvent: s.observe}
	answered := len(calls) == 0 // nothing to hold for: flush every read
	for {
		n, err := body.Read(buf)
		if n > 0 {
			p.feed(buf[:n])
			// Held once, when these bytes answer the last call: what comes
			// after is not held again.
			last := !answered && allDone(calls)
			answered = answered || last
			if f.write(buf[:n], last) != nil {
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

// allDone reports whether every call has ended.
func allDone(calls []*pendingCall) bool {
	for _, pc := range calls {
		if !pc.done.Load() {
			return false
		}
	}
	return true
}

// heldFlush writes a response, flushing at once or holding what was
// written for at most delay (see headerDelay). Its timer flushes from
// another goroutine: w is used under mu.
type heldFlush struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	delay time.Duration

	mu    sync.Mutex
	held  bool // bytes (or headers) written and not flushed
	ended bool // the handler is returning: w is not to be used
	timer *time.Timer
}

// write writes b and flushes, or holds it (hold).
func (f *heldFlush) write(b []byte, hold bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(b) > 0 {
		if _, err := f.w.Write(b); err != nil {
			return err
		}
	}
	if hold {
		f.holdLocked()
		return nil
	}
	f.held = false
	return f.rc.Flush()
}

// hold holds what was written (the headers, at first).
func (f *heldFlush) hold() {
	f.mu.Lock()
	f.holdLocked()
	f.mu.Unlock()
}

func (f *heldFlush) holdLocked() {
	f.held = true
	if f.timer == nil {
		f.timer = time.AfterFunc(f.delay, f.expire)
	} else {
		f.timer.Reset(f.delay)
	}
}

// expire flushes what is still held once its delay passed.
func (f *heldFlush) expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held && !f.ended {
		f.held = false
		_ = f.rc.Flush()
	}
}

// end stops the timer, waiting for a flush under way: what is held is
// left to net/http, which sends it with the end of the response.
func (f *heldFlush) end() {
	f.mu.Lock()
	f.ended = true
	if f.timer != nil {
		f.timer.Stop()
	}
	f.mu.Unlock()
}

// relayAsIs relays a response with its status and body as they are.
func (s *Session) relayAsIs(w http.ResponseWriter, resp *http.Response) {
	s.copyHeaders(w, resp)
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// relayedHeaders are the response headers relayed downstream, besides the
// session id, which is mapped.
var relayedHeaders = []string{"Content-Type", "Cache-Control", "Allow", "Retry-After"}

// copyHeaders sets the response headers the client may see.
func (s *Session) copyHeaders(w http.ResponseWriter, resp *http.Response) {
	h := w.Header()
	for _, k := range relayedHeaders {
		if v := resp.Header[k]; len(v) > 0 {
			h[k] = v
		}
	}
	h[headerSessionID] = s.idHeader // the client's id for the session, whatever the upstream's
}

// relayFailure answers a request the upstream refused or failed. An
// upstream that refused caphub's credentials, redirected, or failed
// (5xx) is reported as 502 with what happened; a session the upstream
// no longer knows is ended (404, so that the client initialises anew);
// other refusals (400, 405, …) are relayed as they are.
func (s *Session) relayFailure(w http.ResponseWriter, r *http.Request, resp *http.Response, calls []*pendingCall) {
	status := resp.StatusCode
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	var msg string
	switch {
	case status == http.StatusNotFound && s.upID != "":
		msg = fmt.Sprintf("session not found: the MCP server %q ended its session: initialize a new one", s.name)
		relay.WriteError(w, http.StatusNotFound, msg)
		s.close(false)
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusProxyAuthRequired:
		msg = fmt.Sprintf("the MCP server %q refused caphub's credentials (HTTP %d %s): check the headers saved for it (caphub keeps them as ${VAR} references to its environment)", s.name, status, http.StatusText(status))
		relay.WriteError(w, http.StatusBadGateway, msg)
	case status >= 300 && status < 400:
		msg = fmt.Sprintf("the MCP server %q answered HTTP %d, a redirect to %q: caphub does not follow redirects; save the server's final URL", s.name, status, resp.Header.Get("Location"))
		relay.WriteError(w, http.StatusBadGateway, msg)
	case status >= 500 || status < 200:
		msg = fmt.Sprintf("the MCP server %q failed: HTTP %d %s: %s", s.name, status, http.StatusText(status), bytes.TrimSpace(snippet))
		relay.WriteError(w, http.StatusBadGateway, msg)
	default:
		s.relayRefusal(w, resp, snippet, calls)
		return
	}
	s.fail(calls, relay.Outcome{Failure: errors.New(msg)})
}

// relayRefusal relays an upstream's refusal of a request (a 4xx other
// than those relayFailure reports) as it is; snippet is what was read of
// its body.
func (s *Session) relayRefusal(w http.ResponseWriter, resp *http.Response, snippet []byte, calls []*pendingCall) {
	status := resp.StatusCode
	msg := fmt.Sprintf("the MCP server %q refused the request: HTTP %d %s: %s", s.name, status, http.StatusText(status), bytes.TrimSpace(snippet))
	s.copyHeaders(w, resp)
	w.WriteHeader(status)
	_, _ = w.Write(snippet)
	_, _ = io.Copy(w, resp.Body)
	s.fail(calls, relay.Outcome{Refusal: msg})
}

// unreachable answers a request whose upstream round trip failed.
func (s *Session) unreachable(w http.ResponseWriter, r *http.Request, err error, calls []*pendingCall) {
	switch {
	case r.Context().Err() != nil:
		s.fail(calls, relay.Outcome{Cancelled: true})
	case s.ctx.Err() != nil:
		relay.WriteError(w, http.StatusNotFound, "session not found: the session ended: initialize a new one")
		s.fail(calls, relay.Outcome{SessionEnded: true})
	default:
		msg := fmt.Sprintf("caphub could not reach the MCP server %q at %s: %v: check that it is running", s.name, s.url.Redacted(), err)
		s.rl.env.Log.Warn("mcpfront: upstream unreachable", "server", s.name, "url", s.url.Redacted(), "error", err)
		relay.WriteError(w, http.StatusBadGateway, msg)
		s.fail(calls, relay.Outcome{Failure: errors.New(msg)})
	}
}

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
