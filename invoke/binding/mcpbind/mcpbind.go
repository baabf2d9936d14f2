// Package mcpbind is the MCP binding: it calls a tool on a saved upstream
// MCP server. Sessions are pooled, one per upstream, and reused by every
// call; a stdio server is started once and supervised: when it exits it is
// restarted with exponential backoff, and on Close its whole process group
// is killed. A stdio server is reached through mcpconn's lean
// StdioSession, a streamable HTTP server through its HTTPSession (falling
// back to the Go SDK's client for a server it cannot initialise); SSE
// servers through the Go SDK's client.
//
// A call hands on the tool's result as it came (invoke.Outcome.Tool: its
// content blocks and structured content) beside its JSON reading (Output).
// A call whose context asks for progress (invoke.WithProgress) carries a
// progress token of the binding's own, unique on the pooled session, and
// the upstream's notifications/progress for it are passed to the caller's
// function; a call whose context ends is cancelled upstream
// (notifications/cancelled), and the pooled session stays up.
package mcpbind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Servers finds saved server connections (discover.ServerAPI is one).
type Servers interface {
	GetServer(ctx context.Context, name string) (*discover.SavedServer, error)
}

// Options tune the pool.
type Options struct {
	ClientVersion string
	Log           *slog.Logger
	// MinBackoff and MaxBackoff bound the wait before restarting a crashed
	// server (doubling per consecutive failure). Defaults 200ms and 30s.
	MinBackoff, MaxBackoff time.Duration
}

// Binding is the MCP binding with its session pool.
type Binding struct {
	servers Servers
	opts    Options
	ctx     context.Context // lives as long as the pool; sessions are bound to it
	cancel  context.CancelFunc

	mu        sync.Mutex
	upstreams map[string]*upstream
	closed    bool

	// progress maps the progress tokens of calls in flight that asked for
	// progress to their reporters; tokens counts the tokens made.
	progress sync.Map // string → *reporter
	tokens   atomic.Uint64
}

// New returns an MCP binding that reaches servers saved in servers.
func New(servers Servers, opts Options) *Binding {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 200 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "dev"
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Binding{servers: servers, opts: opts, ctx: ctx, cancel: cancel, upstreams: map[string]*upstream{}}
}

// Kind is "mcp".
func (b *Binding) Kind() string { return capability.BindingMCP }

// upstream is one pooled server.
type upstream struct {
	name string

	mu       sync.Mutex
	session  session
	cmd      *exec.Cmd
	config   mcpconn.Server
	failures int       // consecutive crashes or failed starts
	retryAt  time.Time // no new start before this
	lastErr  error
	starts   int // how many times it was started (for tests and status)
}

func (b *Binding) upstream(name string) (*upstream, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errors.New("the MCP binding is closed")
	}
	u, ok := b.upstreams[name]
	if !ok {
		u = &upstream{name: name}
		b.upstreams[name] = u
	}
	return u, nil
}

// session is a pooled upstream session: the Go SDK's client session, or
// mcpconn's HTTPSession for a streamable HTTP server.
type session interface {
	// callTool calls a tool; progress notifications on its way go to
	// b.report before it returns.
	callTool(ctx context.Context, b *Binding, params *mcp.CallToolParams, token string) (*mcp.CallToolResult, error)
	Close() error
}

// sdkSession is a session of the Go SDK's client: its progress reaches
// b.report through the client's handler (or the ordered transport).
type sdkSession struct{ cs *mcp.ClientSession }

func (s sdkSession) callTool(ctx context.Context, _ *Binding, params *mcp.CallToolParams, token string) (*mcp.CallToolResult, error) {
	if token != "" {
		params.SetProgressToken(token)
	}
	tracing.InjectMeta(ctx, params)
	return s.cs.CallTool(ctx, params)
}

func (s sdkSession) Close() error { return s.cs.Close() }

// httpSession is a streamable HTTP session of mcpconn: the progress
// notifications on a call's stream are reported as they are read, before
// the answer.
type httpSession struct{ hs *mcpconn.HTTPSession }

