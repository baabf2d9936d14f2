package mcpconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/encoding/json"
)

// BridgeOptions configure Bridge.
type BridgeOptions struct {
	// Header is sent with every request (e.g. Authorization); the bridge
	// never logs it.
	Header http.Header
	// Client sends the requests (a client without a timeout when nil: a
	// tool call may take long, and ctx ends the bridge).
	Client *http.Client
	// MaxMessageBytes bounds one message in either direction
	// (DefaultMaxMessageBytes when 0).
	MaxMessageBytes int
	// Log receives what the bridge cannot tell the client (slog.Default when
	// nil); stdout carries only the protocol.
	Log *slog.Logger
}

// bridgeDrain bounds how long Bridge waits, once its input ends, for the
// answers to requests still in flight.
const bridgeDrain = 5 * time.Second

// Bridge relays one MCP client that speaks over stdio (newline-delimited
// JSON-RPC messages on in and out) to the streamable HTTP MCP endpoint at
// url, as `caphub mcp --server` does for desktop clients that only start
// commands: each message from in is POSTed (with the session's
// Mcp-Session-Id and Mcp-Protocol-Version once initialize has set them),
// every message of each answer (JSON or SSE) is written to out unchanged,
// one per line, and after notifications/initialized the standalone SSE
// stream relays what the server sends on its own (list changes, server
// requests). A request the server refuses or cannot be reached for is
// answered on out with a JSON-RPC error saying why, so the client never
// waits forever. Bridge returns nil when in ends, after ending the remote
// session (DELETE); an error when ctx ends or out cannot be written.
func Bridge(ctx context.Context, in io.Reader, out io.Writer, url string, opts BridgeOptions) error {
	b := newBridge(url, opts, out)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	b.cancel = cancel
	// The input is read apart, so that ctx ending is not held up by a read
	// that blocks (the goroutine ends with the process or the input).
	read := make(chan error, 1)
	go func() { read <- b.readInput(ctx, in) }()
	var err error
	select {
	case err = <-read:
		b.drain(ctx)
	case <-ctx.Done():
	}
	cancel(errBridgeDone)
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
	b.wg.Wait()
	b.endSession()
	if err != nil {
		return err
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, errBridgeDone) {
		return cause
	}
	return nil
}

var errBridgeDone = errors.New("the bridge's input ended")

// bridge is the state of one Bridge.
type bridge struct {
	url    string
	client *http.Client
	header http.Header
	limit  int
	log    *slog.Logger
	cancel context.CancelCauseFunc

	outMu sync.Mutex
	out   *bufio.Writer

	mu         sync.Mutex
	sessionID  string
	protocol   string
	initID     string // the id of the client's initialize request, as written
	standalone bool   // the standalone stream was started
	closing    bool   // no goroutine may start any more
	inFlight   sync.WaitGroup

	wg sync.WaitGroup // every goroutine, the standalone stream included
}

func newBridge(url string, opts BridgeOptions, out io.Writer) *bridge {
	b := &bridge{url: url, client: opts.Client, header: opts.Header, limit: opts.MaxMessageBytes, log: opts.Log, out: bufio.NewWriter(out)}
	if b.client == nil {
		b.client = &http.Client{}
	}
	if b.limit <= 0 {
		b.limit = DefaultMaxMessageBytes
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	return b
}

// readInput posts each message read from in until in ends.
func (b *bridge) readInput(ctx context.Context, in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), b.limit)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m message
		if err := decode(line, &m); err != nil {
			b.answerError(nil, -32700, fmt.Sprintf("caphub mcp: a message from the client is not JSON-RPC: %v", err))
			continue
		}
		if m.Method == "initialize" && len(m.ID) > 0 {
			b.mu.Lock()
			b.initID = string(m.ID)
			b.mu.Unlock()
		}
		msg := append([]byte(nil), line...)
		if !b.track() {
			return context.Cause(ctx)
		}
		if inOrder(&m) {
			b.post(ctx, msg, &m)
			b.inFlight.Done()
			b.wg.Done()
		} else {
			go func() {
				defer b.wg.Done()
				defer b.inFlight.Done()
				b.post(ctx, msg, &m)
			}()
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read the client's messages: %w (one message is at most %d bytes)", err, b.limit)
	}
	return nil
}

// inOrder reports whether m is posted before the next message is read:
// initialize, whose answer opens the session every later message carries,
// and the messages the server answers at once (notifications, the client's
// answers to server requests), so that notifications/initialized reaches
// the server before the requests that follow it, and a cancellation after
// the request it cancels. Other requests run side by side: a long tool call
// does not hold up the next.
func inOrder(m *message) bool { return m.Method == "initialize" || len(m.ID) == 0 || m.Method == "" }

// track counts a message's goroutine in, unless the bridge is closing.
func (b *bridge) track() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return false
	}
	b.inFlight.Add(1)
	b.wg.Add(1)
	return true
}

// drain waits a bounded time for the answers still in flight.
func (b *bridge) drain(ctx context.Context) {
	done := make(chan struct{})
	go func() { b.inFlight.Wait(); close(done) }()
	t := time.NewTimer(bridgeDrain)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// request builds a request to the endpoint with the session's headers.
func (b *bridge) request(ctx context.Context, method string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range b.header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	b.mu.Lock()
	if b.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", b.sessionID)
	}
	if b.protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", b.protocol)
	}
	b.mu.Unlock()
	return req, nil
}

