package rtfs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/caphub/caphub/capability"
)

// WriteCapability writes d as one `(capability "id" …)` form in the
// hierarchical layout of the RTFS seed:
//
//	(capability "mcp.github.list_issues"
//	  :name "list_issues"
//	  :version "1.0.0"
//	  :description "…"
//	  :provider "MCP"
//	  :permissions [:network.http]
//	  :metadata {:mcp {…} :openapi {…} :discovery {…}}
//	  :input-schema [:map [:owner :string] [:state :string?]]
//	  :output-schema :any
//	  :implementation
//	    (fn [input] …))
//
// The id is the one the form was read with (Metadata["rtfs"]["id"]), else
// "mcp.<domain>.<name>" or "<domain>.<name>"; :uri and :bindings are written
// only when the id rule (see ReadCapabilities) would not give d's own;
// Provenance is :metadata :discovery; Metadata["rtfs"] goes back to the top
// level, its implementation and verbatim forms character for character; an
// input or output schema that its RTFS type does not fully express is
// carried whole in :metadata :json-schema. Reading the result gives d back.
//
// It fails, writing nothing, when d holds what RTFS cannot carry: a value
// JSON cannot encode, Metadata["rtfs"] entries that are not what the reader
// puts there, or Metadata["discovery"] or Metadata["json-schema"] (the
// format's own places for provenance and carried schemas).
func WriteCapability(w io.Writer, d capability.Definition) error {
	text, err := formatCapability(d)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, text)
	return err
}

// capWriter writes one capability form (see WriteCapability).
type capWriter struct {
	d        capability.Definition
	meta     map[string]any // the metadata to write under :metadata
	rtfsNS   map[string]any // Metadata["rtfs"]: the form's own keys
	verbatim map[string]any // Metadata["rtfs"]["verbatim"]
	id       string
	derived  identity // what the id → URI rule gives for id
	derr     error    // why the rule gives nothing
	b        strings.Builder
}

// fail is the error of a definition RTFS cannot carry.
func (w *capWriter) fail(format string, args ...any) error {
	what := w.d.URI
	if what == "" {
		what = "capability"
	}
	return fmt.Errorf("cannot write %s as RTFS: %s", what, fmt.Sprintf(format, args...))
}

// kv writes one `:key value` line.
func (w *capWriter) kv(key, text string) { w.b.WriteString("\n  :" + key + " " + text) }

func formatCapability(d capability.Definition) (string, error) {
	w := &capWriter{d: d}
	for _, step := range []func() error{w.splitMetadata, w.formID, w.header, w.formKeys, w.modelKeys, w.structFields, w.schemasAndMetadata, w.verbatimKeys, w.implementation} {
		if err := step(); err != nil {
			return "", err
		}
	}
	w.b.WriteString("\n)\n")
	return w.b.String(), nil
}

// splitMetadata copies the metadata and takes Metadata["rtfs"] out of it;
// the format's own places (:discovery, :json-schema) must not be in it.
func (w *capWriter) splitMetadata() error {
	metaAny, err := jsonCopy(w.d.Metadata)
	if err != nil {
		return w.fail("metadata: %v", err)
	}
	w.meta, _ = metaAny.(map[string]any)
	if w.meta == nil {
		w.meta = map[string]any{}
	}
	w.rtfsNS = map[string]any{}
	if raw, ok := w.meta[nsRTFS]; ok {
		m, isMap := raw.(map[string]any)
		if !isMap {
			return w.fail("metadata.rtfs must be a map of the form's own keys")
		}
		w.rtfsNS = m
		delete(w.meta, nsRTFS)
	}
	for _, ns := range []string{nsDiscovery, nsJSONSchema} {
		if _, ok := w.meta[ns]; ok {
			return w.fail("metadata.%s is the place RTFS keeps %s: move it out of metadata", ns, map[string]string{nsDiscovery: "provenance", nsJSONSchema: "carried JSON Schemas"}[ns])
		}
	}
	return nil
}

