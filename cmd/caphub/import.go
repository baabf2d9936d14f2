package main

import (
	"errors"
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
		Example: "  caphub import openapi ./petstore.yaml --domain pets\n  caphub import agentos ./capabilities.json\n  caphub import rtfs ./capabilities/",
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
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
// effect: the batch goes in one transaction, and when the registry refuses
// some definitions those are reported as failures and the rest registered.
// It prints "N imported, M failed" and the failures, and fails the command
// when any item failed.
func registerImported(cmd *cobra.Command, reg registry.API, defs []capability.Definition, failures []capability.ImportFailure) error {
	out := cmd.OutOrStdout()
	imported := 0
	for len(defs) > 0 {
		res, err := reg.RegisterBatch(cmd.Context(), defs)
		var be *registry.BatchError
		var ce *registry.ConflictError
		if errors.As(err, &ce) {
			// One version is registered with other content: that item fails,
			// the others are registered.
			var rest []capability.Definition
			for _, d := range defs {
				if k, kerr := registry.KeyOf(&d); kerr == nil && k == ce.Key {
					failures = append(failures, capability.ImportFailure{Item: d.URI + " (" + d.Version + ")", Reason: ce.Error()})
					continue
				}
				rest = append(rest, d)
			}
			if len(rest) == len(defs) {
				return err
			}
			defs = rest
			continue
		}
		if errors.As(err, &be) {
			refused := map[int]bool{}
			for _, f := range be.Failures {
				refused[f.Index] = true
				failures = append(failures, capability.ImportFailure{Item: defs[f.Index].URI, Reason: f.Err.Error()})
			}
			var rest []capability.Definition
			for i, d := range defs {
				if !refused[i] {
					rest = append(rest, d)
				}
			}
			defs = rest
			continue
		}
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Created {
				fmt.Fprintf(out, "registered %s (%s)%s\n", r.URI, r.Version, tierNote(r))
			} else {
				fmt.Fprintf(out, "unchanged  %s (%s)\n", r.URI, r.Version)
			}
		}
		imported = len(res)
		break
	}
	return reportImport(out, imported, failures)
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
