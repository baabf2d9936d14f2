package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"

	"github.com/caphub/caphub/client"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/discover/mcpregistry"
	"github.com/caphub/caphub/internal/permit"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// newImportMCPRegistryCmd is `caphub import mcp-registry FILE|URL`: each
// server of a server.json or a registry's server list becomes a saved MCP
// server, and with --discover its tools are registered.
func newImportMCPRegistryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp-registry FILE|URL",
		Short: "Save the servers of an MCP Registry (server.json or /v0/servers) as MCP servers",
		Long: `Import reads a server.json, or a page of an MCP registry's server list (a file, or an
http(s) URL such as https://registry.modelcontextprotocol.io/v0.1/servers?search=github,
whose pages it follows by nextCursor; a bare registry address lists /v0.1/servers), keeps
the latest version of each server, and saves each as an MCP server named after the part of
its name after the slash (io.github.owner/weather → weather; the whole name when that is
taken):

  npm      npx -y ID@VERSION            pypi   uvx ID==VERSION
  oci      docker run -i --rm IMAGE     nuget  dnx ID@VERSION --yes
  mcpb     refused (caphub does not unpack bundles)
  remotes  the streamable-http or sse URL, with its headers

with the package's runtime and package arguments, and its environment variables. The first
usable package is taken, then the remotes (--prefer remote: the other way round). Inputs
without a value take their default; a required one without either must be given with
--set NAME=VALUE (NAME: the variable, the valueHint or the flag). A secret is never stored:
an environment variable or header that needs one refers to caphub's own variable (${NAME}),
which the operator sets. A server that cannot be saved is listed with the reason.

An imported server's command, variables and URL came from a registry, not from the
operator, so caphub treats it as it treats a server saved over its API: it starts the
command, reads a variable and reaches a host only when the operator allows it
(--allow-command, --allow-env, --allow-host, here for --discover and on caphub serve). Each
saved server says what is not allowed yet. With --discover each one's tools are listed and
registered as caphub discover mcp does.`,
		Example: `  caphub import mcp-registry ./server.json
  caphub import mcp-registry https://registry.modelcontextprotocol.io/v0.1/servers?search=filesystem
  caphub import mcp-registry ./server.json --set api_region=eu --discover --allow-command npx --allow-env WEATHER_API_KEY
  caphub server list`,
		Args: exactArgs(1, "the server.json FILE or the registry URL"),
		RunE: runImportMCPRegistry,
	}
	cmd.Flags().Bool("discover", false, "list each saved server's tools and register them (caphub discover mcp)")
	cmd.Flags().String("prefer", "package", "package (run a package, else reach a remote) or remote (the other way round)")
	cmd.Flags().StringArray("set", nil, "NAME=VALUE for an input without a value (a variable, a valueHint, a flag such as --port, an env or header name); a secret only as a ${VAR} reference; repeatable")
	cmd.Flags().Int("max-pages", mcpregistry.DefaultMaxPages, "most pages of a registry list to follow")
	cmd.Flags().Duration("fetch-timeout", mcpregistry.DefaultFetchTimeout, "time limit of each page fetched")
	cmd.Flags().StringArray("fetch-header", nil, "'Name: value' sent to the registry URL; value may hold ${VAR} from the environment (repeatable)")
	cmd.Flags().StringArray("allow-command", nil, "program an imported server may run (name or path, * for any); repeatable; default $CAPHUB_ALLOW_COMMANDS, else none")
	cmd.Flags().StringArray("allow-env", nil, "environment variable an imported server may read (* for any); repeatable; default $CAPHUB_ALLOW_ENV, else none")
	cmd.Flags().StringArray("allow-host", nil, "host an imported server may be reached at; repeatable; default $CAPHUB_ALLOW_HOSTS, else loopback only")
	addFormatFlag(cmd)
	return cmd
}

