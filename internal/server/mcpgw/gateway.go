// Package mcpgw serves caphub's registry as one MCP server, so that any MCP
// client (an IDE, an agent framework, the MCP Inspector) reaches every
// registered capability through a single connection.
//
// In the "tools" mode (the default) each invocable capability is one tool:
// the latest version of every capability, except bundles without a binding
// and Agent OS device-only capabilities, named by ToolName, with the
// capability's input schema, its object output schema and hints from its
// effects. A tools/call runs the capability through the invocation pipeline;
// a failure is a tool error carrying the capability's declared error code.
// The gateway watches the store and sends notifications/tools/list_changed
// when the registry changes.
//
// In the "search" mode the gateway serves three tools instead,
// find_capabilities (compact summaries, see capability.Summary),
// describe_capability (one capability's full definition) and
// invoke_capability, so that an agent facing thousands of capabilities is
// not handed thousands of schemas. A registry with more invocable
// capabilities than Options.MaxTools gets the same in the tools mode
// (Options.LargeCatalog), and says so in the server's instructions; or,
// as the operator chooses, its tools/list is refused with an error that
// says what to do. No tools/list answer passes Options.MaxListBytes: the
// tools come a page at a time (nextCursor), on every endpoint.
//
// Handler serves the streamable HTTP transport and the older HTTP+SSE one
// (see Handler for the paths), both guarded against DNS rebinding by Host
// and Origin checks; ServeStdio serves one client over stdio (caphub mcp).
// Calls run for the caller the HTTP request's context carries (see
// identity.FromRequest): with tokens, the one the auth middleware
// authenticated; else the agent its header identity.Header
// (X-Caphub-Agent) names, the request that opened the session fixing it
// for a session's calls (the GET on the SSE transport).
package mcpgw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/server/guard"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/internal/wait"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Modes of a Gateway.
const (
	// ModeTools serves every invocable capability as a tool.
	ModeTools = "tools"
	// ModeSearch serves find_capabilities, describe_capability and
	// invoke_capability only.
	ModeSearch = "search"
)

// CheckMode returns an error unless mode is "", ModeTools or ModeSearch; use
// it to validate a --tool-mode flag before calling New.
func CheckMode(mode string) error {
	switch mode {
	case "", ModeTools, ModeSearch:
		return nil
	}
	return fmt.Errorf("unknown MCP tool mode %q: use %q (one tool per capability) or %q (find_capabilities, describe_capability and invoke_capability)", mode, ModeTools, ModeSearch)
}

// What the tools mode does with more capabilities than Options.MaxTools.
const (
	// LargeCatalogSearch serves the search tools instead, and says so in
	// the server's instructions (the default).
	LargeCatalogSearch = "search"
	// LargeCatalogRefuse answers tools/list with the error
	// CodeCatalogTooLarge, which says what to do.
	LargeCatalogRefuse = "refuse"
)

// DefaultMaxTools is Options.MaxTools when it is 0: more tools than this
// crowd an agent's context (GitHub's API alone is 1,223).
const DefaultMaxTools = 100

// CodeCatalogTooLarge is the JSON-RPC error code of a tools/list refused
// because the registry holds more capabilities than the gateway lists
// (LargeCatalogRefuse); the error's data holds "tools" and "max_tools".
const CodeCatalogTooLarge = -32002

// CheckLargeCatalog returns an error unless choice is "",
// LargeCatalogSearch or LargeCatalogRefuse; use it to validate a flag
// before calling New.
func CheckLargeCatalog(choice string) error {
	switch choice {
	case "", LargeCatalogSearch, LargeCatalogRefuse:
		return nil
	}
	return fmt.Errorf("unknown large-catalog choice %q: use %q (serve the search tools instead, and say so) or %q (refuse tools/list with an error)", choice, LargeCatalogSearch, LargeCatalogRefuse)
}

// Invoker runs capabilities; *invoke.Pipeline is one.
type Invoker interface {
	Invoke(ctx context.Context, req invoke.Request) (*invoke.Result, error)
}

