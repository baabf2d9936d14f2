package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/caphub/caphub/server/mcpgw"
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
			mode, _ := cmd.Flags().GetString("tool-mode")
			if err := mcpgw.CheckMode(mode); err != nil {
				return &usageError{fmt.Errorf("--tool-mode: %w", err)}
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
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
			gw := mcpgw.New(a.svc, a.store, a.pipeline, mcpgw.Options{Mode: mode, Version: buildVersion(), Log: log})
			defer gw.Close()
			return gw.ServeStdio(ctx, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	addToolModeFlag(cmd)
	addInvokeFlags(cmd)
	return cmd
}

// addToolModeFlag adds --tool-mode (serve and mcp).
func addToolModeFlag(cmd *cobra.Command) {
	cmd.Flags().String("tool-mode", mcpgw.ModeTools, "MCP tools: tools (one per capability) or search (find_capabilities and invoke_capability)")
}