// post sends one client message and relays its answer.
func (b *bridge) post(ctx context.Context, body []byte, m *message) {
	isRequest := len(m.ID) > 0 && m.Method != ""
	req, err := b.request(ctx, http.MethodPost, body)
	if err != nil {
		b.refused(m, isRequest, err.Error())
		return
	}
	resp, err := b.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			b.refused(m, isRequest, fmt.Sprintf("cannot reach %s: %v", b.url, err))
		}
		return
	}
	defer drain(resp)
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && m.Method == "initialize" {
		b.mu.Lock()
		b.sessionID = sid
		b.mu.Unlock()
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b.refused(m, isRequest, b.statusText(resp))
		return
	}
	if resp.StatusCode == http.StatusAccepted || resp.ContentLength == 0 {
		if m.Method == "notifications/initialized" {
			b.startStandalone(ctx)
		}
		return
	}
	if _, _, err := readAnswer(resp.Body, resp.Header.Get("Content-Type"), b.limit, b.relay); err != nil && ctx.Err() == nil {
		b.log.Warn("caphub mcp: the server's answer ended early", "method", m.Method, "err", err)
	}
}

// relay writes one server message to the client, noting the protocol
// version an initialize answer chose.
func (b *bridge) relay(m *message) (bool, error) {
	if m.isResponse() && m.Result != nil {
		b.mu.Lock()
		isInit := b.initID != "" && string(bytes.TrimSpace(m.ID)) == b.initID
		b.mu.Unlock()
		if isInit {
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if decode(m.Result, &r) == nil && r.ProtocolVersion != "" {
				b.mu.Lock()
				b.protocol = r.ProtocolVersion
				b.mu.Unlock()
			}
		}
	}
	return false, b.write(m.raw)
}

// write puts one message on out, on one line.
func (b *bridge) write(raw []byte) error {
	line := bytes.TrimSpace(raw)
	if bytes.ContainsAny(line, "\r\n") {
		var c bytes.Buffer
		if err := json.Compact(&c, line); err != nil {
			return err
		}
		line = c.Bytes()
	}
	b.outMu.Lock()
	defer b.outMu.Unlock()
	b.out.Write(line)
	b.out.WriteByte('\n')
	if err := b.out.Flush(); err != nil {
		err = fmt.Errorf("write to the client: %w", err)
		b.cancel(err)
		return err
	}
	return nil
}

// refused tells the client that a message did not get through: a request
// gets a JSON-RPC error answer, a notification or response only a log
// line.
func (b *bridge) refused(m *message, isRequest bool, why string) {
	if !isRequest {
		b.log.Warn("caphub mcp: a message to the server did not get through", "method", m.Method, "why", why)
		return
	}
	b.answerError(m.ID, -32603, fmt.Sprintf("caphub mcp: %s did not reach the caphub server: %s", m.Method, why))
}

// answerError writes a JSON-RPC error answer for id (null when nil).
func (b *bridge) answerError(id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	text, _ := json.Marshal(msg)
	_ = b.write(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, code, text))
}

// statusText says what a refusal means and what to do about it.
func (b *bridge) statusText(resp *http.Response) string {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	detail := strings.TrimSpace(string(body))
	var p struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &p) == nil {
		switch {
		case p.Detail != "":
			detail = p.Detail
		case p.Error != nil:
			detail = p.Error.Message
		case p.Title != "":
			detail = p.Title
		}
	}
	s := fmt.Sprintf("%s answered %d %s", b.url, resp.StatusCode, http.StatusText(resp.StatusCode))
	if detail != "" {
		s += ": " + detail
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		s += " (set CAPHUB_TOKEN to a token of that server with the invoke scope: caphub token create NAME --scope invoke, on the server's machine)"
	case http.StatusNotFound:
		b.mu.Lock()
		sid := b.sessionID
		b.mu.Unlock()
		if sid != "" {
			s += " (the server ended this session, e.g. after it was idle: restart the client)"
		}
	}
	return s
}

// startStandalone opens the standalone SSE stream once, after the session
// is initialised.
func (b *bridge) startStandalone(ctx context.Context) {
	b.mu.Lock()
	start := !b.standalone && !b.closing
	b.standalone = true
	if start {
		b.wg.Add(1)
	}
	b.mu.Unlock()
	if !start {
		return
	}
	go func() {
		defer b.wg.Done()
		b.listen(ctx)
	}()
}

// listen relays the standalone stream until ctx ends, reconnecting (after
// the last event seen) when the server closes it; a server that offers no
// such stream (405) is left alone.
func (b *bridge) listen(ctx context.Context) {
	lastID, wait := "", 100*time.Millisecond
	for ctx.Err() == nil {
		req, err := b.request(ctx, http.MethodGet, nil)
		if err != nil {
			return
		}
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := b.client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				b.log.Warn("caphub mcp: the server's notification stream failed", "err", err)
			}
		} else if resp.StatusCode == http.StatusMethodNotAllowed {
			drain(resp)
			return
		} else if resp.StatusCode < 200 || resp.StatusCode > 299 {
			b.log.Warn("caphub mcp: no notification stream", "why", b.statusText(resp))
			drain(resp)
			return
		} else {
			id, retry, _ := readSSE(resp.Body, b.limit, b.relay)
			drain(resp)
			if id != "" {
				lastID = id
			}
			if retry > 0 {
				wait = retry
			}
		}
		t := time.NewTimer(min(wait, 10*time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// endSession ends the remote session (DELETE), within a bounded time.
func (b *bridge) endSession() {
	b.mu.Lock()
	sid := b.sessionID
	b.mu.Unlock()
	if sid == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := b.request(ctx, http.MethodDelete, nil)
	if err != nil {
		return
	}
	if resp, err := b.client.Do(req); err == nil {
		drain(resp)
	}
}