// formID picks the form's id (the one it was read with, else the one the
// URI gives) and derives what the id → URI rule makes of it.
func (w *capWriter) formID() error {
	w.id = canonicalID(w.d.URI)
	if raw, ok := w.rtfsNS["id"]; ok {
		s, isString := raw.(string)
		if !isString {
			return w.fail("metadata.rtfs.id must be the capability id string")
		}
		w.id = s
	} else if w.id == "" {
		return w.fail("%q is not a valid capability URI, so no RTFS id can be made for it", w.d.URI)
	}
	_, hasImpl := w.rtfsNS[keyImpl]
	w.derived, w.derr = deriveIdentity(w.id, w.rtfsNS["provider"], w.meta, w.d.Version, hasImpl)
	return nil
}

// header writes the comment line, the form's head, :uri when the rule does
// not give it, and the string keys.
func (w *capWriter) header() error {
	d := &w.d
	if _, err := capability.ParseURI(d.URI); err == nil {
		fmt.Fprintf(&w.b, ";; %s (version %s)\n", d.URI, strings.Map(printable, d.Version))
	}
	w.b.WriteString("(capability " + quote(w.id))
	if w.derr != nil || w.derived.uri != d.URI {
		w.kv(keyURI, quote(d.URI))
	}
	if d.Title != "" {
		w.kv(keyName, quote(d.Title))
	}
	w.kv(keyVersion, quote(d.Version))
	for _, k := range []string{keyDescription, "documentation-url", "stability", "deprecated-by", "sunset-date", "migration-guide"} {
		if s := *stringKeys[k](d); s != "" {
			w.kv(k, quote(s))
		}
	}
	return nil
}

// formKeys writes the form's own data keys, kept in Metadata["rtfs"].
func (w *capWriter) formKeys() error {
	w.verbatim, _ = w.rtfsNS["verbatim"].(map[string]any)
	if _, ok := w.rtfsNS["verbatim"]; ok && w.verbatim == nil {
		return w.fail("metadata.rtfs.verbatim must map keys to RTFS source text")
	}
	for _, k := range slices.Sorted(maps.Keys(w.rtfsNS)) {
		if k == "id" || k == keyImpl || k == "verbatim" {
			continue
		}
		if _, inVerbatim := w.verbatim[k]; inVerbatim || isReservedKey(k) || !isTokenName(k) {
			return w.fail("metadata.rtfs.%s cannot be written as a key of the form (it is reserved, repeated or not a keyword name)", k)
		}
		text, err := dataText(w.rtfsNS[k], 2)
		if err != nil {
			return w.fail("metadata.rtfs.%s: %v", k, err)
		}
		w.kv(k, text)
	}
	return nil
}

// modelKeys writes the lists of names, :ui-required and
// :system-prompt-addition.
func (w *capWriter) modelKeys() error {
	d := &w.d
	for _, k := range []string{"permissions", "effects", "domains", "categories", "intents", "keywords", "tools"} {
		if names := *listKeys[k](d); len(names) > 0 {
			parts := make([]string, len(names))
			for i, n := range names {
				parts[i] = nameText(n)
			}
			w.kv(k, "["+strings.Join(parts, " ")+"]")
		}
	}
	if d.UIRequired {
		w.kv("ui-required", "true")
	}
	if d.SystemPromptAddition != "" {
		w.kv("system-prompt-addition", quote(d.SystemPromptAddition))
	}
	return nil
}

