package stdiorelay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/internal/permit"
	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/caphub/caphub/internal/server/mcpfront/internal/wire"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Bounds of what the relay reads from a process.
const (
	// maxLine bounds one message from the server: a longer line ends the
	// process (a server that sends one is broken, or hostile).
	maxLine = 16 << 20
	// stderrLine and stderrLines bound the server's stderr in the log:
	// lines are cut to stderrLine bytes, and at most stderrLines lines a
	// minute are logged.
	stderrLine  = 1 << 10
	stderrLines = 60
	// termGrace is how long a process whose stdin was closed has to exit
	// before its process group is killed.
	termGrace = 2 * time.Second
)

// causes lists the requests during which a server sends log messages and
// requests of its own.
var causes = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true, "completion/complete": true}

// needs is the client capability each server-to-client request needs.
var needs = map[string]string{"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}

// upstream is a started stdio server: one per client session, or one
// shared by every session of a saved server.
type upstream struct {
	rl     *Relay
	name   string
	shared bool

	cmd      *exec.Cmd
	stdin    io.WriteCloser
	wmu      sync.Mutex // serialises writes to stdin
	slot     func()     // releases the start-up slot
	slotOnce sync.Once
	stopCtx  func() bool // stops the kill bound to the front's context

	ids atomic.Int64 // the last id given to a request sent upstream

	mu       sync.Mutex
	pending  map[int64]*call    // requests sent upstream, awaiting their response, by upstream id
	sessions []*Session         // the client sessions it serves, oldest first
	srvReqs  map[string]*srvReq // its requests relayed to clients, by wire.IDKey of its id
	grace    *time.Timer        // ends a shared process without sessions
	tail     []byte             // the end of its stderr, for errors

	// initParams and initResult are the initialize that initialised it
	// (set before ready): a restarted shared process replays the params,
	// and later clients get the result.
	initParams  []byte
	initResult  []byte
	initialized atomic.Bool // notifications/initialized was sent

	readyCh   chan struct{} // closed once initialised, or failed (readyErr)
	readyErr  error
	readyOnce sync.Once

	deadCh    chan struct{} // closed when its output ended
	deadErr   error
	closeOnce sync.Once
	pmu       sync.Mutex // guards reaped against killing a reaped group
	reaped    bool
}

// call is a client's request sent upstream.
type call struct {
	s        *Session
	up       int64  // the upstream id
	clientID []byte // the client's id, as it came
	method   string
	token    []byte    // the client's progress token, as it came; nil for none
	st       *stream   // the stream of the POST that carries it
	reply    chan item // for the relay's own requests (no stream)
	causing  bool      // it can cause log messages and server requests
	ctx      context.Context
	rec      *relay.Call // the tools/call to record; nil for none
	done     atomic.Bool
}

// srvReq is a request of the server relayed to a client.
type srvReq struct {
	s    *Session
	u    *upstream
	down int64   // the id the client sees
	upID []byte  // the server's id
	st   *stream // where it was sent; nil for the standalone stream
}

func newUpstream(rl *Relay, name string, shared bool) *upstream {
	return &upstream{
		rl: rl, name: name, shared: shared,
		pending: map[int64]*call{}, srvReqs: map[string]*srvReq{},
		readyCh: make(chan struct{}), deadCh: make(chan struct{}),
	}
}

// launch starts the process, within a start-up slot of the front's
// Spawner (released once its initialize is answered), and returns the
// status to answer when it cannot.
func (u *upstream) launch(ctx context.Context, srv *mcpconn.Server) (int, error) {
	cmd, err := srv.ExecCommand()
	if err != nil {
		if errors.Is(err, permit.ErrCommand) || errors.Is(err, permit.ErrEnv) {
			return http.StatusForbidden, fmt.Errorf("caphub does not start the MCP server %q: %v", u.name, err)
		}
		return http.StatusInternalServerError, fmt.Errorf("caphub could not start the MCP server %q: %v", u.name, err)
	}
	release, err := u.rl.env.Spawner.Acquire(ctx)
	if err != nil {
		return http.StatusServiceUnavailable, fmt.Errorf("start MCP server %q: %w", u.name, err)
	}
	u.slot = release
	stdin, err1 := cmd.StdinPipe()
	stdout, err2 := cmd.StdoutPipe()
	stderr, err3 := cmd.StderrPipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		u.releaseSlot()
		return http.StatusInternalServerError, fmt.Errorf("start MCP server %q: %v", u.name, err)
	}
	err = cmd.Start()
	u.rl.env.Spawner.Started(err)
	if err != nil {
		u.releaseSlot()
		return http.StatusBadGateway, fmt.Errorf("caphub could not start the MCP server %q (%s): %v: check that the command runs", u.name, srv.Source(), err)
	}
	u.cmd, u.stdin = cmd, stdin
	var output sync.WaitGroup
	output.Add(2)
	u.rl.procs.Add(1)
	go func() {
		defer output.Done()
		u.read(stdout)
	}()
	go func() {
		defer output.Done()
		u.logStderr(stderr)
	}()
	go func() {
		defer u.rl.procs.Done()
		output.Wait()
		u.reap()
	}()
	u.stopCtx = context.AfterFunc(u.rl.env.Ctx, func() { u.kill(true) })
	return 0, nil
}

