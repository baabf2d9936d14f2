// Package agent reads and checks OSSA v0.2.9 agent manifests (`kind: Agent`):
// ReadManifest decodes one from YAML or JSON into a Manifest that keeps every
// field, Validate checks it against the rules of the official OSSA v0.2.9
// agent-manifest JSON Schema (re-implemented here, so each issue names the
// field path, file:line:column, what is wrong and what is allowed), and
// CheckCapabilities applies OSSA §10: the capabilities an agent declares and
// requires must resolve in a registry, and its capability_bindings must name
// declared capabilities and be valid bindings.
package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/jsoncheck"
	"gopkg.in/yaml.v3"
)

// Rule identifiers of the issues this package reports (capability.Issue.Rule).
// Schema issues carry the JSON pointer of the schema keyword they apply, as
// "schema:#/definitions/LLMConfig/properties/temperature/maximum".
const (
	RuleYAML       = "yaml"     // the file is not one JSON-compatible YAML or JSON document
	RuleSchemaBase = "schema:"  // prefix of a schema keyword location
	RuleOSSA10     = "OSSA-10"  // agent manifest integration (§10.1 declaring, §10.2 requiring capabilities)
	RuleRegistry   = "registry" // a declared or required capability does not resolve
	RuleBinding    = "OSSA-9.1" // a capability_bindings entry is not valid bindings
)

const (
	ruleSchemaRoot = "#"      // JSON pointer of the schema root
	maxFileSize    = 16 << 20 // ReadManifestFile refuses larger files
	manifestNoun   = "an OSSA agent manifest (apiVersion, kind: Agent, metadata, spec)"
)

// Manifest is an OSSA agent manifest as read from a file.
//
// Document is the whole manifest in the JSON data model (map[string]any,
// []any, string, int64, float64, bool, nil): it is what Validate checks and
// what MarshalJSON writes, so nothing in the file is lost. The typed fields
// are a convenient view of it, filled when the value has the type the schema
// gives it (a wrong-typed value stays only in Document, and Validate reports
// it). Fields the model does not name are kept in the Extra maps.
type Manifest struct {
	File       string         `json:"-"`
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   Metadata       `json:"metadata"`
	Spec       Spec           `json:"spec"`
	Extensions map[string]any `json:"extensions,omitempty"` // framework extensions (kagent, mcp, langchain, …), as written
	Extra      map[string]any `json:"-"`                    // other top-level keys (the schema allows none)
	Document   map[string]any `json:"-"`

	positions map[string]position
}

