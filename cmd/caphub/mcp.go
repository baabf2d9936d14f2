package main

import (
	"context"
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
everruns_add); with --tool-mode search there are two tools, find_capabilities and
invoke_capability. Calls run through the invocation pipeline, as caphub invoke does.
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
	gw := mcpgw.New(a.svc, a.store, a.pipeline, mcpgw.Options{Mode: cfg.serve.toolMode, Version: buildVersion(), Log: cfg.log})
	defer gw.Close()
	return gw.ServeStdio(ctx, in, out)
}

// addToolModeFlag adds --tool-mode (serve and mcp).
func addToolModeFlag(cmd *cobra.Command) {
	cmd.Flags().String("tool-mode", mcpgw.ModeTools, "MCP tools: tools (one per capability) or search (find_capabilities and invoke_capability)")
}
