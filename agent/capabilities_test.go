package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// fakeRegistry resolves the URIs it holds (exactly as written) and answers
// like registry.Service otherwise.
type fakeRegistry struct {
	defs  map[string]capability.Definition
	down  error
	calls int
}

func (f *fakeRegistry) Resolve(_ context.Context, uri string) (registry.Resolution, error) {
	f.calls++
	if f.down != nil {
		return registry.Resolution{}, f.down
	}
	d, ok := f.defs[uri]
	if !ok {
		u, _ := capability.ParseURI(uri)
		return registry.Resolution{}, fmt.Errorf("capability %s is not registered: %w", u.Base(), registry.ErrNotFound)
	}
	res := registry.Resolution{URI: d.URI, Version: d.Version, Record: registry.Record{Definition: d}}
	if d.Stability == capability.StabilityDeprecated {
		res.Warnings = []registry.Warning{{Code: "deprecated", Message: d.URI + " is deprecated: use " + d.DeprecatedBy, DeprecatedBy: d.DeprecatedBy}}
	}
	return res, nil
}

func scanDefinition() capability.Definition {
	return capability.Definition{
		URI: "ossa:security/scan_vulnerabilities@1.0", Name: "scan_vulnerabilities", Domain: "security", Version: "1.0.3",
		Description: "Scan", DocumentationURL: "https://example.com", Stability: capability.StabilityStable,
		Input:    capability.Schema{"type": "object", "properties": map[string]any{"target": map[string]any{"type": "string"}}},
		Output:   capability.Schema{"type": "object"},
		Errors:   []capability.ErrorDef{{Code: "TIMEOUT", Description: "took too long"}},
		Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "POST", URL: "https://scan.example.com/{target}"}},
	}
}

const section10 = `apiVersion: ossa/v0.2.9
kind: Agent
metadata: {name: security-scanner, version: 1.0.0}
spec:
  role: Scan
  type: worker
  capabilities:
    - ossa:security/scan_vulnerabilities@1.0
    - ossa:security/generate_sbom@1.0
    - mcp:filesystem/read_file@1.0
    - ossa:Security/bad
    - name: inline_capability
  capability_bindings:
    "ossa:security/scan_vulnerabilities@1.0":
      mcp:
        server: "trivy"
        tool: "scan"
        mapping: {target: path, nope: x}
        error_mapping: {NOT_FOUND: TARGET_NOT_FOUND}
    "mcp:filesystem/read_file@1.0":
      cli: {command: "cat {path}"}
    "ossa:code/lint@1.0":
      mcp: {server: eslint, tool: lint}
    "mcp:gitlab/create_issue@1.0":
      mcp: {server: 42}
  required_capabilities:
    - uri: "ossa:a2a/delegate@1.0"
      reason: "Delegation to specialized workers"
    - uri: "ossa:state/checkpoint@1.0"
    - reason: "no uri"
`

func TestCheckCapabilities(t *testing.T) {
	m, _, err := ReadManifest("agent.yaml", []byte(section10))
	if err != nil {
		t.Fatal(err)
	}
	if issues := Validate(m); len(issues) != 0 {
		t.Fatalf("the schema allows every §10 field: %v", issues)
	}
	delegate := capability.Definition{URI: "ossa:a2a/delegate@1.0", Version: "1.0.0", Stability: capability.StabilityDeprecated, DeprecatedBy: "ossa:a2a/delegate@2.0",
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "delegate"}}}
	reg := &fakeRegistry{defs: map[string]capability.Definition{
		"ossa:security/scan_vulnerabilities@1.0": scanDefinition(),
		"ossa:a2a/delegate@1.0":                  delegate,
	}}
	checks := CheckCapabilities(context.Background(), m, reg)

	type row struct {
		kind   CheckKind
		path   string
		status Status
		source string
	}
	var got []row
	for _, c := range checks {
		got = append(got, row{c.Kind, c.Path, c.Status, c.BindingSource})
	}
	want := []row{
		{CheckDeclared, "spec.capabilities[0]", StatusResolved, BindingsFromAgent},
		{CheckDeclared, "spec.capabilities[1]", StatusMissing, ""},
		{CheckDeclared, "spec.capabilities[2]", StatusMissing, BindingsFromAgent},
		{CheckDeclared, "spec.capabilities[3]", StatusInvalid, ""},
		{CheckDeclared, "spec.capabilities[4]", StatusInline, ""},
		{CheckBinding, `spec.capability_bindings["mcp:gitlab/create_issue@1.0"]`, StatusInvalid, ""},
		{CheckBinding, `spec.capability_bindings["ossa:code/lint@1.0"]`, StatusInvalid, ""},
		{CheckRequired, "spec.required_capabilities[0]", StatusResolved, ""},
		{CheckRequired, "spec.required_capabilities[1]", StatusMissing, ""},
		{CheckRequired, "spec.required_capabilities[2]", StatusInvalid, ""},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("checks:\n got %v\nwant %v", got, want)
	}

	// The override replaces the registered bindings for this agent.
	scan := checks[0]
	if scan.Bindings == nil || scan.Bindings.MCP == nil || scan.Bindings.MCP.Server != "trivy" || scan.Bindings.HTTP != nil {
		t.Errorf("effective bindings %+v", scan.Bindings)
	}
	if scan.ResolvedURI != "ossa:security/scan_vulnerabilities@1.0" || scan.Version != "1.0.3" {
		t.Errorf("resolution %+v", scan)
	}
	if checks[7].Reason != "Delegation to specialized workers" || len(checks[7].Warnings) != 1 {
		t.Errorf("required %+v", checks[7])
	}
	if checks[7].Bindings != nil {
		t.Errorf("required capabilities carry no bindings: %+v", checks[7].Bindings)
	}

	var lines []string
	for _, iss := range CheckIssues(checks) {
		lines = append(lines, iss.String())
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{
		// Bindings checked against the resolved definition's input fields and error codes.
		`agent.yaml:18:33: error: spec.capability_bindings["ossa:security/scan_vulnerabilities@1.0"].mcp.mapping.nope: mapping key "nope" does not name an input field (input fields are target)`,
		`error: spec.capability_bindings["ossa:security/scan_vulnerabilities@1.0"].mcp.error_mapping.NOT_FOUND: maps to "TARGET_NOT_FOUND", which is not a declared error code`,
		`agent.yaml:9:7: error: spec.capabilities[1]: capability ossa:security/generate_sbom@1.0 is missing from the registry: capability ossa:security/generate_sbom is not registered: not found`,
		`agent.yaml:11:7: error: spec.capabilities[3]: invalid capability URI "ossa:Security/bad"`,
		`agent.yaml:11:7: warning: spec.capabilities[3]`, // never reached: a bad URI is not resolved
		`agent.yaml:22:5: error: spec.capability_bindings["ossa:code/lint@1.0"]: binds ossa:code/lint@1.0, which spec.capabilities does not declare`,
		`error: spec.capability_bindings["mcp:gitlab/create_issue@1.0"].mcp.server: must be a string, found a number`,
		`warning: spec.required_capabilities[0].uri: ossa:a2a/delegate@1.0 resolves to ossa:a2a/delegate@1.0 (1.0.0) with a warning: ossa:a2a/delegate@1.0 is deprecated: use ossa:a2a/delegate@2.0`,
		`agent.yaml:29:7: warning: spec.required_capabilities[1].reason: missing: say why the agent needs ossa:state/checkpoint@1.0 (OSSA §10.2)`,
		`agent.yaml:29:12: error: spec.required_capabilities[1].uri: required capability ossa:state/checkpoint@1.0 is missing from the registry: capability ossa:state/checkpoint is not registered: not found`,
		`agent.yaml:30:7: error: spec.required_capabilities[2].uri: missing: give the required capability's URI`,
	} {
		present := strings.Contains(all, want)
		if strings.HasSuffix(want, "warning: spec.capabilities[3]") {
			present = !present
		}
		if !present {
			t.Errorf("issue %q not found in:\n%s", want, all)
		}
	}
	// A binding for an unresolved capability is still checked (stand-in
	// definition): a cli binding with a placeholder passes.
	for _, iss := range checks[2].Issues {
		if iss.Severity == capability.SeverityError && iss.Path != "spec.capabilities[2]" {
			t.Errorf("unexpected binding issue on an unresolved capability: %v", iss)
		}
	}
}

