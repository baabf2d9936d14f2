package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/rtfs"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// newExportRTFSCmd is `caphub export rtfs DIR`: it writes every registered
// capability version as RTFS into DIR, laid out as the CCOS capability tree.
func newExportRTFSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rtfs DIR",
		Short: "Write every registered capability version as RTFS files (the CCOS tree)",
		Long: `Export writes every version of every registered capability (or of those in --domain) as
a (capability "id" …) form in the hierarchical RTFS layout, under DIR in the CCOS tree:
core/ for built-in capabilities, discovered/mcp/<server>/ for MCP tools,
discovered/openapi/<domain>/ (or another source) for capabilities found by discovery,
generated/ for synthesised ones and user/ for the rest, one <name>.rtfs file per
capability holding all its versions, oldest first.

What RTFS types cannot say (descriptions, formats, …) is carried beside them in
:metadata :json-schema, so "caphub import rtfs DIR" gives back exactly what was registered:
re-importing an export is a no-op. Files are overwritten; other files in DIR are left alone.`,
		Example: "  caphub export rtfs ./capabilities\n" +
			"  caphub export rtfs ./github-tools --domain github --db ./caphub.db\n" +
			"  caphub import rtfs ./capabilities --db ./other.db",
		Args: exactArgs(1, "the output DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			domain, _ := cmd.Flags().GetString("domain")
			return withRegistry(cmd, func(reg registry.API) error {
				f := registry.ListFilter{Domain: domain, AllVersions: true}
				recs, _, err := collect(0, func(cursor string, size int, _ bool) (registry.Page, error) {
					f.Cursor, f.Limit = cursor, size
					return reg.List(cmd.Context(), f)
				})
				if err != nil {
					return err
				}
				return exportRTFS(cmd, dir, recs)
			})
		},
	}
	cmd.Flags().String("domain", "", "export only this domain (dotted prefixes match both ways: github matches github.issues)")
	return cmd
}

// exportRTFS writes the records to dir, one file per ExportPath, and prints
// what it wrote. A definition that cannot be written is reported and the
// others are still written; the command then fails.
func exportRTFS(cmd *cobra.Command, dir string, recs []registry.Record) error {
	sort.SliceStable(recs, func(i, j int) bool {
		a, b := recs[i].Key, recs[j].Key
		if a.Scheme+":"+a.Domain+"/"+a.Name != b.Scheme+":"+b.Domain+"/"+b.Name {
			return a.Scheme+":"+a.Domain+"/"+a.Name < b.Scheme+":"+b.Domain+"/"+b.Name
		}
		va, errA := capability.ParseVersion(a.Version)
		vb, errB := capability.ParseVersion(b.Version)
		if errA != nil || errB != nil {
			return a.Version < b.Version
		}
		return va.Less(vb)
	})
	files := map[string]*bytes.Buffer{}
	var order []string
	var failures []string
	written := 0
	for _, r := range recs {
		d := r.Definition
		// A registered definition always has input and output schemas; one
		// missing here was an empty {} ("anything") lost on the way through
		// JSON (omitempty): write it as {} so that re-importing validates.
		if d.Input == nil {
			d.Input = capability.Schema{}
		}
		if d.Output == nil {
			d.Output = capability.Schema{}
		}
		var form bytes.Buffer
		if err := rtfs.WriteCapability(&form, d); err != nil {
			failures = append(failures, fmt.Sprintf("%s (%s): %v", d.URI, d.Version, err))
			continue
		}
		p := rtfs.ExportPath(d)
		buf, ok := files[p]
		if !ok {
			buf = &bytes.Buffer{}
			files[p] = buf
			order = append(order, p)
		} else {
			buf.WriteString("\n")
		}
		buf.Write(form.Bytes())
		written++
	}
	out := cmd.OutOrStdout()
	sort.Strings(order)
	for _, p := range order {
		target := filepath.Join(dir, filepath.FromSlash(p))
		if err := writeFileAtomic(target, files[p].Bytes()); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s\n", target)
	}
	fmt.Fprintf(out, "%d capability versions exported to %d files under %s, %d failed\n", written, len(order), dir, len(failures))
	for _, f := range failures {
		fmt.Fprintf(out, "  failed: %s\n", f)
	}
	if len(failures) > 0 {
		return &silentError{fmt.Sprintf("%d capability versions could not be exported", len(failures))}
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, so that a reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cannot create the directory for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".export-*.tmp")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}
