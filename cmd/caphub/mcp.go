package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
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
Stdout carries the protocol: logs go to stderr.`,
		Example: "  caphub mcp\n  caphub mcp --db /var/lib/caphub/caphub.db --tool-mode search\n" +
			`  {"mcpServers": {"caphub": {"command": "caphub", "args": ["mcp", "--db", "/path/caphub.db"]}}}`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := configFrom(cmd, slog.LevelWarn)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runMCP(ctx, cfg, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	addToolModeFlag(cmd)
	addInvokeFlags(cmd)
	return cmd
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
