package httprelay

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/caphub/caphub/internal/server/mcpfront/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Session is a downstream session relayed at the HTTP level to one
// session of a streamable HTTP server.
type Session struct {
	rl   *Relay
	name string // the saved server's
	id   string // the session id the client sees, made by the front
	upID string // the upstream's session id; "" for a server without sessions
	// idHeader and upIDHeader are id and upID as header values, made once
	// (setID, setUpID): every request and response carries one.
	idHeader, upIDHeader []string
	url                  *url.URL
	headers              http.Header // the saved server's headers, expanded

	// ctx ends with the session, and every relayed request with it.
	ctx    context.Context
	cancel context.CancelFunc

	idle relay.Idle // POSTs being relayed keep the session from idling

	mu       sync.Mutex
	pending  map[string]*pendingCall // forwarded requests awaiting a response, by id key
	npending atomic.Int32            // len(pending), read without the lock

	closeOnce sync.Once
}

func (s *Session) setID(id string)   { s.id, s.idHeader = id, []string{id} }
func (s *Session) setUpID(id string) { s.upID, s.upIDHeader = id, []string{id} }

// The session as the front sees it.

// Server is the name of the saved server the session relays to.
func (s *Session) Server() string { return s.name }

// ID is the session id the client knows.
func (s *Session) ID() string { return s.id }

// Close ends the session, and the upstream's with a DELETE.
func (s *Session) Close() { s.close(true) }

// Serve relays a request of the session.
func (s *Session) Serve(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		s.post(w, r)
	case http.MethodGet:
		s.get(w, r)
	case http.MethodDelete:
		s.close(true)
		w.WriteHeader(http.StatusNoContent)
	default:
		relay.WriteBadMethod(w, r)
	}
}

// post relays a POST: its tools/call requests go through the policy first
// (a refused call is answered by the front and not forwarded), the rest of
// the body is forwarded as it is, and the upstream's answer is relayed as
// it comes, with the outcome of each forwarded call recorded when its
// response passes.
func (s *Session) post(w http.ResponseWriter, r *http.Request) {
	s.idle.Begin()
	defer s.idle.End()
	body, ok := wire.ReadBody(w, r)
	if !ok {
		return
	}
	msgs, batch, err := wire.ParseBody(body)
	if err != nil {
		writeJSONRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "Bad Request: "+err.Error())
		return
	}
	calls, answers, answered := s.screen(r, msgs)
	if len(answers) == len(msgs) {
		writeJSON(w, http.StatusOK, answersBody(answers, batch))
		return
	}
	if len(answers) > 0 {
		body = forwardedBatch(msgs, answered)
	}
	s.track(calls)

	ctx, stop := s.requestContext(r)
	defer stop()
	resp, err := s.rl.upstream.RoundTrip(s.request(ctx, http.MethodPost, r, body))
	if err != nil {
		s.unreachable(w, r, err, calls)
		return
	}
	defer resp.Body.Close()
	s.relayAnswer(w, r, resp, calls, answers)
}

// screen reads the messages of a POST before they are forwarded: it
// applies the policy to each tools/call and returns the calls to watch
// for and the front's own answers (refused calls; answered marks their
// messages), and ends the pending call a notifications/cancelled names.
func (s *Session) screen(r *http.Request, msgs []wire.Msg) (calls []*pendingCall, answers [][]byte, answered []bool) {
	answered = make([]bool, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.Method == relay.MethodCallTool && m.IsCall() && s.rl.env.Hooks != nil:
			pc, answer := s.authorize(r.Context(), r.Header, m)
			if answer != nil {
				answers, answered[i] = append(answers, answer), true
				continue
			}
			calls = append(calls, pc)
		case m.Method == relay.NotifyCancelled:
			s.cancelled(m.Params)
		}
	}
	return calls, answers, answered
}

// answersBody is the body of a POST the front answers whole: its answers,
// as a batch when the POST was one.
func answersBody(answers [][]byte, batch bool) []byte {
	if batch {
		return joinBatch(answers)
	}
	return answers[0]
}

// forwardedBatch is what is forwarded of a batch some of whose messages
// the front answered: the rest, as a batch.
func forwardedBatch(msgs []wire.Msg, answered []bool) []byte {
	var forward []json.RawMessage
	for i := range msgs {
		if !answered[i] {
			forward = append(forward, msgs[i].Raw)
		}
	}
	return joinBatch(forward)
}

// relayAnswer relays the upstream's answer to a POST: calls are the
// forwarded calls it answers, answers the front's own responses to add.
func (s *Session) relayAnswer(w http.ResponseWriter, r *http.Request, resp *http.Response, calls []*pendingCall, answers [][]byte) {
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
func (s *Session) get(w http.ResponseWriter, r *http.Request) {
	ctx, stop := s.requestContext(r)
	defer stop()
	resp, err := s.rl.upstream.RoundTrip(s.request(ctx, http.MethodGet, r, nil))
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

// forwardedHeaders are the request headers relayed upstream. Nothing else
// is: not Authorization or Cookie (they carry caphub's own credentials),
// not hop-by-hop headers, not the client's other headers. The saved
// server's headers are added to these.
var forwardedHeaders = []string{"Content-Type", "Accept", headerProtocolVersion, headerLastEventID}

// request builds the upstream request for a downstream one: the body
// given, the downstream headers the streamable transport uses, the
// upstream's session id, and the saved server's headers.
func (s *Session) request(ctx context.Context, method string, down *http.Request, body []byte) *http.Request {
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
		h[headerSessionID] = s.upIDHeader
	}
	h["User-Agent"] = s.rl.userAgent
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
func (s *Session) requestContext(r *http.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// expire closes the session, idle for IdleTimeout.
func (s *Session) expire() {
	s.rl.env.Log.Info("mcpfront: closing an idle session", "server", s.name, "session", s.id, "idle_timeout", s.rl.env.IdleTimeout)
	s.close(true)
}

// close ends the session (once): its relayed requests end, its pending
// calls are recorded as ended with it, and, when deleteUpstream is set,
// the upstream session is ended with a DELETE (best effort).
func (s *Session) close(deleteUpstream bool) {
	s.closeOnce.Do(func() {
		s.rl.env.Sessions.Remove(s.id, s)
		s.idle.Stop()
		s.mu.Lock()
		calls := make([]*pendingCall, 0, len(s.pending))
		for _, pc := range s.pending {
			calls = append(calls, pc)
		}
		s.mu.Unlock()
		s.cancel()
		s.fail(calls, relay.Outcome{SessionEnded: true})
		if deleteUpstream {
			s.deleteUpstream()
		}
		s.rl.env.Log.Info("mcpfront: session ended", "server", s.name, "session", s.id, "relay", "http")
	})
}

// deleteTimeout bounds the DELETE that ends an upstream session.
const deleteTimeout = 5 * time.Second

// deleteUpstream ends the upstream session with a DELETE, best effort.
func (s *Session) deleteUpstream() {
	if s.upID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	req := s.request(ctx, http.MethodDelete, &http.Request{Header: http.Header{}}, nil)
	resp, err := s.rl.upstream.RoundTrip(req)
	if err != nil {
		s.rl.env.Log.Debug("mcpfront: ending the upstream session failed", "server", s.name, "upstream_session", s.upID, "error", err)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
}