// structFields writes the model structs as data, and :bindings when they are
// not the ones the id → URI rule derives.
func (w *capWriter) structFields() error {
	d := &w.d
	var wantBindings capability.Bindings
	if w.derr == nil {
		wantBindings = w.derived.bindings
	}
	structs := []struct {
		key     string
		present bool
		value   any
	}{
		{"display", d.Display != nil, d.Display},
		{"attestation", d.Attestation != nil, d.Attestation},
		{"errors", len(d.Errors) > 0, d.Errors},
		{"examples", len(d.Examples) > 0, d.Examples},
		{"extra", len(d.Extra) > 0, d.Extra},
		{keyBindings, !jsonEqual(wantBindings, d.Bindings), d.Bindings},
	}
	for _, s := range structs {
		if !s.present {
			continue
		}
		text, err := structText(s.value)
		if err != nil {
			return w.fail("%s: %v", s.key, err)
		}
		w.kv(s.key, text)
	}
	return nil
}

// structText writes a model struct as RTFS data.
func structText(v any) (string, error) {
	data, err := jsonCopy(v)
	if err != nil {
		return "", err
	}
	return dataText(data, 2)
}

// schemasAndMetadata writes :metadata (the namespaces, provenance as
// :discovery, the schemas their types do not express under :json-schema)
// and the input and output types.
func (w *capWriter) schemasAndMetadata() error {
	d := &w.d
	if p := d.Provenance; p != nil {
		discAny, err := jsonCopy(p)
		if err != nil {
			return w.fail("provenance: %v", err)
		}
		w.meta[nsDiscovery] = discAny
	}
	input, inText, inCarried, err := schemaForWriting(d.Input)
	if err != nil {
		return w.fail("input schema: %v", err)
	}
	output, outText, outCarried, err := schemaForWriting(d.Output)
	if err != nil {
		return w.fail("output schema: %v", err)
	}
	carrier := map[string]any{}
	if inCarried {
		carrier["input"] = input
	}
	if outCarried {
		carrier["output"] = output
	}
	if len(carrier) > 0 {
		w.meta[nsJSONSchema] = carrier
	}
	if len(w.meta) > 0 {
		text, err := metadataText(w.meta)
		if err != nil {
			return w.fail("metadata: %v", err)
		}
		w.kv(keyMetadata, text)
	}
	if d.Input != nil {
		w.kv(keyInput, inText)
	}
	if d.Output != nil {
		w.kv(keyOutput, outText)
	}
	return nil
}

// verbatimKeys writes the forms kept as source text.
func (w *capWriter) verbatimKeys() error {
	for _, k := range slices.Sorted(maps.Keys(w.verbatim)) {
		text, ok := w.verbatim[k].(string)
		if !ok || isReservedKey(k) || !isTokenName(k) || !isOneForm(text, false) {
			return w.fail("metadata.rtfs.verbatim.%s must be the source text of one RTFS form that is not plain data, under a keyword name", k)
		}
		w.kv(k, text)
	}
	return nil
}

// implementation writes :implementation as it was read, last.
func (w *capWriter) implementation() error {
	impl, ok := w.rtfsNS[keyImpl]
	if !ok {
		return nil
	}
	text, isString := impl.(string)
	if !isString || !isOneForm(text, true) {
		return w.fail("metadata.rtfs.implementation must be the source text of exactly one RTFS form")
	}
	w.b.WriteString("\n  :" + keyImpl + "\n    " + text)
	return nil
}

func printable(r rune) rune {
	if unicode.IsPrint(r) {
		return r
	}
	return '?'
}

// schemaForWriting returns the schema in canonical form, its RTFS type text,
// and whether the type does not express it fully (so it must be carried).
func schemaForWriting(s capability.Schema) (map[string]any, string, bool, error) {
	if s == nil {
		return nil, "", false, nil
	}
	c, err := jsonCopy(s)
	if err != nil {
		return nil, "", false, err
	}
	m, _ := c.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	text, back := typeFor(m)
	return m, text, back == nil || !schemasEqual(back, m), nil
}

// typeFor is the RTFS type written for a schema, and the schema that type
// reads back as. When SchemaToType's text cannot be read back (a schema no
// RTFS type approaches), the type is :any.
func typeFor(s map[string]any) (string, map[string]any) {
	text := SchemaToType(s)
	if v, err := parseType(text); err == nil {
		if back, err := TypeToSchema(v); err == nil {
			return text, back
		}
	}
	return ":any", nil
}

