package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/caphub/caphub/internal/fallback"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// newResolveCmd is `caphub capability resolve`: missing-capability
// resolution from the command line, behind the same feature flags as at
// runtime so that what the CLI shows is what an agent would get.
func newResolveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resolve URI",
		Short: "Find what to use for a capability that does not resolve",
		Long: `Resolve checks whether URI resolves and, when it does not, proposes what to use
instead, in order: configured aliases and the deprecated_by chain of a sunset capability,
registered capabilities of the same domain whose names share a prefix of at least 3
characters, then the discovery sources: the cached listings of saved MCP servers (no
network) and the OpenAPI specs given with --openapi.

Resolution is off unless ` + fallback.EnvEnabled + `=true; off, a missing capability is
only reported missing. Proposals are never registered unless --auto is given or
` + fallback.EnvAuto + `=true: then the best proposal whose capability is not registered
at all is registered (an existing capability is never replaced).

Exit status: 0 when URI resolves or a proposal was registered, 1 when it is still
missing, 2 on usage errors.`,
		Example: "  " + fallback.EnvEnabled + "=true caphub capability resolve ossa:github/list_issue\n" +
			"  " + fallback.EnvEnabled + "=true caphub capability resolve ossa:petstore/list_pets --openapi petstore.yaml --auto",
		Args: exactArgs(1, "a capability URI"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			enabled, envAuto, err := missingCapabilityFlags(cmd)
			if err != nil {
				return &usageError{err}
			}
			auto, _ := cmd.Flags().GetBool("auto")
			if auto && !enabled {
				return &usageError{fmt.Errorf("--auto needs missing-capability resolution: set %s=true", fallback.EnvEnabled)}
			}
			specs, _ := cmd.Flags().GetStringArray("openapi")
			aliases, err := aliasFlags(cmd)
			if err != nil {
				return err
			}
			return withRegistry(cmd, func(reg registry.API) error {
				r := &fallback.Resolver{Reg: reg, OpenAPISpecs: specs, Aliases: aliases, Auto: auto || envAuto, IntrospectorVersion: buildVersion()}
				var res *fallback.Result
				if enabled {
					// A registry that keeps no saved servers is searched without them.
					if servers, err := serversOf(reg); err == nil {
						r.Servers = servers
					}
					res, err = r.Find(cmd.Context(), args[0])
				} else {
					res, err = r.Exact(cmd.Context(), args[0])
				}
				if res != nil {
					if format == "json" {
						if werr := writeJSON(cmd.OutOrStdout(), map[string]any{"enabled": enabled, "result": res}); werr != nil {
							return werr
						}
					} else {
						printResolution(cmd.OutOrStdout(), res, enabled)
					}
				}
				if err != nil {
					return err
				}
				if !res.Found && len(res.Registered) == 0 {
					return &silentError{"capability is missing"}
				}
				return nil
			})
		},
	}
	cmd.Flags().Bool("auto", false, "register the best proposal that is not registered yet (also $"+fallback.EnvAuto+")")
	cmd.Flags().StringArray("openapi", nil, "an OpenAPI spec (file or URL) to search, repeatable")
	cmd.Flags().StringArray("alias", nil, "FROM=TO: URI bases (scheme:domain/name) where TO stands in for FROM, repeatable")
	addFormatFlag(cmd)
	return cmd
}

// aliasFlags reads the repeated --alias FROM=TO.
func aliasFlags(cmd *cobra.Command) (map[string]string, error) {
	vals, _ := cmd.Flags().GetStringArray("alias")
	out := map[string]string{}
	for _, v := range vals {
		from, to, ok := strings.Cut(v, "=")
		if !ok || from == "" || to == "" {
			return nil, &usageError{fmt.Errorf("--alias %q: write FROM=TO, e.g. ossa:github/tickets=ossa:github/list_issues", v)}
		}
		out[strings.TrimSpace(from)] = strings.TrimSpace(to)
	}
	return out, nil
}

func printResolution(w io.Writer, res *fallback.Result, enabled bool) {
	switch {
	case res.Found:
		fmt.Fprintf(w, "%s resolves to %s\n", res.URI, res.Proposals[0].URI)
	case !enabled:
		fmt.Fprintf(w, "%s is missing (missing-capability resolution is off: set %s=true to look for replacements)\n", res.URI, fallback.EnvEnabled)
		return
	case len(res.Proposals) == 0:
		fmt.Fprintf(w, "%s is missing and nothing was found to use instead\n", res.URI)
	default:
		fmt.Fprintf(w, "%s is missing; proposals, best first:\n", res.URI)
	}
	for i, p := range res.Proposals {
		if res.Found && i == 0 {
			continue
		}
		state := "not registered"
		if p.Registered {
			state = "registered"
		}
		fmt.Fprintf(w, "  %s  [%s, %s]\n      %s\n", p.URI, p.Source, state, p.Reason)
	}
	for _, u := range res.Registered {
		fmt.Fprintf(w, "registered %s\n", u)
	}
	for _, e := range res.Errors {
		fmt.Fprintf(w, "warning: %s\n", e)
	}
}