// importedServer is one line of the import's report.
type importedServer struct {
	*mcpregistry.Plan
	// Refused lists what the operator's allow-lists do not allow yet.
	Refused    []string         `json:"refused,omitempty"`
	Discovered *discover.Report `json:"discovered,omitempty"`
	Updated    bool             `json:"updated,omitempty"`
}

// importReport is what the import did.
type importReport struct {
	Saved   []importedServer     `json:"saved"`
	Skipped []*mcpregistry.Plan  `json:"skipped"`
	Invalid []string             `json:"invalid,omitempty"`
	Dropped []string             `json:"dropped,omitempty"`
	Pages   int                  `json:"pages"`
	Remote  string               `json:"remote_caphub,omitempty"`
	Permits *importPermitsReport `json:"allow_lists,omitempty"`
}

type importPermitsReport struct {
	Commands []string `json:"commands"`
	Env      []string `json:"env"`
	Hosts    []string `json:"hosts"`
}

func runImportMCPRegistry(cmd *cobra.Command, args []string) error {
	format, err := outputFormat(cmd)
	if err != nil {
		return err
	}
	opts := mcpregistry.Options{Inputs: map[string]string{}}
	switch prefer, _ := cmd.Flags().GetString("prefer"); prefer {
	case "package":
	case "remote":
		opts.PreferRemote = true
	default:
		return &usageError{fmt.Errorf("--prefer %q: use package or remote", prefer)}
	}
	sets, _ := cmd.Flags().GetStringArray("set")
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return &usageError{fmt.Errorf("--set %q: write NAME=VALUE", s)}
		}
		opts.Inputs[k] = v
	}
	fo := mcpregistry.FetchOptions{Header: http.Header{}}
	fo.MaxPages, _ = cmd.Flags().GetInt("max-pages")
	fo.Timeout, _ = cmd.Flags().GetDuration("fetch-timeout")
	headers, _ := cmd.Flags().GetStringArray("fetch-header")
	for _, h := range headers {
		k, v, err := mcpconn.ParseHeaderFlag(h)
		if err != nil {
			return &usageError{fmt.Errorf("--fetch-header: %v", err)}
		}
		fo.Header.Set(k, os.ExpandEnv(v))
	}
	permits := &permit.Permits{
		Commands: listSetting(cmd, "allow-command", "CAPHUB_ALLOW_COMMANDS"),
		Env:      listSetting(cmd, "allow-env", "CAPHUB_ALLOW_ENV"),
		Hosts:    listSetting(cmd, "allow-host", "CAPHUB_ALLOW_HOSTS"),
	}
	fetched, err := mcpregistry.Fetch(cmd.Context(), args[0], fo)
	if err != nil {
		return err
	}
	entries, dropped := mcpregistry.Latest(fetched.Entries)
	rep := &importReport{Saved: []importedServer{}, Skipped: []*mcpregistry.Plan{}, Dropped: dropped, Pages: fetched.Pages}
	for _, inv := range fetched.Invalid {
		rep.Invalid = append(rep.Invalid, inv.Error())
	}
	discoverToo, _ := cmd.Flags().GetBool("discover")
	err = withRegistry(cmd, func(reg registry.API) error {
		imp, err := newImporter(reg, permits)
		if err != nil {
			return err
		}
		if imp.remote != nil {
			rep.Remote = stringSetting(cmd, "server", "CAPHUB_SERVER")
		} else {
			rep.Permits = &importPermitsReport{Commands: permits.Commands, Env: permits.Env, Hosts: permits.Hosts}
		}
		return imp.run(cmd.Context(), entries, opts, discoverToo, rep)
	})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if format == "json" {
		if err := writeJSON(out, rep); err != nil {
			return err
		}
	} else {
		printImport(out, rep)
	}
	failed := len(rep.Skipped) + len(rep.Invalid)
	for _, s := range rep.Saved {
		if s.Discovered != nil && (s.Discovered.Error != "" || len(s.Discovered.Failures) > 0) {
			failed++
		}
	}
	if failed > 0 {
		return &silentError{fmt.Sprintf("%d servers were not imported or discovered", failed)}
	}
	return nil
}

