package main

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/ossa"
	"github.com/caphub/caphub/governance/sign"
	"github.com/spf13/cobra"
)

func newKeyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Create the ed25519 keys that sign capability definitions",
		Long: `A signing key is an ed25519 key pair in two PEM files: NAME.key, the private key
(PKCS#8, mode 0600: keep it secret), which signs definitions, and NAME.pub, the public key
(PKIX), which registries and users trust to verify them. A key is named by its key id,
"ed25519:" and the first 16 hex digits of the SHA-256 of the public key.`,
		Example: "  caphub key generate --out ~/.caphub/keys --name release",
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newKeyGenerateCmd())
	return cmd
}

func newKeyGenerateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "generate --out DIR [--name NAME]",
		Short: "Generate a signing key pair: DIR/NAME.key and DIR/NAME.pub",
		Long: `Generate writes a new ed25519 key pair: DIR/NAME.key (the private key, mode 0600) and
DIR/NAME.pub (the public key), creating DIR (mode 0700) if needed, and prints the key id.
It never overwrites a key: if either file exists, nothing is written.

Sign with the .key file (caphub capability sign FILE --key DIR/NAME.key); give the .pub file
to whoever verifies (caphub capability verify FILE --trusted DIR/NAME.pub).`,
		Example: "  caphub key generate --out ~/.caphub/keys\n  caphub key generate --out ./keys --name release-2026 --format json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			dir, _ := cmd.Flags().GetString("out")
			name, _ := cmd.Flags().GetString("name")
			if dir == "" {
				return &usageError{errors.New("--out DIR is required: the directory to write NAME.key and NAME.pub to")}
			}
			pub, priv := sign.GenerateKey()
			keyPath, pubPath, err := sign.WriteKeyPair(dir, name, pub, priv)
			if err != nil {
				return err
			}
			id := sign.KeyID(pub)
			out := cmd.OutOrStdout()
			if format == "json" {
				return writeJSON(out, map[string]string{"key_id": id, "private_key": keyPath, "public_key": pubPath})
			}
			fmt.Fprintf(out, "key id:      %s\n", id)
			fmt.Fprintf(out, "private key: %s (keep it secret; sign with: caphub capability sign FILE --key %s)\n", keyPath, keyPath)
			fmt.Fprintf(out, "public key:  %s (share it; verify with: caphub capability verify FILE --trusted %s)\n", pubPath, pubPath)
			return nil
		},
	}
	cmd.Flags().String("out", "", "directory to write the key files to (created if missing)")
	cmd.Flags().String("name", "signing", "base name of the key files: NAME.key and NAME.pub")
	addFormatFlag(cmd)
	return cmd
}

// signedEntry reports one signed definition.
type signedEntry struct {
	URI        string `json:"uri"`
	Version    string `json:"version"`
	PreviousBy string `json:"previous_key_id,omitempty"` // the key of the attestation it replaced
}

func newSignCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sign FILE --key PRIVATE.key [--out FILE]",
		Short: "Sign every capability definition of a file with an ed25519 key",
		Long: `Sign adds an attestation {key_id, algorithm: ed25519, signature} to every definition of
an OSSA capability file (YAML or JSON) and writes the file back, or to --out. The format is
kept (--out with a .json, .yaml or .yml name chooses it); the file is rewritten from its
definitions, so comments and layout are not kept. An existing attestation is replaced.

The signature covers the RFC 8785 canonical JSON of the whole definition but its attestation
and the fields a registry changes after registration (stability, deprecated_by, sunset_date,
migration_guide, provenance.created_at): a signed definition still verifies once deprecated.
Missing domains and categories are written in, as the registry would infer them, so the file
states everything that is signed. Any other change breaks the signature.

The file must be valid (caphub capability validate FILE); the written file is read back and
verified before it replaces the original.`,
		Example: "  caphub capability sign scan.yaml --key ~/.caphub/keys/signing.key\n  caphub capability sign scan.yaml --key release.key --out dist/scan.json",
		Args:    exactArgs(1, "the FILE to sign"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			path := args[0]
			keyPath, _ := cmd.Flags().GetString("key")
			outPath, _ := cmd.Flags().GetString("out")
			if keyPath == "" {
				return &usageError{errors.New("--key PRIVATE.key is required: the private key to sign with (make one with `caphub key generate`)")}
			}
			if outPath == "" {
				outPath = path
			}
			f, err := readSignable(cmd, path)
			if err != nil {
				return err
			}
			priv, err := sign.LoadPrivateKey(keyPath)
			if err != nil {
				return err
			}
			warnOpenKey(cmd.ErrOrStderr(), keyPath)
			defs := f.Definitions()
			entries, err := signAll(defs, priv)
			if err != nil {
				return err
			}
			enc, err := outputEncoding(path, outPath)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := ossa.Write(&buf, defs, enc); err != nil {
				return fmt.Errorf("encode %s: %w", outPath, err)
			}
			pub := sign.NewKeyRing(priv.Public().(ed25519.PublicKey))
			if err := writeVerified(outPath, buf.Bytes(), pub, len(defs)); err != nil {
				return err
			}
			id := defs[0].Attestation.KeyID
			out := cmd.OutOrStdout()
			if format == "json" {
				return writeJSON(out, map[string]any{"file": outPath, "key_id": id, "signed": entries})
			}
			printSigned(out, entries, id)
			fmt.Fprintf(out, "wrote %s (%d %s, %s)\n", outPath, len(defs), plural(len(defs), "capability", "capabilities"), enc)
			return nil
		},
	}
	cmd.Flags().String("key", "", "private key file (PEM, PKCS#8 ed25519) to sign with")
	cmd.Flags().String("out", "", "write the signed file here instead of over FILE")
	addFormatFlag(cmd)
	return cmd
}

