package main

import (
	"fmt"
	"io"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

func newImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "import",
		Short:   "Import capabilities from OpenAPI specs, Agent OS manifests and RTFS files, and MCP servers from an MCP registry",
		Example: "  caphub import openapi ./petstore.yaml --domain pets\n  caphub import agentos ./capabilities.json\n  caphub import rtfs ./capabilities/\n  caphub import mcp-registry ./server.json",
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().BoolP("quiet", "q", false, "no progress on stderr (it is shown only when stderr is a terminal)")
	cmd.AddCommand(newImportOpenAPICmd(), newImportAgentOSCmd(), newImportRTFSCmd(), newImportMCPRegistryCmd())
	return cmd
}

func newExportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "export",
		Short:   "Export the registry's capabilities to other formats",
		Example: "  caphub export rtfs ./capabilities",
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newExportRTFSCmd())
	return cmd
}

// registerImported registers what an importer produced, item by item in
// effect (registry.API.Import: a chunk at a time, the definitions the
// registry refuses reported as failures and the others registered), with
// its progress on stderr when that is a terminal. It prints what was
// registered, "N imported, M failed" and the failures, and fails the
// command when any item failed.
func registerImported(cmd *cobra.Command, reg registry.API, defs []capability.Definition, failures []capability.ImportFailure) error {
	out := cmd.OutOrStdout()
	res, err := reg.Import(cmd.Context(), defs, importProgress(cmd))
	for _, r := range res.Results {
		if r.Created {
			fmt.Fprintf(out, "registered %s (%s)%s\n", r.URI, r.Version, tierNote(r))
		} else {
			fmt.Fprintf(out, "unchanged  %s (%s)\n", r.URI, r.Version)
		}
	}
	if err != nil {
		return err
	}
	return reportImport(out, len(res.Results), append(failures, res.Failures...))
}

// reportImport prints the tally and the failures.
func reportImport(out io.Writer, imported int, failures []capability.ImportFailure) error {
	fmt.Fprintf(out, "%d imported, %d failed\n", imported, len(failures))
	for _, f := range failures {
		fmt.Fprintf(out, "  failed: %s\n", f.String())
	}
	if len(failures) > 0 {
		return &silentError{fmt.Sprintf("%d items failed", len(failures))}
	}
	return nil
}
