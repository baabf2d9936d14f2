package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/client"
	"github.com/caphub/caphub/format/ossa"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// defaultDBName is the file of the default database, in the user's data
// directory (defaultDBPath).
const defaultDBName = "caphub.db"

// defaultDBHelp names the default database for --help.
const defaultDBHelp = "caphub/" + defaultDBName + " in the user's data directory ($XDG_DATA_HOME, ~/.local/share, ~/Library/Application Support or %LocalAppData%)"

// defaultDBPath is the local database used when neither --db nor
// $CAPHUB_DB names one: caphub/caphub.db in the user's data directory, so
// that an MCP client starting caphub mcp in a directory of its choosing, or
// a user in another directory, finds the same registry instead of an empty
// one in the working directory (the store makes the directory on first
// use).
func defaultDBPath() (string, error) {
	dir, err := userDataDir()
	if err != nil {
		return "", fmt.Errorf("finding the user's data directory for the default database: %w (name a database with --db or $CAPHUB_DB)", err)
	}
	return filepath.Join(dir, "caphub", defaultDBName), nil
}

// userDataDir is where the platform keeps a user's application data:
// $XDG_DATA_HOME or ~/.local/share on Unix, ~/Library/Application Support
// on macOS, %LocalAppData% on Windows.
func userDataDir() (string, error) {
	switch runtime.GOOS {
	case "windows":
		if d := os.Getenv("LocalAppData"); d != "" {
			return d, nil
		}
		return "", errors.New("%LocalAppData% is not set")
	case "darwin", "ios":
		return os.UserConfigDir() // ~/Library/Application Support
	}
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "share"), nil
}

// addRegistryFlags adds the flags every registry command accepts.
func addRegistryFlags(root *cobra.Command) {
	root.PersistentFlags().String("db", "", "database: a SQLite file path or a postgres:// URL (default $CAPHUB_DB, else "+defaultDBHelp+")")
	root.PersistentFlags().String("server", "", "use a running caphub server at this URL instead of a local database (default $CAPHUB_SERVER)")
	root.PersistentFlags().String("token-file", "", "with --server, a file holding the API token to send (readable by its owner alone); default $CAPHUB_TOKEN_FILE, else the token in $CAPHUB_TOKEN")
	root.PersistentFlags().Duration("timeout", 0, fmt.Sprintf("with --server, how long to wait for each answer; 0 waits as long as the server works (default 10m for imports and capability register, 1m otherwise). When caphub gives up on a change it exits %d: the server may still complete it",
		exitGaveUp))
}

// longTimeout is how long a --server command that registers many
// definitions waits for the server's answer by default: an import of
// thousands of operations takes the server minutes, and a client that gives
// up earlier only loses track of work the server still completes.
const longTimeout = 10 * time.Minute

// Annotations of commands (cobra.Command.Annotations).
const (
	// annotTimeout is the command's default --timeout (a Go duration).
	annotTimeout = "caphub/timeout"
	// annotGaveUp is what to do when the command gave up on the server.
	annotGaveUp = "caphub/gave-up"
)

// longServerWork marks cmd as one that may keep a server busy for minutes:
// with --server it waits longTimeout by default, and its help says what
// exit status 7 means and what to do then (check, then run it again: what
// it registers is idempotent).
func longServerWork(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotTimeout] = longTimeout.String()
	cmd.Annotations[annotGaveUp] = "the server may still complete the registration: check with `caphub capability list --server URL --all-versions` " +
		"(--domain or --source narrow it), then run the same command again to finish it: registering identical content again changes nothing. " +
		"Give the server more time with --timeout (0: no limit)."
	cmd.Long += fmt.Sprintf(`

With --server, caphub waits up to %s for the server's answer (--timeout; 0: no limit).
Exit status %d: caphub gave up waiting before the server answered, and the server may still
complete the registration, so nothing is reported as failed. Check with caphub capability
list --server URL --all-versions, and run the command again: identical content is a no-op.`, "10 minutes", exitGaveUp)
	return cmd
}

// serverTimeout is how long cmd waits for a --server answer: --timeout
// when given (0: no limit), else the command's default.
func serverTimeout(cmd *cobra.Command) time.Duration {
	if f := cmd.Flags().Lookup("timeout"); f != nil && f.Changed {
		d, _ := cmd.Flags().GetDuration("timeout")
		return d
	}
	if d, err := time.ParseDuration(cmd.Annotations[annotTimeout]); err == nil {
		return d
	}
	return client.DefaultTimeout
}

