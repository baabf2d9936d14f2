package main

// The governance commands: approval (list and decide the calls waiting for
// a human) and policy (set, show, list and delete the agents' policies).
// They work on a local database (--db, $CAPHUB_DB), the one `caphub serve`
// uses, or with --server on a running caphub (approvals and changes to
// policies need an admin token there).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caphub/caphub/client"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/identity"
	"github.com/spf13/cobra"
)

// withGovernance runs fn on the policies and approvals of the local
// database, with decisions recorded in its audit chain, or of the server
// --server names.
func withGovernance(cmd *cobra.Command, fn func(policyStore, approvalStore) error) error {
	cfg, c, err := remoteOf(cmd)
	if err != nil {
		return err
	}
	if c != nil {
		return fn(c.Policies(), c.Approvals())
	}
	policies, approvals, closeAll, err := openGovernance(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	defer closeAll()
	cmd.SetContext(identity.With(cmd.Context(), identity.Caller{Actor: localActor()}))
	return fn(policies, approvals)
}

func newApprovalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approval",
		Short: "List and decide the calls that wait for a human's approval",
		Long: `A call needs a human's approval when $CAPHUB_HUMAN_APPROVAL_REQUIRED is true, or when the
caller's policy lists the capability under require_approval (caphub policy set AGENT
--require-approval PATTERN). The call is then answered APPROVAL_REQUIRED with an approval id,
and waits here as pending for 15 minutes. Once approved, the caller may make the same call
(same agent, capability and input) once, within 15 minutes, by retrying with the id
(REST header X-Caphub-Approval). Decisions are recorded in the audit chain.`,
		Example: "  caphub approval list\n  caphub approval approve apr_4f1c2a9e0b7d6c5a4f3e2d1c\n" +
			"  caphub approval deny apr_4f1c2a9e0b7d6c5a4f3e2d1c --reason \"not on production\"",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newApprovalListCmd(), newApprovalDecideCmd(true), newApprovalDecideCmd(false))
	return cmd
}

func newApprovalListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List approvals, oldest first (pending ones by default)",
		Example: "  caphub approval list\n  caphub approval list --status all --format json\n  caphub approval list --status denied",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			status, _ := cmd.Flags().GetString("status")
			switch status {
			case "all":
				status = ""
			case policy.StatusPending, policy.StatusApproved, policy.StatusDenied, policy.StatusExpired:
			default:
				return &usageError{fmt.Errorf("--status %q: use pending, approved, denied, expired or all", status)}
			}
			return withGovernance(cmd, func(_ policyStore, a approvalStore) error {
				items, err := a.List(cmd.Context(), status)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if format == "json" {
					return writeJSON(out, map[string]any{"items": items, "total": len(items)})
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tSTATUS\tAGENT\tCAPABILITY\tCREATED\tEXPIRES\tDECIDED BY\tINPUT")
				for _, ap := range items {
					in, _ := jsonCompact(ap.Input)
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ap.ID, statusOf(ap), orDash(ap.Agent), ap.URI,
						ap.CreatedAt.Local().Format(time.DateTime), ap.ExpiresAt.Local().Format(time.DateTime), orDash(ap.DecidedBy), firstLine(in, 60))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(out, "%d approval(s)\n", len(items))
				return nil
			})
		},
	}
	cmd.Flags().String("status", policy.StatusPending, "pending, approved, denied, expired or all")
	addFormatFlag(cmd)
	return cmd
}

func statusOf(ap *policy.Approval) string {
	if ap.Status == policy.StatusApproved && ap.UsedAt != nil {
		return "approved (used)"
	}
	return ap.Status
}