// Options configure a Gateway.
type Options struct {
	// Mode is ModeTools (the default when empty) or ModeSearch; New treats
	// any other value as ModeTools and logs an error (check flags with
	// CheckMode first).
	Mode string
	// Version is caphub's version, reported as the server's version at
	// initialize.
	Version string
	// Log receives the gateway's logs (slog.Default when nil). The MCP SDK's
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
	// Lazy defers building the tool table to the first MCP request, so a
	// server that holds a large registry but serves few MCP clients pays for
	// the table (memory, start-up time) only when one comes.
	Lazy bool
	// MaxTools bounds the tools the tools mode lists: with more invocable
	// capabilities, LargeCatalog applies (checked again at every change
	// of the registry). 0 means DefaultMaxTools, a negative value no
	// bound. Agents' endpoints list their own tools whatever their number.
	MaxTools int
	// LargeCatalog is what the tools mode does past MaxTools:
	// LargeCatalogSearch (the default when empty) or LargeCatalogRefuse;
	// New treats any other value as LargeCatalogSearch and logs an error
	// (check flags with CheckLargeCatalog first).
	LargeCatalog string
	// MaxListBytes bounds the JSON of one tools/list answer (the request
	// id aside); more tools come on the next page. 0 means
	// DefaultMaxListBytes; less than MinMaxListBytes counts as
	// MinMaxListBytes.
	MaxListBytes int
	// MaxSessions bounds the MCP sessions open at once on each endpoint
	// (/mcp, each agent's): an initialize beyond it is refused with 503 and
	// an error naming the limit. 0 means DefaultMaxSessions, negative no
	// bound.
	MaxSessions int
	// IdleTimeout closes a streamable HTTP session that has received no
	// request for this long (many clients never end their sessions). 0
	// means DefaultIdleTimeout, negative never.
	IdleTimeout time.Duration
}

// Defaults of Options' session bounds.
const (
	DefaultMaxSessions = 4096
	DefaultIdleTimeout = 10 * time.Minute
)

