package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const rtfsCorpus = "../../../shared/corpus/ccos/brace-map"

// TestImportExportRTFS imports the CCOS brace-map corpus, exports the
// registry as RTFS, and re-imports the export: nothing changes.
func TestImportExportRTFS(t *testing.T) {
	if _, err := os.Stat(rtfsCorpus); err != nil {
		t.Skipf("CCOS corpus not found at %s (clone with ../shared beside the project): %v", rtfsCorpus, err)
	}
	tmp := t.TempDir()
	db := filepath.Join(tmp, "caphub.db")

	// 50 files, all imported: demo.hello, whose body is RTFS code, with the
	// rtfs binding (one file has unescaped quotes in a description, which
	// the lenient reading keeps).
	code, out, errOut := caphub(t, "import", "rtfs", rtfsCorpus, "--db", db)
	for _, want := range []string{
		"50 imported, 0 failed",
		"registered mcp:github/list_issues@1.0 (1.0.0)",
		"registered mcp:github-github-mcp/list_issues@1.0 (1.0.0)",
		"registered ossa:openweather-api/get_forecast@2.5 (2.5.0)",
		"registered mcp:github/pull_request_review_write@1.0 (1.0.0)",
		"registered ossa:demo/hello@1.0 (1.0.0)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("import output lacks %q", want)
		}
	}
	if code != 0 {
		t.Fatalf("import: exit %d, want 0\n%s%s", code, out, errOut)
	}

	export := filepath.Join(tmp, "export")
	code, out, errOut = caphub(t, "export", "rtfs", export, "--db", db)
	if code != 0 || !strings.Contains(out, "50 capability versions exported to 50 files under "+export+", 0 failed") {
		t.Fatalf("export: exit %d\n%s%s", code, out, errOut)
	}
	for _, p := range []string{
		"discovered/mcp/github/list_issues.rtfs",
		"discovered/mcp/github-github-mcp/list_issues.rtfs",
		"discovered/openapi/openweather-api/get_current_weather.rtfs",
	} {
		b, err := os.ReadFile(filepath.Join(export, filepath.FromSlash(p)))
		if err != nil {
			t.Errorf("export lacks %s: %v", p, err)
			continue
		}
		if !bytes.Contains(b, []byte("\n  :metadata {\n")) || !bytes.Contains(b, []byte("\n  :implementation\n    (fn [input]")) {
			t.Errorf("%s is not in the hierarchical layout with its implementation:\n%s", p, b)
		}
	}

	// demo.hello's rtfs binding is derived from its :implementation, so
	// the export does not write it.
	if b, err := os.ReadFile(filepath.Join(export, "user", "demo", "hello.rtfs")); err != nil ||
		!bytes.Contains(b, []byte("\n  :implementation\n    (do\n")) || bytes.Contains(b, []byte(":bindings")) {
		t.Errorf("user/demo/hello.rtfs (%v):\n%s", err, b)
	}

	// Re-importing the export registers nothing new.
	code, out, errOut = caphub(t, "import", "rtfs", export, "--db", db)
	if code != 0 || !strings.Contains(out, "50 imported, 0 failed") || strings.Contains(out, "registered ") ||
		strings.Count(out, "unchanged  ") != 50 {
		t.Fatalf("re-import of the export: exit %d, want 50 unchanged and nothing registered\n%s%s", code, out, errOut)
	}

	// A second export writes the same bytes.
	again := filepath.Join(tmp, "again")
	if code, out, errOut = caphub(t, "export", "rtfs", again, "--db", db); code != 0 {
		t.Fatalf("second export: exit %d\n%s%s", code, out, errOut)
	}
	err := filepath.WalkDir(export, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(export, p)
		a, _ := os.ReadFile(p)
		b, err := os.ReadFile(filepath.Join(again, rel))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two exports of the same registry (%v)", rel, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// caphub keeps the RTFS body and says, when invoked, that it does not
	// evaluate it and what to bind instead.
	code, out, errOut = caphub(t, "invoke", "ossa:demo/hello@1.0", "--input", `{"name": "Ada"}`, "--db", db)
	if code == 0 || !strings.Contains(out+errOut, "NOT_EXECUTABLE") ||
		!strings.Contains(out+errOut, "ossa:demo/hello@1.0 is implemented in RTFS (its metadata.rtfs.implementation) and caphub does not evaluate RTFS: bind it to") {
		t.Errorf("invoke of an RTFS implementation: exit %d\n%s%s", code, out, errOut)
	}
}

func TestImportRTFSErrors(t *testing.T) {
	tmp := t.TempDir()
	db := filepath.Join(tmp, "caphub.db")
	bad := filepath.Join(tmp, "bad.rtfs")
	if err := os.WriteFile(bad, []byte("(capability \"demo.x\"\n  :name \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(tmp, "good.rtfs")
	if err := os.WriteFile(good, []byte(`(capability "demo.echo" :input-schema {:text :string} :output-schema :any :bindings {:cli {:command "echo {text}"}})`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := caphub(t, "import", "rtfs", bad, good, "--db", db)
	if code != 1 || !strings.Contains(out, "1 imported, 1 failed") || !strings.Contains(out, "registered ossa:demo/echo@1.0 (1.0.0)") ||
		!strings.Contains(out, "failed: "+bad+":1:1: RTFS syntax: \"(\" opened here is never closed (the file ends at 3:1): add \")\"") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}

	// The same version twice in one import: an identical repeat is one
	// registration, a different one a failure naming both files.
	dir := t.TempDir()
	echo := `(capability "demo.say" :input-schema {:text :string} :output-schema :any :bindings {:cli {:command "echo {text}"}})`
	for name, content := range map[string]string{"a.rtfs": echo, "b.rtfs": echo, "c.rtfs": strings.Replace(echo, "echo {text}", "printf {text}", 1)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut = caphub(t, "import", "rtfs", dir, "--db", db)
	wantDup := "failed: " + filepath.Join(dir, "c.rtfs") + ": ossa:demo/say@1.0 (1.0.0): this version is also defined, with other content, in " + filepath.Join(dir, "a.rtfs")
	if code != 1 || !strings.Contains(out, "1 imported, 1 failed") || !strings.Contains(out, wantDup) {
		t.Errorf("duplicates: exit %d, want 1 with %q\n%s%s", code, wantDup, out, errOut)
	}

	empty := t.TempDir()
	code, _, errOut = caphub(t, "import", "rtfs", empty, "--db", db)
	if code != 2 || !strings.Contains(errOut, "no .rtfs file under "+empty) {
		t.Errorf("empty dir: exit %d, want 2\n%s", code, errOut)
	}
	code, _, errOut = caphub(t, "import", "rtfs", filepath.Join(tmp, "missing"), "--db", db)
	if code != 1 || !strings.Contains(errOut, "cannot read "+filepath.Join(tmp, "missing")) {
		t.Errorf("missing file: exit %d, want 1\n%s", code, errOut)
	}
	code, _, errOut = caphub(t, "export", "rtfs", "--db", db)
	if code != 2 || !strings.Contains(errOut, "needs the output DIR") {
		t.Errorf("export without DIR: exit %d, want 2\n%s", code, errOut)
	}
	for _, cmd := range [][]string{{"import", "rtfs", "--help"}, {"export", "rtfs", "--help"}} {
		code, out, _ := caphub(t, cmd...)
		if code != 0 || !strings.Contains(out, "Examples:\n  caphub "+cmd[0]+" rtfs ") {
			t.Errorf("%v: exit %d, no example:\n%s", cmd, code, out)
		}
	}
}