func (s httpSession) callTool(ctx context.Context, b *Binding, params *mcp.CallToolParams, token string) (*mcp.CallToolResult, error) {
	var notify func(mcpconn.Notification)
	if token != "" {
		notify = func(n mcpconn.Notification) {
			if n.Method != "notifications/progress" {
				return
			}
			if p, err := mcpconn.DecodeProgress(n.Params); err == nil {
				b.report(&mcp.ProgressNotificationParams{ProgressToken: p.ProgressToken, Progress: p.Progress, Total: p.Total, Message: p.Message})
			}
		}
	}
	args, _ := params.Arguments.(map[string]any)
	return s.hs.CallTool(ctx, params.Name, args, token, notify)
}

func (s httpSession) Close() error { return s.hs.Close() }

// stdioSession is a stdio session of mcpconn: progress notifications are
// reported by its reader (b.notify), ahead of the answer that follows
// them.
type stdioSession struct{ ss *mcpconn.StdioSession }

func (s stdioSession) callTool(ctx context.Context, _ *Binding, params *mcp.CallToolParams, token string) (*mcp.CallToolResult, error) {
	args, _ := params.Arguments.(map[string]any)
	return s.ss.CallTool(ctx, params.Name, args, token)
}

func (s stdioSession) Close() error { return s.ss.Close() }

// notify reports a stdio server's progress notifications.
func (b *Binding) notify(n mcpconn.Notification) {
	if n.Method != "notifications/progress" {
		return
	}
	if p, err := mcpconn.DecodeProgress(n.Params); err == nil {
		b.report(&mcp.ProgressNotificationParams{ProgressToken: p.ProgressToken, Progress: p.Progress, Total: p.Total, Message: p.Message})
	}
}

// session returns the live session of a server, starting it when needed.
func (b *Binding) session(ctx context.Context, name string) (session, error) {
	u, err := b.upstream(name)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.session != nil {
		return u.session, nil
	}
	if wait := time.Until(u.retryAt); wait > 0 {
		return nil, &invoke.Error{Code: invoke.CodeUpstreamUnavailable, Retryable: true,
			Message: fmt.Sprintf("MCP server %q is down (%v); the next start is in %s", name, u.lastErr, wait.Round(time.Millisecond))}
	}
	return b.start(ctx, u)
}

// start connects u; the caller holds u.mu. A streamable HTTP server gets
// an HTTPSession when it can be initialised as one, else the Go SDK's
// session (which falls back to SSE).
func (b *Binding) start(ctx context.Context, u *upstream) (session, error) {
	saved, err := b.servers.GetServer(ctx, u.name)
	if err != nil {
		return nil, &invoke.Error{Code: invoke.CodeNoBinding, Message: err.Error(), Cause: err}
	}
	u.config = saved.Server
	u.starts++
	if u.config.Transport == mcpconn.TransportHTTP {
		hs, err := mcpconn.DialHTTP(b.ctx, &u.config, &mcpconn.HTTPOptions{ClientVersion: b.opts.ClientVersion})
		if err == nil {
			u.session, u.cmd, u.lastErr = httpSession{hs}, nil, nil
			return u.session, nil
		}
		b.opts.Log.Debug("MCP server: streamable HTTP session failed, trying the SDK's client", "server", u.name, "err", err)
	}
	if u.config.Transport == mcpconn.TransportStdio {
		ss, err := mcpconn.DialStdio(b.ctx, &u.config, &mcpconn.StdioOptions{ClientVersion: b.opts.ClientVersion, Notify: b.notify})
		if err != nil {
			b.failed(u, err)
			return nil, &invoke.Error{Code: invoke.CodeUpstreamUnavailable, Retryable: true, Message: err.Error(), Cause: err}
		}
		sess := stdioSession{ss}
		u.session, u.cmd, u.lastErr = sess, ss.Cmd(), nil
		go b.supervise(u, sess, func() error { <-ss.Done(); return ss.Err() }, ss.Cmd())
		return u.session, nil
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "caphub", Version: b.opts.ClientVersion}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { b.report(req.Params) },
	})
	cs, cmd, err := mcpconn.ConnectClient(b.ctx, &u.config, client, &mcpconn.ConnectOptions{WrapTransport: b.ordered})
	if err != nil {
		b.failed(u, err)
		return nil, &invoke.Error{Code: invoke.CodeUpstreamUnavailable, Retryable: true, Message: err.Error(), Cause: err}
	}
	sess := sdkSession{cs}
	u.session, u.cmd, u.lastErr = sess, cmd, nil
	go b.supervise(u, sess, cs.Wait, cmd)
	return u.session, nil
}