// openRegistry returns the registry the command works on: a server
// (--server, $CAPHUB_SERVER) or the local database.
func openRegistry(ctx context.Context, cfg config, opts ...registry.Option) (registry.API, error) {
	if cfg.server != "" {
		return client.New(cfg.server, client.WithTimeout(cfg.timeout), client.WithToken(cfg.token))
	}
	svc, _, err := openService(ctx, cfg, opts...)
	if err != nil {
		return nil, err
	}
	return svc, nil
}

// withRegistry runs fn on the registry (a local one made with opts) and
// closes it. Changes made on a local database are recorded as made by the
// local user.
func withRegistry(cmd *cobra.Command, fn func(reg registry.API) error, opts ...registry.Option) error {
	// The command prints its own results; the service logs only problems.
	cfg, err := configFrom(cmd, slog.LevelWarn)
	if err != nil {
		return err
	}
	reg, err := openRegistry(cmd.Context(), cfg, opts...)
	if err != nil {
		return err
	}
	defer reg.Close()
	cmd.SetContext(identity.With(cmd.Context(), identity.Caller{Actor: localActor()}))
	return fn(reg)
}

// localActor names the user running the CLI.
func localActor() string {
	if u, err := user.Current(); err == nil {
		return "local:" + u.Username
	}
	return "local"
}

func filterFlags(cmd *cobra.Command) {
	cmd.Flags().String("domain", "", "domain (dotted prefixes match both ways: github matches github.issues)")
	cmd.Flags().String("category", "", "category, e.g. crud.read")
	cmd.Flags().String("stability", "", "experimental, beta, stable or deprecated")
	cmd.Flags().String("binding", "", "binding type: native, mcp, http, grpc, cli or delegation")
	cmd.Flags().String("source", "", "provenance method, e.g. mcp_introspection, or manual")
	cmd.Flags().String("intent", "", "Agent OS intent, e.g. messaging.send_text")
	cmd.Flags().String("trust", "", "trust tier: verified, trusted, community or untrusted")
	cmd.Flags().Bool("all-versions", false, "every version, not only the highest of each capability")
	cmd.Flags().Int("limit", 0, "print at most N (default: every match)")
	addFormatFlag(cmd)
}

func filterFromFlags(cmd *cobra.Command) registry.ListFilter {
	get := func(n string) string { v, _ := cmd.Flags().GetString(n); return v }
	all, _ := cmd.Flags().GetBool("all-versions")
	return registry.ListFilter{Domain: get("domain"), Category: get("category"), Stability: get("stability"),
		BindingType: get("binding"), Source: get("source"), Intent: get("intent"), TrustTier: get("trust"), AllVersions: all}
}

// collect pages through a list or search until limit items (0: all),
// following the cursor, and returns them with the total of matches: the
// first page's when it counted it (a search always does; a list page does
// when it sets ListFilter.CountTotal, which collect asks of the first
// page only when the limit may cut the list short), else the number read.
func collect(limit int, page func(cursor string, size int, count bool) (registry.Page, error)) ([]registry.Record, int, error) {
	var out []registry.Record
	cursor, total := "", registry.NotCounted
	for {
		size := registry.MaxPageSize
		if limit > 0 && limit-len(out) < size {
			size = limit - len(out)
		}
		p, err := page(cursor, size, cursor == "" && limit > 0)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, p.Items...)
		if cursor == "" {
			total = p.Total
		}
		if p.NextCursor == "" || limit > 0 && len(out) >= limit || len(p.Items) == 0 {
			if total < 0 {
				total = len(out) // read to the end: every match
			}
			return out, total, nil
		}
		cursor = p.NextCursor
	}
}

func printRecords(cmd *cobra.Command, recs []registry.Record, total int) error {
	format, err := outputFormat(cmd)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if format == "json" {
		return printDefinitionsJSON(cmd, recs, total)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "URI\tVERSION\tSTABILITY\tDESCRIPTION")
	for _, r := range recs {
		d := r.Definition
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.URI, d.Version, d.Stability, firstLine(d.Description, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d of %d\n", len(recs), total)
	return nil
}

// printDefinitionsJSON prints the records' definitions as {items, total}.
func printDefinitionsJSON(cmd *cobra.Command, recs []registry.Record, total int) error {
	items := make([]capability.Definition, len(recs))
	for i, r := range recs {
		items[i] = r.Definition
	}
	return writeJSON(cmd.OutOrStdout(), map[string]any{"items": items, "total": total})
}

func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

func newListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List registered capabilities",
		Example: "  caphub capability list\n  caphub capability list --domain github --category crud.read --format json\n  caphub capability list --server http://127.0.0.1:8750",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := filterFromFlags(cmd)
			limit, _ := cmd.Flags().GetInt("limit")
			return withRegistry(cmd, func(reg registry.API) error {
				recs, total, err := collect(limit, func(cursor string, size int, count bool) (registry.Page, error) {
					f.Cursor, f.Limit, f.CountTotal = cursor, size, count
					return reg.List(cmd.Context(), f)
				})
				if err != nil {
					return err
				}
				return printRecords(cmd, recs, total)
			})
		},
	}
	filterFlags(cmd)
	return cmd
}

func newSearchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Ranked full-text search over the registry",
		Long: `Search ranks the registry's capabilities for QUERY and prints the compact form of each
match, best first: its URI, version, stability, the first sentence of its description and
its parameters (name: type, * after a required one). --format json prints the summaries
(tool_name, uri, version, title, description, params) as JSON; --view full prints the whole
definitions as JSON instead.`,
		Example: "  caphub capability search \"scan vulnerabilities\"\n  caphub capability search '' --intent messaging.send_text\n  caphub capability search issues --domain github --limit 5\n  caphub capability search issues --domain github --view full",
		Args:    exactArgs(1, "a QUERY (use '' with --intent to list by intent)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			view, _ := cmd.Flags().GetString("view")
			if view != "compact" && view != "full" {
				return &usageError{fmt.Errorf("--view %q: use compact (a summary of each capability) or full (the whole definitions, as JSON)", view)}
			}
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			f := filterFromFlags(cmd)
			limit, _ := cmd.Flags().GetInt("limit")
			explain, _ := cmd.Flags().GetBool("explain")
			return withRegistry(cmd, func(reg registry.API) error {
				var first registry.Page
				var hits []registry.Hit
				recs, total, err := collect(limit, func(cursor string, size int, _ bool) (registry.Page, error) {
					f.Cursor, f.Limit = cursor, size
					p, err := reg.Search(cmd.Context(), registry.SearchQuery{Text: args[0], Filter: f, Explain: explain})
					if cursor == "" {
						first = p
					}
					hits = append(hits, p.Hits...)
					return p, err
				})
				if err != nil {
					return err
				}
				printUnknownWords(cmd, first.Unknown)
				if view == "full" {
					return printDefinitionsJSON(cmd, recs, total)
				}
				if err := printSummaries(cmd, recs, total, format); err != nil {
					return err
				}
				if explain {
					printExplanations(cmd, recs, hits)
				}
				return nil
			}, registry.WithSearchIndex(true))
		},
	}
	filterFlags(cmd)
	cmd.Flags().String("view", "compact", "compact (a summary of each match) or full (the whole definitions, as JSON)")
	cmd.Flags().Bool("explain", false, "after the matches, what each one's score is made of (the words found and in which fields, the action asked for)")
	return cmd
}

// printUnknownWords says on stderr which words of a search no capability
// has, and the nearest known ones.
func printUnknownWords(cmd *cobra.Command, unknown []registry.UnknownWord) {
	for _, u := range unknown {
		msg := fmt.Sprintf("caphub: no capability has the word %q", u.Word)
		if len(u.DidYouMean) > 0 {
			msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(u.DidYouMean, ", "))
		}
		fmt.Fprintln(cmd.ErrOrStderr(), msg)
	}
}

// printExplanations prints why each match ranked where it did, as the
// search index said (a store's own search, or a server, may not say).
func printExplanations(cmd *cobra.Command, recs []registry.Record, hits []registry.Hit) {
	out := cmd.OutOrStdout()
	if len(hits) < len(recs) {
		fmt.Fprintln(out, "\n(no explanation: this registry's search does not give one; a caphub with its search index does)")
		return
	}
	fmt.Fprintln(out)
	for i, r := range recs {
		fmt.Fprintf(out, "%d. %s  score %.2f\n", i+1, r.Key, hits[i].Score)
		for _, w := range hits[i].Why {
			fmt.Fprintf(out, "     %s\n", w)
		}
	}
}