// signAll signs every definition with priv, replacing any attestation,
// and says what it signed.
func signAll(defs []capability.Definition, priv ed25519.PrivateKey) ([]signedEntry, error) {
	entries := make([]signedEntry, len(defs))
	for i := range defs {
		if a := defs[i].Attestation; a != nil {
			entries[i].PreviousBy = a.KeyID
		}
		if err := sign.Sign(&defs[i], priv, ""); err != nil {
			return nil, err
		}
		entries[i].URI, entries[i].Version = defs[i].URI, defs[i].Version
	}
	return entries, nil
}

// printSigned writes a line per definition signed with key id, saying
// when it was signed before, by another key.
func printSigned(out io.Writer, entries []signedEntry, id string) {
	for _, e := range entries {
		verb := "signed   "
		if e.PreviousBy != "" {
			verb = "re-signed"
		}
		fmt.Fprintf(out, "%s %s (%s) with key %s", verb, e.URI, e.Version, id)
		if e.PreviousBy != "" && e.PreviousBy != id {
			fmt.Fprintf(out, " (was signed by %s)", e.PreviousBy)
		}
		fmt.Fprintln(out)
	}
}

// readSignable reads a capability file that can be signed and written back
// whole: every entry decoded, no validation error, not an index.
func readSignable(cmd *cobra.Command, path string) (*ossa.File, error) {
	f, err := ossa.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if f.Kind == ossa.KindIndex {
		return nil, fmt.Errorf("%s is a registry index, which lists URIs only: sign the capability files it lists", path)
	}
	if len(f.Issues) > 0 {
		for _, iss := range f.Issues {
			fmt.Fprintln(cmd.ErrOrStderr(), iss.String())
		}
		return nil, fmt.Errorf("%s has definitions that cannot be read (above): fix them before signing, or the rewritten file would lose them", path)
	}
	if len(f.Entries) == 0 {
		return nil, fmt.Errorf("%s holds no capability definition", path)
	}
	if issues := f.Validate(); capability.HasErrors(issues) {
		for _, iss := range issues {
			if iss.Severity == capability.SeverityError {
				fmt.Fprintln(cmd.ErrOrStderr(), iss.String())
			}
		}
		return nil, fmt.Errorf("%s is not valid (errors above): fix it before signing (caphub capability validate %s)", path, path)
	}
	return f, nil
}

// warnOpenKey warns when a private key file is readable by others.
func warnOpenKey(w io.Writer, path string) {
	if runtime.GOOS == "windows" {
		return
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(w, "warning: private key %s can be read by other users (mode %04o): restrict it with chmod 600 %s\n", path, st.Mode().Perm(), path)
	}
}

