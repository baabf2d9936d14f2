package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/builtin"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// The everruns texts the tests expect, as the everruns seed gives them.
const (
	mathPrompt    = "You have access to math tools. Use them for calculations: add, subtract, multiply, divide."
	weatherPrompt = "You have access to weather tools. Use get_weather for current conditions and get_forecast for multi-day forecasts."
)

// newAgents opens a real SQLite store with the built-ins registered.
func newAgents(t *testing.T) (*agent.Agents, *registry.Service) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	svc := registry.NewService(st, registry.WithLogger(slog.New(slog.DiscardHandler)))
	t.Cleanup(func() { svc.Close() })
	if _, err := svc.RegisterBatch(ctx, builtin.Definitions()); err != nil {
		t.Fatalf("register the built-ins: %v", err)
	}
	return agent.NewAgents(st, svc), svc
}

// applyYAML applies a manifest given as text and fails the test on error.
func applyYAML(t *testing.T, a *agent.Agents, text string) *agent.Agent {
	t.Helper()
	ag, _, err := applyText(t, a, text)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return ag
}

func applyText(t *testing.T, a *agent.Agents, text string) (*agent.Agent, []capability.Issue, error) {
	t.Helper()
	m, issues, err := agent.ReadManifest("agent.yaml", []byte(text))
	if err != nil || len(issues) > 0 {
		t.Fatalf("read manifest: %v %v", err, issues)
	}
	return a.Apply(context.Background(), m)
}

// calculator is a manifest declaring two everruns bundles by URI.
const calculator = `apiVersion: ossa/v0.2.9
kind: Agent
metadata:
  name: calculator
  version: 1.2.0
  description: Answers with exact arithmetic.
spec:
  role: |
    You are a careful calculator.
  capabilities:
    - ossa:everruns/current_time@1.0
    - ossa:everruns/test_math@1.0
  capability_bindings:
    "ossa:everruns/current_time@1.0":
      http:
        method: GET
        url: http://127.0.0.1:9/time
`

func toolNames(cfg *agent.AgentConfig) []string {
	var out []string
	for _, tl := range cfg.Tools {
		out = append(out, tl.Name)
	}
	return out
}

func configError(t *testing.T, err error) *agent.ConfigError {
	t.Helper()
	var ce *agent.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *agent.ConfigError", err, err)
	}
	return ce
}

func TestConfigEverruns(t *testing.T) {
	a, _ := newAgents(t)
	ctx := context.Background()
	ag := applyYAML(t, a, calculator)
	if ag.ID != "calculator" || ag.Version != "1.2.0" || ag.Description != "Answers with exact arithmetic." {
		t.Errorf("agent = %+v", ag)
	}
	want := []agent.AgentCapability{{CapabilityID: "ossa:everruns/current_time@1.0", Position: 0}, {CapabilityID: "ossa:everruns/test_math@1.0", Position: 1}}
	if !reflect.DeepEqual(ag.Capabilities, want) {
		t.Errorf("capabilities = %+v, want %+v", ag.Capabilities, want)
	}
	if b, ok := ag.CapabilityBindings["ossa:everruns/current_time@1.0"]; !ok || b.HTTP == nil || b.HTTP.URL != "http://127.0.0.1:9/time" {
		t.Errorf("capability_bindings not kept: %+v", ag.CapabilityBindings)
	}

	cfg, err := a.Config(ctx, "calculator")
	if err != nil {
		t.Fatal(err)
	}
	// current_time adds no prompt, test_math its own; then the agent's.
	if wantPrompt := mathPrompt + "\n\n" + "You are a careful calculator."; cfg.SystemPrompt != wantPrompt {
		t.Errorf("system prompt = %q, want %q", cfg.SystemPrompt, wantPrompt)
	}
	wantTools := []string{"everruns_get_current_time", "everruns_add", "everruns_subtract", "everruns_multiply", "everruns_divide"}
	if got := toolNames(cfg); !reflect.DeepEqual(got, wantTools) {
		t.Errorf("tools = %v, want %v", got, wantTools)
	}
	add := cfg.Tools[1]
	if add.URI != "ossa:everruns/add@1.0" || add.Version != "1.0.0" || add.From != "ossa:everruns/test_math@1.0" ||
		!strings.HasPrefix(add.Description, "Add two numbers") || add.InputSchema["type"] != "object" || add.OutputSchema == nil || add.Policy != "auto" {
		t.Errorf("add tool = %+v", add)
	}
	if len(cfg.Capabilities) != 2 || !cfg.Capabilities[1].Bundle || cfg.Capabilities[1].Version != "1.0.0" ||
		!reflect.DeepEqual(cfg.Capabilities[1].Tools, wantTools[1:]) || cfg.Capabilities[0].SystemPromptAddition != "" {
		t.Errorf("applied capabilities = %+v", cfg.Capabilities)
	}
}

