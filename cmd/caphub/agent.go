package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// newAgentCmd is `caphub agent`: commands on OSSA agent manifests.
func newAgentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "agent",
		Short:   "Manage OSSA agents: validate, apply, list, show, compose their configuration and delete",
		Example: "  caphub agent validate agent.ossa.yaml\n  caphub agent validate --db ./caphub.db agents/*.yaml",
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newAgentValidateCmd())
	cmd.AddCommand(newAgentApplyCmd(), newAgentListCmd(), newAgentShowCmd(), newAgentConfigCmd(), newAgentDeleteCmd())
	return cmd
}

// agentReport is the verdict on one manifest file.
type agentReport struct {
	File         string                  `json:"file"`
	Agent        string                  `json:"agent,omitempty"`   // metadata.name
	Version      string                  `json:"version,omitempty"` // metadata.version
	Valid        bool                    `json:"valid"`
	Errors       int                     `json:"errors"`
	Warnings     int                     `json:"warnings"`
	Issues       []capability.Issue      `json:"issues"`
	Capabilities []agent.CapabilityCheck `json:"capabilities,omitempty"` // OSSA §10 checks, when a registry was given

	readable      bool // the file is one YAML or JSON document
	usesSection10 bool // it declares, binds or requires capabilities
}

// registryProbeTimeout bounds the check that a given registry answers.
const registryProbeTimeout = 5 * time.Second

func newAgentValidateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check agent manifests against the OSSA v0.2.9 schema and, with a registry, their capabilities",
		Long: `Validate reads OSSA agent manifests (YAML or JSON, one manifest per file) and checks
each against the rules of the official OSSA v0.2.9 agent-manifest JSON Schema: required
fields (spec.role among them), kind: Agent, types, enums, patterns, bounds, and no
unknown fields where the schema forbids them. Every problem is printed as
file:line:column: severity: field path: what is wrong and what is allowed.

With a registry (--db FILE or --server URL, or $CAPHUB_DB / $CAPHUB_SERVER), it also
applies OSSA §10: each spec.capabilities URI and each spec.required_capabilities URI must
resolve in the registry (a missing one is an error; required ones are shown with their
reason), and each spec.capability_bindings entry must bind a declared capability with
valid bindings, which replace the registered ones for this agent. Without a registry, or
when it cannot be reached, those checks are skipped with a note.

Exit status: 0 when no file has errors (warnings allowed), 1 when any has, 2 on usage errors.`,
		Example: "  caphub agent validate agent.ossa.yaml\n  caphub agent validate --format json examples/*.yaml\n  caphub agent validate --server http://127.0.0.1:8750 agent.ossa.yaml",
		Args:    minArgs(1, "at least one manifest FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			reg, where, note := agentRegistry(cmd)
			if reg != nil {
				defer reg.Close()
			}
			reports := make([]agentReport, 0, len(args))
			failed, section10 := false, false
			for _, path := range args {
				r := validateAgentFile(cmd.Context(), path, reg)
				failed = failed || r.Errors > 0
				section10 = section10 || r.usesSection10
				reports = append(reports, r)
			}
			if reg == nil && note == "" && section10 {
				note = "capability URIs were not resolved: no registry given (use --db FILE or --server URL to check them, OSSA §10)"
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				doc := map[string]any{"valid": !failed, "files": reports}
				if reg != nil {
					doc["registry"] = where
				}
				if note != "" {
					doc["note"] = note
				}
				if err := writeJSON(out, doc); err != nil {
					return err
				}
			} else {
				printAgentReports(out, reports, where)
				if note != "" {
					fmt.Fprintln(out, "note: "+note)
				}
			}
			if failed {
				return &silentError{"validation failed"}
			}
			return nil
		},
	}
	addFormatFlag(cmd)
	return cmd
}

// agentRegistry opens the registry the flags name, for the OSSA §10 checks.
// It returns nil and a note when none is given or it cannot be used: the
// schema checks run regardless. A local database that does not exist is
// not created.
func agentRegistry(cmd *cobra.Command) (registry.API, string, string) {
	cfg, err := configFrom(cmd, slog.LevelWarn)
	if err != nil {
		return nil, "", fmt.Sprintf("capability checks skipped: %v", err)
	}
	server, db := cfg.server, cfg.db
	var where string
	switch {
	case server != "":
		where = server
	case cfg.dbGiven:
		where = db
		if !strings.Contains(db, "://") {
			if _, err := os.Stat(db); err != nil {
				return nil, "", fmt.Sprintf("capability checks skipped: database %s does not exist (register capabilities into it with `caphub capability register --db %s FILE`)", db, db)
			}
		}
	default:
		return nil, "", ""
	}
	reg, err := openRegistry(cmd.Context(), cfg)
	if err != nil {
		return nil, "", fmt.Sprintf("capability checks skipped: cannot open the registry %s: %v", where, err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), registryProbeTimeout)
	defer cancel()
	if _, err := reg.List(ctx, registry.ListFilter{Limit: 1}); err != nil {
		reg.Close()
		return nil, "", fmt.Sprintf("capability checks skipped: the registry %s does not answer: %v", where, err)
	}
	return reg, where, ""
}

