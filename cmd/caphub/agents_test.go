package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/testpeers"
	"github.com/spf13/cobra"
)

const calculatorManifest = `apiVersion: ossa/v0.2.9
kind: Agent
metadata:
  name: calculator
  version: 1.0.0
  description: Exact arithmetic
spec:
  role: |
    You are a careful calculator.
  capabilities:
    - ossa:everruns/current_time@1.0
    - ossa:everruns/test_math@1.0
`

func TestAgentRegistryCLI(t *testing.T) {
	t.Setenv("CAPHUB_SERVER", "")
	db := filepath.Join(t.TempDir(), "caphub.db")
	good := writeFile(t, "calculator.yaml", calculatorManifest)

	code, out, errOut := caphub(t, "agent", "apply", "--db", db, good)
	if code != 0 || !strings.Contains(out, "applied agent calculator: 2 capabilities (ossa:everruns/current_time@1.0, ossa:everruns/test_math@1.0)") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}

	// A coming-soon bundle is refused with the manifest position.
	bad := writeFile(t, "bad.yaml", strings.Replace(strings.Replace(calculatorManifest, "calculator\n  version", "broken\n  version", 1), "test_math", "research", 1))
	code, out, errOut = caphub(t, "agent", "apply", "--db", db, bad)
	if code != 1 || !strings.Contains(errOut, bad+":12:7: error: spec.capabilities[1]: ossa:everruns/research@1.0") || !strings.Contains(errOut, "coming soon") {
		t.Errorf("apply refused: exit %d\n%s%s", code, out, errOut)
	}

	code, out, errOut = caphub(t, "agent", "list", "--db", db)
	if code != 0 || !strings.Contains(out, "calculator  1.0.0") || !strings.Contains(out, "1 agent\n") {
		t.Errorf("list: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = caphub(t, "agent", "list", "--db", db, "--format", "json")
	var list struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
		Total int `json:"total"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || list.Total != 1 || list.Items[0].ID != "calculator" {
		t.Errorf("list json: exit %d, %v\n%s", code, err, out)
	}

	code, out, errOut = caphub(t, "agent", "show", "--db", db, "calculator")
	for _, want := range []string{
		"agent calculator 1.0.0",
		"0  ossa:everruns/current_time@1.0 → ossa:everruns/current_time@1.0 (1.0.0), bundle, tools: everruns_get_current_time",
		"1  ossa:everruns/test_math@1.0 → ossa:everruns/test_math@1.0 (1.0.0), bundle, adds to the system prompt, tools: everruns_add, everruns_subtract, everruns_multiply, everruns_divide",
		"tools (5):",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show lacks %q: exit %d\n%s%s", want, code, out, errOut)
		}
	}

	code, out, errOut = caphub(t, "agent", "config", "--db", db, "calculator")
	var cfg struct {
		SystemPrompt string `json:"system_prompt"`
		Tools        []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &cfg); code != 0 || err != nil {
		t.Fatalf("config: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	want := "You have access to math tools. Use them for calculations: add, subtract, multiply, divide.\n\nYou are a careful calculator."
	if cfg.SystemPrompt != want || len(cfg.Tools) != 5 || cfg.Tools[0].Name != "everruns_get_current_time" {
		t.Errorf("config = %+v", cfg)
	}

	code, _, errOut = caphub(t, "agent", "config", "--db", db, "ghost")
	if code != 1 || !strings.Contains(errOut, "agent ghost does not exist") {
		t.Errorf("config of a missing agent: exit %d\n%s", code, errOut)
	}
	code, _, errOut = caphub(t, "agent", "list", "--server", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(errOut, "is `caphub serve` running there?") {
		t.Errorf("--server: exit %d\n%s", code, errOut)
	}
}

func TestAgentApplyCorpusCLI(t *testing.T) {
	t.Setenv("CAPHUB_SERVER", "")
	path := testpeers.Corpus(t, "ossa-v0.2.9/examples/openai/basic-agent.ossa.yaml")
	db := filepath.Join(t.TempDir(), "caphub.db")
	code, out, errOut := caphub(t, "agent", "apply", "--db", db, "--format", "json", path)
	if code != 0 || !strings.Contains(out, `"id": "basic-openai-agent"`) {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = caphub(t, "agent", "show", "--db", db, "basic-openai-agent")
	if code != 0 || !strings.Contains(out, "capabilities (0, in position order):") || !strings.Contains(out, "tools (0):") {
		t.Errorf("show: exit %d\n%s", code, out)
	}
}

func TestAgentCommandsHaveExamples(t *testing.T) {
	for _, cmd := range []func() *cobra.Command{newAgentApplyCmd, newAgentListCmd, newAgentShowCmd, newAgentConfigCmd} {
		c := cmd()
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Example", c.Use)
		}
	}
}
