package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/metrics"
	"github.com/caphub/caphub/internal/ratelimit"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/caphub/caphub/internal/allowlist"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/internal/server/guard"
	"github.com/caphub/caphub/internal/server/mcpfront"
	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/internal/server/rest"
	"github.com/caphub/caphub/internal/server/web"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// defaultAddr is loopback only: caphub never listens on other interfaces
// unless told to.
const defaultAddr = "127.0.0.1:8750"

// envCacheMB sets --cache-mb.
const envCacheMB = "CAPHUB_CACHE_MB"

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the registry over HTTP",
		Long: `Serve runs the REST API (OSSA registry API, registration, negotiation, search, the
everruns /v1/capabilities shape, /openapi.json and /healthz) and the registry as one MCP
server (streamable HTTP at /mcp, HTTP+SSE at /mcp/sse; --tool-mode tools serves one tool
per capability up to --mcp-max-tools, --tool-mode search, or a larger catalog, only
find_capabilities, describe_capability and invoke_capability), and each
saved MCP server fronted transparently at /mcp/servers/{name}, on the local database
(--db, default caphub/caphub.db in the user's data directory, created on first use) or a
PostgreSQL database (--db postgres://…).
It binds to loopback unless --addr says otherwise, and stops gracefully on SIGINT or SIGTERM.

Authentication: as soon as one active API token exists (caphub token create), every route
but /healthz and /openapi.json needs Authorization: Bearer <token> with the right scope
(read, publish, invoke or admin). Without a token caphub serves openly on loopback only:
a non-loopback --addr, or --auth, is refused until a token exists.

Semantic search (off by default): with --embed-url and --embed-model, an OpenAI-compatible
embedding provider embeds each capability's name, title, description, keywords, intents and
parameter names; the vectors are kept in the database beside the versions, versions without
one are embedded in the background, and a provider that is down never fails a registration.
The provider and its key (--embed-api-key-env names the variable holding it) are the
operator's settings: no API caller can change where texts are sent.

Traces (off by default): with OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT, or
OTEL_TRACES_EXPORTER=otlp) set, OpenTelemetry spans of each request, MCP method, registry
operation, invocation, binding attempt and upstream call are exported over OTLP/HTTP; the
other OTEL_* variables apply (OTEL_SERVICE_NAME, default caphub). A W3C traceparent a
request brings, in its headers or its MCP params._meta, is passed on to the upstreams its
call reaches, traces on or off.`,
		Example: "  caphub serve\n  caphub token create admin --scope admin && caphub serve --addr 0.0.0.0:8750\n  caphub serve --auth\n  caphub serve --addr 127.0.0.1:9000 --db /var/lib/caphub/caphub.db\n  caphub serve --db postgres://caphub@127.0.0.1:5432/caphub\n  OPENAI_API_KEY=sk-… caphub serve --embed-url https://api.openai.com --embed-model text-embedding-3-small --embed-dimensions 256 --embed-api-key-env OPENAI_API_KEY",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := configFrom(cmd, slog.LevelInfo)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runServe(ctx, cfg)
		},
	}
	cmd.Flags().String("addr", defaultAddr, "address to listen on (host:port); beyond loopback it needs an API token (caphub token create)")
	cmd.Flags().Bool("auth", false, "require API tokens on loopback too (always on when a token exists or --addr is not loopback)")
	cmd.Flags().Duration("request-timeout", rest.DefaultRequestTimeout, "time budget of a REST request (not of /mcp streams): past it the request is cancelled and answered 503; 0 for none")
	cmd.Flags().Int("cache-mb", int(registry.DefaultCacheLimits.Bytes>>20), "MiB of memory the registry's read cache (single versions' stored JSON, version lists, decoded list rows) holds at most, least recently used out first; default $"+envCacheMB+", else")
	addToolModeFlag(cmd)
	cmd.Flags().StringArray("allowed-host", nil, "Host header value served besides loopback names (host, host:port or *), for a deployment behind a real host name; repeatable; default $CAPHUB_ALLOWED_HOSTS")
	cmd.Flags().StringArray("allowed-origin", nil, "browser Origin accepted besides loopback ones (scheme://host[:port], scheme://host:* or *); repeatable; default $CAPHUB_ALLOWED_ORIGINS")
	// The names before the guard covered every route; kept working.
	cmd.Flags().StringArray("mcp-allow-host", nil, "")
	cmd.Flags().StringArray("mcp-allow-origin", nil, "")
	_ = cmd.Flags().MarkDeprecated("mcp-allow-host", "use --allowed-host")
	_ = cmd.Flags().MarkDeprecated("mcp-allow-origin", "use --allowed-origin")
	addSessionFlags(cmd)
	addInvokeFlags(cmd)
	addEmbedFlags(cmd)
	addAuditRetentionFlags(cmd)
	addRateLimitFlags(cmd)
	return cmd
}