// isOneForm reports whether text is exactly one RTFS form, with nothing
// around it; unless anyForm, the form must not be plain data.
func isOneForm(text string, anyForm bool) bool {
	forms, err := Parse("form", []byte(text))
	if err != nil || len(forms) != 1 {
		return false
	}
	f := forms[0]
	return f.Offset == 0 && f.End == len(text) && (anyForm || !isData(f))
}

// jsonCopy returns v in decoded-JSON form (maps, []any, strings, int64,
// float64, bools, nil), normalised, sharing nothing with v.
func jsonCopy(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return capability.Normalize(out), nil
}

// metadataText writes :metadata with :mcp, :openapi and :discovery first and
// the carried schemas last.
func metadataText(meta map[string]any) (string, error) {
	var keys []string
	for _, k := range []string{nsMCP, nsOpenAPI, nsDiscovery} {
		if _, ok := meta[k]; ok {
			keys = append(keys, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		if k != nsMCP && k != nsOpenAPI && k != nsDiscovery && k != nsJSONSchema {
			keys = append(keys, k)
		}
	}
	if _, ok := meta[nsJSONSchema]; ok {
		keys = append(keys, nsJSONSchema)
	}
	var b strings.Builder
	b.WriteString("{")
	for _, k := range keys {
		text, err := dataText(meta[k], 4)
		if err != nil {
			return "", fmt.Errorf("%s: %w", k, err)
		}
		b.WriteString("\n    " + keyText(k) + " " + text)
	}
	b.WriteString("\n  }")
	return b.String(), nil
}

// dataText writes decoded-JSON data as RTFS data; indent is the column the
// value's line is indented by. Short values stay on one line.
func dataText(v any, indent int) (string, error) {
	line, err := inlineData(v)
	if err != nil {
		return "", err
	}
	if len(line)+indent <= 100 {
		return line, nil
	}
	pad := strings.Repeat(" ", indent)
	switch x := v.(type) {
	case map[string]any:
		var b strings.Builder
		b.WriteString("{")
		for _, k := range slices.Sorted(maps.Keys(x)) {
			text, err := dataText(x[k], indent+2)
			if err != nil {
				return "", err
			}
			b.WriteString("\n" + pad + "  " + keyText(k) + " " + text)
		}
		b.WriteString("\n" + pad + "}")
		return b.String(), nil
	case []any:
		var b strings.Builder
		b.WriteString("[")
		for i, e := range x {
			text, err := dataText(e, indent+1)
			if err != nil {
				return "", err
			}
			if i > 0 {
				b.WriteString("\n" + pad + " ")
			}
			b.WriteString(text)
		}
		b.WriteString("]")
		return b.String(), nil
	}
	return line, nil
}

func inlineData(v any) (string, error) {
	switch x := v.(type) {
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			text, err := inlineData(x[k])
			if err != nil {
				return "", err
			}
			parts = append(parts, keyText(k)+" "+text)
		}
		return "{" + strings.Join(parts, " ") + "}", nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			text, err := inlineData(e)
			if err != nil {
				return "", err
			}
			parts[i] = text
		}
		return "[" + strings.Join(parts, " ") + "]", nil
	case string:
		if name, ok := strings.CutPrefix(x, ":"); ok && isKeywordName(name) {
			return x, nil // a keyword, read as ":name"
		}
		return quote(x), nil
	}
	if text, ok := literalText(v); ok {
		return text, nil
	}
	return "", fmt.Errorf("%T cannot be written as RTFS data", v)
}

// literalText writes a scalar as an RTFS literal.
func literalText(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "nil", true
	case bool:
		return strconv.FormatBool(x), true
	case string:
		return quote(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", false
		}
		text := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(text, ".eE") {
			text += ".0" // keep it a float when read back
		}
		return text, true
	}
	return "", false
}