func TestCheckCapabilitiesWithoutRegistry(t *testing.T) {
	m, _, err := ReadManifest("agent.yaml", []byte(section10))
	if err != nil {
		t.Fatal(err)
	}
	checks := CheckCapabilities(context.Background(), m, nil)
	if checks[0].Status != StatusUnchecked || checks[0].BindingSource != BindingsFromAgent {
		t.Errorf("first check %+v", checks[0])
	}
	for _, iss := range CheckIssues(checks) {
		if strings.Contains(iss.Message, "missing from the registry") {
			t.Errorf("nothing is resolved without a registry: %v", iss)
		}
	}
	// Without the definition the binding rules still run.
	found := false
	for _, iss := range checks[0].Issues {
		found = found || strings.Contains(iss.Path, "error_mapping")
	}
	if found {
		t.Errorf("the stand-in declares the mapped error codes: %v", checks[0].Issues)
	}
}

func TestCheckCapabilitiesRegistryDown(t *testing.T) {
	m, _, err := ReadManifest("agent.yaml", []byte(section10))
	if err != nil {
		t.Fatal(err)
	}
	reg := &fakeRegistry{down: errors.New("dial tcp 127.0.0.1:1: connection refused")}
	checks := CheckCapabilities(context.Background(), m, reg)
	if reg.calls != 1 {
		t.Errorf("after the registry failed once it must not be asked again; asked %d times", reg.calls)
	}
	for _, c := range checks {
		if c.Status == StatusMissing {
			t.Errorf("an unreachable registry is not a missing capability: %+v", c)
		}
		for _, iss := range c.Issues {
			if c.Status == StatusError && iss.Severity == capability.SeverityError && strings.Contains(iss.Message, "did not answer") {
				t.Errorf("registry trouble is a warning, not an error in the manifest: %v", iss)
			}
		}
	}
}

func TestCheckCapabilitiesShapes(t *testing.T) {
	src := `apiVersion: ossa/v0.2.9
kind: Agent
metadata: {name: a}
spec:
  role: r
  capabilities:
    domains: [code-review]
  capability_bindings: [x]
  required_capabilities: "ossa:a/b@1.0"
`
	m, _, err := ReadManifest("agent.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, iss := range CheckIssues(CheckCapabilities(context.Background(), m, nil)) {
		got = append(got, iss.String())
	}
	want := []string{
		"agent.yaml:6:3: warning: spec.capabilities: is a mapping, not a list of capability URIs (OSSA §10.1, e.g. - ossa:security/scan_vulnerabilities@1.0): caphub cannot resolve it",
		`agent.yaml:8:24: error: spec.capability_bindings: is a list of 1 items: write a mapping from declared capability URIs to bindings (OSSA §10.1), e.g. "ossa:security/scan_vulnerabilities@1.0": {mcp: {server: trivy, tool: scan}}`,
		`agent.yaml:9:26: error: spec.required_capabilities: is a string ("ossa:a/b@1.0"): write a list of {uri, reason} entries (OSSA §10.2), e.g. - {uri: "ossa:a2a/delegate@1.0", reason: "Delegation to specialized workers"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("issues:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