// withDefaults fills in the defaults of the zero values and replaces
// invalid values by defaults, logging why.
func (o Options) withDefaults(log *slog.Logger) Options {
	if err := CheckMode(o.Mode); err != nil {
		log.Error("mcp gateway: "+err.Error()+"; serving one tool per capability", "mode", o.Mode)
		o.Mode = ModeTools
	}
	if o.Mode == "" {
		o.Mode = ModeTools
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if err := CheckLargeCatalog(o.LargeCatalog); err != nil {
		log.Error("mcp gateway: "+err.Error()+"; serving the search tools past the tool limit", "large_catalog", o.LargeCatalog)
		o.LargeCatalog = LargeCatalogSearch
	}
	if o.LargeCatalog == "" {
		o.LargeCatalog = LargeCatalogSearch
	}
	if o.MaxTools == 0 {
		o.MaxTools = DefaultMaxTools
	}
	switch {
	case o.MaxListBytes == 0:
		o.MaxListBytes = DefaultMaxListBytes
	case o.MaxListBytes < MinMaxListBytes:
		log.Warn("mcp gateway: the tools/list bound is raised to its minimum", "max_list_bytes", o.MaxListBytes, "minimum", MinMaxListBytes)
		o.MaxListBytes = MinMaxListBytes
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	return o
}

// Gateway is the registry as one MCP server. It is safe for concurrent use.
type Gateway struct {
	active       atomic.Bool // the tool table is built and kept up to date
	activateOnce sync.Once
	reg          registry.API
	store        registry.Store
	inv          Invoker
	opts         Options
	log          *slog.Logger

	server     *mcp.Server
	streamable *mcp.StreamableHTTPHandler
	sse        *mcp.SSEHandler
	guard      *guard.Guard // Host, Origin and body type checks

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool
	once   sync.Once

	kick     chan struct{}   // capacity 1: the registry changed
	watching <-chan struct{} // closed when the store's watch ended; nil without a store

	refreshMu sync.Mutex // serialises Refresh; guards served and searching
	mu        sync.RWMutex
	byName    map[string]*toolEntry
	byBase    map[string]*toolEntry // by scheme:domain/name

	served      map[string]*toolEntry // the capability tools the MCP server serves
	searching   bool                  // the MCP server serves the search tools
	searchTools []*mcp.Tool           // the search tools, as given to the MCP server
	// catalog is what the MCP server serves now, for its instructions and
	// tools/list; nil until the first build.
	catalog atomic.Pointer[catalogState]
	pager   *listPager

	// servedNow is served, for the fast path to read without refreshMu.
	servedNow atomic.Pointer[map[string]*toolEntry]
	// listing is what tools/list answers now, for the fast path (nil
	// until the first build).
	listing atomic.Pointer[toolListing]
	fast    fastSessions // the streamable sessions (see fast.go)
	// fastOff sends every request to the SDK (tests and benchmarks
	// compare both paths).
	fastOff atomic.Bool
}

// catalogState is what the gateway serves after a build.
type catalogState struct {
	tools  int  // invocable capabilities (the tools mode's tools)
	over   bool // more than MaxTools, in the tools mode
	search bool // the search tools are served
	refuse bool // tools/list is refused (over, with LargeCatalogRefuse)
}

// Timing of the watch loop.
const (
	debounce     = 100 * time.Millisecond // quiet time before a rebuild
	maxDebounce  = time.Second            // longest a rebuild waits under a stream of changes
	minRetry     = 100 * time.Millisecond // first wait before watching (or rebuilding) again
	maxRetry     = 30 * time.Second
	listPageSize = 500
	// initialBuildTimeout bounds the first build of the tool table in New.
	initialBuildTimeout = 30 * time.Second
	callWriteWindow     = 10 * time.Minute // how long a POST may take to answer (a tool call)
)

// New returns a gateway over a registry (for listing and searching), its
// store (watched for changes; nil builds the tool table once and leaves
// updates to Refresh) and an invoker (the pipeline). It starts watching the
// store and builds the tool table before it returns (within 30 seconds;
// should that fail, the error is logged and the build retried in the
// background), so that the first client sees every tool. Close stops it.
func New(reg registry.API, store registry.Store, inv Invoker, opts Options) *Gateway {
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	opts = opts.withDefaults(log)
	g := &Gateway{
		reg: reg, store: store, inv: inv, opts: opts, log: log,
		guard:  opts.newGuard(),
		kick:   make(chan struct{}, 1),
		byName: map[string]*toolEntry{}, byBase: map[string]*toolEntry{},
		pager: newListPager(opts.MaxListBytes, log),
	}
	sdkLog := slog.New(minLevelHandler{h: log.Handler(), min: slog.LevelWarn})
	g.server = mcp.NewServer(&mcp.Implementation{Name: "caphub", Title: "caphub capability registry", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: g.instructions(nil),
		Logger:       sdkLog,
		PageSize:     sdkPageSize,
		Capabilities: &mcp.ServerCapabilities{
			//lint:ignore SA1019 session logging, deprecated from protocol 2026-07-28, is served through the deprecation window
			Logging: &mcp.LoggingCapabilities{},
			Tools:   &mcp.ToolCapabilities{ListChanged: opts.Mode == ModeTools},
		},
	})
	g.server.AddReceivingMiddleware(tracing.MCPMethods, g.catalogMiddleware, g.pager.middleware, g.sessionMiddleware)
	if opts.Mode == ModeSearch {
		g.setSearchTools(true)
	}
	getServer := func(*http.Request) *mcp.Server { return g.server }
	g.streamable = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		// The gateway checks Host and Origin itself, for both transports
		// and with the configured exceptions.
		DisableLocalhostProtection: true,
		// Idle sessions are closed by the gateway's table of sessions
		// (fastSessions), which sees the calls the SDK does not.
		SessionTimeout: 0,
		// Answer requests with an SSE stream, not application/json: the
		// progress of a call (an upstream MCP tool's, see withProgress)
		// travels on its request's stream, where clients look for it; the
		// SDK would send it to the session's GET stream, which clients need
		// not open.
		Logger: sdkLog,
	})
	g.sse = mcp.NewSSEHandler(getServer, &mcp.SSEOptions{DisableLocalhostProtection: true})
	g.ctx, g.cancel = context.WithCancel(context.Background())
	// Watch first, then build: a change made in between is not lost.
	if store != nil {
		g.watching = registry.Subscribe(g.ctx, store, g.subscriber())
	}
	if !opts.Lazy {
		g.activate()
	}
	g.wg.Add(2)
	go func() { defer g.wg.Done(); g.rebuildLoop(g.ctx) }()
	go func() { defer g.wg.Done(); g.sweepLoop(g.ctx) }()
	return g
}