// Metadata identifies the agent.
type Metadata struct {
	Name        string            `json:"name"`
	Version     string            `json:"version,omitempty"`
	Description string            `json:"description,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Extra       map[string]any    `json:"-"`
}

// Spec is what the agent is and uses.
type Spec struct {
	Role     string    `json:"role"`           // system prompt; required by the schema
	Type     string    `json:"type,omitempty"` // OSSA §10.1 (worker, orchestrator, …); not in the schema, which allows extra spec keys
	Taxonomy *Taxonomy `json:"taxonomy,omitempty"`
	LLM      *LLM      `json:"llm,omitempty"`
	Tools    []Tool    `json:"tools,omitempty"`

	// Capabilities is spec.capabilities when it is a list (OSSA §10.1: URIs;
	// some manifests list inline objects instead). Other forms (a mapping of
	// domains, say) stay in Extra["capabilities"].
	Capabilities []CapabilityDecl `json:"capabilities,omitempty"`
	// CapabilityBindings is spec.capability_bindings: capability URI →
	// bindings for this agent, as written. CheckCapabilities decodes and
	// checks them.
	CapabilityBindings map[string]any `json:"capability_bindings,omitempty"`
	// RequiredCapabilities is spec.required_capabilities (OSSA §10.2).
	RequiredCapabilities []RequiredCapability `json:"required_capabilities,omitempty"`

	// Extra holds the other spec sections as written: autonomy, constraints,
	// observability, state, security, reliability, collaboration, safety,
	// deployment, reasoning, prompts, knowledge_graph, identity, runtimes, …
	Extra map[string]any `json:"-"`
}

// Taxonomy classifies the agent.
type Taxonomy struct {
	Domain     string `json:"domain"`
	Subdomain  string `json:"subdomain,omitempty"`
	Capability string `json:"capability,omitempty"`
}

// LLM is spec.llm (the schema's LLMConfig).
type LLM struct {
	Provider         string         `json:"provider"`
	Model            string         `json:"model"`
	Temperature      *float64       `json:"temperature,omitempty"`
	MaxTokens        *int64         `json:"maxTokens,omitempty"`
	TopP             *float64       `json:"topP,omitempty"`
	FrequencyPenalty *float64       `json:"frequencyPenalty,omitempty"`
	PresencePenalty  *float64       `json:"presencePenalty,omitempty"`
	Extra            map[string]any `json:"-"` // fallback_models, retry_config, cost_tracking
}

// Tool is one entry of spec.tools.
type Tool struct {
	Type         string           `json:"type"` // mcp, kubernetes, http, grpc, function, a2a, custom
	Name         string           `json:"name,omitempty"`
	Server       string           `json:"server,omitempty"`
	Namespace    string           `json:"namespace,omitempty"`
	Endpoint     string           `json:"endpoint,omitempty"`
	Capabilities []map[string]any `json:"capabilities,omitempty"` // the schema's Capability objects, as written
	Config       map[string]any   `json:"config,omitempty"`
	Extra        map[string]any   `json:"-"` // auth, transport, compliance_tags, health_check, circuit_breaker
}

// CapabilityDecl is one entry of spec.capabilities: a capability URI (OSSA
// §10.1) or an inline object, which is kept in Value.
type CapabilityDecl struct {
	URI   string `json:"uri,omitempty"`  // the entry, when it is a string
	Name  string `json:"name,omitempty"` // the entry's name, when it is an object with one
	Value any    `json:"-"`              // the entry as written
}

// RequiredCapability is one entry of spec.required_capabilities (OSSA §10.2).
type RequiredCapability struct {
	URI    string         `json:"uri"`
	Reason string         `json:"reason,omitempty"`
	Extra  map[string]any `json:"-"`
}

// MarshalJSON writes the manifest as it was read (its Document).
func (m *Manifest) MarshalJSON() ([]byte, error) {
	return json.Marshal(m.Document)
}

// Error is a problem that stops a file from being read as a manifest at all:
// it is not YAML or JSON, holds several documents, or is not a mapping.
type Error struct {
	File         string
	Line, Column int
	Message      string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
	}
	return e.File + ": " + e.Message
}

// Issue returns e as an error issue, for reports that list everything found
// in a file.
func (e *Error) Issue() capability.Issue {
	return capability.Issue{Severity: capability.SeverityError, File: e.File, Line: e.Line, Column: e.Column, Rule: RuleYAML, Message: e.Message}
}

// ReadManifestFile reads the manifest at path (see ReadManifest).
func ReadManifestFile(path string) (*Manifest, []capability.Issue, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read agent manifest: %w", err)
	}
	if st.IsDir() {
		return nil, nil, &Error{File: path, Message: "is a directory: give the manifest files inside it"}
	}
	if st.Size() > maxFileSize {
		return nil, nil, &Error{File: path, Message: fmt.Sprintf("is %d bytes, larger than the %d-byte limit for an agent manifest", st.Size(), maxFileSize)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read agent manifest: %w", err)
	}
	return ReadManifest(path, data)
}

// ReadManifest decodes data, one agent manifest in YAML or JSON; name is the
// file name used in messages.
//
// It returns an *Error, and no manifest, when data is not YAML or JSON, holds
// more than one document, or is not a mapping. The issues are problems in an
// otherwise readable document that JSON cannot represent (a key written
// twice, a non-string key, an infinite number, an alias cycle); the manifest
// is still returned. ReadManifest does not apply the schema: call Validate.
func ReadManifest(name string, data []byte) (*Manifest, []capability.Issue, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil, &Error{File: name, Line: 1, Column: 1, Message: "file is empty: expected " + manifestNoun}
	}
	var jsonErr error
	if trimmed[0] == '{' || trimmed[0] == '[' {
		if jsonErr = jsonSyntax(name, data); jsonErr == nil {
			// Tabs are JSON white space but not YAML indentation. Inside JSON
			// strings a raw tab is invalid anyway, so replacing them keeps
			// every line, column and value.
			data = bytes.ReplaceAll(data, []byte{'\t'}, []byte{' '})
		}
	}
	docs, err := yamlDocuments(name, data)
	if err != nil {
		// Neither JSON nor YAML (flow-style YAML also starts with '{'):
		// the JSON error has the exact column.
		return nil, nil, cmp.Or(jsonErr, err)
	}
	root, err := manifestRoot(name, docs)
	if err != nil {
		return nil, nil, err
	}
	d := newDecoder(name)
	doc, _ := d.value(root, "", nil, 0).(map[string]any)
	m := &Manifest{File: name, Document: doc, positions: d.positions}
	m.fill()
	return m, dedupe(d.issues), nil
}

// manifestRoot is the mapping at the root of the one non-empty document
// of a file.
func manifestRoot(name string, docs []*yaml.Node) (*yaml.Node, error) {
	var nonEmpty []*yaml.Node
	for _, d := range docs {
		if len(d.Content) > 0 && !(d.Content[0].Kind == yaml.ScalarNode && d.Content[0].ShortTag() == "!!null" && d.Content[0].Value == "") {
			nonEmpty = append(nonEmpty, d)
		}
	}
	switch {
	case len(nonEmpty) == 0:
		return nil, &Error{File: name, Line: 1, Column: 1, Message: "file holds no document (only comments or blank lines): expected " + manifestNoun}
	case len(nonEmpty) > 1:
		var starts []string
		for _, d := range nonEmpty {
			starts = append(starts, strconv.Itoa(d.Content[0].Line))
		}
		second := nonEmpty[1].Content[0]
		return nil, &Error{File: name, Line: second.Line, Column: second.Column,
			Message: fmt.Sprintf("file holds %d YAML documents (starting at lines %s): an agent manifest is one document; put each manifest in its own file", len(nonEmpty), strings.Join(starts, ", "))}
	}
	root := nonEmpty[0].Content[0]
	for root.Kind == yaml.AliasNode && root.Alias != nil {
		root = root.Alias
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: name, Line: root.Line, Column: root.Column, Message: "the document is " + kindName(root) + ": expected " + manifestNoun}
	}
	return root, nil
}

// yamlDocuments parses every document of data.
func yamlDocuments(name string, data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			if e := utf8Error(name, data, err); e != nil {
				return nil, e
			}
			return nil, syntaxError(name, err, len(docs))
		}
		docs = append(docs, &doc)
	}
}

// jsonSyntax reports where a file that looks like JSON stops being JSON, with
// the exact line and column (YAML's parser only names the line).
func jsonSyntax(name string, data []byte) error {
	if json.Valid(data) {
		return nil
	}
	// Decoding into a RawMessage checks only the syntax (not, say, whether
	// a number fits a float64) and reports where it breaks.
	dec := json.NewDecoder(bytes.NewReader(data))
	var v json.RawMessage
	err := dec.Decode(&v)
	if err == nil {
		end := dec.InputOffset()
		if _, err2 := dec.Token(); errors.Is(err2, io.EOF) {
			return nil
		}
		rest := bytes.TrimLeft(data[end:], " \t\r\n")
		off := int64(len(data) - len(rest))
		line, col := lineCol(data, off+1)
		if len(rest) > 0 && (rest[0] == '{' || rest[0] == '[') {
			return &Error{File: name, Line: line, Column: col, Message: "file holds more than one JSON value: an agent manifest is one document; put each manifest in its own file"}
		}
		return &Error{File: name, Line: line, Column: col, Message: "not valid JSON: unexpected text after the manifest's closing brace"}
	}
	var off int64
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = int64(len(data))
	default:
		off = dec.InputOffset()
	}
	line, col := lineCol(data, off)
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "the file ends before the JSON value is complete (a missing } or ])"
	}
	return &Error{File: name, Line: line, Column: col, Message: "not valid JSON: " + msg}
}

// lineCol turns a byte offset into a 1-based line and column (in characters).
func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	col := len([]rune(string(before[start:])))
	if col == 0 {
		col = 1
	}
	return line, col
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntaxError turns a YAML parser error into an *Error with a position.
// yaml.v3 names only the line, so the column is 1.
func syntaxError(name string, err error, docIndex int) error {
	msg := err.Error()
	line := 0
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	where := ""
	if docIndex > 0 {
		where = fmt.Sprintf(" (in YAML document %d of the file; an agent manifest is one document)", docIndex+1)
	}
	col := 1
	if line == 0 {
		line = 1
	}
	return &Error{File: name, Line: line, Column: col, Message: "not valid YAML or JSON: " + msg + where + ": fix the syntax on or just before this line"}
}

// utf8Error gives the YAML parser's refusal of invalid UTF-8, which names
// no position, the line and column of the first invalid byte; nil when err
// is another error.
func utf8Error(name string, data []byte, err error) error {
	if !strings.Contains(err.Error(), "UTF-8") {
		return nil
	}
	off := jsoncheck.InvalidUTF8(data)
	if off < 0 {
		return nil
	}
	line, col := jsoncheck.Position(data, off)
	return &Error{File: name, Line: line, Column: col, Message: fmt.Sprintf("invalid UTF-8 byte 0x%02X: save the file as UTF-8", data[off])}
}

// dedupe drops issues reported twice for the same place (a merged anchor is
// decoded once per merge).
func dedupe(issues []capability.Issue) []capability.Issue {
	seen := map[string]bool{}
	out := issues[:0]
	for _, i := range issues {
		k := fmt.Sprintf("%d:%d:%s", i.Line, i.Column, i.Message)
		if !seen[k] {
			seen[k] = true
			out = append(out, i)
		}
	}
	return out
}

// issue is an issue at path (at its value, or at its key when atValue is
// false), positioned when the manifest was read from a file; m may be nil.
func (m *Manifest) issue(sev capability.Severity, rule, path string, atValue bool, format string, args ...any) capability.Issue {
	line, col := m.locate(path, atValue)
	file := ""
	if m != nil {
		file = m.File
	}
	return capability.Issue{Severity: sev, Path: path, File: file, Line: line, Column: col, Rule: rule, Message: fmt.Sprintf(format, args...)}
}

// locate returns the position of the value at path (value true) or of its
// key; a path absent from the file (a missing field) falls back to the key of
// its nearest present parent.
func (m *Manifest) locate(path string, value bool) (int, int) {
	if m == nil || m.positions == nil {
		return 0, 0
	}
	for p := path; ; {
		if pos, ok := m.positions[p]; ok {
			if value && p == path {
				return pos.line, pos.col
			}
			return pos.keyLine, pos.keyCol
		}
		if p == "" {
			return 0, 0
		}
		p = parentPath(p)
	}
}

// parentPath strips the last segment of a field path: ".key", "[N]" or
// `["key"]`. A quoted key is written with strconv.Quote, so every '"' inside
// it follows a backslash and `["` only ever opens a segment.
func parentPath(p string) string {
	switch {
	case strings.HasSuffix(p, `"]`):
		if i := strings.LastIndex(p, `["`); i >= 0 {
			return p[:i]
		}
	case strings.HasSuffix(p, "]"):
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// fill derives the typed view from Document.
func (m *Manifest) fill() {
	doc := m.Document
	m.APIVersion = getString(doc, "apiVersion")
	m.Kind = getString(doc, "kind")
	if md, ok := doc["metadata"].(map[string]any); ok {
		m.Metadata = Metadata{
			Name: getString(md, "name"), Version: getString(md, "version"), Description: getString(md, "description"),
			Labels: getStringMap(md, "labels"), Annotations: getStringMap(md, "annotations"),
			Extra: extra(md, "name", "version", "description", "labels", "annotations"),
		}
	}
	if ext, ok := doc["extensions"].(map[string]any); ok {
		m.Extensions = ext
	}
	m.Extra = extra(doc, "apiVersion", "kind", "metadata", "spec", "extensions")
	if spec, ok := doc["spec"].(map[string]any); ok {
		m.Spec.fill(spec)
	}
}

// fill sets the typed view of spec. Keys whose values it holds are known;
// the others (and these keys when their value has another shape) stay in
// Extra.
func (s *Spec) fill(spec map[string]any) {
	s.Role, s.Type = getString(spec, "role"), getString(spec, "type")
	if t, ok := spec["taxonomy"].(map[string]any); ok {
		s.Taxonomy = &Taxonomy{Domain: getString(t, "domain"), Subdomain: getString(t, "subdomain"), Capability: getString(t, "capability")}
	}
	if l, ok := spec["llm"].(map[string]any); ok {
		s.LLM = &LLM{Provider: getString(l, "provider"), Model: getString(l, "model"),
			Temperature: getFloat(l, "temperature"), MaxTokens: getInt(l, "maxTokens"), TopP: getFloat(l, "topP"),
			FrequencyPenalty: getFloat(l, "frequencyPenalty"), PresencePenalty: getFloat(l, "presencePenalty"),
			Extra: extra(l, "provider", "model", "temperature", "maxTokens", "topP", "frequencyPenalty", "presencePenalty")}
	}
	if tools, ok := spec["tools"].([]any); ok {
		s.Tools = toolsOf(tools)
	}
	known := []string{"role", "type", "taxonomy", "llm", "tools"}
	if caps, ok := spec["capabilities"].([]any); ok {
		known = append(known, "capabilities")
		s.Capabilities = capabilityDecls(caps)
	}
	if b, ok := spec["capability_bindings"].(map[string]any); ok {
		s.CapabilityBindings = b
		known = append(known, "capability_bindings")
	}
	if reqs, ok := spec["required_capabilities"].([]any); ok {
		known = append(known, "required_capabilities")
		s.RequiredCapabilities = requiredCapabilities(reqs)
	}
	s.Extra = extra(spec, known...)
}

// toolsOf is the typed view of spec.tools; entries that are not objects
// are skipped.
func toolsOf(tools []any) []Tool {
	var out []Tool
	for _, t := range tools {
		tm, ok := t.(map[string]any)
		if !ok {
			continue
		}
		tool := Tool{Type: getString(tm, "type"), Name: getString(tm, "name"), Server: getString(tm, "server"),
			Namespace: getString(tm, "namespace"), Endpoint: getString(tm, "endpoint"),
			Extra: extra(tm, "type", "name", "server", "namespace", "endpoint", "capabilities", "config")}
		tool.Config, _ = tm["config"].(map[string]any)
		if caps, ok := tm["capabilities"].([]any); ok {
			for _, c := range caps {
				if cm, ok := c.(map[string]any); ok {
					tool.Capabilities = append(tool.Capabilities, cm)
				}
			}
		}
		out = append(out, tool)
	}
	return out
}

// capabilityDecls is the typed view of spec.capabilities: URIs, and inline
// objects with their name (and uri, when they give one).
func capabilityDecls(caps []any) []CapabilityDecl {
	var out []CapabilityDecl
	for _, c := range caps {
		d := CapabilityDecl{Value: c}
		switch x := c.(type) {
		case string:
			d.URI = x
		case map[string]any:
			d.Name = getString(x, "name")
			if u := getString(x, "uri"); u != "" {
				d.URI = u
			}
		}
		out = append(out, d)
	}
	return out
}

// requiredCapabilities is the typed view of spec.required_capabilities:
// one entry for each, empty when it has neither form.
func requiredCapabilities(reqs []any) []RequiredCapability {
	var out []RequiredCapability
	for _, r := range reqs {
		switch x := r.(type) {
		case string:
			out = append(out, RequiredCapability{URI: x})
		case map[string]any:
			out = append(out, RequiredCapability{URI: getString(x, "uri"), Reason: getString(x, "reason"), Extra: extra(x, "uri", "reason")})
		default:
			out = append(out, RequiredCapability{})
		}
	}
	return out
}

func getString(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func getFloat(m map[string]any, k string) *float64 {
	switch x := m[k].(type) {
	case int64:
		f := float64(x)
		return &f
	case float64:
		return &x
	}
	return nil
}

func getInt(m map[string]any, k string) *int64 {
	switch x := m[k].(type) {
	case int64:
		return &x
	case float64:
		if x == float64(int64(x)) {
			i := int64(x)
			return &i
		}
	}
	return nil
}

func getStringMap(m map[string]any, k string) map[string]string {
	src, ok := m[k].(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(src))
	for key, v := range src {
		if s, ok := v.(string); ok {
			out[key] = s
		}
	}
	return out
}

// extra returns the entries of m whose keys are not in known (nil if none).
func extra(m map[string]any, known ...string) map[string]any {
	var out map[string]any
	for k, v := range m {
		if !contains(known, k) {
			if out == nil {
				out = map[string]any{}
			}
			out[k] = v
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
