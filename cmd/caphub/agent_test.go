package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/testpeers"
)

func example(t *testing.T, rel string) string {
	t.Helper()
	return filepath.Join(testpeers.Corpus(t, "ossa-v0.2.9/examples"), filepath.FromSlash(rel))
}

func TestAgentValidateCorpus(t *testing.T) {
	valid := example(t, "openai/basic-agent.ossa.yaml")
	invalid := example(t, "claude-code/code-reviewer.ossa.yaml")
	multi := example(t, "migration-guides/from-langchain-to-ossa.yaml")
	broken := example(t, "extensions/kagent-v1.yml")

	code, out, errOut := caphub(t, "agent", "validate", valid)
	if code != 0 || !strings.Contains(out, valid+": ok, agent ") || !strings.Contains(out, ", 0 errors, 0 warnings") {
		t.Errorf("valid: exit %d\n%s%s", code, out, errOut)
	}

	code, out, _ = caphub(t, "agent", "validate", valid, invalid)
	if code != 1 {
		t.Errorf("invalid: exit %d, want 1", code)
	}
	for _, want := range []string{
		invalid + `:18:5: error: spec.llm.max_tokens: unknown field "max_tokens": LLMConfig allows only provider, model, temperature, maxTokens,`,
		"(did you mean maxTokens?)",
		invalid + ": INVALID, agent claude-code-reviewer 1.0.0, 3 errors, 0 warnings",
		valid + ": ok,",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = caphub(t, "agent", "validate", multi, broken)
	if code != 1 {
		t.Errorf("multi-document and unparseable: exit %d, want 1", code)
	}
	for _, want := range []string{
		multi + ":120:1: error: file holds 4 YAML documents (starting at lines 53, 120, 188, 218): an agent manifest is one document; put each manifest in its own file",
		multi + ": INVALID, unreadable, 1 error, 0 warnings",
		broken + ":133:1: error: not valid YAML or JSON: found unknown escape character",
		broken + ": INVALID, unreadable, 1 error",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = caphub(t, "agent", "validate", "--format", "json", valid, invalid, multi)
	if code != 1 {
		t.Errorf("json: exit %d", code)
	}
	var report struct {
		Valid bool
		Files []struct {
			File, Agent string
			Valid       bool
			Errors      int
			Issues      []struct {
				Severity, Path, Message, Rule string
				Line, Column                  int
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if report.Valid || len(report.Files) != 3 || !report.Files[0].Valid || report.Files[1].Valid || report.Files[2].Errors != 1 {
		t.Fatalf("report %+v", report)
	}
	first := report.Files[1].Issues[0]
	if first.Path != "spec.llm.max_tokens" || first.Line != 18 || first.Column != 5 || first.Rule != "schema:#/definitions/LLMConfig/additionalProperties" {
		t.Errorf("first issue %+v", first)
	}
}

func TestAgentValidateUsage(t *testing.T) {
	code, _, errOut := caphub(t, "agent", "validate")
	if code != 2 || !strings.Contains(errOut, "needs at least one manifest FILE") {
		t.Errorf("no file: exit %d\n%s", code, errOut)
	}
	code, _, errOut = caphub(t, "agent", "validate", "--format", "xml", "a.yaml")
	if code != 2 || !strings.Contains(errOut, `--format "xml": use text or json`) {
		t.Errorf("bad format: exit %d\n%s", code, errOut)
	}
	code, out, _ := caphub(t, "agent", "validate", filepath.Join(t.TempDir(), "nope.yaml"))
	if code != 1 || !strings.Contains(out, "no such file") {
		t.Errorf("missing file: exit %d\n%s", code, out)
	}
}

const section10Manifest = `apiVersion: ossa/v0.2.9
kind: Agent
metadata:
  name: memory-agent
  version: 1.0.0
spec:
  role: Remember things
  type: worker
  capabilities:
    - ossa:memory/kg_query@1.0
    - ossa:memory/semantic_search@1.0
    - ossa:security/generate_sbom@1.0
  capability_bindings:
    "ossa:memory/kg_query@1.0":
      mcp: {server: brain-2, tool: kg_query, mapping: {operation: op}}
  required_capabilities:
    - uri: "ossa:memory/context_fusion@1.0"
      reason: "Fuse retrieved context"
    - uri: "ossa:a2a/delegate@1.0"
      reason: "Delegation to specialized workers"
`

func TestAgentValidateWithRegistry(t *testing.T) {
	needCorpus(t)
	db := filepath.Join(t.TempDir(), "caphub.db")
	if code, out, errOut := caphub(t, "capability", "register", "--db", db, memoryYAML); code != 0 {
		t.Fatalf("register: exit %d\n%s%s", code, out, errOut)
	}
	manifest := writeFile(t, "agent.yaml", section10Manifest)

	// Without a registry: the schema checks alone, and a note.
	code, out, _ := caphub(t, "agent", "validate", manifest)
	if code != 0 || !strings.Contains(out, "note: capability URIs were not resolved: no registry given (use --db FILE or --server URL") {
		t.Errorf("no registry: exit %d\n%s", code, out)
	}

	code, out, errOut := caphub(t, "agent", "validate", "--db", db, manifest)
	if code != 1 {
		t.Errorf("missing capabilities: exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		manifest + ":12:7: error: spec.capabilities[2]: capability ossa:security/generate_sbom@1.0 is missing from the registry: capability ossa:security/generate_sbom is not registered",
		manifest + ":19:12: error: spec.required_capabilities[1].uri: required capability ossa:a2a/delegate@1.0 is missing from the registry (the agent needs it for: Delegation to specialized workers)",
		manifest + ": capabilities (registry " + db + "):",
		"  resolved  ossa:memory/kg_query@1.0 → ossa:memory/kg_query@1.0 (1.0.0); bindings: mcp brain-2/kg_query (from the manifest, replacing the registered ones)",
		"  resolved  ossa:memory/semantic_search@1.0 → ossa:memory/semantic_search@1.0 (1.0.0); bindings: mcp ",
		"  MISSING   ossa:security/generate_sbom@1.0",
		manifest + ": required capabilities:",
		"  resolved  ossa:memory/context_fusion@1.0 → ossa:memory/context_fusion@1.0 (1.0.0) — reason: Fuse retrieved context",
		"  MISSING   ossa:a2a/delegate@1.0 — reason: Delegation to specialized workers",
		manifest + ": INVALID, agent memory-agent 1.0.0, 2 errors, 0 warnings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = caphub(t, "agent", "validate", "--db", db, "--format", "json", manifest)
	var report struct {
		Registry string
		Files    []struct {
			Capabilities []struct {
				Kind, Path, URI, Status, Reason string
				BindingSource                   string `json:"binding_source"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || code != 1 {
		t.Fatalf("json: exit %d %v\n%s", code, err, out)
	}
	caps := report.Files[0].Capabilities
	if report.Registry != db || len(caps) != 5 || caps[0].Status != "resolved" || caps[0].BindingSource != "agent" ||
		caps[1].BindingSource != "registry" || caps[2].Status != "missing" || caps[4].Reason != "Delegation to specialized workers" {
		t.Errorf("json checks %+v", report)
	}

	// A database that does not exist is not created, and the checks are skipped.
	absent := filepath.Join(t.TempDir(), "absent.db")
	code, out, _ = caphub(t, "agent", "validate", "--db", absent, manifest)
	if code != 0 || !strings.Contains(out, "note: capability checks skipped: database "+absent+" does not exist") {
		t.Errorf("absent db: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(absent); err == nil {
		t.Error("validate created the database")
	}
	// An unreachable server: skipped with a note, not a failure.
	code, out, _ = caphub(t, "agent", "validate", "--server", "http://127.0.0.1:1", manifest)
	if code != 0 || !strings.Contains(out, "note: capability checks skipped: the registry http://127.0.0.1:1 does not answer") {
		t.Errorf("unreachable server: exit %d\n%s", code, out)
	}
}