// importer saves plans into the local database or a remote caphub.
type importer struct {
	reg     registry.API
	servers discover.ServerAPI
	local   *discover.Servers // nil with --server
	permits *permit.Permits
	remote  *client.Client
}

func newImporter(reg registry.API, permits *permit.Permits) (*importer, error) {
	imp := &importer{reg: reg, permits: permits}
	switch r := reg.(type) {
	case *client.Client:
		imp.servers, imp.remote = r, r
	case *registry.Service:
		// What a registry document says caphub should run is bounded by
		// the operator's allow-lists, as what is saved over the API is.
		imp.local = discover.NewServers(r.Store(), discover.SavedOverAPI(), discover.APIPermits(permits), discover.WithRecorder(r.Recorder()))
		imp.servers = imp.local
	default:
		return nil, fmt.Errorf("this registry cannot save MCP servers")
	}
	return imp, nil
}

// run names, maps, saves and (with discoverToo) discovers each entry.
func (imp *importer) run(ctx context.Context, entries []mcpregistry.Entry, opts mcpregistry.Options, discoverToo bool, rep *importReport) error {
	existing, err := imp.servers.ListServers(ctx)
	if err != nil {
		return err
	}
	owner := map[string]string{} // caphub name -> registry name ("" for a server saved otherwise)
	for _, s := range existing {
		owner[s.Server.Name] = registryName(s.Server.Registry)
	}
	for _, e := range entries {
		name, ok := freeName(owner, e.Server.Name)
		if !ok {
			rep.Skipped = append(rep.Skipped, &mcpregistry.Plan{Registry: e.Server.Name, Version: e.Server.Version, Name: name,
				Skipped: fmt.Sprintf("the names %s and %s are taken by other saved servers: remove one (caphub server remove NAME) and import again", mcpregistry.LocalName(e.Server.Name, false), name)})
			continue
		}
		_, updated := owner[name]
		plan := mcpregistry.Connect(e, name, opts)
		if plan.Server == nil {
			rep.Skipped = append(rep.Skipped, plan)
			continue
		}
		srv := plan.Server
		if imp.local != nil {
			srv = imp.local.Bound(srv)
		}
		if err := imp.servers.SaveServer(ctx, srv); err != nil {
			plan.Skipped, plan.Server = "not saved: "+err.Error(), nil
			rep.Skipped = append(rep.Skipped, plan)
			continue
		}
		owner[name] = e.Server.Name
		saved := importedServer{Plan: plan, Updated: updated}
		if imp.local != nil {
			saved.Refused = refusals(imp.permits, srv, plan.Needs)
		}
		if discoverToo {
			saved.Discovered = imp.discover(ctx, srv)
		}
		rep.Saved = append(rep.Saved, saved)
	}
	return nil
}

// discover lists and registers one saved server's tools.
func (imp *importer) discover(ctx context.Context, srv *mcpconn.Server) *discover.Report {
	opts := discover.Options{Register: true, Version: buildVersion()}
	var rep *discover.Report
	var err error
	if imp.remote != nil {
		rep, err = imp.remote.Discover(ctx, srv, true)
	} else {
		rep, err = discover.Run(ctx, imp.reg, imp.local, srv, opts)
	}
	if rep == nil {
		rep = &discover.Report{Server: srv.Name}
	}
	if err != nil {
		rep.Error = err.Error()
	}
	return rep
}

// registryName is the name of a kept registry entry, "" for none.
func registryName(raw json.RawMessage) string {
	var s struct{ Name string }
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s.Name
}

// freeName is the caphub name of a registry name: its short form, else
// its full form, whichever is free or already this entry's; ok is false
// when both are another server's.
func freeName(owner map[string]string, regName string) (string, bool) {
	var name string
	for _, full := range []bool{false, true} {
		name = mcpregistry.LocalName(regName, full)
		if o, taken := owner[name]; !taken || o == regName {
			return name, true
		}
	}
	return name, false
}