// keyText writes a map key: a keyword when the key is a keyword name, else a
// string.
func keyText(k string) string {
	if isKeywordName(k) {
		return ":" + k
	}
	return quote(k)
}

// nameText writes an element of :permissions, :effects and the like.
func nameText(n string) string {
	if isKeywordName(n) {
		return ":" + n
	}
	return quote(n)
}

// isKeywordName reports whether :name is a plain keyword: letters, digits
// and _ - . * + ! ? < > = $ % & / : (not first).
func isKeywordName(s string) bool {
	if s == "" || s[0] == ':' {
		return false
	}
	for _, r := range s {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-.*+!?<>=$%&/:", r)) {
			return false
		}
	}
	return true
}

// isTokenName reports whether :name reads back as the keyword name: any
// non-empty run of characters that do not end a token.
func isTokenName(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if isDelimiter(s[i]) {
			return false
		}
	}
	return true
}

// quote writes s as an RTFS string literal.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ExportPath returns where d belongs in the CCOS capability tree (CCOS
// §3.3), as a slash-separated path relative to the tree's root:
//
//   - core/<domain>/<name>.rtfs for a capability with a native binding (built in);
//   - discovered/mcp/<server>/<tool>.rtfs for an MCP tool (an mcp: URI, whose
//     domain is the server);
//   - generated/<domain>/<name>.rtfs for a synthesised one (a provenance
//     method naming synthesis, generation or an LLM);
//   - discovered/<source>/<domain>/<name>.rtfs for one found by a discovery
//     method (any provenance method but manual): <source> is openapi for an
//     API (:openapi metadata, or a method such as api_introspection), graphql
//     for GraphQL, else the method's first word (agentos_manifest → agentos);
//   - user/<domain>/<name>.rtfs for everything else (user-defined).
//
// Every version of a capability has the same path: a file may hold several
// forms. Path components are reduced to letters, digits, '.', '_' and '-'.
func ExportPath(d capability.Definition) string {
	domain, name := d.Domain, d.Name
	if u, err := capability.ParseURI(d.URI); err == nil {
		domain, name = u.Domain, u.Name
	}
	return path.Join(path.Join(exportDir(d)...), pathSegment(domain), pathSegment(name)+".rtfs")
}

// exportDir is the directory of the CCOS capability tree d belongs in,
// above its domain (see ExportPath).
func exportDir(d capability.Definition) []string {
	method := ""
	if d.Provenance != nil {
		method = strings.ToLower(d.Provenance.Method)
	}
	_, hasOpenAPI := d.Metadata[nsOpenAPI]
	_, hasGraphQL := d.Metadata["graphql"]
	switch {
	case d.Bindings.Native != nil:
		return []string{"core"}
	case uriScheme(d.URI) == capability.SchemeMCP:
		return []string{"discovered", "mcp"}
	case containsAny(method, "synth", "generat", "llm"):
		return []string{"generated"}
	case hasOpenAPI || strings.Contains(method, "openapi") || method == "api_introspection":
		return []string{"discovered", "openapi"}
	case hasGraphQL || strings.Contains(method, "graphql"):
		return []string{"discovered", "graphql"}
	case method != "" && method != "manual":
		source, _, _ := strings.Cut(method, "_")
		return []string{"discovered", pathSegment(source)}
	}
	return []string{"user"}
}

// uriScheme is the scheme of a valid capability URI, else "".
func uriScheme(s string) string {
	u, err := capability.ParseURI(s)
	if err != nil {
		return ""
	}
	return u.Scheme
}

// containsAny reports whether s contains one of the parts.
func containsAny(s string, parts ...string) bool {
	for _, p := range parts {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// pathSegment makes s safe as one path component.
func pathSegment(s string) string {
	out := strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-') {
			return r
		}
		return '_'
	}, s)
	if out == "" || strings.Trim(out, ".") == "" {
		return "_" + out
	}
	return out
}