// failed records a crash or failed start and schedules the next start.
func (b *Binding) failed(u *upstream, err error) {
	u.failures++
	backoff := b.opts.MinBackoff << min(u.failures-1, 20)
	if backoff > b.opts.MaxBackoff || backoff <= 0 {
		backoff = b.opts.MaxBackoff
	}
	u.retryAt = time.Now().Add(backoff)
	u.lastErr = err
}

// supervise waits for a session to end. A stdio server that exits is
// restarted after the backoff; an HTTP session is re-established on the
// next call.
func (b *Binding) supervise(u *upstream, sess session, ended func() error, cmd *exec.Cmd) {
	err := ended()
	if cmd != nil {
		_ = mcpconn.KillGroup(cmd) // take down anything it started
		_ = cmd.Wait()
	}
	if b.ctx.Err() != nil {
		return // the pool is closing
	}
	u.mu.Lock()
	if u.session != sess {
		u.mu.Unlock()
		return
	}
	u.session, u.cmd = nil, nil
	if err == nil {
		err = errors.New("the server closed the session")
	}
	b.failed(u, err)
	wait := time.Until(u.retryAt)
	stdio := u.config.Transport == mcpconn.TransportStdio
	u.mu.Unlock()
	b.opts.Log.Warn("MCP server exited", "server", u.name, "err", err, "restart_in", wait.Round(time.Millisecond))
	if !stdio {
		return
	}
	select {
	case <-b.ctx.Done():
		return
	case <-time.After(wait):
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.session == nil && b.ctx.Err() == nil {
		if _, err := b.start(b.ctx, u); err != nil {
			b.opts.Log.Warn("MCP server restart failed", "server", u.name, "err", err)
		} else {
			b.opts.Log.Info("MCP server restarted", "server", u.name)
		}
	}
}

// Invoke calls the tool with the mapped input.
func (b *Binding) Invoke(ctx context.Context, call *invoke.Call) (*invoke.Outcome, error) {
	mb := call.Definition.Bindings.MCP
	if mb == nil || mb.Server == "" || mb.Tool == "" {
		return nil, invoke.Errorf(invoke.CodeNoBinding, false, "%s has no complete mcp binding (server and tool)", call.URI)
	}
	sess, err := b.session(ctx, mb.Server)
	if err != nil {
		return nil, err
	}
	args := invoke.MapInput(call.Input, mb.Mapping)
	if args == nil {
		args = map[string]any{} // not null, which servers of the TypeScript SDK refuse
	}
	params := &mcp.CallToolParams{Name: mb.Tool, Arguments: args}
	token := ""
	if f := invoke.ProgressFrom(ctx); f != nil {
		r := &reporter{f: f}
		token = "caphub-" + strconv.FormatUint(b.tokens.Add(1), 10)
		b.progress.Store(token, r)
		defer func() {
			b.progress.Delete(token)
			r.stop()
		}()
	}
	ctx, span := tracing.StartFor(ctx, "tools/call", mb.Tool, tracing.Client)
	span.SetString("mcp.method.name", "tools/call")
	span.SetString("gen_ai.tool.name", mb.Tool)
	span.SetString("caphub.upstream", mb.Server)
	res, err := sess.callTool(ctx, b, params, token)
	if err != nil {
		span.End(err)
		return nil, b.callError(ctx, mb.Server, sess, err)
	}
	b.healthy(mb.Server)
	if res.IsError {
		span.Fail("tool_error", "the tool answered an error")
		span.End(nil)
		return nil, toolError(res, mb.ErrorMapping)
	}
	span.End(nil)
	structured := plainJSON(res.StructuredContent)
	return &invoke.Outcome{Output: output(res, structured), Tool: &invoke.ToolResult{Content: res.Content, Structured: structured}}, nil
}

// reporter passes a call's progress to the caller's function until the call
// returns.
type reporter struct {
	mu      sync.Mutex
	f       invoke.ProgressFunc
	stopped bool
}

func (r *reporter) report(p *mcp.ProgressNotificationParams) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stopped {
		r.f(p.Progress, p.Total, p.Message)
	}
}