func (u *upstream) releaseSlot() {
	u.slotOnce.Do(func() {
		if u.slot != nil {
			u.slot()
		}
	})
}

// ready ends the start of a shared process: err says it failed.
func (u *upstream) ready(err error) {
	u.readyOnce.Do(func() {
		u.readyErr = err
		close(u.readyCh)
	})
	if err != nil {
		u.rl.forget(u)
		if u.cmd != nil {
			u.kill(true)
		}
	}
}

func (u *upstream) isDead() bool {
	select {
	case <-u.deadCh:
		return true
	default:
		return false
	}
}

func (u *upstream) pid() int {
	if u.cmd == nil || u.cmd.Process == nil {
		return 0
	}
	return u.cmd.Process.Pid
}

// initialize sends an initialize (msg as the client sent it, with id; or,
// when msg is nil, one of the relay's with params) and waits for the
// answer, within the start timeout. It returns the answer for the client
// (the response with the client's id) and, when the server accepted, its
// result, which it stores; an error, with its status, when there is no
// answer.
func (u *upstream) initialize(ctx context.Context, msg, id, params []byte) (answer []byte, status int, err error) {
	defer u.releaseSlot()
	if msg == nil {
		msg = append(append([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":`), params...), '}')
		id = msg[len(`{"jsonrpc":"2.0","id":`) : len(`{"jsonrpc":"2.0","id":`)+1]
	}
	c := &call{method: relay.MethodInitialize, clientID: id, reply: make(chan item, 1), ctx: ctx}
	if err := u.forward(c, msg, id, nil); err != nil {
		return nil, http.StatusBadGateway, u.failure(err)
	}
	timeout := u.rl.env.StartTimeout
	if timeout <= 0 {
		timeout = mcpconn.DefaultStartTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var it item
	select {
	case it = <-c.reply:
	case <-timer.C:
		u.take(c.up)
		return nil, http.StatusGatewayTimeout, fmt.Errorf("the MCP server %q did not answer initialize within %s: check that it speaks MCP on stdio, or raise the start timeout (caphub serve --front-start-timeout)", u.name, timeout)
	case <-ctx.Done():
		u.take(c.up)
		return nil, http.StatusServiceUnavailable, fmt.Errorf("initialize of the MCP server %q: %w", u.name, context.Cause(ctx))
	}
	if it.fail != nil {
		return nil, http.StatusBadGateway, it.fail
	}
	_, result, rpcErr, _ := wire.Response(it.data)
	if !wire.IsNull(rpcErr) || len(result) == 0 || result[0] != '{' {
		return it.data, 0, errRefused{it.data}
	}
	u.initParams = bytes.Clone(params)
	u.initResult = bytes.Clone(result)
	return it.data, 0, nil
}

// errRefused is a server's refusal of initialize: the client gets its
// answer as it came.
type errRefused struct{ answer []byte }

func (e errRefused) Error() string { return "the MCP server refused initialize: " + string(e.answer) }

// failure describes a process that ended: what it last wrote on stderr.
func (u *upstream) failure(err error) error {
	u.mu.Lock()
	tail := string(bytes.TrimSpace(u.tail))
	u.mu.Unlock()
	msg := fmt.Sprintf("the MCP server %q exited: %v", u.name, err)
	if tail != "" {
		msg += "; its last output on stderr: " + tail
	}
	return errors.New(msg)
}

// errDead is the error of a write to a process that ended.
var errDead = errors.New("its output ended")

// forward sends a client's request upstream under a fresh id (its progress
// token, when it has one, becomes that id too), c awaiting its response.
// id and token are subslices of msg.
func (u *upstream) forward(c *call, msg, id, token []byte) error {
	n := u.ids.Add(1)
	c.up = n
	var nb [20]byte
	num := strconv.AppendInt(nb[:0], n, 10)
	out := make([]byte, 0, len(msg)+2*len(num)+1)
	if token != nil {
		out = rewrite(out, msg, sorted(span(msg, id, num), span(msg, token, num))...)
	} else {
		out = rewrite(out, msg, span(msg, id, num))
	}
	out = newline(out)
	u.mu.Lock()
	if u.isDead() {
		u.mu.Unlock()
		return errDead
	}
	u.pending[n] = c
	u.mu.Unlock()
	if err := u.send(out); err != nil {
		u.take(n)
		return err
	}
	return nil
}

// newline ends a message as a line (see line).
func newline(msg []byte) []byte {
	if bytes.IndexByte(msg, '\n') < 0 && bytes.IndexByte(msg, '\r') < 0 {
		return append(msg, '\n')
	}
	return line(nil, msg)
}

// send writes a line to the process.
func (u *upstream) send(b []byte) error {
	u.wmu.Lock()
	_, err := u.stdin.Write(b)
	u.wmu.Unlock()
	if err != nil && u.isDead() {
		return errDead
	}
	return err
}

// take removes the call awaiting the response with upstream id n.
func (u *upstream) take(n int64) *call {
	u.mu.Lock()
	c := u.pending[n]
	delete(u.pending, n)
	u.mu.Unlock()
	return c
}

// cancel tells the server a request is cancelled.
func (u *upstream) cancel(c *call, reason string) {
	if u.take(c.up) == nil {
		return // answered, or the process ended
	}
	r, _ := json.Marshal(reason)
	msg := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":%s}}`+"\n", c.up, r)
	_ = u.send(msg)
}

// read reads the process's messages until its output ends.
func (u *upstream) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	var err error
	for {
		var chunk []byte
		chunk, err = br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > maxLine {
				err = fmt.Errorf("it sent a line over %d MiB, the most caphub reads", maxLine>>20)
				u.rl.env.Log.Error("mcpfront: stdio server sent a line over the limit; stopping it", "server", u.name, "pid", u.pid(), "limit_bytes", maxLine)
				u.kill(true)
				break
			}
			long = append(long, chunk...)
			continue
		}
		msg := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			msg = long
		}
		if msg = bytes.TrimSpace(msg); len(msg) > 0 {
			u.dispatch(msg)
		}
		if cap(long) > 1<<20 {
			long = nil
		}
		long = long[:0]
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = errDead
	}
	u.ended(err)
}

// dispatch relays one message of the server.
func (u *upstream) dispatch(msg []byte) {
	h, ok := readHead(msg)
	switch {
	case !ok:
		u.rl.env.Log.Debug("mcpfront: stdio server wrote a line that is not a JSON-RPC message", "server", u.name, "line", truncate(msg, 200))
	case h.method == nil:
		c := u.take(upID(h.id))
		if c == nil {
			u.rl.env.Log.Debug("mcpfront: response to no request in flight", "server", u.name, "id", string(h.id))
			return
		}
		data := rewrite(make([]byte, 0, len(msg)+len(c.clientID)), msg, span(msg, h.id, c.clientID))
		c.deliver(item{data: data, call: c})
	case h.id != nil:
		u.serverRequest(msg, h)
	default:
		u.notification(msg, h)
	}
}

// deliver hands a call's response to whoever waits for it.
func (c *call) deliver(it item) {
	if c.reply != nil {
		c.reply <- it
		return
	}
	c.st.push(it) // a stream whose handler is gone has finished the call
}

// serverRequest relays a request of the server to the client it belongs
// to (see route); the relay answers ping itself.
func (u *upstream) serverRequest(msg []byte, h head) {
	method := string(h.method)
	if method == "ping" {
		_ = u.send(newline(resultMessage(h.id, []byte("{}"))))
		return
	}
	s, st := u.route(needs[method])
	if s == nil {
		_ = u.send(newline(errorMessage(h.id, jsonrpc.CodeInternalError, fmt.Sprintf("no client session of caphub's is open to answer %s", method))))
		return
	}
	s.relayRequest(u, msg, h, st)
}

// route picks the client session, and the stream in it, for a log message
// or a request of the server: the oldest request in flight that can cause
// it (of a client with the capability need, when one has), else the
// standalone stream (st nil) of the oldest session with the capability.
func (u *upstream) route(need string) (*Session, *stream) {
	u.mu.Lock()
	defer u.mu.Unlock()
	var best, able *call
	for _, c := range u.pending {
		if !c.causing || c.st == nil {
			continue
		}
		if best == nil || c.up < best.up {
			best = c
		}
		if need != "" && c.s.caps.has(need) && (able == nil || c.up < able.up) {
			able = c
		}
	}
	if able != nil {
		return able.s, able.st
	}
	if best != nil && need == "" {
		return best.s, best.st
	}
	for _, s := range u.sessions {
		if need == "" || s.caps.has(need) {
			return s, nil
		}
	}
	if best != nil {
		return best.s, best.st
	}
	if len(u.sessions) > 0 {
		return u.sessions[0], nil
	}
	return nil, nil
}

// notification relays a notification of the server.
func (u *upstream) notification(msg []byte, h head) {
	switch string(h.method) {
	case "notifications/progress":
		tok := member(h.params, "progressToken")
		u.mu.Lock()
		c := u.pending[upID(tok)]
		u.mu.Unlock()
		if c == nil || c.token == nil || c.st == nil {
			return
		}
		c.st.push(item{data: rewrite(make([]byte, 0, len(msg)+len(c.token)), msg, span(msg, tok, c.token))})
	case relay.NotifyCancelled:
		rid := member(h.params, "requestId")
		u.mu.Lock()
		key := wire.IDKey(rid)
		sr := u.srvReqs[key]
		delete(u.srvReqs, key)
		u.mu.Unlock()
		if sr == nil {
			return
		}
		sr.s.dropSrvReq(sr.down)
		data := rewrite(nil, msg, span(msg, rid, strconv.AppendInt(nil, sr.down, 10)))
		if sr.st == nil || !sr.st.push(item{data: data}) {
			sr.s.toGet(data)
		}
	case "notifications/message":
		data := bytes.Clone(msg)
		if _, st := u.route(""); st != nil && st.push(item{data: data}) {
			return
		}
		u.broadcast(data, "")
	case "notifications/resources/updated":
		u.broadcast(bytes.Clone(msg), string(wire.Unquote(member(h.params, "uri"))))
	default:
		u.broadcast(bytes.Clone(msg), "")
	}
}

// broadcast sends a message to the standalone stream of every session (of
// those subscribed to uri, when some are).
func (u *upstream) broadcast(data []byte, uri string) {
	u.mu.Lock()
	sessions := append([]*Session(nil), u.sessions...)
	u.mu.Unlock()
	if uri != "" {
		var subscribed []*Session
		for _, s := range sessions {
			if s.subscribed(uri) {
				subscribed = append(subscribed, s)
			}
		}
		if len(subscribed) > 0 {
			sessions = subscribed
		}
	}
	for _, s := range sessions {
		s.toGet(data)
	}
}

// ended handles the end of the process's output: the requests in flight
// fail, and the sessions of a per-client process end.
func (u *upstream) ended(err error) {
	err = u.failure(err)
	u.mu.Lock()
	u.deadErr = err
	close(u.deadCh)
	calls := make([]*call, 0, len(u.pending))
	for _, c := range u.pending {
		calls = append(calls, c)
	}
	clear(u.pending)
	clear(u.srvReqs)
	sessions := append([]*Session(nil), u.sessions...)
	u.mu.Unlock()
	for _, c := range calls {
		c.deliver(item{data: errorMessage(c.clientID, jsonrpc.CodeInternalError, err.Error()), call: c, fail: err})
	}
	if u.shared {
		u.rl.forget(u)
		if len(sessions) > 0 {
			u.rl.env.Log.Warn("mcpfront: shared stdio server ended; it starts again on the next request", "server", u.name, "pid", u.pid(), "error", err)
		}
		return
	}
	for _, s := range sessions {
		if !s.ended() {
			u.rl.env.Log.Warn("mcpfront: stdio server ended; session closed", "server", u.name, "session", s.id, "pid", u.pid(), "error", err)
		}
		s.close()
	}
}

// attach adds a client session to the process.
func (u *upstream) attach(s *Session) {
	u.mu.Lock()
	u.sessions = append(u.sessions, s)
	if u.grace != nil {
		u.grace.Stop()
		u.grace = nil
	}
	u.mu.Unlock()
}

// detach removes a client session from the process, and returns its
// requests still in flight and the server's requests it has not answered.
// A shared process left without sessions ends after the relay's Grace.
func (u *upstream) detach(s *Session) (calls []*call, reqs []*srvReq) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i, x := range u.sessions {
		if x == s {
			u.sessions = append(u.sessions[:i:i], u.sessions[i+1:]...)
			break
		}
	}
	for n, c := range u.pending {
		if c.s == s {
			calls = append(calls, c)
			delete(u.pending, n)
		}
	}
	for k, sr := range u.srvReqs {
		if sr.s == s {
			reqs = append(reqs, sr)
			delete(u.srvReqs, k)
		}
	}
	if u.shared && len(u.sessions) == 0 && !u.isDead() {
		u.grace = time.AfterFunc(u.rl.Grace, u.graceEnded)
	}
	return calls, reqs
}

