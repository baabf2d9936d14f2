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
// # Three relays
//
// One downstream session maps to one upstream session (or, for a server
// saved with sessions: shared, to a share of one), relayed one of three
// ways, each in a package of its own; the front dispatches each request
// to one of them, and all share (package internal/relay) the policy and
// record of tools/call, the one classification of a call's outcome, and
// the table of sessions that bounds them.
//
// The HTTP relay (package httprelay) serves a saved streamable HTTP server (transport http) on
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
// The stdio relay (package stdiorelay) serves a saved stdio server on the
// streamable endpoint at the JSON-RPC level, as the HTTP relay does for
// HTTP: it writes out the server side of the streamable transport, speaks
// newline-delimited JSON-RPC to the process it starts, and rewrites only
// ids, progress tokens and cancellations, so results pass byte for byte.
// Per client, each session has a process; shared, one process serves every
// session of the saved server (see the package for its routing).
//
// The SDK relay (package sdkrelay) serves everything else: SSE servers (and
// HTTP servers that turn out to speak only SSE: the HTTP relay hands over
// when the upstream refuses its initialize POST with 400, 404 or 405), HTTP
// servers saved with shared sessions, and the SSE endpoint. The downstream side is an mcp.Server per saved name,
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
// A JSON-RPC relay between two SDK connections would not do: the SDK's
// streamable transport routes a message to a request's stream only through
// a context key its ServerSession sets (unexported), so such a relay would
// send what the upstream sends during a call to the standalone GET stream,
// which the spec reserves for messages unrelated to a request and which a
// client may not open. The HTTP relay sidesteps this by relaying streams,
// the stdio relay by writing the transport itself.
//
// The relays are session-based: the sessionless 2026-07-28 protocol is
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
// # Session modes
//
// A saved server's Sessions (mcpconn.Server) chooses how client sessions
// map to upstream sessions. Per-client (the default) gives each client
// session an upstream session of its own, for a stdio server a process of
// its own: clients are isolated, the server keeps its state per client, and
// each session costs a process (32 clients of npm server-everything: 32
// processes, 2.2 GiB resident; shared: one, 74 MiB).
// Shared serves every client session of the server with one upstream
// session (one process), connected on the first client, connected again on
// the next one after it died (its sessions end with it), and ended a grace
// (a minute, or IdleTimeout when shorter) after the last client left, and
// on Close. It is cheap, but whatever the server keeps in its session is
// shared: server-memory's graph, server-filesystem's roots, subscriptions,
// the log level. Choose it for servers that keep no client state, or whose
// state the clients are meant to share.
//
// A shared upstream is relayed by the SDK relay, even over streamable
// HTTP, which routes what the upstream sends to the client it belongs to.
// The SDK client session maps request ids. Each request's progress token
// is replaced upstream by one unique on the shared session, and progress
// comes back to the request's client with its own token, of its own type.
// A client's cancellation cancels its own upstream call only. Resource
// subscriptions are counted: updates go to the clients that subscribed,
// and a client's unsubscribe reaches the upstream when no other client
// holds the subscription. list_changed notifications go to every client.
// logging/setLevel sets the upstream's level to the most verbose any client
// asked for, and each client gets the log messages of its own level. The
// upstream is told its client can answer sampling, elicitation (form and
// URL) and roots requests, since any client may come along: each such
// request goes to the oldest call in flight that can cause it (tools/call,
// prompts/get, resources/read, completion/complete) whose client declared
// the capability, and with none in flight to the standalone stream of the
// most recently active client that did; a request no client can answer
// (or only calls of clients that cannot are in flight) is answered
// upstream with an error. Nothing in MCP links such a request to the call
// that caused it, so when calls of two clients overlap, the older call's
// client is asked: the heuristic per-client sessions use within a session,
// across clients. Each client's initialize is answered with the upstream's
// capabilities, server info and instructions; the upstream negotiated the
// newest protocol version once.
//
// # Bounds
//
// Sessions idle for Options.IdleTimeout (no request in flight) are closed:
// many clients never end their sessions. A session beyond
// Options.MaxSessionsPerServer or Options.MaxSessions is refused with 503
// and an error naming the limit; no session a client still uses is closed
// to make room. Closing a session
// ends its upstream session (DELETE for an HTTP upstream, the process group
// for a stdio one; a shared process ends a grace after its last session);
// Close ends them all. A session of the SDK relay holds two goroutines and,
// for a stdio server, a process; one of the stdio relay holds its process
// (three goroutines), or a share of one; one of the HTTP relay holds
// nothing but its relayed requests. The HTTP and stdio relays read request
// bodies whole and refuse those over 4 MiB with 413.
package mcpfront

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/server/guard"
	"github.com/caphub/caphub/internal/server/mcpfront/httprelay"
	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/caphub/caphub/internal/server/mcpfront/sdkrelay"
	"github.com/caphub/caphub/internal/server/mcpfront/stdiorelay"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/mcpconn"
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
	// IdleTimeout closes a streamable HTTP session (and its upstream,
	// reaping a stdio server's process) after it has received no request
	// for this long: many clients never end their sessions. Default
	// DefaultIdleTimeout; negative never closes idle sessions. SSE sessions
	// end with their GET stream.
	IdleTimeout time.Duration
	// MaxSessionsPerServer bounds the sessions relayed at once to one saved
	// server (each may hold a started process); MaxSessions bounds them all
	// together. A session beyond either is refused (503, with an error that
	// names the limit and the setting), never made by closing one a client
	// still uses. Defaults DefaultMaxSessionsPerServer and
	// DefaultMaxSessions; negative: no bound.
	MaxSessionsPerServer int
	MaxSessions          int
	// StartConcurrency bounds the stdio servers starting at once (a start
	// ends with the server's answer to initialize); more wait their turn,
	// as long as their client waits. Default DefaultStartConcurrency.
	StartConcurrency int
	// StartTimeout bounds each session's start, its wait for a turn aside.
	// Default mcpconn.DefaultStartTimeout.
	StartTimeout time.Duration
}