func jsonCompact(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// newApprovalDecideCmd is approval approve (approve true) or approval deny.
func newApprovalDecideCmd(approve bool) *cobra.Command {
	verb, short, example := "deny", "Deny a pending call: the caller's retry is refused",
		"  caphub approval deny apr_4f1c2a9e0b7d6c5a4f3e2d1c --reason \"not on production\""
	if approve {
		verb, short, example = "approve", "Approve a pending call: the caller may then make it once, within 15 minutes",
			"  caphub approval approve apr_4f1c2a9e0b7d6c5a4f3e2d1c --reason \"reviewed the input\"\n  caphub approval approve apr_4f1c2a9e0b7d6c5a4f3e2d1c --by alice"
	}
	cmd := &cobra.Command{
		Use:     verb + " ID",
		Short:   short,
		Example: example,
		Args:    exactArgs(1, "the approval id (see caphub approval list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			by, _ := cmd.Flags().GetString("by")
			if by == "" {
				by = "cli:unknown"
				if u, err := user.Current(); err == nil && u.Username != "" {
					by = "cli:" + u.Username
				}
			}
			return withGovernance(cmd, func(_ policyStore, a approvalStore) error {
				if _, remote := a.(*client.Approvals); remote && cmd.Flags().Changed("by") {
					return &usageError{errors.New("--by names the decider in a local database only: a server records the decision as made by your token (token:NAME)")}
				}
				var ap *policy.Approval
				reason, _ := cmd.Flags().GetString("reason")
				if approve {
					ap, err = a.Approve(cmd.Context(), args[0], by, reason)
				} else {
					ap, err = a.Deny(cmd.Context(), args[0], by, reason)
				}
				if err != nil {
					return err
				}
				if format == "json" {
					return writeJSON(cmd.OutOrStdout(), ap)
				}
				if approve {
					fmt.Fprintf(cmd.OutOrStdout(), "approved %s: agent %s may call %s once, until %s, retrying with this approval id\n",
						ap.ID, orDash(ap.Agent), ap.URI, ap.ExpiresAt.Local().Format(time.DateTime))
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "denied %s: agent %s may not call %s\n", ap.ID, orDash(ap.Agent), ap.URI)
				}
				return nil
			})
		},
	}
	cmd.Flags().String("by", "", "who decides, recorded in the approval and the audit chain (default cli:$USER; with --server, your token)")
	if approve {
		cmd.Flags().String("reason", "", "why, kept with the decision and in the audit chain")
	} else {
		cmd.Flags().String("reason", "", "why, shown to the caller when it retries")
	}
	addFormatFlag(cmd)
	return cmd
}

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Set, show, list and delete the policies that govern what agents may invoke",
		Long: `A policy governs one agent's calls (the agent is the caller: the X-Caphub-Agent header of
REST and MCP requests). The policy of agent "*" is the default for callers without one. With
no policy at all, every call is allowed.

A capability's declared permissions must all be granted (--permission) and its declared
effects all allowed (--effect): an empty list grants nothing, "*" grants everything, and
"network.*" everything under network. --min-tier refuses capabilities registered with a lower
trust tier (verified > trusted > community > untrusted). --require-approval makes calls of
matching capabilities wait for a human (see caphub approval).

These commands work on the local database (--db), or with --server on a running caphub:
show and list need a token with the read scope there, set and delete the admin scope.`,
		Example: "  caphub policy set security-scanner --permission network.http --effect network --min-tier community\n" +
			"  caphub policy set '*' --permission '*' --effect '*' --require-approval 'ossa:github/*'\n  caphub policy show security-scanner\n" +
			"  caphub policy set deployer --file deployer.policy.yaml --server https://caphub.example.com\n  caphub policy list --format json",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPolicySetCmd(), newPolicyShowCmd(), newPolicyListCmd(), newPolicyDeleteCmd())
	return cmd
}

func newPolicySetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set AGENT",
		Short: "Create or replace an agent's policy (\"*\": the default policy)",
		Long: `set replaces the whole policy of AGENT with the flags given: a flag left out grants
nothing (permissions, effects) or sets nothing (minimum tier, approval patterns).

--file reads the policy from a YAML or JSON file instead, the body PUT /v1/policies/AGENT
takes:

  granted_permissions: [network.http, contacts]
  allowed_effects: [network]
  min_trust_tier: community
  require_approval: ['ossa:github/*']`,
		Example: "  caphub policy set security-scanner --permission network.http --permission contacts --effect network\n" +
			"  caphub policy set deployer --permission '*' --effect '*' --min-tier trusted --require-approval ossa:k8s/delete_deployment\n" +
			"  caphub policy set '*' --permission '*' --effect '*' --min-tier community\n  caphub policy set deployer --file deployer.policy.yaml",
		Args: exactArgs(1, "the agent id (or \"*\" for the default policy)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := policyFromFlags(cmd, args[0])
			if err != nil {
				return err
			}
			return withGovernance(cmd, func(s policyStore, _ approvalStore) error {
				if err := s.Put(cmd.Context(), *p); err != nil {
					return err
				}
				return printPolicy(cmd, p)
			})
		},
	}
	cmd.Flags().StringArray("permission", nil, "permission granted (exact, prefix.* or *); repeatable")
	cmd.Flags().StringArray("effect", nil, "effect allowed (exact, prefix.* or *); repeatable")
	cmd.Flags().String("min-tier", "", "minimum trust tier: verified, trusted, community or untrusted")
	cmd.Flags().StringArray("require-approval", nil, "capability URI pattern whose calls need approval (ossa:github/create_issue, ossa:github/*, …@1); repeatable")
	cmd.Flags().String("file", "", "read the policy from this YAML or JSON file (granted_permissions, allowed_effects, min_trust_tier, require_approval) instead of the flags")
	addFormatFlag(cmd)
	return cmd
}

