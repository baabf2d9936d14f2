package agent

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/caphub/caphub/capability"
)

// FuzzReadManifest feeds arbitrary bytes to the reader and everything after
// it: nothing may panic, a manifest comes with no error and an error with no
// manifest, and Validate gives the same verdict on the manifest as
// validateDocument on its document.
func FuzzReadManifest(f *testing.F) {
	// Seeds: the corpus examples when present, and hand-made edge cases.
	if root, err := filepath.Abs(filepath.Join("..", "..", "shared", "corpus", "ossa-v0.2.9", "examples")); err == nil {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, err := os.ReadFile(p); err == nil {
					f.Add(b)
				}
			}
			return nil
		})
	}
	for _, s := range []string{
		minimalYAML, section10,
		"{\"apiVersion\": \"ossa/v0.2.9\", \"kind\": \"Agent\", \"metadata\": {\"name\": \"a\"}, \"spec\": {\"role\": \"r\"}}",
		"a: &a [*a]\n",
		"a: &x {b: 1}\nc: {<<: [*x, *x], d: 2}\n",
		"? [a]\n: b\n",
		"spec:\n  llm: {temperature: .nan, maxTokens: 1e400}\n",
		"---\n---\n",
		"{\"a\":\t1}{",
		"metadata:\n  labels: {\"a.b\": 1, \"c[d]\": x}\n",
		"spec: {capability_bindings: {\"ossa:a/b@1.0\": {mcp: {server: 1}}}, capabilities: [\"ossa:a/b@1.0\"]}\n",
		"metadata:\n  name: \"a\xff\"\n",
	} {
		f.Add([]byte(s))
	}
	reg := &fakeRegistry{defs: map[string]capability.Definition{"ossa:security/scan_vulnerabilities@1.0": scanDefinition()}}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, issues, err := ReadManifest("fuzz.yaml", data)
		if err != nil {
			if m != nil || issues != nil {
				t.Fatalf("an error comes alone: %v %v", m, issues)
			}
			return
		}
		if m == nil || m.Document == nil {
			t.Fatal("no manifest and no error")
		}
		a, b := Validate(m), validateDocument(m.Document)
		if capability.HasErrors(a) != capability.HasErrors(b) || len(a) != len(b) {
			t.Fatalf("Validate and validateDocument disagree: %v / %v", a, b)
		}
		_ = CheckCapabilities(context.Background(), m, nil)
		_ = CheckIssues(CheckCapabilities(context.Background(), m, reg))
		_, _ = json.Marshal(m)
	})
}