// refusals says what of a saved server the allow-lists do not allow yet:
// its program, the variables it reads, its host; and what is missing here
// (the program, a variable's value).
func refusals(p *permit.Permits, srv *mcpconn.Server, needs []mcpregistry.Need) []string {
	var out []string
	if srv.Command != "" {
		prog := strings.Fields(srv.Command)[0]
		path, lookErr := exec.LookPath(prog)
		if err := p.Command(prog, path, exec.LookPath); err != nil {
			out = append(out, fmt.Sprintf("runs %s, which the allow-list does not allow: add --allow-command %s (here for --discover, and to caphub serve)", prog, prog))
		}
		if lookErr != nil {
			out = append(out, fmt.Sprintf("%s is not installed here: install it where caphub runs", prog))
		}
	}
	if srv.URL != "" {
		c := *srv
		c.Permits = p
		if err := c.CheckURL(); err != nil {
			out = append(out, err.Error())
		}
	}
	for _, n := range needs {
		if !p.EnvAllowed(n.Var) {
			out = append(out, fmt.Sprintf("reads $%s, which the allow-list does not allow: add --allow-env %s", n.Var, n.Var))
		} else if _, set := os.LookupEnv(n.Var); !set {
			out = append(out, fmt.Sprintf("$%s is not set here: export it where caphub runs", n.Var))
		}
	}
	return out
}

// printImport writes the report as text.
func printImport(w io.Writer, rep *importReport) {
	for _, s := range rep.Saved {
		verb := "saved  "
		if s.Updated {
			verb = "updated"
		}
		fmt.Fprintf(w, "%s  %s (%s %s) from %s: %s\n", verb, s.Name, s.Registry, s.Version, s.From, s.Server.Source())
		for _, n := range s.Needs {
			var kind []string
			if n.Secret {
				kind = append(kind, "secret")
			}
			if n.Required {
				kind = append(kind, "required")
			}
			desc := ""
			if n.Description != "" {
				desc = ": " + n.Description
			}
			fmt.Fprintf(w, "  needs    $%s for %s (%s)%s\n", n.Var, n.For, strings.Join(kind, ", "), desc)
		}
		for _, r := range s.Refused {
			fmt.Fprintf(w, "  not yet  %s\n", r)
		}
		for _, n := range s.Notes {
			fmt.Fprintf(w, "  note     %s\n", n)
		}
		if d := s.Discovered; d != nil {
			if d.Plan != nil {
				fmt.Fprintf(w, "  discovered %d tools: %d new, %d changed, %d unchanged\n", d.Tools, len(d.Plan.New), len(d.Plan.Changed), len(d.Plan.Unchanged))
			}
			if d.Error != "" {
				fmt.Fprintf(w, "  discovery failed: %s\n", d.Error)
			}
		}
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "skipped  %s %s: %s\n", s.Registry, s.Version, s.Skipped)
	}
	for _, i := range rep.Invalid {
		fmt.Fprintf(w, "invalid  %s\n", i)
	}
	for _, d := range rep.Dropped {
		fmt.Fprintf(w, "left out %s\n", d)
	}
	fmt.Fprintf(w, "%d saved, %d skipped, %d invalid (%d pages read)\n", len(rep.Saved), len(rep.Skipped), len(rep.Invalid), rep.Pages)
	if len(rep.Saved) == 0 {
		return
	}
	if rep.Remote != "" {
		fmt.Fprintf(w, "The caphub at %s runs them within its own allow-lists (its --allow-command, --allow-env, --allow-host).\n", rep.Remote)
		return
	}
	fmt.Fprintln(w, "Imported servers run only within the operator's allow-lists (--allow-command, --allow-env, --allow-host on caphub serve), as servers saved over the API do.")
}
