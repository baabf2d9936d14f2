package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/rtfs"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// maxRTFSFile bounds the size of one RTFS file, so that a wrong path cannot
// exhaust memory.
const maxRTFSFile = 64 << 20

// newImportRTFSCmd is `caphub import rtfs DIR|FILE…`: it reads CCOS RTFS
// capability files (a directory is walked for *.rtfs) and registers every
// capability they hold, reporting each one it could not import and going on
// with the others.
func newImportRTFSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rtfs DIR|FILE...",
		Short: "Import CCOS RTFS capability files (.rtfs)",
		Long: `Import reads CCOS capability files written in RTFS: (capability "id" …) forms, (do …)
modules of them, and {:type "capability" …} maps. A DIR is walked for *.rtfs files (a
CCOS capabilities/ tree, for instance); a FILE is read whatever its name.

The capability id gives the URI: an MCP tool (an :mcp metadata map, :provider "MCP" or an
id starting with "mcp.") becomes mcp:<server>/<tool>@MAJOR.MINOR with an mcp binding;
anything else ossa:<domain>/<name>@MAJOR.MINOR from "<domain>.<name>", with an http binding
when its :openapi metadata has a base_url, else the rtfs binding when its only body is an
RTFS :implementation (kept, not evaluated: invoking it says what to bind instead). Both the hierarchical :metadata layout and the
old flat one are read; the RTFS :implementation and every other key are kept in the
definition's metadata.rtfs, so that "caphub export rtfs" writes them back unchanged.

Forms that cannot be read are listed with file:line:column, definitions the registry
refuses with the reason, and the others are registered; the command then exits with
status 1. Re-importing the same files is a no-op ("unchanged").`,
		Example: "  caphub import rtfs ./capabilities/\n" +
			"  caphub import rtfs discovered/mcp/github/list_issues.rtfs module.rtfs --db ./caphub.db\n" +
			"  caphub capability list --domain github",
		Args: minArgs(1, "a DIR or FILE to import"),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := rtfsFiles(args)
			if err != nil {
				return err
			}
			var defs []capability.Definition
			var origins []string
			var failures []capability.ImportFailure
			for _, path := range files {
				d, f, err := readRTFSFile(path)
				if err != nil {
					return err
				}
				if len(d) == 0 && len(f) == 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "note: %s holds no capability form\n", path)
				}
				defs = append(defs, d...)
				for range d {
					origins = append(origins, path)
				}
				failures = append(failures, f...)
			}
			defs, dups := dedupeImported(defs, origins)
			failures = append(failures, dups...)
			return withRegistry(cmd, func(reg registry.API) error {
				return registerImported(cmd, reg, defs, failures)
			})
		},
	}
	return longServerWork(cmd)
}

// rtfsFiles expands the arguments: directories to the *.rtfs files under
// them (in lexical order), files as they are.
func rtfsFiles(args []string) ([]string, error) {
	var files []string
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", arg, err)
		}
		if !st.IsDir() {
			files = append(files, arg)
			continue
		}
		n := len(files)
		err = filepath.WalkDir(arg, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".rtfs") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("cannot walk %s: %w", arg, err)
		}
		if len(files) == n {
			return nil, &usageError{fmt.Errorf("no .rtfs file under %s: give a directory holding RTFS capability files, or the files themselves", arg)}
		}
	}
	return files, nil
}

// readRTFSFile reads one file. A file that is not valid RTFS at all is one
// failure (with its position), not an error: the other files still import.
func readRTFSFile(path string) ([]capability.Definition, []capability.ImportFailure, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRTFSFile+1))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	if len(data) > maxRTFSFile {
		return nil, []capability.ImportFailure{{Item: "file", File: path,
			Reason: fmt.Sprintf("larger than %d MB: split it into several files", maxRTFSFile>>20)}}, nil
	}
	defs, failures, err := rtfs.ReadCapabilities(path, data)
	var se *rtfs.SyntaxError
	if errors.As(err, &se) {
		return nil, []capability.ImportFailure{{Item: "RTFS syntax", File: se.File, Line: se.Line, Column: se.Column, Reason: se.Message}}, nil
	}
	return defs, failures, err
}

// dedupeImported keeps one definition of each version: a repeat with the
// same content is dropped, one with other content is a failure (a
// registered version is immutable, and which one should win is the user's
// call). origins[i] is the file defs[i] was read from.
func dedupeImported(defs []capability.Definition, origins []string) ([]capability.Definition, []capability.ImportFailure) {
	type seen struct {
		digest, origin string
	}
	first := map[string]seen{}
	var out []capability.Definition
	var failures []capability.ImportFailure
	for i, d := range defs {
		key, err := registry.KeyOf(&d)
		digest, derr := registry.Digest(&d)
		if err != nil || derr != nil {
			out = append(out, d) // the registry reports what is wrong with it
			continue
		}
		k := key.String()
		prev, dup := first[k]
		switch {
		case !dup:
			first[k] = seen{digest, origins[i]}
			out = append(out, d)
		case prev.digest != digest:
			failures = append(failures, capability.ImportFailure{Item: d.URI + " (" + d.Version + ")", File: origins[i],
				Reason: "this version is also defined, with other content, in " + prev.origin + ": a version is immutable; give one of them another :version"})
		}
	}
	return out, failures
}
