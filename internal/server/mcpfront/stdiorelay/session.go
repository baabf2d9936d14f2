package stdiorelay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/caphub/caphub/internal/server/mcpfront/internal/wire"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Bounds of a session's standalone stream while no client listens: the
// messages kept for the next GET.
const (
	maxBacklog      = 256
	maxBacklogBytes = 4 << 20
)

// headerDelay is how long a POST's SSE headers wait for its first message,
// to go out with it: a call answered within it (most are, even under load)
// then costs one write to the connection, not two. A call that sends
// nothing for longer gets its headers alone.
const headerDelay = 100 * time.Millisecond

// Session is a client session of the stdio relay.
type Session struct {
	rl   *Relay
	name string         // the saved server's
	srv  mcpconn.Server // its saved connection, to restart a shared process
	id   string         // the session id the client sees
	caps capabilities   // what the client can answer
	up   atomic.Pointer[upstream]
	done chan struct{} // closed when the session ends

	idle relay.Idle // POSTs being served keep the session from idling

	restartMu sync.Mutex // one restart of a dead shared process at a time

	mu       sync.Mutex
	get      *stream           // the standalone stream a client listens on; nil when none
	getEnd   chan struct{}     // ends the handler of get when another GET replaces it
	backlog  [][]byte          // standalone messages waiting for a GET
	backlogN int               // their bytes
	srvReqs  map[int64]*srvReq // the server's requests sent to the client, by the client's id
	nextSrv  int64
	subs     map[string]bool // the resources it subscribed to

	closeOnce sync.Once
}

// The session as the front's table sees it.

// Server is the name of the saved server the session relays to.
func (s *Session) Server() string { return s.name }

// ID is the session id the client knows.
func (s *Session) ID() string { return s.id }

// Close ends the session.
func (s *Session) Close() { s.close() }

func (s *Session) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// capabilities are the client capabilities the relay routes by.
type capabilities uint8

const (
	capSampling capabilities = 1 << iota
	capElicitation
	capRoots
)

var capNames = map[string]capabilities{"sampling": capSampling, "elicitation": capElicitation, "roots": capRoots}

func (c capabilities) has(name string) bool { return c&capNames[name] != 0 }

// readCapabilities reads the client capabilities of initialize params.
func readCapabilities(params []byte) capabilities {
	var c capabilities
	wire.EachMember(member(params, "capabilities"), func(name, value []byte) bool {
		if !wire.IsNull(value) {
			c |= capNames[string(name)]
		}
		return true
	})
	return c
}

// register adds the session to the front's table, with its idle timer,
// and answers the client's initialize with answer; at a limit it answers
// 503 and returns false.
func (s *Session) register(w http.ResponseWriter, answer []byte, acc accept) bool {
	if err := s.rl.env.Sessions.Add(s.id, s); err != nil {
		relay.WriteError(w, http.StatusServiceUnavailable, err.Error())
		return false
	}
	s.idle.Start(s.rl.env.IdleTimeout, s.expire)
	mode := mcpconn.SessionsPerClient
	if u := s.up.Load(); u.shared {
		mode = mcpconn.SessionsShared
	}
	s.rl.env.Log.Info("mcpfront: session relayed", "server", s.name, "session", s.id, "relay", "stdio", "sessions", mode, "pid", s.up.Load().pid())
	writeOne(w, answer, acc, s.id)
	return true
}

// Serve serves a request of the session.
func (s *Session) Serve(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		s.post(w, r)
	case http.MethodGet:
		s.listen(w, r)
	case http.MethodDelete:
		s.close()
		w.WriteHeader(http.StatusNoContent)
	default:
		relay.WriteBadMethod(w, r)
	}
}

