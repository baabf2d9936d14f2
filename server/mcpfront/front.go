// Package mcpfront fronts saved upstream MCP servers transparently: a server
// saved in caphub (discover.ServerAPI) is reachable as an MCP server of its
// own, over streamable HTTP and over the 2024-11-05 SSE transport, and caphub
// relays everything between the client and the upstream, applying its
// policy to tools/call and recording every call.
//
// # Paths
//
// Mount Handler at /mcp/servers/ on a mux, without stripping the prefix (the
// SSE transport tells the client where to post by echoing the request path):
//
//	/mcp/servers/{name}      streamable HTTP (POST, GET, DELETE)
//	/mcp/servers/{name}/sse  SSE: GET opens a session, POST ?sessionid=… sends to it
//
// {name} is the saved server's name. A name that is not saved answers 404
// with a message that says how to save one.
//
// # Two relays
//
// One downstream session maps to one upstream session, relayed one of two
// ways.
//
// The HTTP relay serves a saved streamable HTTP server (transport http) on
// the streamable endpoint: a reverse proxy for the streamable HTTP
// transport. Each downstream POST is one upstream POST of the same body (a
// message or a batch), and the upstream's answer is relayed as it comes:
// JSON, 202, or an SSE stream passed on read by read. GET (the standalone
// stream, and streams resumed with Last-Event-ID) and DELETE are relayed
// alike. Because the upstream's stream for a request is relayed as the
// downstream's stream for that request, what the upstream sends during a
// call (progress, log messages, sampling, elicitation and roots requests)
// reaches the client on that call's stream, and the client's answers come
// back as POSTs that are forwarded in turn. The front makes the session id
// the client sees (crypto/rand) and maps it to the upstream's; it forwards
// only the transport's headers (Content-Type, Accept,
// Mcp-Protocol-Version, Last-Event-ID), never the client's Authorization
// or Cookie (caphub's own credentials), and adds the saved server's
// headers. It reads the tools/call requests of each body before
// forwarding it (a refused call is answered by the front and never
// reaches the upstream) and the responses that pass, without holding them
// back, to record each call's outcome. Bodies the policy could misread
// (invalid JSON or UTF-8, duplicate members) are refused with 400. Its
// upstream connections are kept alive, so the latency it adds is about
// what any HTTP proxy hop costs.
//
// The SDK relay serves everything else: stdio servers, SSE servers (and
// HTTP servers that turn out to speak only SSE: the HTTP relay hands over
// when the upstream refuses its initialize POST with 400, 404 or 405), and
// the SSE endpoint. The downstream side is an mcp.Server per saved name,
// served by the SDK's own streamable and SSE handlers; a receiving
// middleware sees every request and notification with the request's
// context (so whatever is sent with it lands on the request's stream), and
// relays it upstream through an SDK client session's own sending method
// handler, which sends any method the SDK knows with the params as
// received. Upstream-to-client traffic takes the mirror path. The SDK maps
// the ids on each side; cancelling a downstream request cancels the
// upstream call. It offers the client's protocol version and capabilities
// upstream and answers with the upstream's capabilities, server info and
// instructions. Its limits: only the methods the SDK knows are relayed,
// results pass through the SDK's types (fields it does not model are
// dropped), and each call crosses a second SDK streamable HTTP hop, which
// costs 0.4 to 0.8 ms; the HTTP relay has none of these.
//
// Neither relay works below the SDK as a JSON-RPC relay between two SDK
// connections would: the SDK's streamable transport routes a message to a
// request's stream only through a context key its ServerSession sets
// (unexported), so such a relay would send what the upstream sends during
// a call to the standalone GET stream, which the spec reserves for
// messages unrelated to a request and which a client may not open. The
// HTTP relay sidesteps this by relaying streams, not messages.
//
// Both relays are session-based: the sessionless 2026-07-28 protocol is
// not offered. A POST without a session id that is not an initialize
// (server/discover, say) is answered by the SDK relay as a session-based
// server answers it, and clients fall back to initialize.
//
// # Routing in the SDK relay
//
// Progress notifications go to the request that carries their token. Other
// upstream traffic carries no link to the request that caused it, so log
// messages and server-to-client requests go to the oldest request in flight
// that can cause them (tools/call, prompts/get, resources/read,
// completion/complete), and list_changed and resource updates, like any
// message when nothing is in flight, to the session's standalone stream.
// The progress and log notifications of a stdio upstream are relayed as
// soon as they are read, so that they reach the client before the response
// that follows them (the SDK would hand them to a goroutine that a response
// can overtake).
//
// # Bounds
//
// Sessions idle for Options.IdleTimeout (no request in flight) are closed,
// and beyond Options.MaxSessions per saved server the least recently
// active one is: many clients never end their sessions. Closing a session
// ends its upstream session (DELETE for an HTTP upstream, the process group
// for a stdio one); Close ends them all. A session of the SDK relay holds
// two goroutines and, for a stdio server, a process; one of the HTTP relay
// holds nothing but its relayed requests. The HTTP relay reads request
// bodies whole and refuses those over 4 MiB with 413.
package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/server/guard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerSource finds saved upstream connections (discover.ServerAPI is one).
type ServerSource interface {
	GetServer(ctx context.Context, name string) (*discover.SavedServer, error)
}

