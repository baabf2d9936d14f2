package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/caphub/caphub/auth"
	"github.com/caphub/caphub/invoke/binding/allowlist"
	"github.com/caphub/caphub/server/guard"
	"github.com/caphub/caphub/server/mcpfront"
	"github.com/caphub/caphub/server/mcpgw"
	"github.com/caphub/caphub/server/rest"
	"github.com/spf13/cobra"
)

// defaultAddr is loopback only: caphub never listens on other interfaces
// unless told to.
const defaultAddr = "127.0.0.1:8750"

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the registry over HTTP",
		Long: `Serve runs the REST API (OSSA registry API, registration, negotiation, search, the
everruns /v1/capabilities shape, /openapi.json and /healthz) and the registry as one MCP
server (streamable HTTP at /mcp, HTTP+SSE at /mcp/sse; --tool-mode tools serves one tool
per capability, --tool-mode search only find_capabilities and invoke_capability), and each
saved MCP server fronted transparently at /mcp/servers/{name}, on the local database
(--db, default ./caphub.db, created on first use) or a PostgreSQL database (--db postgres://…).
It binds to loopback unless --addr says otherwise, and stops gracefully on SIGINT or SIGTERM.

Authentication: as soon as one active API token exists (caphub token create), every route
but /healthz and /openapi.json needs Authorization: Bearer <token> with the right scope
(read, publish, invoke or admin). Without a token caphub serves openly on loopback only:
a non-loopback --addr, or --auth, is refused until a token exists.`,
		Example: "  caphub serve\n  caphub token create admin --scope admin && caphub serve --addr 0.0.0.0:8750\n  caphub serve --auth\n  caphub serve --addr 127.0.0.1:9000 --db /var/lib/caphub/caphub.db\n  caphub serve --db postgres://caphub@127.0.0.1:5432/caphub",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			addr, _ := cmd.Flags().GetString("addr")
			loopback, err := isLoopback(addr)
			if err != nil {
				return &usageError{err}
			}
			forceAuth, _ := cmd.Flags().GetBool("auth")
			mode, _ := cmd.Flags().GetString("tool-mode")
			if err := mcpgw.CheckMode(mode); err != nil {
				return &usageError{fmt.Errorf("--tool-mode: %w", err)}
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg, err := appConfigFrom(cmd, log)
			if err != nil {
				return err
			}
			a, err := newApp(ctx, cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			tokens := auth.New(a.store)
			exist, err := tokens.Exist(ctx)
			if err != nil {
				return err
			}
			enforce, err := auth.Required(loopback, exist, forceAuth)
			if err != nil {
				return fmt.Errorf("caphub serve on %s %w", addr, err)
			}
			hosts, origins := allowedHosts(cmd), allowedOrigins(cmd)
			gw := mcpgw.New(a.svc, a.store, a.pipeline, mcpgw.Options{
				Mode: mode, Version: buildVersion(), Log: log, Lazy: true,
				AllowedHosts: hosts, AllowedOrigins: origins,
			})
			defer gw.Close() // before a.Close: the gateway watches the store
			front := mcpfront.New(a.servers, a.pipeline, mcpfront.Options{
				Version: buildVersion(), Log: log,
				AllowedHosts: hosts, AllowedOrigins: origins,
			})
			defer front.Close() // before a.Close: ends sessions, kills the stdio servers it started
			agentGW := mcpgw.NewAgentGateways(a.agents, a.pipeline, a.store, mcpgw.Options{
				Version: buildVersion(), Log: log,
				AllowedHosts: hosts, AllowedOrigins: origins,
			})
			defer agentGW.Close() // before a.Close: it watches the store
			budget, _ := cmd.Flags().GetDuration("request-timeout")
			api := rest.New(a.svc, log, rest.WithVersion(buildVersion()), rest.WithInvoker(a.pipeline), rest.WithMetrics(a.metrics.Handler()), rest.WithApprovals(a.governance.Approvals()), rest.WithAgents(a.agents), rest.WithPermits(a.permits), rest.WithRequestTimeout(budget))
			mux := serveRoutes(api, gw.Handler(), agentGW.Handler(), front.Handler())
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w (is another caphub running? choose another --addr)", addr, err)
			}
			var handler http.Handler = mux
			if enforce {
				handler = tokens.Middleware(mux.ScopeOf, mux)
				// A revoked or expired token's open streams end within
				// tokenRecheck.
				go tokens.Supervise(ctx, tokenRecheck, func(id string, n int) {
					log.Info("token no longer valid: its open requests were ended", "token", id, "requests", n)
				})
			}
			// The guard comes first: a request a web page forged is refused
			// before anything reads it.
			handler = guard.New(guard.Options{AllowedHosts: hosts, AllowedOrigins: origins, AcceptsYAML: api.AcceptsYAML}).Handler(handler)
			srv := &http.Server{
				Handler:           handler,
				ReadHeaderTimeout: 10 * time.Second,
				ReadTimeout:       60 * time.Second,
				WriteTimeout:      60 * time.Second,
				IdleTimeout:       120 * time.Second,
			}
			// Shutdown waits for open connections: end the MCP sessions
			// (long-lived SSE streams) as it starts.
			srv.RegisterOnShutdown(func() { gw.Close(); _ = front.Close(); _ = agentGW.Close() })
			log.Info("caphub serving", "addr", "http://"+ln.Addr().String(), "mcp", "http://"+ln.Addr().String()+"/mcp", "tool_mode", gw.Mode(), "auth", enforce, "db", dbFlag(cmd), "version", buildVersion())
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
		},
	}
	cmd.Flags().String("addr", defaultAddr, "address to listen on (host:port); beyond loopback it needs an API token (caphub token create)")
	cmd.Flags().Bool("auth", false, "require API tokens on loopback too (always on when a token exists or --addr is not loopback)")
	cmd.Flags().Duration("request-timeout", rest.DefaultRequestTimeout, "time budget of a REST request (not of /mcp streams): past it the request is cancelled and answered 503; 0 for none")
	addToolModeFlag(cmd)
	cmd.Flags().StringArray("allowed-host", nil, "Host header value served besides loopback names (host, host:port or *), for a deployment behind a real host name; repeatable; default $CAPHUB_ALLOWED_HOSTS")
	cmd.Flags().StringArray("allowed-origin", nil, "browser Origin accepted besides loopback ones (scheme://host[:port], scheme://host:* or *); repeatable; default $CAPHUB_ALLOWED_ORIGINS")
	// The names before the guard covered every route; kept working.
	cmd.Flags().StringArray("mcp-allow-host", nil, "")
	cmd.Flags().StringArray("mcp-allow-origin", nil, "")
	_ = cmd.Flags().MarkDeprecated("mcp-allow-host", "use --allowed-host")
	_ = cmd.Flags().MarkDeprecated("mcp-allow-origin", "use --allowed-origin")
	addInvokeFlags(cmd)
	return cmd
}

