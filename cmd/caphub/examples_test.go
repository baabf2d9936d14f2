package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// examplesDir holds the capability files README.md's tour uses.
const examplesDir = "../../examples"

// TestExamplesValidate checks every file of examples/ with the validator
// caphub capability validate runs, so an example never stops being valid.
func TestExamplesValidate(t *testing.T) {
	entries, err := os.ReadDir(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		n++
		path := filepath.Join(examplesDir, e.Name())
		r := validateFile(path)
		if r.Errors > 0 {
			var b strings.Builder
			printValidation(&b, []fileReport{r})
			t.Errorf("%s has errors:\n%s", path, b.String())
		}
		if r.Capabilities == 0 {
			t.Errorf("%s: no capability read", path)
		}
	}
	if n < 3 {
		t.Fatalf("%d files in %s, want at least go.yaml, scan-1.0.yaml and scan-1.1.yaml", n, examplesDir)
	}
}

// TestExamplesTour runs the README tour's commands on the example files:
// the multi-capability file registers and is found, the scan pair's diff and
// registration refuse the too-small bump, and a cli binding runs.
func TestExamplesTour(t *testing.T) {
	db := filepath.Join(t.TempDir(), "caphub.db")
	ex := func(name string) string { return filepath.Join(examplesDir, name) }

	code, out, errOut := caphub(t, "capability", "register", "--db", db, ex("go.yaml"), ex("scan-1.0.yaml"))
	if code != 0 {
		t.Fatalf("register: exit %d:\n%s%s", code, out, errOut)
	}
	for _, uri := range []string{"ossa:code/describe_package@1.0", "ossa:code/check_format@1.0", "ossa:code/vet@1.0", "ossa:security/scan@1.0"} {
		if !strings.Contains(out, "registered "+uri+" ") {
			t.Errorf("register did not report %s:\n%s", uri, out)
		}
	}

	code, out, _ = caphub(t, "capability", "diff", ex("scan-1.0.yaml"), ex("scan-1.1.yaml"))
	if code != 1 || !strings.Contains(out, "required bump: major, declared: minor — TOO SMALL") {
		t.Errorf("diff: exit %d, want 1 and a bump too small:\n%s", code, out)
	}
	code, out, errOut = caphub(t, "capability", "register", "--db", db, ex("scan-1.1.yaml"))
	if code != 1 || !strings.Contains(errOut, "the changes need a major bump: use 2.0.0") {
		t.Errorf("register scan-1.1.yaml: exit %d, want 1 and a refusal:\n%s%s", code, out, errOut)
	}

	code, out, errOut = caphub(t, "capability", "search", "--db", db, "which go files need formatting")
	if lines := strings.Split(out, "\n"); code != 0 || len(lines) < 2 || !strings.HasPrefix(lines[1], "ossa:code/check_format@1.0 ") {
		t.Errorf("search: exit %d, want check_format first:\n%s%s", code, out, errOut)
	}

	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go on PATH to run the cli binding: %v", err)
	}
	code, out, errOut = caphub(t, "invoke", "--db", db, "--allow-command", "go",
		"ossa:code/describe_package@1.0", "--input", `{"package": "github.com/caphub/caphub/capability"}`)
	if code != 0 {
		t.Fatalf("invoke: exit %d:\n%s%s", code, out, errOut)
	}
	var res struct {
		Output struct {
			ImportPath string
			GoFiles    []string
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("invoke output: %v\n%s", err, out)
	}
	if res.Output.ImportPath != "github.com/caphub/caphub/capability" || len(res.Output.GoFiles) == 0 {
		t.Errorf("invoke output = %+v, want the capability package and its files", res.Output)
	}
}