// tokenRecheck is how often serve re-checks the tokens of open streams.
const tokenRecheck = 2 * time.Second

// runServe assembles the app and serves it over HTTP until ctx ends, then
// shuts down gracefully.
func runServe(ctx context.Context, cfg config) error {
	stopTracing, err := startTracing(ctx, cfg.log)
	if err != nil {
		return err
	}
	defer stopTracing() // last: the spans of the shutdown too
	a, err := newApp(ctx, cfg, registry.WithSearchIndex(false), registry.WithCacheLimits(registry.CacheLimits{Bytes: int64(cfg.serve.cacheMB) << 20}))
	if err != nil {
		return err
	}
	defer a.Close()
	tokens := a.tokens
	exist, err := tokens.Exist(ctx)
	if err != nil {
		return err
	}
	sc := cfg.serve
	enforce, err := auth.Required(sc.loopback, exist, sc.forceAuth)
	if err != nil {
		return fmt.Errorf("caphub serve on %s %w", sc.addr, err)
	}
	h := newServeHandler(a, cfg)
	defer h.Close() // before a.Close: the gateways watch the store, the front kills its servers
	ln, err := net.Listen("tcp", sc.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another caphub running? choose another --addr)", sc.addr, err)
	}
	handler := h.chain(a, sc, enforce)
	if enforce {
		// A revoked or expired token's open streams end within
		// tokenRecheck.
		go tokens.Supervise(ctx, tokenRecheck, func(id string, n int) {
			cfg.log.Info("token no longer valid: its open requests were ended", "token", id, "requests", n)
		})
	}
	cfg.log.Info("caphub serving", "addr", "http://"+ln.Addr().String(), "mcp", "http://"+ln.Addr().String()+"/mcp", "tool_mode", h.gw.Mode(), "mcp_max_tools", sc.mcp.maxTools, "mcp_large_catalog", sc.mcp.largeCatalog, "auth", enforce, "db", cfg.db, "version", buildVersion())
	return serveUntilDone(ctx, cfg.log, newHTTPServer(handler, h), ln)
}

// chain wraps the routes in what every request passes, outermost first:
// tracing, metrics, the request guard, authentication (when enforced) and
// the rate limits.
func (h *serveHandler) chain(a *app, sc serveConfig, enforce bool) http.Handler {
	var handler http.Handler = rateLimited(sc.rateLimit, a.metrics.RateLimited, h.mux)
	if enforce {
		handler = a.tokens.Middleware(h.mux.ScopeOf, handler)
	}
	// The guard comes first: a request a web page forged is refused
	// before anything reads it.
	handler = a.metrics.Instrument(guard.New(guard.Options{AllowedHosts: sc.allowedHosts, AllowedOrigins: sc.allowedOrigins, AcceptsYAML: h.api.AcceptsYAML}).Handler(handler))
	// Outermost: a refused request is traced too, named by its route.
	return tracing.Middleware(h.mux.Route, handler)
}

// serveHandler is what serve answers with: the REST API, the registry's
// MCP gateway, the agents' gateways and the front of the saved servers.
type serveHandler struct {
	api     *rest.Server
	gw      *mcpgw.Gateway
	agentGW *mcpgw.AgentGateways
	front   *mcpfront.Front
	mux     *auth.Routes
}

// newServeHandler makes the gateways and the REST API over the app, with
// serve's guard settings and request budget.
func newServeHandler(a *app, cfg config) *serveHandler {
	sc := cfg.serve
	hosts, origins := sc.allowedHosts, sc.allowedOrigins
	h := &serveHandler{}
	gwOpts := sc.mcp.options()
	gwOpts.Mode, gwOpts.Version, gwOpts.Log, gwOpts.Lazy = sc.toolMode, buildVersion(), cfg.log, true
	gwOpts.AllowedHosts, gwOpts.AllowedOrigins = hosts, origins
	gwOpts.MaxSessions, gwOpts.IdleTimeout = noneIsNegative(sc.sessions.mcpMax), noneIsNegative(sc.sessions.idle)
	h.gw = mcpgw.New(a.svc, a.store, a.pipeline, gwOpts)
	frontOpts := sc.sessions.frontOptions()
	frontOpts.Version, frontOpts.Log = buildVersion(), cfg.log
	frontOpts.AllowedHosts, frontOpts.AllowedOrigins = hosts, origins
	h.front = mcpfront.New(a.servers, a.pipeline, frontOpts)
	a.metrics.Watch(metrics.Sources{Sessions: h.front.SessionsByServer, Spawns: h.front.Spawns})
	h.agentGW = mcpgw.NewAgentGateways(a.agents, a.pipeline, a.store, mcpgw.Options{
		Version: buildVersion(), Log: cfg.log,
		AllowedHosts: hosts, AllowedOrigins: origins,
		MaxListBytes: sc.mcp.maxListBytes,
		MaxSessions:  gwOpts.MaxSessions, IdleTimeout: gwOpts.IdleTimeout,
	})
	h.api = rest.New(a.svc, cfg.log, rest.WithVersion(buildVersion()), rest.WithInvoker(a.pipeline), rest.WithMetrics(a.metrics.Handler()), rest.WithApprovals(a.governance.Approvals()), rest.WithAgents(a.agents), rest.WithPermits(a.permits), rest.WithRequestTimeout(sc.requestTimeout), rest.WithReadiness(a.readyChecks()...),
		rest.WithPolicies(a.governance.Policies()), rest.WithTokens(a.tokens), rest.WithAudit(a.audit))
	h.mux = serveRoutes(h.api, h.gw.Handler(), h.agentGW.Handler(), h.front.Handler())
	return h
}

