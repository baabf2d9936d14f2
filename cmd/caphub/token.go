package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/auth"
	"github.com/spf13/cobra"
)

// newTokenCmd manages API tokens: in the local database (--db), or with
// --server on a running caphub, with a token that has the admin scope.
func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke API tokens",
		Long: `Token manages the bearer tokens caphub serve's HTTP API accepts (Authorization: Bearer chp_…).
A token has scopes: read (list, search, resolve, negotiate, metrics), publish (register,
deprecate, save servers and agents, discover), invoke (POST /v1/invoke and the MCP endpoints)
and admin (everything). Its secret is printed once, at creation; caphub keeps only its hash.

caphub serve enforces authentication as soon as one active token exists, and refuses to
listen beyond loopback without one. Tokens live in the database (--db): create the first
admin token there, on the server's machine. With --server, the commands manage the tokens
of a running caphub through its API (/v1/tokens), with an admin token (--token-file or
$CAPHUB_TOKEN); a token may create tokens with its own scopes only.`,
		Example: "  caphub token create ci-bot --scope read --scope invoke --expires 720h\n  caphub token list\n  caphub token revoke 3f9a1c2b7d4e\n" +
			"  caphub token create ci-bot --scope read --server https://caphub.example.com --token-file ~/.caphub-admin-token",
	}
	cmd.AddCommand(newTokenCreateCmd(), newTokenListCmd(), newTokenRevokeCmd())
	return cmd
}

// withTokens runs fn on the tokens of the local database, or of the server
// --server names.
func withTokens(cmd *cobra.Command, fn func(tokenStore) error) error {
	cfg, c, err := remoteOf(cmd)
	if err != nil {
		return err
	}
	if c != nil {
		return fn(c.Tokens())
	}
	cmd.SetContext(identity.With(cmd.Context(), identity.Caller{Actor: localActor()}))
	toks, closeStore, err := openTokens(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	return fn(toks)
}

func newTokenCreateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a token and print its secret (shown only once)",
		Long: `Create makes a token named NAME with the scopes given by --scope (repeatable: read, publish,
invoke, admin) and prints its secret on standard output, alone on a line, so that scripts can
capture it; the details go to standard error. The secret cannot be shown again: store it now.
--expires sets a lifetime (e.g. 720h); without it the token does not expire.`,
		Example: "  caphub token create admin --scope admin\n  caphub token create ci-bot --scope read --scope invoke --expires 720h\n  caphub token create scanner-key --scope invoke --agent security-scanner\n  export CAPHUB_TOKEN=$(caphub token create reader --scope read)",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			raw, _ := cmd.Flags().GetStringArray("scope")
			if len(raw) == 0 {
				return &usageError{errors.New("give at least one --scope: read, publish, invoke or admin")}
			}
			var scopes []auth.Scope
			for _, r := range raw {
				for _, s := range strings.Split(r, ",") {
					sc, err := auth.ParseScope(s)
					if err != nil {
						return &usageError{fmt.Errorf("--scope: %w", err)}
					}
					scopes = append(scopes, sc)
				}
			}
			ttl, _ := cmd.Flags().GetDuration("expires")
			if ttl < 0 {
				return &usageError{fmt.Errorf("--expires %s: give a positive duration such as 720h, or leave it out for no expiry", ttl)}
			}
			agentID, _ := cmd.Flags().GetString("agent")
			if agentID != "" {
				if err := agent.CheckID(agentID); err != nil {
					return &usageError{fmt.Errorf("--agent: %w", err)}
				}
			}
			var tok *auth.Token
			var secret string
			if err := withTokens(cmd, func(toks tokenStore) (err error) {
				tok, secret, err = toks.CreateForAgent(cmd.Context(), args[0], scopes, ttl, agentID)
				return err
			}); err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), struct {
					*auth.Token
					Secret string `json:"token"`
				}{tok, secret})
			}
			actsAs := "acting as itself"
			if tok.Agent != "" {
				actsAs = "acting as agent " + tok.Agent
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Created token %s (id %s), scopes %s, %s, %s. Store the secret now: it is not shown again.\n",
				tok.Name, tok.ID, joinScopes(tok.Scopes), actsAs, expiry(tok))
			fmt.Fprintln(cmd.OutOrStdout(), secret)
			return nil
		},
	}
	cmd.Flags().StringArray("scope", nil, "scope the token grants: read, publish, invoke or admin; repeatable")
	cmd.Flags().Duration("expires", 0, "lifetime, e.g. 720h (default: no expiry)")
	cmd.Flags().String("agent", "", "bind the token to one agent: its calls run as that agent, and it may use /mcp/agents/ID only (admin tokens may act as any agent)")
	addFormatFlag(cmd)
	return cmd
}

func newTokenListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List tokens (never their secrets)",
		Example: "  caphub token list\n  caphub token list --format json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			var all []auth.Token
			if err := withTokens(cmd, func(toks tokenStore) (err error) {
				all, err = toks.List(cmd.Context())
				return err
			}); err != nil {
				return err
			}
			now := time.Now()
			if format == "json" {
				type row struct {
					auth.Token
					State string `json:"state"`
				}
				rows := make([]row, len(all))
				for i, t := range all {
					rows[i] = row{t, t.State(now)}
				}
				return writeJSON(cmd.OutOrStdout(), map[string]any{"items": rows, "total": len(rows)})
			}
			if len(all) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "No tokens. Create one with: caphub token create NAME --scope admin")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tAGENT\tCREATED\tEXPIRES\tSTATE")
			for _, t := range all {
				exp := "never"
				if t.ExpiresAt != nil {
					exp = t.ExpiresAt.Format(time.RFC3339)
				}
				agentID := "-"
				if t.Agent != "" {
					agentID = t.Agent
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, joinScopes(t.Scopes), agentID, t.CreatedAt.Format(time.RFC3339), exp, t.State(now))
			}
			return tw.Flush()
		},
	}
	addFormatFlag(cmd)
	return cmd
}

func newTokenRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token; it stops authenticating at once",
		Long: `Revoke marks the token with this ID (see caphub token list) revoked. The record stays, so
the audit trail's "token:NAME" actors remain explainable. A running caphub serve refuses
the token from its next request.`,
		Example: "  caphub token revoke 3f9a1c2b7d4e",
		Args:    exactArgs(1, "the token ID (see caphub token list)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var tok *auth.Token
			if err := withTokens(cmd, func(toks tokenStore) (err error) {
				tok, err = toks.Revoke(cmd.Context(), args[0])
				return err
			}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Revoked token %s (%s)\n", tok.ID, tok.Name)
			return nil
		},
	}
}

func joinScopes(s []auth.Scope) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = string(x)
	}
	return strings.Join(parts, ",")
}

func expiry(t *auth.Token) string {
	if t.ExpiresAt == nil {
		return "no expiry"
	}
	return "expires " + t.ExpiresAt.Format(time.RFC3339)
}