// outputEncoding is the format of the signed file: the one --out's
// extension names, else the input file's own (JSON when it starts with '{'
// or '[', as ossa.Read decides).
func outputEncoding(in, out string) (ossa.Format, error) {
	switch strings.ToLower(filepath.Ext(out)) {
	case ".json":
		return ossa.JSON, nil
	case ".yaml", ".yml":
		return ossa.YAML, nil
	}
	fh, err := os.Open(in)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(fh, head)
	head = bytes.TrimLeft(bytes.TrimPrefix(head[:n], []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(head) > 0 && (head[0] == '{' || head[0] == '[') {
		return ossa.JSON, nil
	}
	return ossa.YAML, nil
}

// writeVerified writes data to path through a temporary file beside it,
// which is read back and verified first: a file is only replaced by one
// whose every definition verifies. An existing file keeps its mode.
func writeVerified(path string, data []byte, keys sign.KeyRing, want int) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	back, err := ossa.Read(path, data)
	if err != nil || len(back.Issues) > 0 || len(back.Entries) != want {
		return fmt.Errorf("the signed file does not read back as written (%v): nothing was written; please report this", err)
	}
	for i := range back.Entries {
		if err := sign.Verify(&back.Entries[i].Definition, keys); err != nil {
			return fmt.Errorf("the signed file does not verify once written (%w): nothing was written; please report this", err)
		}
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	done = true
	return nil
}

// verifyResult is the verdict on one definition (or one unreadable file or
// entry).
type verifyResult struct {
	File     string `json:"file"`
	URI      string `json:"uri,omitempty"`
	Version  string `json:"version,omitempty"`
	KeyID    string `json:"key_id,omitempty"`
	Verified bool   `json:"verified"`
	Error    string `json:"error,omitempty"`
}

// trustedPaths are the public keys verify trusts: --trusted, else
// $CAPHUB_TRUSTED_KEYS (paths separated by the OS path list separator).
func trustedPaths(cmd *cobra.Command) ([]string, error) {
	paths, _ := cmd.Flags().GetStringArray("trusted")
	if len(paths) > 0 {
		return paths, nil
	}
	cfg, err := configFrom(cmd, slog.LevelWarn)
	if err != nil {
		return nil, err
	}
	for _, p := range cfg.trustedKeys {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

func newVerifyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify FILE... --trusted DIR|FILE",
		Short: "Check that every capability definition of the files is signed by a trusted key",
		Long: `Verify checks the attestation of every definition in the files against the trusted
public keys: a PEM file listing one or more "PUBLIC KEY" blocks, or a directory whose *.pub
files are read (--trusted is repeatable; default $` + envTrustedKeys + `, paths separated by '` + string(os.PathListSeparator) + `').

A definition fails when it is unsigned, signed by a key that is not trusted, or changed since
it was signed (only stability, deprecated_by, sunset_date, migration_guide and
provenance.created_at may change).

Exit status: 0 when every definition verifies, 1 otherwise, 2 on usage errors.`,
		Example: "  caphub capability verify scan.yaml --trusted ~/.caphub/keys/signing.pub\n  caphub capability verify capabilities/*.yaml --trusted ./trusted-keys/ --format json",
		Args:    minArgs(1, "at least one FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			paths, err := trustedPaths(cmd)
			if err != nil {
				return err
			}
			if len(paths) == 0 {
				return &usageError{fmt.Errorf("--trusted DIR|FILE is required (or set $%s): the public keys whose signatures you trust", envTrustedKeys)}
			}
			keys, err := sign.LoadKeyRing(paths...)
			if err != nil {
				return err
			}
			var results []verifyResult
			for _, path := range args {
				results = append(results, verifyFile(path, keys)...)
			}
			failed := 0
			for _, r := range results {
				if !r.Verified {
					failed++
				}
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				if err := writeJSON(out, map[string]any{"ok": failed == 0, "trusted_keys": keys.IDs(), "results": results}); err != nil {
					return err
				}
			} else {
				for _, r := range results {
					if r.Verified {
						fmt.Fprintf(out, "%s: ok: %s (%s) verified with key %s\n", r.File, r.URI, r.Version, r.KeyID)
					} else {
						fmt.Fprintf(out, "%s: FAILED: %s\n", r.File, r.Error)
					}
				}
				fmt.Fprintf(out, "%d verified, %d failed\n", len(results)-failed, failed)
			}
			if failed > 0 {
				return &silentError{"verification failed"}
			}
			return nil
		},
	}
	cmd.Flags().StringArray("trusted", nil, "trusted public keys: a PEM file or a directory of .pub files; repeatable (default $"+envTrustedKeys+")")
	addFormatFlag(cmd)
	return cmd
}

// verifyFile verifies every definition of one file.
func verifyFile(path string, keys sign.KeyRing) []verifyResult {
	f, err := ossa.ReadFile(path)
	if err != nil {
		return []verifyResult{{File: path, Error: err.Error()}}
	}
	var out []verifyResult
	for _, iss := range f.Issues {
		out = append(out, verifyResult{File: path, Error: iss.String()})
	}
	for _, e := range f.Entries {
		d := e.Definition
		r := verifyResult{File: path, URI: d.URI, Version: d.Version}
		if d.Attestation != nil {
			r.KeyID = d.Attestation.KeyID
		}
		if err := sign.Verify(&d, keys); err != nil {
			r.Error = withHint(err)
		} else {
			r.Verified = true
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		out = append(out, verifyResult{File: path, Error: path + " holds no capability definition"})
	}
	return out
}