// policyFromFlags is the policy policy set gives AGENT: from --file, or
// from the other flags.
func policyFromFlags(cmd *cobra.Command, agentID string) (*policy.Policy, error) {
	p := &policy.Policy{Agent: agentID}
	if file, _ := cmd.Flags().GetString("file"); file != "" {
		for _, f := range []string{"permission", "effect", "min-tier", "require-approval"} {
			if cmd.Flags().Changed(f) {
				return nil, &usageError{fmt.Errorf("--%s and --file: give the policy in the file or by flags, not both", f)}
			}
		}
		data, err := readPolicyFile(file)
		if err != nil {
			return nil, err
		}
		if p, err = policy.Read(file, data); err != nil {
			return nil, &usageError{err}
		}
		if p.Agent != "" && p.Agent != agentID {
			return nil, &usageError{fmt.Errorf("%s: the policy's agent is %q, the command names %q: name the same agent, or leave agent out of the file", file, p.Agent, agentID)}
		}
		p.Agent = agentID
	} else {
		p.GrantedPermissions, _ = cmd.Flags().GetStringArray("permission")
		p.AllowedEffects, _ = cmd.Flags().GetStringArray("effect")
		p.MinTrustTier, _ = cmd.Flags().GetString("min-tier")
		p.RequireApproval, _ = cmd.Flags().GetStringArray("require-approval")
	}
	if err := p.Validate(); err != nil {
		return nil, &usageError{err}
	}
	return p, nil
}

// readPolicyFile reads a policy file, refusing one larger than a policy
// may be before reading it whole.
func readPolicyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--file: %w", err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, policy.MaxDocumentSize+1))
	if err != nil {
		return nil, fmt.Errorf("--file %s: %w", path, err)
	}
	if len(data) > policy.MaxDocumentSize {
		return nil, &usageError{fmt.Errorf("--file %s is larger than a policy may be (%d bytes at most): name a policy file", path, policy.MaxDocumentSize)}
	}
	return data, nil
}

func newPolicyShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "show AGENT",
		Short:   "Show an agent's own policy (\"*\": the default policy)",
		Example: "  caphub policy show security-scanner\n  caphub policy show '*' --format json\n  caphub policy show security-scanner --server http://127.0.0.1:8750",
		Args:    exactArgs(1, "the agent id (or \"*\" for the default policy)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := outputFormat(cmd); err != nil {
				return err
			}
			return withGovernance(cmd, func(s policyStore, _ approvalStore) error {
				p, err := s.Get(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return printPolicy(cmd, p)
			})
		},
	}
	addFormatFlag(cmd)
	return cmd
}

func newPolicyListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the policies, by agent (the default policy \"*\" first)",
		Example: "  caphub policy list\n  caphub policy list --format json --server http://127.0.0.1:8750",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			return withGovernance(cmd, func(s policyStore, _ approvalStore) error {
				all, err := s.List(cmd.Context())
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if format == "json" {
					return writeJSON(out, map[string]any{"items": all, "total": len(all)})
				}
				if len(all) == 0 {
					fmt.Fprintln(out, "No policies: every call is allowed. Set one with: caphub policy set AGENT --permission ... --effect ...")
					return nil
				}
				list := func(l []string) string { return orDash(strings.Join(l, ",")) }
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "AGENT\tPERMISSIONS\tEFFECTS\tMIN TIER\tREQUIRE APPROVAL")
				for _, p := range all {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Agent, list(p.GrantedPermissions), list(p.AllowedEffects), orDash(p.MinTrustTier), list(p.RequireApproval))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(out, "%d %s\n", len(all), plural(len(all), "policy", "policies"))
				return nil
			})
		},
	}
	addFormatFlag(cmd)
	return cmd
}

func newPolicyDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "delete AGENT",
		Short:   "Delete an agent's policy: the default policy (\"*\"), if any, then governs it",
		Example: "  caphub policy delete security-scanner\n  caphub policy delete '*' --server http://127.0.0.1:8750",
		Args:    exactArgs(1, "the agent id (or \"*\" for the default policy)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withGovernance(cmd, func(s policyStore, _ approvalStore) error {
				if err := s.Delete(cmd.Context(), args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted the policy of %s\n", args[0])
				return nil
			})
		},
	}
}

func printPolicy(cmd *cobra.Command, p *policy.Policy) error {
	format, _ := outputFormat(cmd)
	out := cmd.OutOrStdout()
	if format == "json" {
		return writeJSON(out, p)
	}
	list := func(l []string) string {
		if len(l) == 0 {
			return "(none)"
		}
		return strings.Join(l, ", ")
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "agent:\t%s\n", p.Agent)
	fmt.Fprintf(tw, "granted permissions:\t%s\n", list(p.GrantedPermissions))
	fmt.Fprintf(tw, "allowed effects:\t%s\n", list(p.AllowedEffects))
	fmt.Fprintf(tw, "minimum trust tier:\t%s\n", orDash(p.MinTrustTier))
	fmt.Fprintf(tw, "require approval:\t%s\n", list(p.RequireApproval))
	return tw.Flush()
}