// stop ends the reports: none is made once it returns.
func (r *reporter) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}

// report passes an upstream's progress notification to the call whose token
// it carries, if that call is still in flight, and reports whether there
// was one.
func (b *Binding) report(p *mcp.ProgressNotificationParams) bool {
	token, ok := p.ProgressToken.(string)
	if !ok {
		return false
	}
	r, ok := b.progress.Load(token)
	if ok {
		r.(*reporter).report(p)
	}
	return ok
}

// ordered wraps a stdio or SSE upstream's transport so that its progress
// notifications are reported as soon as they are read, ahead of the
// response that follows them: the SDK hands notifications to a goroutine
// of their own but responses straight to the waiting call, so the last
// notifications of a call could otherwise come after it returned, and be
// lost. The SDK's streamable HTTP client cannot be wrapped (it needs its
// own connection type), so there progress takes the SDK's path; the
// binding uses mcpconn.HTTPSession for such servers anyway.
func (b *Binding) ordered(t mcp.Transport) mcp.Transport {
	switch t.(type) {
	case *mcp.CommandTransport, *mcp.SSEClientTransport:
		return orderedTransport{Transport: t, b: b}
	}
	return t
}

type orderedTransport struct {
	mcp.Transport
	b *Binding
}

func (t orderedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &orderedConn{Connection: c, b: t.b}, nil
}

type orderedConn struct {
	mcp.Connection
	b *Binding
}

// Read returns the upstream's next message, reporting the progress
// notifications of calls in flight on the way.
func (c *orderedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && req.Method == "notifications/progress" {
			p := new(mcp.ProgressNotificationParams)
			if json.Unmarshal(req.Params, p) == nil && c.b.report(p) {
				continue
			}
		}
		return msg, nil
	}
}

// healthy resets the failure count after a successful call.
func (b *Binding) healthy(name string) {
	if u, err := b.upstream(name); err == nil {
		u.mu.Lock()
		u.failures = 0
		u.mu.Unlock()
	}
}

// callError classifies a failed tools/call: a JSON-RPC error is the
// upstream refusing the call; a call whose context ended was cancelled
// upstream, and its session lives on; a closed connection marks the
// session dead.
func (b *Binding) callError(ctx context.Context, server string, sess session, err error) error {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return &invoke.Error{Code: invoke.CodeUpstreamError, Message: fmt.Sprintf("MCP server %q refused the call: %s (JSON-RPC %d)", server, wire.Message, wire.Code), Cause: err}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &invoke.Error{Code: invoke.CodeTimeout, Retryable: true, Message: "the MCP tool did not answer in time", Cause: err}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("the call to MCP server %q was cancelled: %w", server, err)
	}
	// Anything else is the transport failing (a closed connection, EOF
	// from a crashed process): the session is dead; a retry reconnects.
	{
		if u, uerr := b.upstream(server); uerr == nil {
			u.mu.Lock()
			if u.session == sess {
				u.session = nil
				b.failed(u, err)
				u.retryAt = time.Time{} // reconnect on the next attempt
				go sess.Close()         // and end this one, its process or its stream
			}
			u.mu.Unlock()
		}
		return &invoke.Error{Code: invoke.CodeUpstreamUnavailable, Retryable: true, Message: fmt.Sprintf("MCP server %q: %v", server, err), Cause: err}
	}
}

// output is the tool result as JSON: the structured content when there is
// one (structured, as plainJSON made it); else the text, parsed when it is
// a JSON object or array; else {"text": …, "content": [...]}.
func output(res *mcp.CallToolResult, structured any) any {
	if structured != nil {
		return structured
	}
	text, onlyText := joinText(res.Content)
	if onlyText {
		t := strings.TrimSpace(text)
		if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			var v any
			if json.Unmarshal([]byte(t), &v) == nil {
				return capability.Normalize(v)
			}
		}
	}
	return map[string]any{"text": text, "content": contentJSON(res.Content)}
}

