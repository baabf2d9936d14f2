package main

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/ossa"
	"github.com/spf13/cobra"
)

func newCapabilityCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "capability",
		Aliases: []string{"cap"},
		Short:   "Validate, compare, register, find and deprecate capabilities",
		Example: "  caphub capability validate memory.yaml\n  caphub capability compat ossa:code/lint@2.0 ossa:code/lint@2.3\n  caphub capability diff v1.yaml v2.yaml",
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newValidateCmd(), newCompatCmd(), newDiffCmd(),
		newListCmd(), newShowCmd(), newRegisterCmd(), newDeprecateCmd(), newSearchCmd(), newSignCmd(), newVerifyCmd(), newResolveCmd())
	return cmd
}

// fileReport is the validation verdict of one file.
type fileReport struct {
	File         string             `json:"file"`
	Kind         ossa.Kind          `json:"kind,omitempty"`
	Capabilities int                `json:"capabilities"`
	Errors       int                `json:"errors"`
	Warnings     int                `json:"warnings"`
	Issues       []capability.Issue `json:"issues"`
}

func newValidateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check capability files against the OSSA rules",
		Long: `Validate reads OSSA capability files (YAML or JSON: a capability: document, a
capabilities: list, or a registry index) and checks every definition: OSSA §12 MUST
rules and caphub's own rules are errors, SHOULD rules are warnings.

Exit status: 0 when no file has errors (warnings allowed), 1 when any has, 2 on usage errors.`,
		Example: "  caphub capability validate ./my-capability.yaml\n  caphub capability validate --format json capabilities/*.yaml",
		Args:    minArgs(1, "at least one FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			reports := make([]fileReport, 0, len(args))
			failed := false
			for _, path := range args {
				r := validateFile(path)
				failed = failed || r.Errors > 0
				reports = append(reports, r)
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				if err := writeJSON(out, map[string]any{"valid": !failed, "files": reports}); err != nil {
					return err
				}
			} else {
				printValidation(out, reports)
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

func validateFile(path string) fileReport {
	r := fileReport{File: path, Issues: []capability.Issue{}}
	f, err := ossa.ReadFile(path)
	if err != nil {
		iss := capability.Issue{Severity: capability.SeverityError, File: path, Message: err.Error()}
		var oe *ossa.Error
		if errors.As(err, &oe) {
			iss.Line, iss.Column, iss.Path, iss.Message = oe.Line, oe.Column, oe.Path, oe.Message
		}
		r.Issues = append(r.Issues, iss)
		r.Errors = 1
		return r
	}
	r.Kind = f.Kind
	r.Capabilities = len(f.Entries)
	r.Issues = append(r.Issues, f.Validate()...)
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
	return r
}

func printValidation(w io.Writer, reports []fileReport) {
	for _, r := range reports {
		for _, iss := range r.Issues {
			fmt.Fprintln(w, iss.String())
		}
		what := fmt.Sprintf("%d %s", r.Capabilities, plural(r.Capabilities, "capability", "capabilities"))
		if r.Kind == ossa.KindIndex {
			what = "registry index"
		}
		verdict := "ok"
		if r.Errors > 0 {
			verdict = "INVALID"
		}
		fmt.Fprintf(w, "%s: %s, %s, %d %s, %d %s\n", r.File, verdict, what,
			r.Errors, plural(r.Errors, "error", "errors"), r.Warnings, plural(r.Warnings, "warning", "warnings"))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func newCompatCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "compat REQUESTED AVAILABLE",
		Short: "Check whether an available capability version satisfies a requested one",
		Long: `Compat applies the OSSA §7.2 rules: same scheme, domain and name, same MAJOR,
and an available MINOR at least the requested one.

Exit status: 0 compatible, 1 not compatible, 2 on usage errors (including malformed URIs).`,
		Example: "  caphub capability compat ossa:security/scan_vulnerabilities@1.0 ossa:security/scan_vulnerabilities@1.2\n  caphub capability compat ossa:code/lint@2.0 ossa:code/lint@1.9",
		Args:    exactArgs(2, "REQUESTED and AVAILABLE URIs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			req, err := capability.ParseURI(args[0])
			if err != nil {
				return &usageError{fmt.Errorf("REQUESTED: %w", err)}
			}
			avail, err := capability.ParseURI(args[1])
			if err != nil {
				return &usageError{fmt.Errorf("AVAILABLE: %w", err)}
			}
			cerr := capability.CheckCompatible(req, avail)
			result := map[string]any{"requested": req.String(), "available": avail.String(), "compatible": cerr == nil}
			var ie *capability.IncompatibleError
			if errors.As(cerr, &ie) {
				result["rule"] = ie.Rule
				result["reason"] = ie.Reason
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				if err := writeJSON(out, result); err != nil {
					return err
				}
			} else if cerr == nil {
				fmt.Fprintf(out, "compatible: %s satisfies %s\n", avail, req)
			} else {
				fmt.Fprintf(out, "incompatible: %v\n", cerr)
			}
			if cerr != nil {
				return &silentError{"incompatible"}
			}
			return nil
		},
	}
	addFormatFlag(cmd)
	return cmd
}

func newDiffCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Classify the changes between two versions of a capability",
		Long: `Diff lists every change between the definitions in OLD and NEW, classified as
major (breaking: OSSA §6.2, plus broadened effects or permissions), minor (OSSA §6.3)
or patch (documentation only), and checks that NEW's version bump is large enough.
Files holding several definitions are paired by capability (scheme, domain and name).

Exit status: 0 when every bump is large enough, 1 when one is too small (or a
capability is missing from NEW), 2 on usage errors.`,
		Example: "  caphub capability diff scan-1.0.yaml scan-1.1.yaml\n  caphub capability diff --format json old.yaml new.yaml",
		Args:    exactArgs(2, "OLD and NEW files"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			olds, err := readDefinitions(args[0])
			if err != nil {
				return err
			}
			news, err := readDefinitions(args[1])
			if err != nil {
				return err
			}
			reports, missing := pairAndDiff(olds, news)
			out := cmd.OutOrStdout()
			ok := len(missing) == 0
			for _, r := range reports {
				ok = ok && r.Satisfied
			}
			if format == "json" {
				if err := writeJSON(out, map[string]any{"ok": ok, "reports": reports, "missing": missing}); err != nil {
					return err
				}
			} else {
				printDiffs(out, reports, missing)
			}
			if !ok {
				return &silentError{"version bump too small"}
			}
			return nil
		},
	}
	addFormatFlag(cmd)
	return cmd
}

