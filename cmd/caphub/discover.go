package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/client"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

func newDiscoverCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "discover",
		Short:   "Discover capabilities where they live (MCP servers)",
		Example: "  caphub discover mcp everything --command \"npx -y @modelcontextprotocol/server-everything\"",
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newDiscoverMCPCmd())
	return cmd
}

func newDiscoverMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp [NAME]",
		Short: "List an MCP server's tools and register them as mcp:NAME/<tool>@1.0",
		Long: `Discover connects to an MCP server (a command over stdio, or a URL over streamable HTTP
with SSE as the fallback), lists every tool, and registers each as mcp:NAME/<tool>. The
connection is saved under NAME for invocation; secrets are never saved: write them as
${ENV_VAR} references (--env GITHUB_TOKEN='${GITHUB_TOKEN}', --header 'Authorization: Bearer ${TOKEN}').

Re-discovering a server registers a new version of each changed tool (a breaking change
becomes a new major), leaves unchanged tools alone, and deprecates tools that vanished.
With --config FILE, several servers are discovered in parallel
(max_parallel_discoveries, default 5).

caphub serve fronts a saved server at /mcp/servers/NAME. --sessions shared lets one
upstream session (one process for --command) serve every client there, instead of one per
client session: cheap, but the server's own state (a memory graph, roots) is then shared.`,
		Example: `  caphub discover mcp everything --command "npx -y @modelcontextprotocol/server-everything"
  caphub discover mcp files --command npx --arg -y --arg @modelcontextprotocol/server-filesystem --arg /tmp
  caphub discover mcp memory --command "npx -y @modelcontextprotocol/server-memory" --sessions shared
  caphub discover mcp remote --url https://mcp.example.com/mcp --header 'Authorization: Bearer ${MCP_TOKEN}'
  caphub discover mcp --config servers.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			configPath, _ := cmd.Flags().GetString("config")
			noRegister, _ := cmd.Flags().GetBool("no-register")
			opts := discover.Options{Register: !noRegister, Version: buildVersion()}
			if configPath != "" {
				if len(args) > 0 {
					return &usageError{fmt.Errorf("give either NAME with its connection flags or --config FILE")}
				}
				c, err := discover.ReadConfig(configPath)
				if err != nil {
					return err
				}
				if c.Register != nil && !noRegister {
					opts.Register = *c.Register
				}
				if c.ExportToRTFS != "" {
					opts.Export = rtfsExporter(cmd, c.ExportToRTFS)
				}
				return withRegistry(cmd, func(reg registry.API) error {
					run, err := discoverRunner(reg, opts)
					if err != nil {
						return err
					}
					run = countingRunner(run, len(c.Servers), progressFor(cmd, "servers"))
					return printReports(cmd, format, discover.RunAll(cmd.Context(), c, run))
				})
			}
			if len(args) != 1 {
				return &usageError{fmt.Errorf("name the server: caphub discover mcp NAME --command … | --url …")}
			}
			srv, err := serverFromFlags(cmd, args[0])
			if err != nil {
				return err
			}
			return withRegistry(cmd, func(reg registry.API) error {
				run, err := discoverRunner(reg, opts)
				if err != nil {
					return err
				}
				rep, err := run(cmd.Context(), srv)
				if err != nil {
					var gaveUp *client.GaveUpError
					if rep == nil || errors.As(err, &gaveUp) {
						return err
					}
					rep.Error = err.Error()
				}
				return printReports(cmd, format, []*discover.Report{rep})
			})
		},
	}
	cmd.Flags().String("command", "", "command that starts the server on stdio (split into arguments, never run by a shell)")
	cmd.Flags().StringArray("arg", nil, "argument appended to --command (repeatable)")
	cmd.Flags().StringArray("env", nil, "NAME=VALUE for the server's environment; VALUE may be ${VAR}; a bare NAME passes $NAME through (repeatable)")
	cmd.Flags().String("url", "", "URL of a streamable HTTP (or SSE) server")
	cmd.Flags().Bool("sse", false, "use only the older SSE transport for --url")
	cmd.Flags().StringArray("header", nil, "'Name: value' sent to --url; value may hold ${VAR} (repeatable)")
	cmd.Flags().String("sessions", "", "how clients fronted at /mcp/servers/NAME share the server: per-client (default: each client session its own upstream session, for --command its own process) or shared (one upstream session, one process, for every client)")
	cmd.Flags().String("config", "", "discover every server of a YAML/JSON configuration file")
	cmd.Flags().Bool("no-register", false, "only list and plan; change nothing in the registry")
	cmd.Flags().BoolP("quiet", "q", false, "no progress on stderr for --config (it is shown only when stderr is a terminal)")
	addFormatFlag(cmd)
	return cmd
}

// discoverRunner discovers locally, or asks a remote caphub to discover
// from where it runs (it is the one that will invoke the server).
func discoverRunner(reg registry.API, opts discover.Options) (discover.Runner, error) {
	if c, ok := reg.(*client.Client); ok {
		if opts.Export != nil {
			return nil, &usageError{fmt.Errorf("export_to_rtfs works on a local database, not with --server")}
		}
		return func(ctx context.Context, srv *mcpconn.Server) (*discover.Report, error) {
			return c.Discover(ctx, srv, opts.Register)
		}, nil
	}
	servers, err := serversOf(reg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, srv *mcpconn.Server) (*discover.Report, error) {
		return discover.Run(ctx, reg, servers, srv, opts)
	}, nil
}

func serverFromFlags(cmd *cobra.Command, name string) (*mcpconn.Server, error) {
	srv := &mcpconn.Server{Name: name}
	srv.Command, _ = cmd.Flags().GetString("command")
	srv.Args, _ = cmd.Flags().GetStringArray("arg")
	srv.URL, _ = cmd.Flags().GetString("url")
	if sse, _ := cmd.Flags().GetBool("sse"); sse {
		srv.Transport = mcpconn.TransportSSE
	}
	srv.Sessions, _ = cmd.Flags().GetString("sessions")
	envs, _ := cmd.Flags().GetStringArray("env")
	for _, e := range envs {
		k, v, err := mcpconn.ParseEnvFlag(e)
		if err != nil {
			return nil, &usageError{err}
		}
		if srv.Env == nil {
			srv.Env = map[string]string{}
		}
		srv.Env[k] = v
	}
	headers, _ := cmd.Flags().GetStringArray("header")
	for _, h := range headers {
		k, v, err := mcpconn.ParseHeaderFlag(h)
		if err != nil {
			return nil, &usageError{err}
		}
		if srv.Headers == nil {
			srv.Headers = map[string]string{}
		}
		srv.Headers[k] = v
	}
	if err := srv.Validate(); err != nil {
		return nil, &usageError{err}
	}
	return srv, nil
}

func printReports(cmd *cobra.Command, format string, reports []*discover.Report) error {
	out := cmd.OutOrStdout()
	failed := false
	for _, r := range reports {
		failed = failed || r.Error != "" || len(r.Failures) > 0
	}
	if format == "json" {
		if err := writeJSON(out, map[string]any{"reports": reports}); err != nil {
			return err
		}
	} else {
		for _, r := range reports {
			printReport(out, r)
		}
	}
	if failed {
		return &silentError{"discovery failed"}
	}
	return nil
}

func printReport(w io.Writer, r *discover.Report) {
	if r.Error != "" && r.Plan == nil {
		fmt.Fprintf(w, "%s: failed: %s\n", r.Server, r.Error)
		return
	}
	p := r.Plan
	fmt.Fprintf(w, "%s: %d tools: %d new, %d changed, %d unchanged, %d vanished\n", r.Server, r.Tools, len(p.New), len(p.Changed), len(p.Unchanged), len(p.Vanished))
	for _, u := range p.New {
		fmt.Fprintf(w, "  new        %s\n", u)
	}
	for _, c := range p.Changed {
		fmt.Fprintf(w, "  changed    %s (%s → %s, %s: %s)\n", c.URI, c.From, c.To, c.Bump, c.Summary)
	}
	for _, u := range p.Vanished {
		fmt.Fprintf(w, "  vanished   %s (deprecated)\n", u)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  failed     %s\n", f.String())
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
}

func newServerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "server",
		Short:   "Saved MCP server connections",
		Example: "  caphub server list\n  caphub server show everything\n  caphub server remove everything",
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newServerListCmd(), newServerShowCmd(), newServerRemoveCmd())
	return cmd
}

func newServerListCmd() *cobra.Command {
	list := &cobra.Command{
		Use:     "list",
		Short:   "List saved MCP servers",
		Example: "  caphub server list --format json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			return withServers(cmd, func(servers discover.ServerAPI) error {
				all, err := servers.ListServers(cmd.Context())
				if err != nil {
					return err
				}
				if format == "json" {
					for i := range all {
						if all[i].Listing != nil {
							all[i].Listing.Tools = nil // the list shows connections; `show` has the tools
						}
					}
					return writeJSON(cmd.OutOrStdout(), map[string]any{"items": all, "total": len(all)})
				}
				return printServers(cmd.OutOrStdout(), all)
			})
		},
	}
	addFormatFlag(list)
	return list
}

// printServers writes the saved servers as a table.
func printServers(w io.Writer, all []discover.SavedServer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTRANSPORT\tSOURCE\tTOOLS\tLISTED")
	for _, s := range all {
		tools, listed := "-", "never"
		if s.Listing != nil {
			tools, listed = fmt.Sprint(len(s.Listing.Tools)), s.Listing.At.Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Server.Name, s.Server.Transport, s.Server.Source(), tools, listed)
	}
	return tw.Flush()
}

func newServerShowCmd() *cobra.Command {
	show := &cobra.Command{
		Use:     "show NAME",
		Short:   "Show a saved MCP server and its last listing",
		Example: "  caphub server show everything",
		Args:    exactArgs(1, "a server NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			return withServers(cmd, func(servers discover.ServerAPI) error {
				s, err := servers.GetServer(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if format == "json" {
					return writeJSON(cmd.OutOrStdout(), s)
				}
				printServer(cmd.OutOrStdout(), s)
				return nil
			})
		},
	}
	addFormatFlag(show)
	return show
}

// printServer writes a saved server, its environment, headers and last
// listing.
func printServer(w io.Writer, s *discover.SavedServer) {
	fmt.Fprintf(w, "%s (%s): %s\n", s.Server.Name, s.Server.Transport, s.Server.Source())
	if s.Server.Shared() {
		fmt.Fprintln(w, "  sessions shared: one upstream session serves every fronted client")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Server.Env)) {
		fmt.Fprintf(w, "  env %s=%s\n", k, s.Server.Env[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Server.Headers)) {
		fmt.Fprintf(w, "  header %s: %s\n", k, s.Server.Headers[k])
	}
	if s.Listing == nil {
		fmt.Fprintln(w, "  never listed")
		return
	}
	fmt.Fprintf(w, "  listed %s: %s, %d tools\n", s.Listing.At.Format("2006-01-02 15:04:05"), s.Listing.ServerInfo, len(s.Listing.Tools))
	for _, t := range s.Listing.Tools {
		fmt.Fprintf(w, "    %-32s %s\n", t.Name, firstLine(t.Description, 70))
	}
}

func newServerRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "remove NAME",
		Short:   "Forget a saved MCP server (its capabilities stay registered)",
		Example: "  caphub server remove everything",
		Args:    exactArgs(1, "a server NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withServers(cmd, func(servers discover.ServerAPI) error {
				if err := servers.RemoveServer(cmd.Context(), args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
				return nil
			})
		},
	}
}

func withServers(cmd *cobra.Command, fn func(discover.ServerAPI) error) error {
	return withRegistry(cmd, func(reg registry.API) error {
		servers, err := serversOf(reg)
		if err != nil {
			return err
		}
		return fn(servers)
	})
}

// rtfsExporter writes what a discovery registered as RTFS files under dir
// (CCOS §3.3: discovered/mcp/<server>/<tool>.rtfs), each file holding the
// version just registered.
func rtfsExporter(cmd *cobra.Command, dir string) func(defs []capability.Definition) error {
	return func(defs []capability.Definition) error {
		recs := make([]registry.Record, 0, len(defs))
		for _, d := range defs {
			k, err := registry.KeyOf(&d)
			if err != nil {
				return err
			}
			recs = append(recs, registry.Record{Key: k, Definition: d})
		}
		return exportRTFS(cmd, dir, recs)
	}
}