// contentJSON is normalize(content) without the JSON round trip when every
// block is plain text (no _meta, no annotations, valid UTF-8), the common
// case: each is {"type": "text", "text": …}, as the round trip makes it.
func contentJSON(content []mcp.Content) any {
	if content == nil {
		return nil
	}
	out := make([]any, 0, len(content))
	for _, c := range content {
		t, ok := c.(*mcp.TextContent)
		if !ok || len(t.Meta) > 0 || t.Annotations != nil || !utf8.ValidString(t.Text) {
			return normalize(content)
		}
		out = append(out, map[string]any{"type": "text", "text": t.Text})
	}
	return out
}

func joinText(content []mcp.Content) (string, bool) {
	var parts []string
	only := true
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		} else {
			only = false
		}
	}
	return strings.Join(parts, "\n"), only && len(parts) > 0
}

// plainJSON returns v normalised as capability.Normalize does: in place
// when it is what decoding JSON makes (as the SDK decodes a result's
// structuredContent), else through a JSON round trip.
func plainJSON(v any) any {
	switch v.(type) {
	case nil:
		return nil
	case map[string]any, []any, string, float64, bool:
		return capability.Normalize(v)
	}
	return normalize(v)
}

func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return capability.Normalize(out)
}

// toolError maps an isError result: the upstream's code is the
// structured content's "code" (or "error.code"), else the first
// error_mapping key found in the text; the mapping then names the declared
// code.
func toolError(res *mcp.CallToolResult, mapping map[string]string) error {
	text, _ := joinText(res.Content)
	code := ""
	if m, ok := normalize(res.StructuredContent).(map[string]any); ok {
		if c, ok := m["code"].(string); ok {
			code = c
		} else if e, ok := m["error"].(map[string]any); ok {
			code, _ = e["code"].(string)
		}
	}
	if code == "" {
		for k := range mapping {
			if strings.Contains(text, k) && (code == "" || len(k) > len(code)) {
				code = k
			}
		}
	}
	if code == "" {
		code = invoke.CodeUpstreamError
	}
	if text == "" {
		text = "the tool reported an error"
	}
	return &invoke.Error{Code: code, Message: text, Details: map[string]any{"content": normalize(res.Content)}}
}

// Status reports the pool: per server, whether a session is up, which
// client holds it ("http": mcpconn's HTTPSession; "stdio": its
// StdioSession; "sdk": the Go SDK's), how many times it was started, and
// the last error.
func (b *Binding) Status() map[string]map[string]any {
	b.mu.Lock()
	ups := make([]*upstream, 0, len(b.upstreams))
	for _, u := range b.upstreams {
		ups = append(ups, u)
	}
	b.mu.Unlock()
	out := map[string]map[string]any{}
	for _, u := range ups {
		u.mu.Lock()
		st := map[string]any{"up": u.session != nil, "starts": u.starts, "failures": u.failures}
		switch u.session.(type) {
		case httpSession:
			st["client"] = "http"
		case sdkSession:
			st["client"] = "sdk"
		case stdioSession:
			st["client"] = "stdio"
		}
		if u.lastErr != nil {
			st["last_error"] = u.lastErr.Error()
		}
		if u.cmd != nil && u.cmd.Process != nil {
			st["pid"] = u.cmd.Process.Pid
		}
		u.mu.Unlock()
		out[u.name] = st
	}
	return out
}

// Close ends every session and kills every started server's process group.
func (b *Binding) Close() error {
	b.mu.Lock()
	b.closed = true
	ups := b.upstreams
	b.upstreams = map[string]*upstream{}
	b.mu.Unlock()
	b.cancel()
	for _, u := range ups {
		u.mu.Lock()
		if u.session != nil {
			_ = u.session.Close()
		}
		if u.cmd != nil {
			_ = mcpconn.KillGroup(u.cmd)
		}
		u.session, u.cmd = nil, nil
		u.mu.Unlock()
	}
	return nil
}