// post serves a POST: its requests go upstream (tools/call through the
// policy first: a refused call is answered by the relay), and their
// messages and responses come back on the POST's own stream; its
// notifications and responses go upstream, answered with 202.
func (s *Session) post(w http.ResponseWriter, r *http.Request) {
	s.idle.Begin()
	defer s.idle.End()
	acc, ok := checkPost(w, r)
	if !ok {
		return
	}
	body, ok := wire.ReadBody(w, r)
	if !ok {
		return
	}
	msgs, batch, err := wire.ParseBody(body)
	if err != nil {
		relay.WriteError(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return
	}
	u, err := s.upstream(r.Context())
	if err != nil {
		if s.ended() {
			relay.WriteError(w, http.StatusNotFound, "session not found: the session ended: initialize a new one")
		} else {
			relay.WriteError(w, http.StatusBadGateway, err.Error())
		}
		return
	}
	var st *stream
	var calls []*call
	var answers [][]byte
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.IsCall():
			if st == nil {
				st = newStream()
			}
			c, answer := s.request(r, u, m, st)
			if answer != nil {
				answers = append(answers, answer)
			} else {
				calls = append(calls, c)
			}
		case m.Method != "":
			s.notify(u, m)
		default:
			s.answer(m)
		}
	}
	switch {
	case len(calls) == 0 && len(answers) == 0:
		w.WriteHeader(http.StatusAccepted)
	case acc.sse:
		s.streamSSE(w, r, st, calls, answers)
	default:
		s.answerJSON(w, r, st, calls, answers, batch)
	}
}

// request sends a client's request upstream, and returns the call to wait
// for, or the relay's own answer.
func (s *Session) request(r *http.Request, u *upstream, m *wire.Msg, st *stream) (*call, []byte) {
	c := &call{s: s, clientID: m.ID, method: m.Method, st: st, causing: causes[m.Method], ctx: r.Context()}
	switch m.Method {
	case relay.MethodInitialize:
		return nil, errorMessage(m.ID, jsonrpc.CodeInvalidRequest, "the session is already initialised: initialize opens a session (POST it without Mcp-Session-Id)")
	case relay.MethodCallTool:
		if s.rl.env.Hooks != nil {
			name, args, ok := wire.CallParams(m.Params)
			if !ok {
				return nil, errorMessage(m.ID, jsonrpc.CodeInvalidParams, "tools/call needs params with the name of the tool to call")
			}
			var meta map[string]any
			if raw := member(m.Params, "_meta"); len(raw) > 0 && raw[0] == '{' {
				_ = json.Unmarshal(raw, &meta) // ParseBody checked it is JSON
			}
			rec, denied := s.rl.env.Authorize(relay.WithApproval(r.Context(), r.Header, meta), s.name, name, args)
			if denied != "" {
				result, _ := json.Marshal(relay.RefusedResult(denied))
				return nil, resultMessage(m.ID, result)
			}
			c.rec = &rec
		}
	case "resources/subscribe", "resources/unsubscribe":
		s.subscribe(string(wire.Unquote(member(m.Params, "uri"))), m.Method == "resources/subscribe")
	}
	c.token = progressToken(m.Params)
	if err := u.forward(c, m.Raw, m.ID, c.token); err != nil {
		err = u.failure(err)
		c.finish(relay.Outcome{Failure: err})
		return nil, errorMessage(m.ID, jsonrpc.CodeInternalError, err.Error())
	}
	return c, nil
}

// notify sends a client's notification upstream: notifications/initialized
// once per process, a cancellation under the request's upstream id.
func (s *Session) notify(u *upstream, m *wire.Msg) {
	switch m.Method {
	case "notifications/initialized":
		if !u.initialized.CompareAndSwap(false, true) {
			return
		}
	case relay.NotifyCancelled:
		s.cancelled(u, m)
		return
	}
	_ = u.send(line(nil, m.Raw))
}

// cancelled relays a client's notifications/cancelled for one of its
// requests in flight; the request ends without a response.
func (s *Session) cancelled(u *upstream, m *wire.Msg) {
	rid := member(m.Params, "requestId")
	if rid == nil {
		return
	}
	key := wire.IDKey(rid)
	u.mu.Lock()
	var c *call
	for n, x := range u.pending {
		if x.s == s && wire.IDKey(x.clientID) == key {
			c = x
			delete(u.pending, n)
			break
		}
	}
	u.mu.Unlock()
	if c == nil {
		return // answered already
	}
	_ = u.send(line(nil, rewrite(nil, m.Raw, span(m.Raw, rid, strconv.AppendInt(nil, c.up, 10)))))
	c.finish(relay.Outcome{Cancelled: true})
	c.st.push(item{call: c})
}

