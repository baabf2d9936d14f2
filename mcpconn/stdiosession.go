package mcpconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/segmentio/encoding/json"
)

// StdioOptions tune a StdioSession.
type StdioOptions struct {
	// ClientVersion is caphub's version, sent in initialize's clientInfo.
	ClientVersion string
	// MaxMessageBytes bounds one message (one line) the server sends
	// (DefaultMaxMessageBytes when 0); a longer one ends the session.
	MaxMessageBytes int
	// StartTimeout bounds the start: the process launched and initialised
	// (DefaultStartTimeout when 0).
	StartTimeout time.Duration
	// Notify, when set, receives the server's notifications
	// (notifications/progress, …) in the order they came, each before any
	// answer that followed it, on the session's reader: it must not block.
	Notify func(Notification)
}

// stdioStop bounds how long Close waits for the server to exit once its
// stdin is closed, before it kills its process group.
const stdioStop = 2 * time.Second

// StdioSession is a lean MCP client session with a stdio server, for the
// callers that make many requests on one session (the mcp binding's pool):
// it starts the server's process as caphub starts it (see
// Server.ExecCommand: no shell, the configured environment only, a session
// of its own), initialises it, and then writes one JSON-RPC message a line
// on its stdin and reads its stdout, decoding only the envelope of each
// message and a tools/call's result, without the Go SDK's per-message
// buffers. It offers what the Go SDK's client offers by default, roots
// (and has none), so that a server behaves as with the SDK's client: it
// answers the server's ping and roots/list, and refuses its other
// requests (sampling, elicitation). It is safe for concurrent use.
type StdioSession struct {
	name     string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	notify   func(Notification)
	maxBytes int

	wmu sync.Mutex // one message at a time on stdin
	ids atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan *message
	closed  bool
	server  mcp.Implementation
	proto   string

	done chan struct{} // closed once the server's stdout ended and the process was waited for
	err  error         // why it ended, set before done is closed
}

// DialStdio starts a stdio server (TransportStdio) and initialises an MCP
// session with it: initialize with caphub's client info and
// HTTPProtocolVersion, then notifications/initialized, within the options'
// StartTimeout. ctx bounds only the start.
func DialStdio(ctx context.Context, s *Server, opts *StdioOptions) (*StdioSession, error) {
	cmd, err := s.ExecCommand()
	if err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &StdioOptions{}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start MCP server %q (%s): %w (check the command runs and speaks MCP on stdio)", s.Name, s.Source(), err)
	}
	ss := &StdioSession{name: s.Name, cmd: cmd, stdin: stdin, notify: opts.Notify, maxBytes: opts.MaxMessageBytes,
		pending: map[int64]chan *message{}, done: make(chan struct{})}
	if ss.maxBytes <= 0 {
		ss.maxBytes = DefaultMaxMessageBytes
	}
	go ss.read(stdout)
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := ss.initialize(ctx, opts.ClientVersion); err != nil {
		_ = ss.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (no answer within %s: raise the start timeout if the server is slow to start)", err, timeout)
		}
		return nil, fmt.Errorf("start MCP server %q (%s): %w (check the command runs and speaks MCP on stdio)", s.Name, s.Source(), err)
	}
	return ss, nil
}

// initialize opens the session: initialize, then notifications/initialized.
func (ss *StdioSession) initialize(ctx context.Context, version string) error {
	if version == "" {
		version = "dev"
	}
	raw, err := ss.Request(ctx, "initialize", map[string]any{
		"protocolVersion": HTTPProtocolVersion,
		"capabilities":    map[string]any{"roots": map[string]any{"listChanged": true}},
		"clientInfo":      mcp.Implementation{Name: "caphub", Version: version},
	})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	res, err := readInitialized(raw)
	if err != nil {
		return err
	}
	ss.mu.Lock()
	ss.server, ss.proto = res.ServerInfo, res.ProtocolVersion
	ss.mu.Unlock()
	return ss.write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

// Cmd is the server's process (for its pid; Close kills its group).
func (ss *StdioSession) Cmd() *exec.Cmd { return ss.cmd }

// ProtocolVersion is the protocol version the server chose.
func (ss *StdioSession) ProtocolVersion() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.proto
}

// ServerInfo is the server's name and version from its initialize answer.
func (ss *StdioSession) ServerInfo() mcp.Implementation {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.server
}

// write sends one message, a line (msg's array may be appended to).
func (ss *StdioSession) write(msg []byte) error {
	line := append(msg, '\n')
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	_, err := ss.stdin.Write(line)
	return err
}

