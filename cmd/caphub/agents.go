package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
	"github.com/spf13/cobra"
)

// The agent registry commands: apply, list, show, config and delete. They
// work on a local database (--db), whose store keeps agents as documents,
// or with --server on a running caphub (/v1/agents).

// withAgents runs fn on the agents of the local database, or of the server
// --server names. Locally the built-in capabilities are registered first (a
// no-op when they already are), as `caphub serve` does, so that agents can
// enable the everruns ones.
func withAgents(cmd *cobra.Command, fn func(agentStore) error) error {
	cfg, c, err := remoteOf(cmd)
	if err != nil {
		return err
	}
	if c != nil {
		return fn(remoteAgents{c.Agents()})
	}
	agents, svc, err := openAgents(cmd.Context(), cfg, func(err error) {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: the built-in capabilities could not be registered in %s, so agents cannot use them: %v\n", cfg.db, err)
	})
	if err != nil {
		return err
	}
	defer svc.Close()
	cmd.SetContext(identity.With(cmd.Context(), identity.Caller{Actor: localActor()}))
	return fn(localAgents{agents})
}

func newAgentApplyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apply FILE",
		Short: "Create or replace an agent from its OSSA v0.2.9 manifest",
		Long: `Apply reads an OSSA v0.2.9 agent manifest (YAML or JSON) and stores the agent it
describes under its metadata.name, replacing an agent of that name. The agent's system
prompt is spec.role; its capabilities are the URIs of spec.capabilities, in order
(positions 0, 1, …); spec.capability_bindings are kept with it. With --server it applies the
manifest on a running caphub (PUT /v1/agents/ID, a token with the publish scope; admin when
it gives a capability a cli binding).

The manifest must pass the checks of ` + "`caphub agent validate`" + ` (the schema, and every declared or
required capability resolving), and its capabilities must compose into an agent
configuration: no experimental ("coming soon") bundle, no two capabilities giving the
same tool name. Otherwise nothing is stored and every issue is printed as
file:line:column: severity: field path: message.

Exit status: 0 when applied (warnings are printed to stderr), 1 when refused.`,
		Example: "  caphub agent apply calculator.ossa.yaml\n  caphub agent apply --db ./caphub.db --format json agents/security-scanner.yaml\n  caphub agent apply calculator.ossa.yaml --server http://127.0.0.1:8750",
		Args:    exactArgs(1, "one manifest FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			m, readIssues, err := agent.ReadManifestFile(args[0])
			if err != nil {
				return err
			}
			if capability.HasErrors(readIssues) {
				printIssues(cmd.ErrOrStderr(), readIssues)
				return &silentError{"unreadable manifest"}
			}
			data, err := os.ReadFile(args[0]) // sent as it is to a server
			if err != nil {
				return err
			}
			return withAgents(cmd, func(agents agentStore) error {
				ag, issues, err := agents.apply(cmd.Context(), m, args[0], data)
				var me *agent.ManifestError
				if errors.As(err, &me) {
					printIssues(cmd.ErrOrStderr(), me.Issues)
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: not applied: fix the errors above and apply it again\n", args[0])
					return &silentError{"manifest refused"}
				}
				if err != nil {
					return err
				}
				printIssues(cmd.ErrOrStderr(), append(readIssues, issues...))
				if format == "json" {
					return writeJSON(cmd.OutOrStdout(), ag)
				}
				ids := make([]string, len(ag.Capabilities))
				for i, c := range ag.Capabilities {
					ids[i] = c.CapabilityID
				}
				fmt.Fprintf(cmd.OutOrStdout(), "applied agent %s: %d %s%s\n", ag.ID, len(ids), plural(len(ids), "capability", "capabilities"), listSuffix(ids))
				return nil
			})
		},
	}
	addFormatFlag(cmd)
	return cmd
}

func newAgentListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the agents in the registry",
		Example: "  caphub agent list\n  caphub agent list --db ./caphub.db --format json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			return withAgents(cmd, func(agents agentStore) error {
				all, err := agents.List(cmd.Context())
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if format == "json" {
					return writeJSON(out, map[string]any{"items": all, "total": len(all)})
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tVERSION\tCAPABILITIES\tUPDATED\tDESCRIPTION")
				for _, ag := range all {
					ids := make([]string, len(ag.Capabilities))
					for i, c := range ag.Capabilities {
						ids[i] = c.CapabilityID
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ag.ID, orDash(ag.Version), orDash(strings.Join(ids, ",")), ag.UpdatedAt.Format(time.RFC3339), firstLine(ag.Description, 50))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(out, "%d %s\n", len(all), plural(len(all), "agent", "agents"))
				return nil
			})
		},
	}
	addFormatFlag(cmd)
	return cmd
}

func newAgentShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show an agent: its capabilities in position order, what they resolve to, its tools",
		Long: `Show prints an agent with its capabilities in position order, each with the registered
version it resolves to now, the system-prompt text it adds and the tools it gives, then
every tool of the agent. Capabilities that cannot be applied are listed as problems.

Exit status: 0 when the agent's capabilities compose, 1 when there are problems.`,
		Example: "  caphub agent show calculator\n  caphub agent show --db ./caphub.db --format json calculator",
		Args:    exactArgs(1, "an agent ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			return withAgents(cmd, func(agents agentStore) error {
				ag, err := agents.Get(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				cfg, err := agents.compose(cmd.Context(), ag)
				var ce *agent.ConfigError
				switch {
				case errors.As(err, &ce):
					cfg = ce.Partial
				case err != nil:
					return err
				}
				var problems []agent.Problem
				if ce != nil {
					problems = ce.Problems
				}
				if format == "json" {
					if err := writeJSON(cmd.OutOrStdout(), map[string]any{"agent": ag, "config": cfg, "problems": problems}); err != nil {
						return err
					}
				} else {
					printAgent(cmd.OutOrStdout(), ag, cfg, problems)
				}
				if len(problems) > 0 {
					return &silentError{"the agent's capabilities cannot be applied"}
				}
				return nil
			})
		},
	}
	addFormatFlag(cmd)
	return cmd
}

func newAgentConfigCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "config ID",
		Short: "Print the AgentConfig an agent composes to (system prompt and tools), as JSON",
		Long: `Config composes the agent's capabilities in position order, as an agent loop receives
them: the system prompt is the capabilities' system-prompt additions followed by the
agent's own prompt, joined by blank lines; the tools are the union of the capabilities'
unit capabilities, each with its tool name, URI, description and input and output schemas.

An unknown or unavailable capability, or two capabilities giving the same tool name, is an
error: the problems are printed to stderr and the exit status is 1.`,
		Example: "  caphub agent config calculator\n  caphub agent config --db ./caphub.db calculator | jq -r .system_prompt",
		Args:    exactArgs(1, "an agent ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAgents(cmd, func(agents agentStore) error {
				cfg, err := agents.Config(cmd.Context(), args[0])
				var ce *agent.ConfigError
				if errors.As(err, &ce) {
					printProblems(cmd.ErrOrStderr(), ce.Problems)
					fmt.Fprintf(cmd.ErrOrStderr(), "agent %s: no configuration: fix its capabilities (caphub agent apply FILE, or PUT /v1/agents/%s/capabilities)\n", args[0], args[0])
					return &silentError{"the agent's capabilities cannot be applied"}
				}
				if err != nil {
					return err
				}
				for _, w := range cfg.Warnings {
					fmt.Fprintln(cmd.ErrOrStderr(), "warning: "+w)
				}
				return writeJSON(cmd.OutOrStdout(), cfg)
			})
		},
	}
}

func newAgentDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "delete ID",
		Short:   "Delete an agent",
		Example: "  caphub agent delete calculator\n  caphub agent delete calculator --server http://127.0.0.1:8750",
		Args:    exactArgs(1, "an agent ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAgents(cmd, func(agents agentStore) error {
				if err := agents.Delete(cmd.Context(), args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted agent %s\n", args[0])
				return nil
			})
		},
	}
}