// graceEnded ends a shared process that got no session during its grace.
func (u *upstream) graceEnded() {
	u.mu.Lock()
	idle := len(u.sessions) == 0
	u.mu.Unlock()
	if idle {
		u.rl.forget(u)
		u.rl.env.Log.Info("mcpfront: shared stdio server stopped: no session since the grace period", "server", u.name, "pid", u.pid(), "grace", u.rl.Grace)
		u.kill(false)
	}
}

// kill ends the process: its stdin is closed, and its process group killed
// after termGrace, or at once (now).
func (u *upstream) kill(now bool) {
	u.closeOnce.Do(func() {
		if u.stopCtx != nil {
			u.stopCtx()
		}
		_ = u.stdin.Close()
		if !now {
			time.AfterFunc(termGrace, u.killGroup)
		}
	})
	if now {
		u.killGroup()
	}
}

// killGroup kills the process group, unless the process was reaped (its
// group id may then be another's).
func (u *upstream) killGroup() {
	u.pmu.Lock()
	defer u.pmu.Unlock()
	if !u.reaped {
		_ = mcpconn.KillGroup(u.cmd)
	}
}

// reap waits for the process once its output ended, killing what is left
// of its group first.
func (u *upstream) reap() {
	u.pmu.Lock()
	defer u.pmu.Unlock()
	_ = mcpconn.KillGroup(u.cmd)
	_ = u.cmd.Wait()
	u.reaped = true
}

