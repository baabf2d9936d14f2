package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the registry as an MCP server over stdio",
		Long: `mcp serves the registry as one MCP server over stdio, for MCP clients that start their
servers as commands (Claude Desktop, IDEs, the MCP Inspector). With --tool-mode tools (the
default) every invocable capability is a tool, named by its URI (ossa:everruns/add@1.0 is
everruns_add), up to --mcp-max-tools of them; with more, or with --tool-mode search, there
are three tools: find_capabilities (compact summaries), describe_capability (one
capability's full schemas) and invoke_capability (--mcp-large-catalog refuse answers
tools/list with an error instead). Calls run through the invocation pipeline, as caphub
invoke does.

With --server URL (or $CAPHUB_SERVER) it serves no database of its own: it bridges the
client to that caphub server's /mcp (--agent ID: its /mcp/agents/ID), sending
$CAPHUB_TOKEN (or the token in --token-file) as the bearer token, so the server's catalog, policies and audit apply. The
flags that shape a local catalog (--db, --tool-mode, the allow-lists…) are refused with it.
Stdout carries the protocol: logs go to stderr.`,
		Example: "  caphub mcp\n  caphub mcp --db /var/lib/caphub/caphub.db --tool-mode search\n" +
			"  CAPHUB_TOKEN=chp_… caphub mcp --server https://caphub.internal:8750 --agent security-scanner\n" +
			`  {"mcpServers": {"caphub": {"command": "caphub", "args": ["mcp", "--db", "/path/caphub.db"]}}}`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := configFrom(cmd, slog.LevelWarn)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if cfg.server != "" {
				return runMCPBridge(ctx, cmd, cfg)
			}
			if hasFlag(cmd, "agent") && flagString(cmd, "agent") != "" {
				return &usageError{errors.New("--agent names an agent of a caphub server: give --server URL too (a local caphub mcp serves the whole catalog)")}
			}
			if !cfg.dbGiven {
				// An MCP client shows its servers' stderr in its logs: say
				// which registry this is.
				fmt.Fprintf(cmd.ErrOrStderr(), "caphub mcp: serving the default database %s (--db names another)\n", cfg.db)
			}
			return runMCP(ctx, cfg, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	addToolModeFlag(cmd)
	addInvokeFlags(cmd)
	cmd.Flags().String("agent", "", "with --server, serve that agent's tools (/mcp/agents/ID) instead of the whole catalog")
	return cmd
}

// runMCPBridge relays the stdio client to the /mcp endpoint of the caphub
// server at server (mcpconn.Bridge), refusing the flags that would only
// shape a local catalog, which the server's own settings replace.
func runMCPBridge(ctx context.Context, cmd *cobra.Command, cfg config) error {
	server, log := cfg.server, cfg.log
	var local []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name != "server" && f.Name != "agent" && f.Name != "timeout" && f.Name != "token-file" {
			local = append(local, "--"+f.Name)
		}
	})
	if len(local) > 0 {
		return &usageError{fmt.Errorf("caphub mcp --server bridges to the server's /mcp, whose own settings apply: %s would be ignored, so leave them out (or drop --server to serve a local database)", strings.Join(local, ", "))}
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &usageError{fmt.Errorf("--server %q must be an absolute http(s) URL of a caphub server, e.g. http://127.0.0.1:8750", server)}
	}
	endpoint := strings.TrimRight(server, "/") + "/mcp"
	if agent := flagString(cmd, "agent"); agent != "" {
		endpoint += "/agents/" + url.PathEscape(agent)
	}
	header := http.Header{}
	// The token authenticates to a server that enforces API tokens; it is
	// sent only as a header, never logged.
	if cfg.token != "" {
		header.Set("Authorization", "Bearer "+cfg.token)
	}
	log.Info("caphub mcp: bridging stdio to a caphub server", "endpoint", endpoint, "token", header.Get("Authorization") != "")
	return mcpconn.Bridge(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), endpoint, mcpconn.BridgeOptions{Header: header, Log: log})
}

// runMCP serves the app as one MCP server on in and out until ctx ends
// or in closes.
func runMCP(ctx context.Context, cfg config, in io.Reader, out io.Writer) error {
	a, err := newApp(ctx, cfg, registry.WithSearchIndex(false))
	if err != nil {
		return err
	}
	defer a.Close()
	opts := cfg.serve.mcp.options()
	opts.Mode, opts.Version, opts.Log = cfg.serve.toolMode, buildVersion(), cfg.log
	gw := mcpgw.New(a.svc, a.store, a.pipeline, opts)
	defer gw.Close()
	return gw.ServeStdio(ctx, in, out)
}

// addToolModeFlag adds --tool-mode and the large-catalog flags (serve and
// mcp).
func addToolModeFlag(cmd *cobra.Command) {
	cmd.Flags().String("tool-mode", mcpgw.ModeTools, "MCP tools: tools (one per capability) or search (find_capabilities, describe_capability and invoke_capability)")
	cmd.Flags().Int("mcp-max-tools", mcpgw.DefaultMaxTools, "most capability tools the tools mode lists; past it --mcp-large-catalog applies (0 for no limit; agents' endpoints keep their tools); default $"+envMCPMaxTools+", else")
	cmd.Flags().String("mcp-large-catalog", mcpgw.LargeCatalogSearch, "past --mcp-max-tools: search (serve the search tools instead, and say so in the instructions) or refuse (tools/list answers an error saying what to do); default $"+envMCPLargeCatalog+", else")
	cmd.Flags().Int("mcp-max-list-bytes", mcpgw.DefaultMaxListBytes, fmt.Sprintf("largest tools/list answer in bytes (at least %d); more tools come on the next page (nextCursor); default $%s, else", mcpgw.MinMaxListBytes, envMCPMaxListBytes))
}