// printSummaries prints the compact form of each record (capability.Summary):
// a table, or with format json the summaries.
func printSummaries(cmd *cobra.Command, recs []registry.Record, total int, format string) error {
	out := cmd.OutOrStdout()
	sums := make([]capability.Summary, len(recs))
	for i := range recs {
		sums[i] = recs[i].Summary()
	}
	if format == "json" {
		return writeJSON(out, map[string]any{"items": sums, "total": total})
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "URI\tVERSION\tSTABILITY\tDESCRIPTION\tPARAMS")
	for i, s := range sums {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.URI, s.Version, recs[i].Definition.Stability, firstLine(s.Description, 60), firstLine(s.Params, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d of %d\n", len(recs), total)
	return nil
}

func newRegisterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "register FILE...",
		Short: "Register capability definitions (all files in one transaction)",
		Long: `Register validates each definition, infers missing domains and categories, refuses a
version whose bump is smaller than its changes need, and stores every definition of every
file in one transaction. Re-registering identical content is a no-op; the same version with
other content is a conflict.`,
		Example: "  caphub capability register ./scan.yaml\n  caphub capability register --server http://127.0.0.1:8750 capabilities/*.yaml",
		Args:    minArgs(1, "at least one FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var defs []capability.Definition
			for _, path := range args {
				f, err := ossa.ReadFile(path)
				if err != nil {
					return err
				}
				if len(f.Issues) > 0 {
					for _, iss := range f.Issues {
						fmt.Fprintln(cmd.ErrOrStderr(), iss.String())
					}
					return &silentError{"unreadable definitions"}
				}
				if issues := f.Validate(); capability.HasErrors(issues) {
					for _, iss := range issues {
						fmt.Fprintln(cmd.ErrOrStderr(), iss.String())
					}
					return &silentError{"invalid definitions"}
				}
				defs = append(defs, f.Definitions()...)
			}
			if len(defs) == 0 {
				return fmt.Errorf("the files hold no capability definition")
			}
			return withRegistry(cmd, func(reg registry.API) error {
				res, err := reg.RegisterBatch(cmd.Context(), defs)
				var be *registry.BatchError
				if errors.As(err, &be) && len(defs) == 1 {
					return be.Failures[0].Err
				}
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				for _, r := range res {
					verb := "registered"
					if !r.Created {
						verb = "unchanged "
					}
					fmt.Fprintf(out, "%s %s (%s)%s\n", verb, r.URI, r.Version, tierNote(r))
				}
				return nil
			})
		},
	}
	return longServerWork(cmd)
}

// tierNote says which trust tier a registration created a version with.
func tierNote(r registry.RegisterResult) string {
	if r.TrustTier == "" {
		return ""
	}
	return ", trust tier " + r.TrustTier
}

// splitVersioned splits "ossa:d/n@1.0.3" into the capability URI and the
// version text (which may be full, unlike a URI's).
func splitVersioned(s string) (capability.URI, string, error) {
	base, version, _ := strings.Cut(s, "@")
	u, err := capability.ParseURI(base)
	if err != nil {
		return u, "", &usageError{err}
	}
	if version != "" {
		if _, err := capability.ParseVersion(version); err != nil {
			return u, "", &usageError{err}
		}
	}
	return u, version, nil
}

func newShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "show URI",
		Short:   "Show every version of a capability, its deprecation and bindings",
		Example: "  caphub capability show ossa:memory/kg_query\n  caphub capability show ossa:security/scan_vulnerabilities@1.0 --format json",
		Args:    exactArgs(1, "a capability URI"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			u, _, err := splitVersioned(args[0])
			if err != nil {
				return err
			}
			return withRegistry(cmd, func(reg registry.API) error {
				versions, err := reg.Versions(cmd.Context(), u.Scheme, u.Domain, u.Name)
				if err != nil {
					return err
				}
				if len(versions) == 0 {
					return registry.NotRegistered(u)
				}
				resolved, rerr := reg.Resolve(cmd.Context(), args[0])
				tier := ""
				if rerr == nil {
					// The tier of the version the URI resolves to.
					if rec, err := reg.Get(cmd.Context(), u.Scheme, u.Domain, u.Name, resolved.Version); err == nil {
						tier = rec.TrustTier
					}
				}
				if format == "json" {
					defs := make([]capability.Definition, len(versions))
					for i, r := range versions {
						defs[i] = r.Definition
					}
					out := map[string]any{"capability": u.Base(), "tool_name": capability.ToolName(u.Base()), "versions": defs}
					if rerr == nil {
						out["resolved"] = resolved
						if tier != "" {
							out["trust_tier"] = tier
						}
					} else {
						out["resolve_error"] = rerr.Error()
					}
					return writeJSON(cmd.OutOrStdout(), out)
				}
				printShow(cmd.OutOrStdout(), u, versions, resolved, tier, rerr)
				return nil
			})
		},
	}
	addFormatFlag(cmd)
	return cmd
}