// Hooks are the policy and the record of fronted tools/call requests
// (*invoke.Pipeline is one). Authorize returns nil to allow the call, or an
// error (an *invoke.Error with code DENIED or APPROVAL_REQUIRED) to refuse
// it; Emit receives one record per call, refused ones included.
type Hooks interface {
	Authorize(ctx context.Context, call *invoke.Call) error
	Emit(ctx context.Context, rec invoke.Record)
}

var _ Hooks = (*invoke.Pipeline)(nil)

// Options tune a Front.
type Options struct {
	// Version is caphub's version, reported to upstream servers as the
	// client's version.
	Version string
	// Log receives the front's logs (slog.Default when nil). The MCP SDK's
	// own logs go there from level Warn up.
	Log *slog.Logger
	// AllowedOrigins are the browser origins accepted besides the loopback
	// ones (http and https on localhost, 127.0.0.1 and [::1], any port),
	// written scheme://host[:port]; "scheme://host:*" accepts any port and
	// "*" any origin. A request with another Origin header gets 403.
	AllowedOrigins []string
	// AllowedHosts are the Host header values accepted besides loopback names
	// and addresses: "host" (any port), "host:port", or "*" for any. A
	// request with another Host gets 403 (DNS-rebinding protection).
	AllowedHosts []string
	// IdleTimeout closes a streamable HTTP session (and its upstream) after
	// it has received no request for this long. Default 30 minutes; negative
	// never closes idle sessions. SSE sessions end with their GET stream.
	IdleTimeout time.Duration
	// MaxSessions bounds the sessions relayed at once to one saved server
	// (each may hold a started process): when a client initialises beyond
	// it, the least recently active session is closed. Clients that never
	// end their sessions (many do not send DELETE) would otherwise keep
	// their upstreams until IdleTimeout. Default 32; negative: no bound.
	MaxSessions int
}

// Front serves saved upstream MCP servers. It is safe for concurrent use.
type Front struct {
	servers ServerSource
	hooks   Hooks
	opts    Options
	log     *slog.Logger
	sdkLog  *slog.Logger
	guard   *guard.Guard

	// ctx lives as long as the front; upstream sessions are bound to it.
	ctx    context.Context
	cancel context.CancelFunc

	// upstream carries the HTTP relay's requests to every upstream.
	upstream *http.Transport
	// sdkRelayOnly turns the HTTP relay off (tests compare the two).
	sdkRelayOnly bool

	mu           sync.Mutex
	closed       bool
	fronts       map[string]*front               // by saved name, built on first use
	sessions     map[*mcp.ServerSession]*session // the SDK relay's initialised sessions
	httpSessions map[string]*httpSession         // the HTTP relay's sessions, by downstream id
	wg           sync.WaitGroup                  // per-session watchers and evictions
}

// front is one saved server's downstream side: an mcp.Server whose
// middleware relays to the upstream session of each of its sessions, and
// the SDK's HTTP handlers over it.
type front struct {
	name       string
	server     *mcp.Server
	sendDown   mcp.MethodHandler // the server's own sending handler
	streamable *mcp.StreamableHTTPHandler
	sse        *mcp.SSEHandler
}