// readDefinitions reads a capability file and fails on any error in it.
func readDefinitions(path string) ([]capability.Definition, error) {
	f, err := ossa.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(f.Issues) > 0 {
		return nil, fmt.Errorf("%s", f.Issues[0].String())
	}
	if len(f.Entries) == 0 {
		return nil, fmt.Errorf("%s: holds no capability definition (a registry index lists URIs only)", path)
	}
	return f.Definitions(), nil
}

func capabilityKey(d capability.Definition) string {
	if u, err := capability.ParseURI(d.URI); err == nil {
		return u.Base()
	}
	return d.Domain + "/" + d.Name
}

// pairAndDiff diffs each definition in news against the one for the same
// capability in olds; a lone pair is diffed whatever its names.
// diffResult is the diff of one capability.
type diffResult struct {
	Capability string `json:"capability"`
	*capability.DiffReport
}

func pairAndDiff(olds, news []capability.Definition) ([]diffResult, []string) {
	if len(olds) == 1 && len(news) == 1 {
		return []diffResult{{capabilityKey(news[0]), capability.Diff(&olds[0], &news[0])}}, []string{}
	}
	byKey := map[string]*capability.Definition{}
	for i := range news {
		byKey[capabilityKey(news[i])] = &news[i]
	}
	var reports []diffResult
	missing := []string{}
	for i := range olds {
		k := capabilityKey(olds[i])
		n, ok := byKey[k]
		if !ok {
			missing = append(missing, k)
			continue
		}
		reports = append(reports, diffResult{k, capability.Diff(&olds[i], n)})
	}
	return reports, missing
}

func printDiffs(w io.Writer, reports []diffResult, missing []string) {
	for _, r := range reports {
		fmt.Fprintf(w, "%s %s → %s: %d %s\n", r.Capability, r.Old, r.New, len(r.Changes), plural(len(r.Changes), "change", "changes"))
		for _, c := range r.Changes {
			fmt.Fprintf(w, "  %-5s  %s: %s\n", c.Bump, c.Path, c.Description)
		}
		verdict := "ok"
		if !r.Satisfied {
			verdict = "TOO SMALL: " + r.Problem
		}
		fmt.Fprintf(w, "required bump: %s, declared: %s — %s\n", r.Required, r.Declared, verdict)
	}
	for _, m := range missing {
		fmt.Fprintf(w, "%s: missing from NEW (removing a capability is a breaking change; deprecate it instead)\n", m)
	}
}