// Close ends the MCP sessions: the gateways', and the front's, killing
// the stdio servers it started.
func (h *serveHandler) Close() {
	_ = h.agentGW.Close()
	_ = h.front.Close()
	h.gw.Close()
}

// newHTTPServer is serve's HTTP server, with its timeouts.
func newHTTPServer(handler http.Handler, h *serveHandler) *http.Server {
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	// Shutdown waits for open connections: end the MCP sessions
	// (long-lived SSE streams) as it starts.
	srv.RegisterOnShutdown(func() { h.gw.Close(); _ = h.front.Close(); _ = h.agentGW.Close() })
	return srv
}

// serveUntilDone serves on ln until the server fails or ctx ends, then
// shuts down gracefully.
func serveUntilDone(ctx context.Context, log *slog.Logger, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	return nil
}

// serveRoutes mounts the MCP endpoints and the web UI beside the REST API,
// each with the scope it needs: every MCP request calls tools (invoke).
func serveRoutes(api auth.Scoped, gateway, agents, front http.Handler) *auth.Routes {
	mux := auth.NewRoutes()
	mux.Handle("/mcp/agents/", auth.ScopeInvoke, agents) // one agent's tools: /mcp/agents/{id}
	mux.Handle("/mcp", auth.ScopeInvoke, gateway)        // streamable HTTP
	mux.Handle("/mcp/sse", auth.ScopeInvoke, gateway)    // HTTP+SSE (GET opens, POST ?sessionid=… sends)
	mux.Handle("/mcp/servers/", auth.ScopeInvoke, front) // saved upstreams fronted: /mcp/servers/{name}[/sse]
	// The web UI's shell and assets carry no data (the page must load to
	// show its login; its data comes from the API with the token): public,
	// but behind the same guard. "/{$}" is / exactly, so REST keeps its own
	// not-found for every other path.
	ui := web.Handler()
	mux.Handle("GET /{$}", auth.Public, ui)
	mux.Handle("GET /ui", auth.Public, ui)
	mux.Handle("/ui/", auth.Public, ui)
	mux.Mount("/", api)
	return mux
}

// isLoopback reports whether addr (host:port) listens on loopback only,
// where caphub may serve without authentication when no token exists.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--addr %q: %v (write host:port, e.g. %s)", addr, err, defaultAddr)
	}
	return allowlist.IsLoopback(host), nil
}

// rateLimited bounds how fast each API token and each agent may call
// (ratelimit), inside authentication so that a token's limit is keyed by
// the token it proved. The agent is the one a request names (the
// X-Caphub-Agent header, /mcp/agents/{id}) or its token is bound to.
func rateLimited(rl rateLimitSettings, limited func(kind string), next http.Handler) http.Handler {
	return ratelimit.Middleware([]ratelimit.Rule{
		{Kind: "token", Limiter: ratelimit.New(rl.token, rl.burst), Key: func(r *http.Request) string {
			if tok, ok := auth.FromContext(r.Context()); ok {
				return tok.ID
			}
			return ""
		}},
		{Kind: "agent", Limiter: ratelimit.New(rl.agent, rl.burst), Key: func(r *http.Request) string {
			if id, ok := strings.CutPrefix(r.URL.Path, "/mcp/agents/"); ok {
				id, _, _ = strings.Cut(id, "/")
				return id
			}
			if a := r.Header.Get(identity.Header); a != "" {
				return a
			}
			if tok, ok := auth.FromContext(r.Context()); ok {
				return tok.Agent
			}
			return ""
		}},
	}, limited, next)
}