func printShow(w io.Writer, u capability.URI, versions []registry.Record, res registry.Resolution, tier string, rerr error) {
	latest := versions[len(versions)-1].Definition
	fmt.Fprintf(w, "%s", u.Base())
	if latest.Title != "" {
		fmt.Fprintf(w, " — %s", latest.Title)
	}
	fmt.Fprintln(w)
	if latest.Description != "" {
		fmt.Fprintf(w, "  %s\n", firstLine(latest.Description, 100))
	}
	fmt.Fprintf(w, "  MCP tool name: %s\n", capability.ToolName(u.Base()))
	if rerr == nil {
		fmt.Fprintf(w, "  resolves to: %s (%s)\n", res.URI, res.Version)
		if tier != "" {
			fmt.Fprintf(w, "  trust tier: %s\n", tier)
		}
		for _, wr := range res.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", wr.Message)
		}
	} else {
		fmt.Fprintf(w, "  does not resolve: %v\n", rerr)
	}
	fmt.Fprintln(w, "  versions:")
	for _, r := range versions {
		d := r.Definition
		fmt.Fprintf(w, "    %-10s %s", d.Version, d.Stability)
		if d.DeprecatedBy != "" {
			fmt.Fprintf(w, ", replaced by %s", d.DeprecatedBy)
		}
		if d.SunsetDate != "" {
			fmt.Fprintf(w, ", sunset %s", d.SunsetDate)
		}
		fmt.Fprintln(w)
		if d.MigrationGuide != "" {
			fmt.Fprintf(w, "               migration: %s\n", firstLine(d.MigrationGuide, 90))
		}
		fmt.Fprintf(w, "               bindings: %s\n", describeBindings(d.Bindings))
		if len(d.Domains)+len(d.Categories) > 0 {
			fmt.Fprintf(w, "               domains: %s; categories: %s\n", strings.Join(d.Domains, ", "), strings.Join(d.Categories, ", "))
		}
	}
}

func describeBindings(b capability.Bindings) string {
	var parts []string
	if b.Native != nil {
		parts = append(parts, "native "+b.Native.Handler)
	}
	if b.MCP != nil {
		parts = append(parts, "mcp "+b.MCP.Server+"/"+b.MCP.Tool)
	}
	if b.HTTP != nil {
		parts = append(parts, "http "+strings.ToUpper(b.HTTP.Method)+" "+b.HTTP.URL)
	}
	if b.GRPC != nil {
		parts = append(parts, "grpc "+b.GRPC.Service+"/"+b.GRPC.Method)
	}
	if b.CLI != nil {
		parts = append(parts, "cli `"+b.CLI.Command+"`")
	}
	if b.Delegation != nil {
		parts = append(parts, "delegation "+b.Delegation.Agent+b.Delegation.URL)
	}
	parts = append(parts, b.Types()[len(parts):]...)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

func newDeprecateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deprecate URI",
		Short: "Deprecate a capability version (OSSA §8)",
		Long: `Deprecate marks a version deprecated. It keeps resolving, with a warning, through its
grace period (the longer of two minor versions and six months); after --sunset it no longer
resolves and the error names the replacement. URI@MAJOR.MINOR deprecates every patch of it;
URI@MAJOR.MINOR.PATCH only that one.`,
		Example: "  caphub capability deprecate ossa:security/scan@0.9 --by ossa:security/scan_vulnerabilities@1.0 --sunset 2027-06-01 --guide \"Rename path to target\"",
		Args:    exactArgs(1, "a capability URI with its version"),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, version, err := splitVersioned(args[0])
			if err != nil {
				return err
			}
			if version == "" {
				return &usageError{fmt.Errorf("%s: name the version to deprecate, e.g. %s@1.0", args[0], u.Base())}
			}
			by, _ := cmd.Flags().GetString("by")
			sunset, _ := cmd.Flags().GetString("sunset")
			guide, _ := cmd.Flags().GetString("guide")
			if by == "" && guide == "" {
				return &usageError{errors.New("give the replacement (--by URI) or a migration guide (--guide TEXT)")}
			}
			return withRegistry(cmd, func(reg registry.API) error {
				res, err := reg.Deprecate(cmd.Context(), u.Scheme, u.Domain, u.Name, version,
					registry.DeprecateRequest{DeprecatedBy: by, SunsetDate: sunset, MigrationGuide: guide})
				if err != nil {
					return err
				}
				for _, k := range res.Deprecated {
					fmt.Fprintf(cmd.OutOrStdout(), "deprecated %s\n", k)
				}
				for _, w := range res.Warnings {
					fmt.Fprintf(cmd.OutOrStdout(), "warning: %s\n", w.Message)
				}
				return nil
			})
		},
	}
	cmd.Flags().String("by", "", "URI of the replacement")
	cmd.Flags().String("sunset", "", "date (YYYY-MM-DD) after which the version stops resolving")
	cmd.Flags().String("guide", "", "migration guide")
	return cmd
}