// New returns a front over saved servers. hooks may be nil: every call is
// then allowed and nothing is recorded.
func New(servers ServerSource, hooks Hooks, opts Options) *Front {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = 30 * time.Minute
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = 32
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Front{
		servers:      servers,
		hooks:        hooks,
		opts:         opts,
		log:          opts.Log,
		sdkLog:       slog.New(minLevel{opts.Log.Handler(), slog.LevelWarn}),
		guard:        guard.New(guard.Options{AllowedHosts: opts.AllowedHosts, AllowedOrigins: opts.AllowedOrigins}),
		ctx:          ctx,
		cancel:       cancel,
		upstream:     newUpstreamTransport(),
		fronts:       map[string]*front{},
		sessions:     map[*mcp.ServerSession]*session{},
		httpSessions: map[string]*httpSession{},
	}
}

// Handler returns the HTTP handler to mount at /mcp/servers/ (see the
// package documentation for the paths).
func (f *Front) Handler() http.Handler { return http.HandlerFunc(f.serveHTTP) }

// mountPrefix is where Handler expects to be mounted.
const mountPrefix = "/mcp/servers/"

// serverNameRE is mcpconn's rule for saved server names.
var serverNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// parsePath reads {name} and the transport from a request path:
// /mcp/servers/{name} and /mcp/servers/{name}/sse. A path already stripped
// of the prefix ({name}, {name}/sse) is read too, though the SSE endpoint
// the client is told to post to is then wrong: mount without stripping.
func parsePath(p string) (name string, sse bool, ok bool) {
	rest, found := strings.CutPrefix(p, mountPrefix)
	if !found {
		rest = strings.TrimPrefix(p, "/")
	}
	rest = strings.TrimSuffix(rest, "/")
	name, tail, _ := strings.Cut(rest, "/")
	switch tail {
	case "":
	case "sse":
		sse = true
	default:
		return "", false, false
	}
	return name, sse, name != ""
}

func (f *Front) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if ref := f.guard.Check(r); ref != nil {
		guard.Write(w, r, ref)
		return
	}
	name, sse, ok := parsePath(r.URL.Path)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no MCP endpoint at %s: fronted servers are at %s{name} (streamable HTTP) and %s{name}/sse (SSE)", r.URL.Path, mountPrefix, mountPrefix))
		return
	}
	if !serverNameRE.MatchString(name) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%q is not a saved MCP server name (names match [a-z][a-z0-9-]*)", name))
		return
	}
	r = liftDeadlines(w, r)
	var checked bool
	if !sse && !f.sdkRelayOnly {
		var handled bool
		if handled, checked = f.serveRelay(w, r, name); handled {
			return
		}
	}
	fr, status, err := f.frontFor(r, name, sse, checked)
	if err != nil {
		writeError(w, status, err.Error())
		return
	}
	if sse {
		fr.sse.ServeHTTP(w, r)
		return
	}
	fr.streamable.ServeHTTP(w, r)
}

// frontFor returns the downstream side of a saved server. A request that
// opens a session checks that the server is still saved (unless checked:
// it was just found saved); one that belongs to a session (it names one)
// does not touch the store.
func (f *Front) frontFor(r *http.Request, name string, sse, checked bool) (*front, int, error) {
	f.mu.Lock()
	closed, fr := f.closed, f.fronts[name]
	f.mu.Unlock()
	if closed {
		return nil, http.StatusServiceUnavailable, errors.New("caphub is shutting down: reconnect later")
	}
	inSession := r.Header.Get("Mcp-Session-Id") != ""
	if sse {
		inSession = r.Method == http.MethodPost
	}
	if fr != nil && inSession {
		return fr, 0, nil
	}
	if !checked {
		if _, status, err := f.savedServer(r, name); err != nil {
			return nil, status, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, http.StatusServiceUnavailable, errors.New("caphub is shutting down: reconnect later")
	}
	if fr = f.fronts[name]; fr == nil {
		fr = f.newFront(name)
		f.fronts[name] = fr
	}
	return fr, 0, nil
}

// savedServer reads a saved server, with the status to answer when it
// cannot.
func (f *Front) savedServer(r *http.Request, name string) (*discover.SavedServer, int, error) {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return nil, http.StatusServiceUnavailable, errors.New("caphub is shutting down: reconnect later")
	}
	saved, err := f.servers.GetServer(r.Context(), name)
	if err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			return nil, http.StatusNotFound, err
		}
		f.log.Error("mcpfront: reading the saved server", "server", name, "error", err)
		return nil, http.StatusInternalServerError, fmt.Errorf("reading the saved MCP server %q: %v", name, err)
	}
	return saved, 0, nil
}

