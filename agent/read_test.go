package agent

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
)

const minimalYAML = `# a comment
apiVersion: ossa/v0.2.9
kind: Agent
metadata:
  name: security-scanner
  version: 1.0.0
  labels:
    app.kubernetes.io/name: scanner
spec:
  x-owner: team-a
  role: Scan code for vulnerabilities
  type: worker
  llm:
    provider: anthropic
    model: claude-3-sonnet
    temperature: 0.2
    maxTokens: 4096
    retry_config: {max_attempts: 3}
  tools:
    - type: mcp
      name: trivy
      server: trivy
      capabilities:
        - name: scan
  capabilities:
    - ossa:security/scan_vulnerabilities@1.0
    - name: inline_thing
  capability_bindings:
    "ossa:security/scan_vulnerabilities@1.0":
      mcp: {server: trivy, tool: scan}
  required_capabilities:
    - uri: ossa:a2a/delegate@1.0
      reason: Delegation to specialized workers
  autonomy:
    level: supervised
extensions:
  kagent: {}
  my_framework: {x: 1}
`

func TestReadManifestModel(t *testing.T) {
	m, issues, err := ReadManifest("a.yaml", []byte(minimalYAML))
	if err != nil || len(issues) > 0 {
		t.Fatalf("ReadManifest: %v %v", err, issues)
	}
	if m.APIVersion != "ossa/v0.2.9" || m.Kind != "Agent" || m.Metadata.Name != "security-scanner" || m.Metadata.Version != "1.0.0" {
		t.Errorf("header %+v", m)
	}
	if m.Metadata.Labels["app.kubernetes.io/name"] != "scanner" || m.Spec.Extra["x-owner"] != "team-a" {
		t.Errorf("metadata %+v", m.Metadata)
	}
	s := m.Spec
	if s.Role != "Scan code for vulnerabilities" || s.Type != "worker" {
		t.Errorf("spec role/type %q %q", s.Role, s.Type)
	}
	if s.LLM == nil || s.LLM.Provider != "anthropic" || *s.LLM.Temperature != 0.2 || *s.LLM.MaxTokens != 4096 || s.LLM.Extra["retry_config"] == nil {
		t.Errorf("llm %+v", s.LLM)
	}
	if len(s.Tools) != 1 || s.Tools[0].Server != "trivy" || s.Tools[0].Capabilities[0]["name"] != "scan" {
		t.Errorf("tools %+v", s.Tools)
	}
	if len(s.Capabilities) != 2 || s.Capabilities[0].URI != "ossa:security/scan_vulnerabilities@1.0" || s.Capabilities[1].Name != "inline_thing" {
		t.Errorf("capabilities %+v", s.Capabilities)
	}
	if _, ok := s.CapabilityBindings["ossa:security/scan_vulnerabilities@1.0"]; !ok {
		t.Errorf("capability_bindings %+v", s.CapabilityBindings)
	}
	if len(s.RequiredCapabilities) != 1 || s.RequiredCapabilities[0].Reason != "Delegation to specialized workers" {
		t.Errorf("required %+v", s.RequiredCapabilities)
	}
	if s.Extra["autonomy"] == nil || s.Extra["capabilities"] != nil {
		t.Errorf("spec extra %+v", s.Extra)
	}
	if m.Extensions["my_framework"] == nil {
		t.Errorf("extensions %+v", m.Extensions)
	}
	// Nothing is lost: the JSON form is the document.
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !sameModulo(jsonNumbers(back), m.Document) {
		t.Errorf("MarshalJSON lost something:\n%s", b)
	}
	if got := Validate(m); len(got) != 0 {
		t.Errorf("valid manifest has issues: %v", got)
	}
}

// jsonNumbers makes encoding/json's float64 whole numbers int64, as the
// document holds them.
func jsonNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonNumbers(e)
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	}
	return v
}