// Request sends a JSON-RPC request and returns its result; a JSON-RPC
// error answer is returned as a *jsonrpc.Error. When ctx ends first, the
// server is sent notifications/cancelled for the request, and the error
// wraps ctx's. When the server exits first, the error says so.
func (ss *StdioSession) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := ss.ids.Add(1)
	body, err := json.Marshal(request{JSONRPC: "2.0", ID: id, Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("MCP request %s to %q: %w", method, ss.name, err)
	}
	ch := make(chan *message, 1)
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return nil, errClosed
	}
	ss.pending[id] = ch
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		delete(ss.pending, id)
		ss.mu.Unlock()
	}()
	if err := ss.write(body); err != nil {
		return nil, fmt.Errorf("%s: writing to MCP server %q: %w", method, ss.name, ss.ended(err))
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-ss.done:
		return nil, fmt.Errorf("%s: MCP server %q: %w", method, ss.name, ss.err)
	case <-ctx.Done():
		note, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": id, "reason": context.Cause(ctx).Error()}})
		_ = ss.write(note)
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// ended is the error of a failed write: why the session ended when it did.
func (ss *StdioSession) ended(err error) error {
	select {
	case <-ss.done:
		return ss.err
	default:
		return err
	}
}

// CallTool calls a tool, with progressToken in _meta when not "" (the
// server's progress then reaches StdioOptions.Notify) and the trace
// context of ctx, and decodes its result as the Go SDK's client does.
func (ss *StdioSession) CallTool(ctx context.Context, name string, args map[string]any, progressToken string) (*mcp.CallToolResult, error) {
	p := newCallParams(ctx, name, args, progressToken)
	raw, err := ss.Request(ctx, "tools/call", p)
	if err != nil {
		return nil, err
	}
	res, err := DecodeToolResult(raw)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: unreadable tools/call result: %w", ss.name, err)
	}
	return res, nil
}

// Done is closed once the session ended: the server exited, closed its
// stdout, or sent what cannot be read; Err then says why.
func (ss *StdioSession) Done() <-chan struct{} { return ss.done }

// Err is why the session ended (nil while it lives).
func (ss *StdioSession) Err() error {
	select {
	case <-ss.done:
		return ss.err
	default:
		return nil
	}
}

// Close ends the session: the server's stdin is closed, and its process
// group killed unless it exited within stdioStop. It returns nil.
func (ss *StdioSession) Close() error {
	ss.mu.Lock()
	already := ss.closed
	ss.closed = true
	ss.mu.Unlock()
	if already {
		<-ss.done
		return nil
	}
	_ = ss.stdin.Close()
	select {
	case <-ss.done:
	case <-time.After(stdioStop):
	}
	_ = KillGroup(ss.cmd) // and whatever it started
	<-ss.done
	return nil
}

// read reads the server's messages until its stdout ends, then waits for
// the process.
func (ss *StdioSession) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	var err error
	var long []byte // a line longer than br's buffer, gathered
	for {
		var line []byte
		line, err = br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if long = append(long, line...); len(long) > ss.maxBytes {
				err = fmt.Errorf("the server sent a message larger than %d bytes", ss.maxBytes)
				break
			}
			continue
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if perr := ss.handle(line); perr != nil {
				err = perr
				break
			}
		}
		if err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the server closed its stdout")
	}
	_ = KillGroup(ss.cmd) // unread output would block it; the session is over
	if werr := ss.cmd.Wait(); werr != nil && !strings.Contains(err.Error(), "larger than") {
		err = fmt.Errorf("the server exited (%v)", werr)
	}
	ss.mu.Lock()
	ss.closed = true
	ss.err = err
	ss.mu.Unlock()
	close(ss.done)
}

// handle routes one line from the server: an answer to its request, a
// notification to Notify, a request of the server's answered; a line that
// is not JSON-RPC ends the session.
func (ss *StdioSession) handle(line []byte) error {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if line[0] == '[' {
		var batch []json.RawMessage
		if err := decode(line, &batch); err != nil {
			return fmt.Errorf("the server sent what is not JSON-RPC: %.80q", line)
		}
		for _, m := range batch {
			if err := ss.handle(m); err != nil {
				return err
			}
		}
		return nil
	}
	var m message
	if err := decode(line, &m); err != nil {
		return fmt.Errorf("the server sent what is not JSON-RPC: %.80q", line)
	}
	switch {
	case m.isResponse():
		id, err := strconv.ParseInt(string(bytes.TrimSpace(m.ID)), 10, 64)
		if err != nil {
			return nil // not an answer to a request of ours
		}
		ss.mu.Lock()
		ch := ss.pending[id]
		delete(ss.pending, id)
		ss.mu.Unlock()
		if ch != nil {
			ch <- &m
		}
	case m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null":
		go ss.answer(&m)
	case m.Method != "":
		if ss.notify != nil {
			ss.notify(Notification{Method: m.Method, Params: m.Params})
		}
	}
	return nil
}

// answer answers a request of the server: ping with an empty result,
// roots/list with no roots, anything else refused (as the Go SDK's client
// without handlers refuses it).
func (ss *StdioSession) answer(m *message) {
	var reply []byte
	switch m.Method {
	case "ping":
		reply = []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`)
	case "roots/list":
		reply = []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"roots":[]}}`)
	default:
		e, _ := json.Marshal(&jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("caphub's client does not serve %q", m.Method)})
		reply = []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":` + string(e) + `}`)
	}
	_ = ss.write(reply)
}