func validateAgentFile(ctx context.Context, path string, reg registry.API) agentReport {
	r := agentReport{File: path, Issues: []capability.Issue{}}
	m, readIssues, err := agent.ReadManifestFile(path)
	if err != nil {
		iss := capability.Issue{Severity: capability.SeverityError, File: path, Message: err.Error()}
		var ae *agent.Error
		if errors.As(err, &ae) {
			iss = ae.Issue()
		}
		r.Issues = append(r.Issues, iss)
		r.Errors = 1
		return r
	}
	r.readable = true
	r.Agent, r.Version = m.Metadata.Name, m.Metadata.Version
	r.Issues = append(r.Issues, readIssues...)
	r.Issues = append(r.Issues, agent.Validate(m)...)
	s := m.Spec
	r.usesSection10 = len(s.RequiredCapabilities) > 0 || len(s.CapabilityBindings) > 0
	for _, c := range s.Capabilities {
		r.usesSection10 = r.usesSection10 || c.URI != ""
	}
	if reg != nil {
		checks := agent.CheckCapabilities(ctx, m, reg)
		r.Issues = append(r.Issues, agent.CheckIssues(checks)...)
		for i := range checks {
			checks[i].Issues = nil // listed once, with the file's other issues
		}
		r.Capabilities = checks
	}
	sort.SliceStable(r.Issues, func(i, j int) bool {
		a, b := r.Issues[i], r.Issues[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	for _, iss := range r.Issues {
		if iss.Severity == capability.SeverityError {
			r.Errors++
		} else {
			r.Warnings++
		}
	}
	r.Valid = r.Errors == 0
	return r
}

func printAgentReports(w io.Writer, reports []agentReport, registryName string) {
	for _, r := range reports {
		for _, iss := range r.Issues {
			fmt.Fprintln(w, iss.String())
		}
		printCapabilityChecks(w, r, registryName)
		verdict := "ok"
		if r.Errors > 0 {
			verdict = "INVALID"
		}
		what := "unreadable"
		switch {
		case r.readable && r.Agent != "":
			what = strings.TrimSpace("agent " + r.Agent + " " + r.Version)
		case r.readable:
			what = "agent without metadata.name"
		}
		fmt.Fprintf(w, "%s: %s, %s, %d %s, %d %s\n", r.File, verdict, what,
			r.Errors, plural(r.Errors, "error", "errors"), r.Warnings, plural(r.Warnings, "warning", "warnings"))
	}
}

// printCapabilityChecks lists the OSSA §10 outcome of one manifest: every
// declared capability (with its effective bindings) and every required one
// (with its reason).
func printCapabilityChecks(w io.Writer, r agentReport, registryName string) {
	var declared, required []agent.CapabilityCheck
	for _, c := range r.Capabilities {
		switch c.Kind {
		case agent.CheckDeclared:
			declared = append(declared, c)
		case agent.CheckRequired:
			required = append(required, c)
		}
	}
	if len(declared) > 0 {
		fmt.Fprintf(w, "%s: capabilities (registry %s):\n", r.File, registryName)
		for _, c := range declared {
			printCapabilityCheck(w, c, "")
		}
	}
	if len(required) > 0 {
		fmt.Fprintf(w, "%s: required capabilities:\n", r.File)
		for _, c := range required {
			reason := " — reason: " + c.Reason
			if c.Reason == "" {
				reason = " — no reason given"
			}
			printCapabilityCheck(w, c, reason)
		}
	}
}

// printCapabilityCheck writes one capability check's line: its status,
// name, what it resolved to and its bindings, then extra.
func printCapabilityCheck(w io.Writer, c agent.CapabilityCheck, extra string) {
	name := c.URI
	if name == "" {
		name = c.Name
	}
	if name == "" {
		name = c.Path
	}
	status := strings.ToUpper(string(c.Status))
	detail := ""
	switch c.Status {
	case agent.StatusResolved:
		status = "resolved"
		detail = fmt.Sprintf(" → %s (%s)", c.ResolvedURI, c.Version)
	case agent.StatusInline:
		status = "inline"
		detail = " (an inline capability object, not a URI: not resolved)"
	}
	if c.Bindings != nil {
		from := "registered"
		if c.BindingSource == agent.BindingsFromAgent {
			from = "from the manifest, replacing the registered ones"
		}
		detail += fmt.Sprintf("; bindings: %s (%s)", describeBindings(*c.Bindings), from)
	}
	fmt.Fprintf(w, "  %-9s %s%s%s\n", status, name, detail, extra)
}