func TestConfigPositionOrder(t *testing.T) {
	a, _ := newAgents(t)
	ctx := context.Background()
	applyYAML(t, a, calculator)
	for i, tc := range []struct {
		ids    []string
		prompt string
		first  string
	}{
		{[]string{"test_weather", "test_math"}, weatherPrompt + "\n\n" + mathPrompt + "\n\nYou are a careful calculator.", "everruns_get_weather"},
		{[]string{"test_math", "test_weather"}, mathPrompt + "\n\n" + weatherPrompt + "\n\nYou are a careful calculator.", "everruns_add"},
		{[]string{"noop", "current_time"}, "You are a careful calculator.", "everruns_get_current_time"},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if _, err := a.SetCapabilities(ctx, "calculator", tc.ids); err != nil {
				t.Fatalf("SetCapabilities(%v): %v", tc.ids, err)
			}
			cfg, err := a.Config(ctx, "calculator")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.SystemPrompt != tc.prompt {
				t.Errorf("%v: system prompt = %q, want %q", tc.ids, cfg.SystemPrompt, tc.prompt)
			}
			if cfg.Tools[0].Name != tc.first {
				t.Errorf("%v: first tool %s, want %s (tools %v)", tc.ids, cfg.Tools[0].Name, tc.first, toolNames(cfg))
			}
		})
	}
	// noop is a bundle that gives nothing: only current_time's tool.
	cfg, _ := a.Config(ctx, "calculator")
	if got := toolNames(cfg); !reflect.DeepEqual(got, []string{"everruns_get_current_time"}) {
		t.Errorf("noop + current_time tools = %v", got)
	}
}

func TestConfigStoredPositionsWin(t *testing.T) {
	// Compose orders by position, not by the order of the list.
	a, _ := newAgents(t)
	ag := &agent.Agent{ID: "x", SystemPrompt: "own", Capabilities: []agent.AgentCapability{
		{CapabilityID: "test_math", Position: 5}, {CapabilityID: "test_weather", Position: 2}}}
	cfg, err := a.Compose(context.Background(), ag)
	if err != nil {
		t.Fatal(err)
	}
	if want := weatherPrompt + "\n\n" + mathPrompt + "\n\nown"; cfg.SystemPrompt != want {
		t.Errorf("system prompt = %q, want %q", cfg.SystemPrompt, want)
	}
}

