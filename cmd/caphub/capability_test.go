package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// caphub runs the CLI in-process and returns exit code, stdout and stderr.
func caphub(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

const memoryYAML = "../../../shared/corpus/ossa-v0.2.9/capabilities/memory.yaml"

func needCorpus(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(memoryYAML); err != nil {
		t.Skipf("OSSA corpus not found at %s (clone with ../shared beside the project): %v", memoryYAML, err)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidateCorpusMemory(t *testing.T) {
	needCorpus(t)
	code, out, _ := caphub(t, "capability", "validate", memoryYAML)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	if !strings.Contains(out, "memory.yaml: ok, 4 capabilities, 0 errors") {
		t.Errorf("summary missing:\n%s", out)
	}
	if !strings.Contains(out, "memory.yaml:178:9: warning: capabilities[2].bindings.grpc.port: unknown field") {
		t.Errorf("positioned warning missing:\n%s", out)
	}
}

const brokenCLI = `capability:
  uri: ossa:tools/grep@1.0
  name: grep
  domain: tools
  version: 1.0.0
  input:
    type: object
    properties:
      pattern: {type: string}
  output: {type: object}
  bindings:
    cli:
      command: "grep {pattern} {file}"
`

func TestValidateExitCodesAndJSON(t *testing.T) {
	needCorpus(t)
	bad := writeFile(t, "bad.yaml", brokenCLI)
	code, out, _ := caphub(t, "capability", "validate", memoryYAML, bad)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (one file has errors):\n%s", code, out)
	}
	if !strings.Contains(out, bad+":13:7: error: capability.bindings.cli.command: placeholder {file} does not name an input field (input fields are pattern)") {
		t.Errorf("error with position and path missing:\n%s", out)
	}

	code, out, _ = caphub(t, "capability", "validate", "--format", "json", memoryYAML, bad)
	if code != 1 {
		t.Fatalf("json: exit %d", code)
	}
	var report struct {
		Valid bool
		Files []struct {
			File                           string
			Capabilities, Errors, Warnings int
			Issues                         []struct {
				Severity, Path, Message string
				Line, Column            int
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if report.Valid || len(report.Files) != 2 || report.Files[0].Errors != 0 || report.Files[0].Capabilities != 4 || report.Files[1].Errors != 1 {
		t.Errorf("report %+v", report)
	}
	iss := report.Files[1].Issues
	found := false
	for _, i := range iss {
		if i.Severity == "error" && i.Path == "capability.bindings.cli.command" && i.Line == 13 && i.Column == 7 {
			found = true
		}
	}
	if !found {
		t.Errorf("json issues lack the cli error: %+v", iss)
	}
}

// A schema nested past the budget is reported at the file, line and column
// of the first level too deep, with its path, without compiling it.
func TestValidateDeepSchemaPosition(t *testing.T) {
	var b strings.Builder
	b.WriteString("capability:\n  uri: ossa:a/deep@1.0\n  name: deep\n  domain: a\n  version: 1.0.0\n  output: {}\n  bindings: {native: {handler: x}}\n  input:\n")
	indent := "    "
	for range 3000 {
		b.WriteString(indent + "items:\n")
		indent += " "
	}
	b.WriteString(indent + "type: string\n")
	deep := writeFile(t, "deep.yaml", b.String())
	code, out, _ := caphub(t, "capability", "validate", deep)
	// input is line 8; input.items×64 is the 64th items key, on line 8+64.
	want := fmt.Sprintf("%s:%d:%d: error: capability.input%s: schema nesting exceeds 64 levels", deep, 8+64, 4+64, strings.Repeat(".items", 64))
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("exit %d, want 1 and %q in:\n%.2000s", code, want, out)
	}
}

func TestValidateUnreadableFiles(t *testing.T) {
	code, out, _ := caphub(t, "capability", "validate", filepath.Join(t.TempDir(), "nope.yaml"))
	if code != 1 || !strings.Contains(out, "no such file") {
		t.Errorf("missing file: exit %d\n%s", code, out)
	}
	syntax := writeFile(t, "syntax.yaml", "capability:\n  uri: [x\n")
	code, out, _ = caphub(t, "capability", "validate", syntax)
	if code != 1 || !strings.Contains(out, syntax+":1:1: error: not valid YAML or JSON") {
		t.Errorf("syntax error: exit %d\n%s", code, out)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	cases := [][]string{
		{"capability", "validate"},
		{"capability", "validate", "--format", "xml", "x.yaml"},
		{"capability", "validate", "--bogus", "x.yaml"},
		{"capability", "compat", "ossa:a/b@1.0"},
		{"capability", "compat", "ossa:A/b@1.0", "ossa:a/b@1.0"},
		{"capability", "diff", "only-one.yaml"},
		{"version", "extra"},
		{"no-such-command"},
	}
	for _, args := range cases {
		code, _, errOut := caphub(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
		if errOut == "" {
			t.Errorf("%v: no error message", args)
		}
	}
}

func TestCompat(t *testing.T) {
	cases := []struct {
		req, avail string
		code       int
		contains   string
	}{
		{"ossa:security/scan@1.0", "ossa:security/scan@1.2", 0, "compatible: ossa:security/scan@1.2 satisfies ossa:security/scan@1.0"},
		{"ossa:security/scan@1.2", "ossa:security/scan@1.2", 0, "compatible"},
		{"ossa:security/scan@1.3", "ossa:security/scan@1.2", 1, "minor"},
		{"ossa:security/scan@1.0", "ossa:security/scan@2.0", 1, "major"},
		{"ossa:security/scan@1.0", "ossa:security/scan_vulnerabilities@1.0", 1, "name"},
		{"ossa:security/scan@1.0", "ossa:code/scan@1.0", 1, "domain"},
		{"ossa:filesystem/read_file@1.0", "mcp:filesystem/read_file@1.0", 1, "scheme"},
	}
	for _, c := range cases {
		code, out, _ := caphub(t, "capability", "compat", c.req, c.avail)
		if code != c.code || !strings.Contains(out, c.contains) {
			t.Errorf("compat %s %s: exit %d, output %q; want exit %d containing %q", c.req, c.avail, code, out, c.code, c.contains)
		}
	}
	code, out, _ := caphub(t, "capability", "compat", "--format", "json", "ossa:a/b@1.3", "ossa:a/b@1.2")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 1 || res["compatible"] != false || res["rule"] != "minor" {
		t.Errorf("json compat: exit %d %v %s", code, err, out)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := caphub(t, "version")
	if code != 0 || !strings.HasPrefix(out, "caphub ") {
		t.Errorf("exit %d %q", code, out)
	}
	// --version and -v are the same answer, as users try them first.
	for _, flag := range []string{"--version", "-v"} {
		code, got, errOut := caphub(t, flag)
		if code != 0 || got != out {
			t.Errorf("caphub %s: exit %d %q (stderr %q), want %q as caphub version prints", flag, code, got, errOut, out)
		}
	}
}

func TestEveryCommandHasHelpWithExample(t *testing.T) {
	for _, c := range allCommands(newRootCmd()) {
		if c.Example == "" {
			t.Errorf("%s has no example in --help", c.CommandPath())
		}
		code, out, _ := caphub(t, append(strings.Fields(c.CommandPath())[1:], "--help")...)
		if code != 0 || !strings.Contains(out, "Examples:") {
			t.Errorf("%s --help: exit %d, no Examples section", c.CommandPath(), code)
		}
	}
}

func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		if sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		out = append(out, allCommands(sub)...)
	}
	return out
}

const scanV1 = `capability:
  uri: ossa:security/scan@1.0
  name: scan
  domain: security
  version: 1.0.0
  description: Scan a target
  input:
    type: object
    required: [target]
    properties:
      target: {type: string}
      options:
        type: object
        properties:
          depth: {type: integer}
  output:
    type: object
    properties:
      findings: {type: array, items: {type: object, properties: {id: {type: string}}}}
  errors:
    - {code: SCAN_FAILED, description: failed, retryable: true}
  bindings:
    cli: {command: "scan {target}", parser: json}
`

func TestDiff(t *testing.T) {
	old := writeFile(t, "v1.yaml", scanV1)
	// 1.1.0 adds an optional field (minor) and changes the description (patch).
	minor := strings.NewReplacer("@1.0", "@1.1", "1.0.0", "1.1.0", "Scan a target", "Scan a target for problems",
		"      target: {type: string}\n", "      target: {type: string}\n      verbose: {type: boolean, default: false}\n").Replace(scanV1)
	code, out, _ := caphub(t, "capability", "diff", old, writeFile(t, "v11.yaml", minor))
	if code != 0 || !strings.Contains(out, "required bump: minor, declared: minor — ok") {
		t.Errorf("minor change with a minor bump: exit %d\n%s", code, out)
	}
	// 1.1.0 that changes a nested field's type needs 2.0.0.
	breaking := strings.NewReplacer("@1.0", "@1.1", "1.0.0", "1.1.0", "depth: {type: integer}", "depth: {type: string}").Replace(scanV1)
	code, out, _ = caphub(t, "capability", "diff", old, writeFile(t, "bad.yaml", breaking))
	if code != 1 || !strings.Contains(out, "input.properties.options.properties.depth") || !strings.Contains(out, "required bump: major, declared: minor") || !strings.Contains(out, "2.0.0") {
		t.Errorf("breaking change with a minor bump: exit %d\n%s", code, out)
	}
	// The same as 2.0.0 is fine; JSON output says so.
	major := strings.NewReplacer("@1.0", "@2.0", "1.0.0", "2.0.0", "depth: {type: integer}", "depth: {type: string}").Replace(scanV1)
	code, out, _ = caphub(t, "capability", "diff", "--format", "json", old, writeFile(t, "v2.yaml", major))
	var res struct {
		OK      bool
		Reports []struct {
			Required, Declared string
			Satisfied          bool
			Changes            []struct{ Path, Bump string }
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || !res.OK || res.Reports[0].Required != "major" || !res.Reports[0].Satisfied {
		t.Errorf("json diff: exit %d %v\n%s", code, err, out)
	}
	// Removing an array item's output field is major.
	removed := strings.NewReplacer("@1.0", "@1.1", "1.0.0", "1.1.0", "properties: {id: {type: string}}", "properties: {}").Replace(scanV1)
	code, out, _ = caphub(t, "capability", "diff", old, writeFile(t, "rm.yaml", removed))
	if code != 1 || !strings.Contains(out, "output.properties.findings.items.properties.id") {
		t.Errorf("removed output field in array items: exit %d\n%s", code, out)
	}
}