func TestIssuePositions(t *testing.T) {
	src := strings.NewReplacer("temperature: 0.2", "temperature: 3", "level: supervised", "level: free",
		"    app.kubernetes.io/name: scanner", "    app.kubernetes.io/name: "+strings.Repeat("s", 64)).Replace(minimalYAML)
	src = strings.Replace(src, "  role: Scan code for vulnerabilities\n", "", 1)
	m, _, err := ReadManifest("a.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, i := range Validate(m) {
		got[i.Path] = i.String()
	}
	want := map[string]string{
		`metadata.labels["app.kubernetes.io/name"]`: `a.yaml:8:29: error: metadata.labels["app.kubernetes.io/name"]: has 64 characters: at most 63 are allowed`,
		"spec.role":            "a.yaml:9:1: error: spec.role: missing: AgentSpec requires the field role: Agent role/system prompt describing behavior and capabilities",
		"spec.llm.temperature": "a.yaml:15:18: error: spec.llm.temperature: must be at most 2, found 3",
		"spec.autonomy.level":  `a.yaml:34:12: error: spec.autonomy.level: "free" is not allowed: use one of supervised, autonomous, fully_autonomous`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("issues:\n got %q\nwant %q", got, want)
	}
}

func TestReadJSON(t *testing.T) {
	src := "{\n\t\"apiVersion\": \"ossa/v0.2.9\",\n\t\"kind\": \"Agent\",\n\t\"metadata\": {\"name\": \"Bad_Name\"},\n\t\"spec\": {\"role\": \"r\", \"llm\": {\"provider\": \"openai\", \"model\": \"gpt-4\", \"temperature\": \"0.5\"}}\n}\n"
	m, issues, err := ReadManifest("a.json", []byte(src))
	if err != nil || len(issues) > 0 {
		t.Fatal(err, issues)
	}
	var got []string
	for _, i := range Validate(m) {
		got = append(got, i.String())
	}
	want := []string{
		`a.json:4:23: error: metadata.name: "Bad_Name" is not a DNS-1123 name: lower-case letters, digits and '-', starting and ending with a letter or digit, e.g. my-agent (pattern ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$)`,
		`a.json:5:87: error: spec.llm.temperature: must be a number, found a string ("0.5")`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("issues:\n got %q\nwant %q", got, want)
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string // the *Error, rendered
	}{
		{"empty", "  \n", "x:1:1: file is empty: expected an OSSA agent manifest (apiVersion, kind: Agent, metadata, spec)"},
		{"comments only", "# nothing\n---\n# still nothing\n", "x:1:1: file holds no document"},
		{"several documents", "apiVersion: ossa/v0.2.9\n---\napiVersion: ossa/v0.2.9\n", "x:3:1: file holds 2 YAML documents (starting at lines 1, 3): an agent manifest is one document"},
		{"yaml syntax", "apiVersion: ossa/v0.2.9\nspec:\n  role: [x\n", "x:2:1: not valid YAML or JSON: did not find expected ',' or ']'"},
		{"bad escape", "a: \"\\q\"\n", "x:1:1: not valid YAML or JSON: found unknown escape character"},
		{"json syntax", "{\n  \"apiVersion\": \"ossa/v0.2.9\",\n  \"kind\": \"Agent\",,\n}\n", "x:3:19: not valid JSON: invalid character ',' looking for beginning of object key string"},
		{"json truncated", "{\"apiVersion\": \"ossa/v0.2.9\"", "x:1:28: not valid JSON: the file ends before the JSON value is complete"},
		{"two json values", "{\"a\": 1}\n{\"b\": 2}\n", "x:2:1: file holds more than one JSON value"},
		{"a list", "- apiVersion: ossa/v0.2.9\n", "x:1:1: the document is a list: expected an OSSA agent manifest"},
		{"a scalar", "hello\n", `x:1:1: the document is the value "hello": expected`},
		{"invalid UTF-8 in YAML", "apiVersion: ossa/v0.2.9\nmetadata:\n  name: \"a\xff\"\n", "x:3:11: invalid UTF-8 byte 0xFF: save the file as UTF-8"},
		{"invalid UTF-8 in JSON", "{\"apiVersion\": \"ossa/v0.2.9\",\n \"metadata\": {\"name\": \"\xfea\"}}", "x:2:24: invalid UTF-8 byte 0xFE: save the file as UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, err := ReadManifest("x", []byte(tc.src))
			var e *Error
			if !errors.As(err, &e) || m != nil {
				t.Fatalf("got %v, %v; want an *Error", m, err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got  %s\nwant %s…", err, tc.want)
			}
		})
	}
}