// Defaults of Options.
const (
	DefaultIdleTimeout          = 10 * time.Minute
	DefaultMaxSessionsPerServer = 128
	DefaultMaxSessions          = 512
)

// DefaultStartConcurrency is twice the CPUs, at least 4: a Node server
// spends about a second of CPU starting.
var DefaultStartConcurrency = max(4, 2*runtime.NumCPU())

// Front serves saved upstream MCP servers. It is safe for concurrent use.
type Front struct {
	env   *relay.Env
	guard *guard.Guard
	// cancel ends env.Ctx, to which upstream sessions are bound.
	cancel context.CancelFunc

	http  *httprelay.Relay
	stdio *stdiorelay.Relay
	sdk   *sdkrelay.Relay
	// sdkRelayOnly turns the HTTP and stdio relays off, sdkStdio the stdio
	// relay only (tests and benchmarks compare them).
	sdkRelayOnly bool
	sdkStdio     bool
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
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxSessionsPerServer == 0 {
		opts.MaxSessionsPerServer = DefaultMaxSessionsPerServer
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.StartConcurrency <= 0 {
		opts.StartConcurrency = DefaultStartConcurrency
	}
	ctx, cancel := context.WithCancel(context.Background())
	env := &relay.Env{
		Ctx:          ctx,
		Servers:      servers,
		Hooks:        hooks,
		Sessions:     relay.NewSessions(relay.Limits{PerServer: max(opts.MaxSessionsPerServer, 0), Total: max(opts.MaxSessions, 0)}),
		Version:      opts.Version,
		IdleTimeout:  opts.IdleTimeout,
		Spawner:      mcpconn.NewSpawner(opts.StartConcurrency),
		StartTimeout: opts.StartTimeout,
		Log:          opts.Log,
		SDKLog:       slog.New(minLevel{opts.Log.Handler(), slog.LevelWarn}),
	}
	return &Front{
		env:    env,
		guard:  guard.New(guard.Options{AllowedHosts: opts.AllowedHosts, AllowedOrigins: opts.AllowedOrigins}),
		cancel: cancel,
		http:   httprelay.New(env),
		stdio:  stdiorelay.New(env),
		sdk:    sdkrelay.New(env),
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
		relay.WriteError(w, http.StatusNotFound, fmt.Sprintf("no MCP endpoint at %s: fronted servers are at %s{name} (streamable HTTP) and %s{name}/sse (SSE)", r.URL.Path, mountPrefix, mountPrefix))
		return
	}
	if !serverNameRE.MatchString(name) {
		relay.WriteError(w, http.StatusNotFound, fmt.Sprintf("%q is not a saved MCP server name (names match [a-z][a-z0-9-]*)", name))
		return
	}
	if opensSession(r, sse) {
		if err := f.env.Sessions.Admit(name); err != nil {
			relay.WriteError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
	}
	r = identity.FromRequest(liftDeadlines(w, r), "")
	if sse || f.sdkRelayOnly {
		f.sdk.Serve(w, r, name, sse, false)
		return
	}
	f.serveStreamable(w, r, name)
}

// opensSession reports whether a request would open a session: a POST
// without a session id on the streamable endpoint, a GET on the SSE one.
func opensSession(r *http.Request, sse bool) bool {
	if sse {
		return r.Method == http.MethodGet
	}
	return r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
}

// serveStreamable dispatches a request on the streamable endpoint of a
// saved server: to the HTTP or the stdio relay when it belongs to one of
// their sessions or opens one (a streamable HTTP server that accepts the
// relay's initialize, a stdio server), else to the SDK relay.
func (f *Front) serveStreamable(w http.ResponseWriter, r *http.Request, name string) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid != "" {
		if f.env.Sessions.Closed() {
			relay.WriteError(w, http.StatusServiceUnavailable, relay.ShuttingDown)
			return
		}
		s := f.env.Sessions.Get(sid)
		switch s := s.(type) {
		case *httprelay.Session:
			if s.Server() == name {
				s.Serve(w, r)
				return
			}
		case *stdiorelay.Session:
			if s.Server() == name {
				s.Serve(w, r)
				return
			}
		}
		if s != nil || !f.sdk.Knows(name) {
			relay.WriteError(w, http.StatusNotFound, fmt.Sprintf("session not found: %s has no session %q (it ended, or never existed): initialize a new one", r.URL.Path, sid))
			return
		}
	}
	checked := false
	if sid == "" && r.Method == http.MethodPost {
		var handled bool
		if handled, checked = f.http.Open(w, r, name); handled {
			return
		}
		if !f.sdkStdio && f.stdio.Open(w, r, name) {
			return
		}
	}
	f.sdk.Serve(w, r, name, false, checked)
}

// Close ends every session, closing its upstream session and killing the
// process group of every stdio server the front started. Requests after
// Close get 503.
func (f *Front) Close() error {
	sessions, ok := f.env.Sessions.Close()
	if !ok {
		return nil
	}
	f.cancel()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(s.Close)
	}
	wg.Wait()
	f.env.Sessions.Wait()
	f.sdk.Close()
	f.stdio.Wait(5 * time.Second)
	f.http.CloseIdleConnections()
	return nil
}

// Sessions reports how many downstream sessions are relayed now.
func (f *Front) Sessions() int { return f.env.Sessions.Len() }

// SessionsByServer counts the relayed sessions of each saved server.
func (f *Front) SessionsByServer() map[string]int { return f.env.Sessions.ByServer() }

// Spawns are the stdio servers the front started and the starts that
// failed so far.
func (f *Front) Spawns() (started, failed int64) { return f.env.Spawner.Counts() }

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