func TestConfigProblems(t *testing.T) {
	a, svc := newAgents(t)
	ctx := context.Background()
	// Two capabilities whose tool names collide: ossa:mcp/x_y and mcp:x/y
	// both give mcp_x_y (registration refuses that now, so they are stored
	// as a registry from before the rule holds them); a second major
	// version of add gives everruns_add.
	base := builtinDef(t, "ossa:everruns/get_current_time@1.0")
	var defs []capability.Definition
	for _, uri := range []string{"ossa:mcp/x_y@1.0", "mcp:x/y@1.0", "ossa:everruns/add@2.0", "ossa:other/add@1.0"} {
		d := base
		u, _ := capability.ParseURI(uri)
		d.URI, d.Domain, d.Name, d.Version = uri, u.Domain, u.Name, u.Version.String()+".0"
		d.DocumentationURL, d.Domains, d.Categories = "", nil, nil
		defs = append(defs, d)
	}
	if _, err := svc.RegisterBatch(ctx, defs[2:]); err != nil {
		t.Fatal(err)
	}
	for _, d := range defs[:2] {
		k, _ := registry.KeyOf(&d)
		digest, _ := registry.Digest(&d)
		if _, err := svc.Store().Put(ctx, []registry.Record{{Key: k, Definition: d, Digest: digest}}); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name   string
		ids    []string
		code   string
		naming []string // texts the problem's reason must hold
	}{
		{"unknown name", []string{"test_math", "no_such_capability"}, agent.ProblemUnknown, []string{"no_such_capability", "position 1"}},
		{"unknown uri", []string{"ossa:nowhere/nothing@1.0"}, agent.ProblemUnknown, []string{"ossa:nowhere/nothing@1.0"}},
		{"no compatible version", []string{"ossa:everruns/test_math@1.5"}, agent.ProblemUnknown, []string{"ossa:everruns/test_math@1.5"}},
		{"coming soon", []string{"current_time", "research"}, agent.ProblemUnavailable, []string{"research", "ossa:everruns/research@1.0", "coming soon"}},
		{"invalid", []string{"ossa:Bad/uri"}, agent.ProblemInvalid, []string{"ossa:Bad/uri"}},
		{"not a name", []string{"test math"}, agent.ProblemInvalid, []string{"test math"}},
		{"ambiguous", []string{"add"}, agent.ProblemAmbiguous, []string{"ossa:everruns/add", "ossa:other/add"}},
		{"conflict across schemes", []string{"ossa:mcp/x_y@1.0", "mcp:x/y@1.0"}, agent.ProblemConflict, []string{`"mcp_x_y"`, "ossa:mcp/x_y@1.0", "mcp:x/y@1.0"}},
		{"conflict across majors", []string{"test_math", "ossa:everruns/add@2"}, agent.ProblemConflict, []string{`"everruns_add"`, "ossa:everruns/add@1.0 1.0.0", "ossa:everruns/add@2.0 2.0.0", "(from test_math)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ag := &agent.Agent{ID: "p"}
			for i, id := range tc.ids {
				ag.Capabilities = append(ag.Capabilities, agent.AgentCapability{CapabilityID: id, Position: i})
			}
			cfg, err := a.Compose(ctx, ag)
			if cfg != nil {
				t.Errorf("a config was returned with the error")
			}
			ce := configError(t, err)
			if len(ce.Problems) != 1 {
				t.Fatalf("problems = %+v, want one", ce.Problems)
			}
			p := ce.Problems[0]
			if p.Code != tc.code {
				t.Errorf("code = %s, want %s (%s)", p.Code, tc.code, p.Reason)
			}
			for _, s := range tc.naming {
				if !strings.Contains(p.Reason, s) || !strings.Contains(err.Error(), s) {
					t.Errorf("the problem does not name %q: %s", s, p.Reason)
				}
			}
			if ce.Partial == nil {
				t.Errorf("no partial config")
			}
			iss := ce.Issues()
			if len(iss) != 1 || iss[0].Path != p.CapabilityID || iss[0].Rule != agent.RuleConfig+tc.code {
				t.Errorf("issues = %+v", iss)
			}
		})
	}

	// The same capability reached twice is one tool, not a conflict.
	cfg, err := a.Compose(ctx, &agent.Agent{ID: "d", Capabilities: []agent.AgentCapability{
		{CapabilityID: "test_math", Position: 0}, {CapabilityID: "ossa:everruns/add@1", Position: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(cfg); len(got) != 4 {
		t.Errorf("tools = %v, want add once", got)
	}

	// Every problem is reported at once.
	_, err = a.Compose(ctx, &agent.Agent{ID: "m", Capabilities: []agent.AgentCapability{
		{CapabilityID: "research", Position: 0}, {CapabilityID: "nope", Position: 1}, {CapabilityID: "sandbox", Position: 2}}})
	if ce := configError(t, err); len(ce.Problems) != 3 || ce.Problems[1].CapabilityID != "nope" || ce.Problems[2].Position != 2 {
		t.Errorf("problems = %+v", ce.Problems)
	}
}

func builtinDef(t *testing.T, uri string) capability.Definition {
	t.Helper()
	for _, d := range builtin.Definitions() {
		if d.URI == uri {
			return d
		}
	}
	t.Fatalf("no built-in %s", uri)
	return capability.Definition{}
}

func TestSetGetCapabilities(t *testing.T) {
	a, _ := newAgents(t)
	ctx := context.Background()
	applyYAML(t, a, calculator)
	items, err := a.SetCapabilities(ctx, "calculator", []string{"current_time", "test_math"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.GetCapabilities(ctx, "calculator")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(items, got) {
		t.Errorf("set returned %+v, get %+v", items, got)
	}
	data, _ := json.Marshal(got)
	if want := `[{"capability_id":"current_time","position":0},{"capability_id":"test_math","position":1}]`; string(data) != want {
		t.Errorf("everruns shape:\n got %s\nwant %s", data, want)
	}

	// A refused set leaves the agent as it was.
	for _, ids := range [][]string{{"test_math", "research"}, {"test_math", "nope"}, {"test_math", "test_math"}, {""}} {
		_, err := a.SetCapabilities(ctx, "calculator", ids)
		ce := configError(t, err)
		if len(ce.Problems) == 0 {
			t.Errorf("%v: no problems", ids)
		}
		after, _ := a.GetCapabilities(ctx, "calculator")
		if !reflect.DeepEqual(after, got) {
			t.Errorf("%v: capabilities changed to %+v", ids, after)
		}
	}
	if _, err := a.SetCapabilities(ctx, "calculator", []string{"test_math", "test_math"}); !strings.Contains(err.Error(), "listed twice (positions 0 and 1)") {
		t.Errorf("duplicate: %v", err)
	}

	// An empty set is allowed: the agent keeps only its own prompt.
	if items, err := a.SetCapabilities(ctx, "calculator", nil); err != nil || len(items) != 0 {
		t.Fatalf("empty set: %v %v", items, err)
	}
	cfg, err := a.Config(ctx, "calculator")
	if err != nil || cfg.SystemPrompt != "You are a careful calculator." || len(cfg.Tools) != 0 {
		t.Errorf("config without capabilities: %+v %v", cfg, err)
	}

	if _, err := a.SetCapabilities(ctx, "ghost", []string{"noop"}); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("unknown agent: %v, want ErrNotFound", err)
	}
}

func TestGetListDelete(t *testing.T) {
	a, _ := newAgents(t)
	ctx := context.Background()
	applyYAML(t, a, calculator)
	applyYAML(t, a, strings.Replace(calculator, "name: calculator", "name: abacus", 1))
	all, err := a.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ID != "abacus" || all[1].ID != "calculator" {
		t.Errorf("list = %+v", all)
	}
	got, err := a.Get(ctx, "calculator")
	if err != nil {
		t.Fatal(err)
	}
	if got.UpdatedAt.IsZero() || len(got.Manifest) == 0 {
		t.Errorf("stored agent lacks updated_at or manifest: %+v", got)
	}
	var doc map[string]any
	if err := json.Unmarshal(got.Manifest, &doc); err != nil || doc["apiVersion"] != "ossa/v0.2.9" {
		t.Errorf("manifest = %s (%v)", got.Manifest, err)
	}
	if err := a.Delete(ctx, "calculator"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, "calculator"); !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), "agent calculator does not exist") {
		t.Errorf("get after delete: %v", err)
	}
	if err := a.Delete(ctx, "calculator"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	for _, bad := range []string{"", "Calculator", "-x", "a/b", strings.Repeat("a", 129)} {
		if _, err := a.Get(ctx, bad); !errors.Is(err, agent.ErrInvalidID) || !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("Get(%q): %v, want ErrInvalidID", bad, err)
		}
	}
}

func TestApplyCorpusExample(t *testing.T) {
	path := testpeers.Corpus(t, "ossa-v0.2.9/examples/openai/basic-agent.ossa.yaml")
	a, _ := newAgents(t)
	m, issues, err := agent.ReadManifestFile(path)
	if err != nil || len(issues) > 0 {
		t.Fatal(err, issues)
	}
	ag, warnings, err := a.Apply(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if capability.HasErrors(warnings) {
		t.Errorf("errors among the warnings: %v", warnings)
	}
	if ag.ID != "basic-openai-agent" || ag.Version != "1.0.0" || len(ag.Capabilities) != 0 ||
		!strings.HasPrefix(ag.SystemPrompt, "You are a helpful assistant that can search the web") {
		t.Errorf("agent = %+v", ag)
	}
	cfg, err := a.Config(context.Background(), "basic-openai-agent")
	if err != nil {
		t.Fatal(err)
	}
	want := "You are a helpful assistant that can search the web and perform calculations.\nAlways provide clear and concise answers."
	if cfg.SystemPrompt != want || len(cfg.Tools) != 0 {
		t.Errorf("config = %+v", cfg)
	}
}

func TestApplyRefusals(t *testing.T) {
	a, _ := newAgents(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, text string
		path, rule string
		line       int
	}{
		{"coming soon", strings.Replace(calculator, "ossa:everruns/test_math@1.0", "ossa:everruns/research@1.0", 1), "spec.capabilities[1]", agent.RuleConfig + agent.ProblemUnavailable, 12},
		{"unknown", strings.Replace(calculator, "ossa:everruns/test_math@1.0", "ossa:everruns/nothing@1.0", 1), "spec.capabilities[1]", agent.RuleRegistry, 12},
		{"schema", strings.Replace(calculator, "  role: |\n    You are a careful calculator.\n", "", 1), "spec.role", "", 0},
		{"bad id", strings.Replace(calculator, "name: calculator", "name: "+strings.Repeat("a", 130), 1), "metadata.name", agent.RuleOSSA10, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ag, _, err := applyText(t, a, tc.text)
			var me *agent.ManifestError
			if ag != nil || !errors.As(err, &me) {
				t.Fatalf("apply = %v, %v; want a *ManifestError", ag, err)
			}
			found := false
			for _, iss := range me.Issues {
				if iss.Severity == capability.SeverityError && iss.Path == tc.path && (tc.rule == "" || iss.Rule == tc.rule) && (tc.line == 0 || iss.Line == tc.line) {
					found = true
				}
			}
			if !found {
				t.Errorf("no error at %s (rule %s, line %d) in:\n%v", tc.path, tc.rule, tc.line, err)
			}
			if _, err := a.Get(ctx, "calculator"); !errors.Is(err, registry.ErrNotFound) {
				t.Errorf("a refused manifest was stored: %v", err)
			}
		})
	}
}

func TestApplyInlineAndDuplicate(t *testing.T) {
	a, _ := newAgents(t)
	text := strings.Replace(calculator, "    - ossa:everruns/test_math@1.0\n",
		"    - ossa:everruns/test_math@1.0\n    - ossa:everruns/current_time@1.0\n    - {name: scratchpad}\n", 1)
	ag, warnings, err := applyText(t, a, text)
	if err != nil {
		t.Fatal(err)
	}
	if len(ag.Capabilities) != 2 {
		t.Errorf("capabilities = %+v, want the two distinct URIs", ag.Capabilities)
	}
	var inline bool
	for _, w := range warnings {
		inline = inline || w.Path == "spec.capabilities[3]" && strings.Contains(w.Message, "inline capability scratchpad")
	}
	if !inline {
		t.Errorf("no warning about the inline capability: %v", warnings)
	}
}

func TestApplyReplaces(t *testing.T) {
	a, _ := newAgents(t)
	applyYAML(t, a, calculator)
	replaced := calculator[:strings.Index(calculator, "  capability_bindings:")]
	applyYAML(t, a, strings.Replace(replaced, "    - ossa:everruns/current_time@1.0\n", "", 1))
	got, err := a.GetCapabilities(context.Background(), "calculator")
	if err != nil {
		t.Fatal(err)
	}
	if want := []agent.AgentCapability{{CapabilityID: "ossa:everruns/test_math@1.0", Position: 0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("after re-apply: %+v, want %+v", got, want)
	}
}

// TestApplyCorpusCapabilities applies every valid corpus example that lists
// no capabilities, and checks that the ones that do are refused only for
// capabilities the registry lacks.
func TestApplyCorpusCapabilities(t *testing.T) {
	dir := testpeers.Corpus(t, "ossa-v0.2.9/examples")
	a, _ := newAgents(t)
	applied := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".json")) {
			return err
		}
		m, issues, err := agent.ReadManifestFile(path)
		if err != nil || len(issues) > 0 || m.APIVersion != "ossa/v0.2.9" || capability.HasErrors(agent.Validate(m)) {
			return nil
		}
		ag, _, err := a.Apply(context.Background(), m)
		var me *agent.ManifestError
		switch {
		case err == nil:
			applied++
			if ag.SystemPrompt != m.Spec.Role {
				t.Errorf("%s: system prompt is not spec.role", path)
			}
		case errors.As(err, &me):
			for _, iss := range me.Issues {
				if iss.Severity == capability.SeverityError && iss.Rule != agent.RuleRegistry && iss.Rule != capability.RuleURI && iss.Rule != agent.RuleBinding && iss.Rule != agent.RuleOSSA10 {
					t.Errorf("%s: unexpected refusal: %s", path, iss)
				}
			}
		default:
			t.Errorf("%s: %v", path, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if applied == 0 {
		t.Error("no corpus example was applied")
	}
	t.Logf("%d corpus examples applied", applied)
}

// TestChangesRecorded: with a recorder, applying, updating and deleting an
// agent each commit an audit event naming the actor and the agent, and a
// refused delete records nothing.
func TestChangesRecorded(t *testing.T) {
	_, svc := newAgents(t)
	st := svc.Store()
	log := audit.New(st)
	a := agent.NewAgents(st, svc, agent.WithRecorder(log))
	ctx := identity.With(context.Background(), identity.Caller{Actor: "token:ops"})
	m, _, err := agent.ReadManifest("agent.yaml", []byte(calculator))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Apply(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetCapabilities(ctx, "calculator", []string{"test_math"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, "calculator"); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, "calculator"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	events, err := log.List(ctx, chain.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ kind, actor, data string }
	var got []row
	for _, e := range events {
		if e.Kind != audit.KindRegistered {
			got = append(got, row{e.Kind, e.Actor, string(e.Data)})
		}
	}
	want := []row{
		{audit.KindAgentApplied, "token:ops", `{"agent":"calculator","capabilities":["ossa:everruns/current_time@1.0","ossa:everruns/test_math@1.0"],"version":"1.2.0"}`},
		{audit.KindAgentUpdated, "token:ops", `{"agent":"calculator","capabilities":["test_math"],"version":"1.2.0"}`},
		{audit.KindAgentDeleted, "token:ops", `{"agent":"calculator"}`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events\n got %+v\nwant %+v", got, want)
	}
	if res, err := log.Verify(ctx); err != nil || !res.OK {
		t.Errorf("Verify = %v, %v", res, err)
	}
}