func printIssues(w io.Writer, issues []capability.Issue) {
	for _, iss := range issues {
		fmt.Fprintln(w, iss.String())
	}
}

func printProblems(w io.Writer, problems []agent.Problem) {
	for _, p := range problems {
		fmt.Fprintf(w, "error: %s: %s\n", p.CapabilityID, p.Reason)
	}
}

// listSuffix is " (a, b, c)", or "" for an empty list.
func listSuffix(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return " (" + strings.Join(items, ", ") + ")"
}

// printAgent writes the text form of caphub agent show.
func printAgent(w io.Writer, ag *agent.Agent, cfg *agent.AgentConfig, problems []agent.Problem) {
	fmt.Fprintf(w, "agent %s\n", strings.TrimSpace(ag.ID+" "+ag.Version))
	if ag.Description != "" {
		fmt.Fprintf(w, "  description:   %s\n", ag.Description)
	}
	fmt.Fprintf(w, "  updated:       %s\n", ag.UpdatedAt.Format(time.RFC3339))
	fmt.Fprintf(w, "  system prompt: %s\n", orDash(firstLine(ag.SystemPrompt, 70)))
	bound := make([]string, 0, len(ag.CapabilityBindings))
	for uri := range ag.CapabilityBindings {
		bound = append(bound, uri)
	}
	sort.Strings(bound)
	for _, uri := range bound {
		fmt.Fprintf(w, "  bindings:      %s (from the manifest, replacing the registered ones)\n", uri)
	}
	printAgentCapabilities(w, ag, cfg, problems)
	if cfg != nil {
		printAgentTools(w, cfg)
	}
	if len(problems) > 0 {
		fmt.Fprintf(w, "%d %s: the agent has no configuration until they are fixed\n", len(problems), plural(len(problems), "problem", "problems"))
	}
}

// printAgentCapabilities writes the agent's capabilities in position
// order, each with what it applied as and the problems it has.
func printAgentCapabilities(w io.Writer, ag *agent.Agent, cfg *agent.AgentConfig, problems []agent.Problem) {
	applied := map[int]agent.AppliedCapability{}
	if cfg != nil {
		for _, c := range cfg.Capabilities {
			applied[c.Position] = c
		}
	}
	failed := map[int][]string{}
	for _, p := range problems {
		failed[p.Position] = append(failed[p.Position], p.Reason)
	}
	fmt.Fprintf(w, "capabilities (%d, in position order):\n", len(ag.Capabilities))
	for _, c := range ag.Capabilities {
		fmt.Fprintf(w, "  %d  %s", c.Position, c.CapabilityID)
		if a, ok := applied[c.Position]; ok {
			printApplied(w, a)
		}
		fmt.Fprintln(w)
		for _, reason := range failed[c.Position] {
			fmt.Fprintf(w, "     PROBLEM: %s\n", reason)
		}
	}
}

// printApplied writes, on a capability's line, what it applied as.
func printApplied(w io.Writer, a agent.AppliedCapability) {
	kind := "capability"
	if a.Bundle {
		kind = "bundle"
	}
	fmt.Fprintf(w, " → %s (%s), %s", a.URI, a.Version, kind)
	if a.SystemPromptAddition != "" {
		fmt.Fprint(w, ", adds to the system prompt")
	}
	fmt.Fprintf(w, ", tools: %s", orDash(strings.Join(a.Tools, ", ")))
}

// printAgentTools writes the tools of the agent's configuration and its
// warnings.
func printAgentTools(w io.Writer, cfg *agent.AgentConfig) {
	fmt.Fprintf(w, "tools (%d):\n", len(cfg.Tools))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, t := range cfg.Tools {
		fmt.Fprintf(tw, "  %s\t%s (%s)\t%s\n", t.Name, t.URI, t.Version, firstLine(t.Description, 50))
	}
	_ = tw.Flush()
	for _, warn := range cfg.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}