func TestReadFlowYAMLStartingWithBrace(t *testing.T) {
	// Flow-style YAML starts with '{' but is not JSON: it must still be read.
	m, _, err := ReadManifest("x", []byte("{apiVersion: ossa/v0.2.9, kind: Agent, metadata: {name: a}, spec: {role: r}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if issues := Validate(m); len(issues) != 0 {
		t.Errorf("issues %v", issues)
	}
}

func TestReadIssues(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string // the first reading issue
		check     func(t *testing.T, m *Manifest)
	}{
		{"duplicate key", "apiVersion: a\nkind: Agent\nkind: Tool\n", `x:3:1: error: kind: key "kind" is already defined at line 2: remove one of them`,
			func(t *testing.T, m *Manifest) {
				if m.Kind != "Agent" {
					t.Errorf("the first value is kept, got %q", m.Kind)
				}
			}},
		{"non-string key", "metadata:\n  ? [a, b]\n  : c\n", "x:2:5: error: metadata: a mapping key is a list: keys must be plain strings", nil},
		{"infinite number", "spec:\n  llm: {temperature: .inf}\n", "x:2:22: error: spec.llm.temperature: .inf is not a JSON number: write a finite number", nil},
		{"alias bomb", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
			"the document is too large or too deeply nested once aliases are expanded", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, issues, err := ReadManifest("x", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if len(issues) == 0 || !strings.Contains(issues[0].String(), tc.want) {
				t.Fatalf("issues %v, want %s", issues, tc.want)
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
}

func TestReadAnchorsMergesTimestamps(t *testing.T) {
	src := `apiVersion: ossa/v0.2.9
kind: Agent
metadata: {name: a, annotations: {released: 2025-01-15, at: 2025-01-15T10:00:00Z}}
x-defaults: &llm {provider: openai, model: gpt-4, temperature: 0.1}
spec:
  role: r
  llm:
    <<: *llm
    temperature: 0.7
`
	m, issues, err := ReadManifest("x", []byte(src))
	if err != nil || len(issues) > 0 {
		t.Fatal(err, issues)
	}
	if m.Spec.LLM == nil || m.Spec.LLM.Model != "gpt-4" || *m.Spec.LLM.Temperature != 0.7 {
		t.Errorf("merge: %+v", m.Spec.LLM)
	}
	if a := m.Metadata.Annotations; a["released"] != "2025-01-15" || a["at"] != "2025-01-15T10:00:00Z" {
		t.Errorf("timestamps must stay text, got %v", a)
	}
	issuesV := Validate(m)
	if len(issuesV) != 1 || issuesV[0].Path != "x-defaults" || issuesV[0].Line != 4 {
		t.Errorf("issues %v", issuesV)
	}
	if issuesV[0].Rule != "schema:#/additionalProperties" {
		t.Errorf("rule %q", issuesV[0].Rule)
	}
}

func TestPaths(t *testing.T) {
	for _, tc := range []struct{ parent, key, want string }{
		{"", "spec", "spec"},
		{"spec", "llm", "spec.llm"},
		{"metadata.labels", "app.kubernetes.io/name", `metadata.labels["app.kubernetes.io/name"]`},
		{"spec.capability_bindings", "ossa:a/b@1.0", `spec.capability_bindings["ossa:a/b@1.0"]`},
		{"x", `a"b]`, `x["a\"b]"]`},
	} {
		t.Run(tc.parent+"."+tc.key, func(t *testing.T) {
			got := keyPath(tc.parent, tc.key)
			if got != tc.want {
				t.Errorf("keyPath(%q, %q) = %q, want %q", tc.parent, tc.key, got, tc.want)
			}
			if p := parentPath(got); p != tc.parent {
				t.Errorf("parentPath(%q) = %q, want %q", got, p, tc.parent)
			}
		})
	}
	if p := parentPath("spec.tools[3]"); p != "spec.tools" {
		t.Errorf("parentPath item = %q", p)
	}
}

func TestValidateDocumentWithoutPositions(t *testing.T) {
	issues := validateDocument(map[string]any{"apiVersion": "ossa/v0.2.9", "kind": "Agent", "metadata": map[string]any{"name": "a"}, "spec": map[string]any{}})
	if len(issues) != 1 || issues[0].Path != "spec.role" || issues[0].Line != 0 || issues[0].Severity != capability.SeverityError {
		t.Errorf("issues %v", issues)
	}
	if issues := validateDocument([]any{}); len(issues) != 1 || issues[0].Path != "" {
		t.Errorf("a list: %v", issues)
	}
}