// Mode returns the gateway's configured mode, ModeTools or ModeSearch
// (see Serving for what it serves now).
func (g *Gateway) Mode() string { return g.opts.Mode }

// Close stops watching the registry and closes every MCP session. It always
// returns nil.
func (g *Gateway) Close() error {
	g.once.Do(func() {
		g.closed.Store(true)
		g.cancel()
		for ss := range g.server.Sessions() {
			_ = ss.Close()
		}
		g.sweepSessions()
		g.wg.Wait()
		if g.watching != nil {
			<-g.watching
		}
	})
	return nil
}

// ServeStdio serves one MCP client over newline-delimited JSON-RPC on in and
// out (caphub mcp passes os.Stdin and os.Stdout) until the client closes in
// or ctx ends; both are normal ends and return nil. in and out are closed
// when they are io.Closers, so that a blocked read ends with the session.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	g.activate()
	rc, ok := in.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(in)
	}
	wc, ok := out.(io.WriteCloser)
	if !ok {
		wc = nopWriteCloser{out}
	}
	err := g.server.Run(ctx, &mcp.IOTransport{Reader: rc, Writer: wc})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, mcp.ErrConnectionClosed) || ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return fmt.Errorf("mcp gateway: stdio session: %w", err)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// activate builds the tool table once and from then on keeps it up to date.
func (g *Gateway) activate() {
	g.activateOnce.Do(func() {
		g.active.Store(true)
		ctx, cancel := context.WithTimeout(g.ctx, initialBuildTimeout)
		defer cancel()
		if err := g.Refresh(ctx); err != nil {
			g.log.Error(err.Error() + "; the gateway serves no capability tools until a retry succeeds")
			g.requestRefresh()
		}
	})
}

// requestRefresh asks the rebuild loop for a rebuild.
func (g *Gateway) requestRefresh() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// subscriber follows the store's changes: every event, and every watch
// established again after one closed or failed (events may have been lost
// meanwhile), asks for a rebuild.
func (g *Gateway) subscriber() registry.Subscriber {
	return registry.Subscriber{
		Watching: func(resumed bool) {
			if resumed {
				g.requestRefresh()
			}
		},
		Event: func(registry.Event) { g.requestRefresh() },
		Failed: func(err error, retryIn time.Duration) {
			g.log.Warn("mcp gateway: cannot watch the registry for changes; tools/list_changed waits until it can", "error", err, "retry_in", retryIn)
		},
		MinRetry: minRetry, MaxRetry: maxRetry,
	}
}

// rebuildLoop rebuilds the tool table after changes, once a burst of
// changes has been quiet for debounce (or after maxDebounce at most).
func (g *Gateway) rebuildLoop(ctx context.Context) {
	retry := minRetry
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.kick:
		}
		deadline := time.Now().Add(maxDebounce)
		t := time.NewTimer(debounce)
	quiet:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-g.kick:
				t.Reset(max(0, min(debounce, time.Until(deadline))))
			case <-t.C:
				break quiet
			}
		}
		if !g.active.Load() {
			continue // not built yet: the first request builds it from scratch
		}
		if err := g.Refresh(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			g.log.Error(err.Error(), "retry_in", retry)
			if !wait.Sleep(ctx, retry) {
				return
			}
			retry = min(retry*2, maxRetry)
			g.requestRefresh()
			continue
		}
		retry = minRetry
	}
}

// Refresh rebuilds the tool table from the registry now: the latest
// version of every invocable capability. In the tools mode the MCP server's
// tools are updated to match (removed, added or replaced), which makes the
// SDK send notifications/tools/list_changed to the connected sessions. The
// gateway calls it on registry changes; tests and callers without a store
// may call it directly.
func (g *Gateway) Refresh(ctx context.Context) error {
	g.refreshMu.Lock()
	defer g.refreshMu.Unlock()
	recs, err := g.listLatest(ctx)
	if err != nil {
		return fmt.Errorf("mcp gateway: cannot build the tool list: listing the registry's capabilities failed: %w", err)
	}
	g.mu.RLock()
	prevByBase := g.byBase
	g.mu.RUnlock()
	byName, byBase := g.buildTable(recs, prevByBase)
	g.mu.Lock()
	g.byName, g.byBase = byName, byBase
	g.mu.Unlock()
	g.serve(byName)
	return nil
}