// logStderr logs the server's stderr, bounded, keeping its end for errors.
func (u *upstream) logStderr(r io.Reader) {
	br := bufio.NewReaderSize(r, 4<<10)
	window, logged, dropped := time.Now(), 0, 0
	skip := false // the rest of a line cut to stderrLine
	for {
		ln, err := br.ReadSlice('\n')
		cut := skip
		skip = errors.Is(err, bufio.ErrBufferFull)
		if len(ln) > 0 && !cut {
			ln = bytes.TrimRight(ln, "\r\n")
			u.mu.Lock()
			u.tail = append(u.tail, truncate(ln, stderrLine)...)
			u.tail = append(u.tail, ' ')
			if len(u.tail) > stderrLine {
				u.tail = append(u.tail[:0], u.tail[len(u.tail)-stderrLine:]...)
			}
			u.mu.Unlock()
			if time.Since(window) > time.Minute {
				if dropped > 0 {
					u.rl.env.Log.Info("mcpfront: stdio server stderr lines not logged", "server", u.name, "pid", u.pid(), "lines", dropped)
				}
				window, logged, dropped = time.Now(), 0, 0
			}
			if logged < stderrLines {
				logged++
				u.rl.env.Log.Info("mcpfront: stdio server stderr", "server", u.name, "pid", u.pid(), "line", truncate(ln, stderrLine))
			} else {
				dropped++
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// truncate returns b as a string of at most n bytes.
func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