// answer relays a client's response to a request of the server, under the
// server's id.
func (s *Session) answer(m *wire.Msg) {
	down := upID(m.ID)
	s.mu.Lock()
	sr := s.srvReqs[down]
	delete(s.srvReqs, down)
	s.mu.Unlock()
	if sr == nil {
		s.rl.env.Log.Debug("mcpfront: client response to no request of the server", "server", s.name, "session", s.id, "id", string(m.ID))
		return
	}
	sr.u.mu.Lock()
	delete(sr.u.srvReqs, wire.IDKey(sr.upID))
	sr.u.mu.Unlock()
	_ = sr.u.send(line(nil, rewrite(nil, m.Raw, span(m.Raw, m.ID, sr.upID))))
}

// relayRequest sends a request of the server to the client, under an id of
// the session's, on st (nil: the standalone stream).
func (s *Session) relayRequest(u *upstream, msg []byte, h head, st *stream) {
	sr := &srvReq{s: s, u: u, upID: bytes.Clone(h.id), st: st}
	s.mu.Lock()
	s.nextSrv++
	sr.down = s.nextSrv
	s.srvReqs[sr.down] = sr
	s.mu.Unlock()
	u.mu.Lock()
	u.srvReqs[wire.IDKey(h.id)] = sr
	u.mu.Unlock()
	data := rewrite(nil, msg, span(msg, h.id, strconv.AppendInt(nil, sr.down, 10)))
	if st == nil || !st.push(item{data: data}) {
		s.toGet(data)
	}
}

// dropSrvReq forgets a request of the server (it cancelled it).
func (s *Session) dropSrvReq(down int64) {
	s.mu.Lock()
	delete(s.srvReqs, down)
	s.mu.Unlock()
}

// subscribe records a resource subscription, for routing its updates.
func (s *Session) subscribe(uri string, on bool) {
	if uri == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !on {
		delete(s.subs, uri)
		return
	}
	if s.subs == nil {
		s.subs = map[string]bool{}
	}
	if len(s.subs) < 1024 {
		s.subs[uri] = true
	}
}

func (s *Session) subscribed(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subs[uri]
}

// toGet sends a message to the standalone stream, or keeps it (bounded)
// for the next GET.
func (s *Session) toGet(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.get != nil && s.get.push(item{data: data}) {
		return
	}
	if s.ended() {
		return
	}
	for len(s.backlog) > 0 && (len(s.backlog) >= maxBacklog || s.backlogN+len(data) > maxBacklogBytes) {
		s.backlogN -= len(s.backlog[0])
		s.backlog = s.backlog[1:]
	}
	s.backlog = append(s.backlog, data)
	s.backlogN += len(data)
}

// bufPool holds the buffers events are written through.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// appendEvent appends a message as an SSE event.
func appendEvent(buf, data []byte) []byte {
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, data...)
	return append(buf, "\n\n"...)
}

var (
	textEventStream = []string{"text/event-stream"}
	applicationJSON = []string{"application/json"}
	noCache         = []string{"no-cache"}
)

// sseAnswer is the SSE stream answering one POST: events are gathered in
// buf and written when nothing more is ready.
type sseAnswer struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	buf   []byte
	wrote bool // something was written (the headers went out)
}

// add appends what items carry and ends their calls; it returns how many
// calls ended.
func (a *sseAnswer) add(s *Session, items []item) (ended int) {
	for _, it := range items {
		if it.call != nil {
			ended++
			s.finished(it)
		}
		if it.data != nil {
			a.buf = appendEvent(a.buf, it.data)
		}
	}
	return ended
}

// flush writes what is gathered and reports whether the client still
// reads.
func (a *sseAnswer) flush() bool {
	_, err := a.w.Write(a.buf)
	a.buf, a.wrote = a.buf[:0], true
	return err == nil && a.rc.Flush() == nil
}

