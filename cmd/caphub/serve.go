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
everruns /v1/capabilities shape, /openapi.json and /healthz) on the local database
(--db, default ./caphub.db, created on first use) or a PostgreSQL database (--db postgres://…).
It binds to loopback unless --addr says otherwise, and stops gracefully on SIGINT or SIGTERM.`,
		Example: "  caphub serve\n  caphub serve --addr 127.0.0.1:9000 --db /var/lib/caphub/caphub.db\n  caphub serve --db postgres://caphub@127.0.0.1:5432/caphub",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			addr, _ := cmd.Flags().GetString("addr")
			if err := checkLoopback(addr); err != nil {
				return &usageError{err}
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
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w (is another caphub running? choose another --addr)", addr, err)
			}
			srv := &http.Server{
				Handler:           rest.New(a.svc, log, rest.WithVersion(buildVersion()), rest.WithInvoker(a.pipeline), rest.WithMetrics(a.metrics.Handler())),
				ReadHeaderTimeout: 10 * time.Second,
				ReadTimeout:       60 * time.Second,
				WriteTimeout:      60 * time.Second,
				IdleTimeout:       120 * time.Second,
			}
			log.Info("caphub serving", "addr", "http://"+ln.Addr().String(), "db", dbFlag(cmd), "version", buildVersion())
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
	cmd.Flags().String("addr", defaultAddr, "address to listen on (host:port)")
	addInvokeFlags(cmd)
	return cmd
}

// checkLoopback refuses non-loopback addresses: the API has no
// authentication yet, so it must not be reachable from other machines.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %v (write host:port, e.g. %s)", addr, err, defaultAddr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--addr %q is not a loopback address: caphub serves without authentication, so it binds to loopback only (e.g. %s)", addr, defaultAddr)
}