// buildTable makes the tool table of the capabilities recs, by tool name
// and by base (scheme:domain/name), reusing the entries of prevByBase that
// did not change.
func (g *Gateway) buildTable(recs []registry.Record, prevByBase map[string]*toolEntry) (byName, byBase map[string]*toolEntry) {
	bases := make([]string, len(recs))
	for i, r := range recs {
		bases[i] = baseOf(r.Key)
	}
	names := capability.ToolNames(bases)
	byName = make(map[string]*toolEntry, len(recs))
	byBase = make(map[string]*toolEntry, len(recs))
	for i, r := range recs {
		name := names[bases[i]]
		e := prevByBase[bases[i]]
		if e == nil || e.fingerprint != fingerprint(r, name) {
			var err error
			if e, err = newToolEntry(r, name); err != nil {
				g.log.Warn("mcp gateway: capability left out of the tool list", "key", r.Key.String(), "error", err)
				continue
			}
		}
		byName[e.name], byBase[e.base] = e, e
	}
	return byName, byBase
}

// updateTools makes the MCP server's capability tools those of byName,
// where prev were served: tools no longer there are removed, new or
// changed ones added (the SDK then notifies the sessions).
func (g *Gateway) updateTools(prev, byName map[string]*toolEntry) {
	var removed []string
	for name := range prev {
		if _, ok := byName[name]; !ok {
			removed = append(removed, name)
		}
	}
	if len(removed) > 0 {
		g.server.RemoveTools(removed...)
	}
	changed := 0
	for name, e := range byName {
		if p, ok := prev[name]; ok && p.fingerprint == e.fingerprint {
			continue
		}
		g.addTool(e)
		changed++
	}
	if len(removed) > 0 || changed > 0 {
		g.log.Debug("mcp gateway: tool list updated", "tools", len(byName), "added_or_changed", changed, "removed", len(removed))
	}
}

// listLatest pages through the latest version of every capability and
// keeps the invocable ones.
func (g *Gateway) listLatest(ctx context.Context) ([]registry.Record, error) {
	var out []registry.Record
	f := registry.ListFilter{Limit: listPageSize}
	seen := map[string]bool{}
	for {
		page, err := g.reg.List(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Items {
			if invocable(&r.Definition) {
				out = append(out, r)
			}
		}
		if page.NextCursor == "" || len(page.Items) == 0 {
			return out, nil
		}
		if seen[page.NextCursor] {
			return nil, fmt.Errorf("the registry returned the page cursor %q twice", page.NextCursor)
		}
		seen[page.NextCursor] = true
		f.Cursor = page.NextCursor
	}
}

func baseOf(k registry.Key) string { return k.Scheme + ":" + k.Domain + "/" + k.Name }

// addTool serves e, unless the SDK refuses it (it panics on schemas it
// cannot use): the tool is then left out and the reason logged.
func (g *Gateway) addTool(e *toolEntry) {
	defer func() {
		if r := recover(); r != nil {
			e.refused.Store(true)
			g.log.Error("mcp gateway: the MCP SDK refused a tool; it is left out", "tool", e.name, "uri", e.uri, "reason", fmt.Sprint(r))
		}
	}()
	g.server.AddTool(e.tool, g.toolHandler(e))
}

// Tools returns the current tool names with the capability URI each
// invokes (scheme:domain/name@MAJOR.MINOR), as in the tools mode.
func (g *Gateway) Tools() map[string]string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make(map[string]string, len(g.byName))
	for n, e := range g.byName {
		out[n] = e.uri
	}
	return out
}

// entryByBase returns the tool of a capability (scheme:domain/name).
func (g *Gateway) entryByBase(base string) *toolEntry {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.byBase[base]
}

// minLevelHandler drops records below min (the SDK logs every session at
// Info, which would drown caphub's own logs).
type minLevelHandler struct {
	h   slog.Handler
	min slog.Level
}

func (m minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.h.Enabled(ctx, l)
}
func (m minLevelHandler) Handle(ctx context.Context, r slog.Record) error { return m.h.Handle(ctx, r) }
func (m minLevelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevelHandler{h: m.h.WithAttrs(as), min: m.min}
}
func (m minLevelHandler) WithGroup(name string) slog.Handler {
	return minLevelHandler{h: m.h.WithGroup(name), min: m.min}
}