// legacyVersions are the protocol versions the front offers: every version
// of the SDK that negotiates sessions with initialize (before 2026-07-28).
var legacyVersions = func() []string {
	var vs []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v < "2026-07-28" {
			vs = append(vs, v)
		}
	}
	return vs
}()

// newFront builds the downstream side of a saved server.
func (f *Front) newFront(name string) *front {
	fr := &front{name: name}
	fr.server = mcp.NewServer(&mcp.Implementation{Name: "caphub/" + name, Version: f.opts.Version}, &mcp.ServerOptions{
		Logger:                    f.sdkLog,
		SupportedProtocolVersions: legacyVersions,
		Capabilities:              &mcp.ServerCapabilities{}, // the upstream's are answered
	})
	// A pass-through sending middleware hands over the server's own sending
	// handler, which sends any client-bound method the SDK knows.
	fr.server.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		fr.sendDown = next
		return next
	})
	fr.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return f.receive(ctx, fr, next, method, req)
		}
	})
	getServer := func(*http.Request) *mcp.Server { return fr.server }
	timeout := f.opts.IdleTimeout
	if timeout < 0 {
		timeout = 0
	}
	// The front's guard checks Host and Origin before the SDK's handlers see
	// a request; the SDK's own check (loopback address, loopback Host) would
	// refuse the hosts AllowedHosts lets through behind a local proxy.
	fr.streamable = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger:                     f.sdkLog,
		SessionTimeout:             timeout,
		DisableLocalhostProtection: true,
	})
	fr.sse = mcp.NewSSEHandler(getServer, &mcp.SSEOptions{DisableLocalhostProtection: true})
	return fr
}

// Close ends every session, closing its upstream session and killing the
// process group of every stdio server the front started. Requests after
// Close get 503.
func (f *Front) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	closers := make([]func(), 0, len(f.sessions)+len(f.httpSessions))
	for _, s := range f.sessions {
		closers = append(closers, s.close)
	}
	for _, s := range f.httpSessions {
		closers = append(closers, func() { s.close(true) })
	}
	f.mu.Unlock()
	f.cancel()
	var wg sync.WaitGroup
	for _, c := range closers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c()
		}()
	}
	wg.Wait()
	f.wg.Wait()
	f.upstream.CloseIdleConnections()
	return nil
}

// Sessions reports how many downstream sessions are relayed now.
func (f *Front) Sessions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions) + len(f.httpSessions)
}

// liftDeadlines frees an MCP request from the server's read and write
// timeouts, which are sized for REST calls: a stream (SSE, or a tool call
// that runs long) outlives them, and they would cut it. The body must still
// arrive within the read timeout: the read deadline is lifted once it has
// been read. Sessions are bounded by IdleTimeout and MaxSessions instead.
func liftDeadlines(w http.ResponseWriter, r *http.Request) *http.Request {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	if r.Body == nil || r.Body == http.NoBody {
		_ = rc.SetReadDeadline(time.Time{})
		return r
	}
	r.Body = &liftOnEOF{ReadCloser: r.Body, rc: rc}
	return r
}

// liftOnEOF lifts the connection's read deadline once the body is read.
type liftOnEOF struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *liftOnEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) })
	}
	return n, err
}

// writeError answers an HTTP request that reached no session with a
// JSON-RPC error body, readable by MCP clients and people alike.
func writeError(w http.ResponseWriter, status int, msg string) {
	code := jsonrpc.CodeInvalidRequest
	if status >= 500 {
		code = jsonrpc.CodeInternalError
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// minLevel drops records below a level (the SDK logs every session at Info).
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(attrs), h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
}