// streamSSE answers a POST with an SSE stream: the relay's own answers,
// then what the upstream sends for its calls as it comes, until each call
// has its response.
func (s *Session) streamSSE(w http.ResponseWriter, r *http.Request, st *stream, calls []*call, answers [][]byte) {
	h := w.Header()
	h["Content-Type"] = textEventStream
	h["Cache-Control"] = noCache
	h[headerSessionID] = []string{s.id}
	bp := bufPool.Get().(*[]byte)
	a := &sseAnswer{w: w, rc: http.NewResponseController(w), buf: (*bp)[:0]}
	defer func() {
		if cap(a.buf) <= 64<<10 {
			*bp = a.buf[:0]
			bufPool.Put(bp)
		}
	}()
	for _, ans := range answers {
		a.buf = appendEvent(a.buf, ans)
	}
	if !s.relayCalls(r, st, calls, a) {
		return
	}
	st.close()
	// The last write is left to net/http, which sends it with the end of
	// the response (and, when nothing was sent yet, with the headers and a
	// Content-Length): one write to the connection per call.
	if !a.wrote {
		h["Content-Length"] = []string{strconv.Itoa(len(a.buf))}
	}
	_, _ = w.Write(a.buf)
}

// relayCalls gathers into a what the upstream sends for calls until each
// has its response, writing whenever nothing more is ready (and the
// headers after headerDelay, so that a slow call's client sees the stream
// open). It returns false when the answer ended early: the client went
// away (the calls are abandoned) or the session ended (what was left is
// written).
func (s *Session) relayCalls(r *http.Request, st *stream, calls []*call, a *sseAnswer) bool {
	remaining := len(calls)
	var items []item
	var timer *time.Timer
	var timerC <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for remaining > 0 {
		if items = st.take(items); len(items) > 0 {
			remaining -= a.add(s, items)
			continue
		}
		if len(a.buf) > 0 && !a.flush() {
			s.abandon(st, calls, "the client went away")
			return false
		}
		if !a.wrote && timer == nil {
			timer = time.NewTimer(headerDelay)
			timerC = timer.C
		}
		select {
		case <-st.wake:
		case <-timerC:
			timerC = nil
			if !a.wrote && !a.flush() {
				s.abandon(st, calls, "the client went away")
				return false
			}
		case <-r.Context().Done():
			s.abandon(st, calls, "the client went away")
			return false
		case <-s.done:
			a.add(s, st.close())
			if len(a.buf) > 0 || !a.wrote {
				a.flush()
			}
			return false
		}
	}
	return true
}

// answerJSON answers a POST of a client that accepts only JSON: the
// responses, once all have come (a batch's as a batch). What else the
// upstream sends for its calls goes to the standalone stream.
func (s *Session) answerJSON(w http.ResponseWriter, r *http.Request, st *stream, calls []*call, answers [][]byte, batch bool) {
	responses := answers
	remaining := len(calls)
	var items []item
	take := func(items []item) {
		for _, it := range items {
			switch {
			case it.call != nil:
				remaining--
				s.finished(it)
				if it.data != nil {
					responses = append(responses, it.data)
				}
			case it.data != nil:
				s.toGet(it.data)
			}
		}
	}
wait:
	for remaining > 0 {
		items = st.take(items)
		if len(items) > 0 {
			take(items)
			continue
		}
		select {
		case <-st.wake:
		case <-r.Context().Done():
			s.abandon(st, calls, "the client went away")
			return
		case <-s.done:
			take(st.close())
			break wait
		}
	}
	st.close()
	h := w.Header()
	h[headerSessionID] = []string{s.id}
	switch {
	case len(responses) == 0:
		w.WriteHeader(http.StatusAccepted)
	case batch:
		writeJSON(w, joinBatch(responses))
	default:
		writeJSON(w, responses[0])
	}
}

// writeJSON answers 200 with a JSON body.
func writeJSON(w http.ResponseWriter, body []byte) {
	h := w.Header()
	h["Content-Type"] = applicationJSON
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// writeOne answers a POST with one message, as SSE or JSON as the client
// accepts, with the session id sid when not "".
func writeOne(w http.ResponseWriter, msg []byte, acc accept, sid string) {
	if sid != "" {
		w.Header()[headerSessionID] = []string{sid}
	}
	if !acc.sse {
		writeJSON(w, msg)
		return
	}
	h := w.Header()
	h["Content-Type"] = textEventStream
	h["Cache-Control"] = noCache
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(appendEvent(nil, msg))
}

// joinBatch encodes messages as a batch.
func joinBatch(msgs [][]byte) []byte {
	b := []byte{'['}
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, ']')
}

