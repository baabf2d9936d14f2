package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise
// it comes from the module's build information.
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "caphub",
		Short: "Capability registry and broker for AI agents",
		Long: `caphub stores versioned capability definitions (OSSA, MCP, OpenAPI, RTFS, Agent OS),
checks their compatibility and breaking changes, invokes them through their bindings under
per-agent policy, and serves them to agents over REST and MCP.`,
		Example:       "  caphub serve\n  caphub capability validate ./my-capability.yaml\n  caphub invoke ossa:everruns/add@1.0 --input '{\"a\": 2, \"b\": 3}'",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(),
	}
	root.SetVersionTemplate("caphub {{.Version}}\n") // as caphub version prints it
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	addRegistryFlags(root)
	root.PersistentFlags().String("config", "", configFlagHelp)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return applyConfigFile(cmd) }
	root.AddCommand(newConfigCmd(), newCapabilityCmd(), newDiscoverCmd(), newServerCmd(), newImportCmd(), newExportCmd(), newInvokeCmd(), newAgentCmd(), newAuditCmd(), newApprovalCmd(), newPolicyCmd(), newKeyCmd(), newTokenCmd(), newServeCmd(), newMCPCmd(), newClientCmd(), newVersionCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print caphub's version",
		Example: "  caphub version",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "caphub %s\n", buildVersion())
			return nil
		},
	}
}

// Argument checks that report usage errors (exit 2).

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)}
	}
	return nil
}

func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return &usageError{fmt.Errorf("%s needs %s, got %d argument(s)", cmd.CommandPath(), names, len(args))}
		}
		return nil
	}
}

func minArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return &usageError{fmt.Errorf("%s needs %s", cmd.CommandPath(), names)}
		}
		return nil
	}
}

// outputFormat reads and checks the --format flag.
func outputFormat(cmd *cobra.Command) (string, error) {
	f, _ := cmd.Flags().GetString("format")
	switch f {
	case "text", "json":
		return f, nil
	}
	return "", &usageError{fmt.Errorf("--format %q: use text or json", f)}
}

func addFormatFlag(cmd *cobra.Command) {
	cmd.Flags().String("format", "text", "output format: text or json")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