// tokenRecheck is how often serve re-checks the tokens of open streams.
const tokenRecheck = 2 * time.Second

// allowedHosts are the Host names served besides loopback ones
// (--allowed-host, and the older --mcp-allow-host).
func allowedHosts(cmd *cobra.Command) []string {
	return append(listFlag(cmd, "allowed-host", "CAPHUB_ALLOWED_HOSTS"), listFlag(cmd, "mcp-allow-host", "CAPHUB_MCP_ALLOW_HOSTS")...)
}

// allowedOrigins are the browser origins accepted besides loopback ones.
func allowedOrigins(cmd *cobra.Command) []string {
	return append(listFlag(cmd, "allowed-origin", "CAPHUB_ALLOWED_ORIGINS"), listFlag(cmd, "mcp-allow-origin", "CAPHUB_MCP_ALLOW_ORIGINS")...)
}

// serveRoutes mounts the MCP endpoints beside the REST API, each with the
// scope it needs: every MCP request calls tools (invoke).
func serveRoutes(api auth.Scoped, gateway, agents, front http.Handler) *auth.Routes {
	mux := auth.NewRoutes()
	mux.Handle("/mcp/agents/", auth.ScopeInvoke, agents) // one agent's tools: /mcp/agents/{id}
	mux.Handle("/mcp", auth.ScopeInvoke, gateway)        // streamable HTTP
	mux.Handle("/mcp/sse", auth.ScopeInvoke, gateway)    // HTTP+SSE (GET opens, POST ?sessionid=… sends)
	mux.Handle("/mcp/servers/", auth.ScopeInvoke, front) // saved upstreams fronted: /mcp/servers/{name}[/sse]
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