// finished ends a call whose last item came: its outcome is recorded.
func (s *Session) finished(it item) {
	c := it.call
	if c.rec == nil {
		c.done.Store(true)
		return
	}
	var o relay.Outcome
	switch {
	case it.fail != nil:
		o.Failure = it.fail
	case it.data == nil:
		o.Cancelled = true
	default:
		_, result, rpcErr, _ := wire.Response(it.data)
		if !wire.IsNull(rpcErr) {
			var e jsonrpc.Error
			_ = json.Unmarshal(rpcErr, &e)
			o.RPCError = &e
		} else if wire.IsToolError(result) {
			o.ToolError, o.ToolText = true, wire.ToolErrorText(result)
		}
	}
	c.finish(o)
}

// finish ends a call once, recording a tools/call.
func (c *call) finish(o relay.Outcome) {
	if !c.done.CompareAndSwap(false, true) || c.rec == nil {
		return
	}
	env := c.s.rl.env
	env.Emit(c.ctx, *c.rec, relay.Classify(c.s.name, o))
}

// abandon ends the calls of a POST whose client went away: the server is
// told they are cancelled.
func (s *Session) abandon(st *stream, calls []*call, reason string) {
	st.close()
	u := s.up.Load()
	for _, c := range calls {
		if c.done.Load() {
			continue
		}
		u.cancel(c, reason)
		c.finish(relay.Outcome{Cancelled: true})
	}
}

// listen serves a GET: the session's standalone stream, which a later GET
// replaces.
func (s *Session) listen(w http.ResponseWriter, r *http.Request) {
	if acc := readAccept(r.Header); !acc.sse {
		relay.WriteError(w, http.StatusNotAcceptable, "the standalone stream is text/event-stream: accept it (Accept: text/event-stream)")
		return
	}
	if !checkVersion(w, r) {
		return
	}
	st, end, backlog, ok := s.attachGET()
	if !ok {
		relay.WriteError(w, http.StatusNotFound, "session not found: the session ended: initialize a new one")
		return
	}
	defer s.detachGET(st)
	h := w.Header()
	h["Content-Type"] = textEventStream
	h["Cache-Control"] = noCache
	h[headerSessionID] = []string{s.id}
	w.WriteHeader(http.StatusOK)
	var buf []byte
	for _, d := range backlog {
		buf = appendEvent(buf, d)
	}
	s.pumpGET(w, r, st, end, buf)
}

// attachGET makes st the session's standalone stream, ending the one
// before (end is closed when a later GET replaces st), and returns what
// waited for a stream; ok is false when the session ended.
func (s *Session) attachGET() (st *stream, end chan struct{}, backlog [][]byte, ok bool) {
	st, end = newStream(), make(chan struct{})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended() {
		return nil, nil, nil, false
	}
	if s.getEnd != nil {
		close(s.getEnd)
	}
	s.get, s.getEnd = st, end
	backlog = s.backlog
	s.backlog, s.backlogN = nil, 0
	return st, end, backlog, true
}

// detachGET ends st as the standalone stream, keeping what it did not
// send for the next GET.
func (s *Session) detachGET(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.get == st {
		s.get, s.getEnd = nil, nil
	}
	var kept [][]byte
	for _, it := range st.close() {
		kept = append(kept, it.data)
	}
	s.backlog = append(kept, s.backlog...)
}

// pumpGET writes buf, then what comes on st, until the client goes away,
// the session ends or a later GET replaces st (end).
func (s *Session) pumpGET(w http.ResponseWriter, r *http.Request, st *stream, end chan struct{}, buf []byte) {
	rc := http.NewResponseController(w)
	var items []item
	for {
		if len(buf) > 0 || items == nil {
			if _, err := w.Write(buf); err != nil || rc.Flush() != nil {
				return
			}
			buf = buf[:0]
		}
		if items = st.take(items); len(items) > 0 {
			for _, it := range items {
				buf = appendEvent(buf, it.data)
			}
			continue
		}
		select {
		case <-st.wake:
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-end:
			return
		}
	}
}

// upstream returns the session's process, starting a shared one anew when
// it died.
func (s *Session) upstream(ctx context.Context) (*upstream, error) {
	u := s.up.Load()
	if s.ended() {
		return nil, errSessionEnded
	}
	if !u.isDead() {
		return u, nil
	}
	if !u.shared {
		return nil, errSessionEnded
	}
	s.restartMu.Lock()
	defer s.restartMu.Unlock()
	if u = s.up.Load(); !u.isDead() {
		return u, nil
	}
	nu, err := s.rl.restart(ctx, s, u)
	if err != nil {
		return nil, fmt.Errorf("caphub could not start the shared MCP server %q again: %w", s.name, err)
	}
	nu.attach(s)
	s.up.Store(nu)
	return nu, nil
}

var errSessionEnded = errors.New("the session ended")

// expire closes the session, idle for IdleTimeout.
func (s *Session) expire() {
	s.rl.env.Log.Info("mcpfront: closing an idle session", "server", s.name, "session", s.id, "idle_timeout", s.rl.env.IdleTimeout)
	s.close()
}

// close ends the session (once) without waiting for anything: its requests
// in flight end (a shared process is told they are cancelled, and that the
// client will not answer its requests), and a per-client process is
// stopped.
func (s *Session) close() {
	s.closeOnce.Do(func() {
		s.rl.env.Sessions.Remove(s.id, s)
		s.idle.Stop()
		s.mu.Lock()
		close(s.done)
		s.backlog, s.backlogN = nil, 0
		clear(s.srvReqs)
		s.mu.Unlock()
		u := s.up.Load()
		if u != nil {
			calls, reqs := u.detach(s)
			live := u.shared && !u.isDead()
			for _, c := range calls {
				if live {
					_ = u.send(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"the client session ended"}}`+"\n", c.up))
				}
				c.finish(relay.Outcome{SessionEnded: true})
			}
			if live {
				for _, sr := range reqs {
					_ = u.send(newline(errorMessage(sr.upID, jsonrpc.CodeInternalError, "the client session ended before it answered")))
				}
			}
			if !u.shared {
				u.kill(false)
			}
		}
		s.rl.env.Log.Info("mcpfront: session ended", "server", s.name, "session", s.id, "relay", "stdio")
	})
}

// accept is what a client accepts in answer to a POST.
type accept struct{ json, sse bool }

// readAccept reads the Accept header (absent: anything).
func readAccept(h http.Header) accept {
	vals := h["Accept"]
	if len(vals) == 0 {
		return accept{true, true}
	}
	var a accept
	for _, v := range vals {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "*/*":
				a.json, a.sse = true, true
			case "application/json", "application/*":
				a.json = true
			case "text/event-stream", "text/*":
				a.sse = true
			}
		}
	}
	return a
}

// checkPost checks a POST's headers, answering 415, 406 or 400 when they
// do not do.
func checkPost(w http.ResponseWriter, r *http.Request) (accept, bool) {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	if !strings.EqualFold(strings.TrimSpace(ct), "application/json") {
		relay.WriteError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: MCP messages are posted as application/json", r.Header.Get("Content-Type")))
		return accept{}, false
	}
	acc := readAccept(r.Header)
	if !acc.json && !acc.sse {
		relay.WriteError(w, http.StatusNotAcceptable, "the answer to a POST is application/json or text/event-stream: accept them (Accept: application/json, text/event-stream)")
		return acc, false
	}
	return acc, checkVersion(w, r)
}

// checkVersion refuses (400) a request whose Mcp-Protocol-Version the
// relay does not know.
func checkVersion(w http.ResponseWriter, r *http.Request) bool {
	v := r.Header[headerProtocolVersion]
	if len(v) == 0 || slices.Contains(versions, v[0]) {
		return true
	}
	relay.WriteError(w, http.StatusBadRequest, fmt.Sprintf("Bad Request: unsupported %s %q (caphub speaks %s)", headerProtocolVersion, v[0], strings.Join(versions, ", ")))
	return false
}
