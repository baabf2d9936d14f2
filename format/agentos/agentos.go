// Package agentos imports Agent OS capability manifests (an app's
// agentos/capabilities.json, manifest schema v1) into caphub definitions,
// and resolves Agent OS intents against definitions.
//
// # Identity
//
// Each capability of a manifest becomes ossa:<domain>/<name>@MAJOR.MINOR:
//
//   - domain is the app's package id sanitised to [a-z][a-z0-9-]*: lower-cased,
//     every run of other characters made one "-", leading and trailing "-"
//     dropped, and "app-" put in front when it would start with a digit
//     (com.whatsapp → com-whatsapp). The whole package id is kept, so that two
//     apps' send_message never collide.
//   - name is the capability id sanitised to [a-z][a-z0-9_]*: camelCase split
//     with "_", lower-cased, every run of other characters made one "_",
//     leading and trailing "_" dropped, "cap_" put in front when it would
//     start with a digit (sendMessage → send_message). The id as written is
//     kept in metadata.agentos.capability_id.
//   - version is Options.Version, else the manifest's "version" (not part of
//     the Agent OS schema, which versions the manifest format only, but
//     accepted) when it is a semantic version ("1", "1.2", "1.2.3", with an
//     optional leading "v"), else 1.0.0.
//
// # Inputs and outputs
//
// inputs[] become one JSON Schema object: each input a property of the
// schema its DataType maps to (see dataTypeSchema), with its description, its
// DataType as x-agentos-type and its vaultKey (the Personal Data Vault key
// the device auto-fills it from) as x-vault-key. An input is required unless
// it says "required": false (the seed's default is true). outputs[] become the
// output schema the same way, with no required list (the seed does not say
// which outputs are always present); without outputs the output schema is {}
// (free-form), since the manifest promises nothing about the result.
//
// # Handlers are device-only
//
// The handler (intent, service, broadcast or deeplink) is kept, with every
// field as written (type, target, extras, …), as a binding of its kind in
// Bindings.Extra, with the app's package added when the handler does not name
// one and executable_on_server: false. These bindings run on the device that
// has the app installed; caphub keeps and serves them but cannot invoke them
// (capability.Validate warns about the unknown binding kind; an invoker must
// report, using IsDeviceBinding, that the capability runs only on a device).
//
// # Metadata and inference
//
// metadata.agentos holds the app's package, display_name, manifest_version,
// app_version (when given), the capability_id as written, and the fields the
// schema does not define: the capability's under extra, the manifest's under
// manifest_extra (an input's or output's own unknown fields are kept on its
// property as x-agentos-<field>, and a "label" as its title). Provenance is
// {method: agentos_manifest, source_url: the file, created_at}. Domains and
// categories are inferred as CCOS does, from the package and the name; intents
// are not mapped to categories, since the Agent OS schema relates them to none.
//
// # Failures
//
// A capability that cannot be imported (a missing id, intents, description
// or handler, an unknown DataType or handler type, a field of the wrong JSON
// type, a duplicate id) is reported as a capability.ImportFailure with its
// line and column, and the others are imported. A file that is not a
// manifest at all (invalid JSON, no package, no capabilities list) is an
// *Error with its line and column, and so is one with a key written twice in
// an object, invalid UTF-8 or a lone surrogate escape: JSON readers disagree
// on what those mean, so none is guessed.
package agentos

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/internal/naming"
	"github.com/caphub/caphub/format/internal/srcfile"
	"github.com/caphub/caphub/internal/jsoncheck"
)

// provenanceMethod is the provenance method of an imported definition.
const provenanceMethod = "agentos_manifest"

// metadataNamespace is the key of Definition.Metadata under which the
// manifest's app-level facts and unmodelled fields are kept.
const metadataNamespace = "agentos"

// Handler kinds of the Agent OS schema; each is the key of the binding kept
// in Bindings.Extra.
const (
	handlerIntent    = "intent"
	handlerService   = "service"
	handlerBroadcast = "broadcast"
	handlerDeeplink  = "deeplink"
)

// handlerKinds lists the handler kinds, in the seed's order.
var handlerKinds = []string{handlerIntent, handlerService, handlerBroadcast, handlerDeeplink}

// executableOnServer is the field, set to false on every handler binding,
// that marks it as runnable only on the device.
const executableOnServer = "executable_on_server"

// IsDeviceBinding reports whether a binding kind of Bindings.Extra is an
// Agent OS handler, which only a device can execute.
func IsDeviceBinding(kind string) bool {
	for _, k := range handlerKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// Options tune an import.
type Options struct {
	// Version, when set, is the version of every imported definition,
	// overriding the manifest's (use it to import a changed manifest as a
	// new version: registered versions are immutable).
	Version string
	// CreatedAt is the provenance time; zero means now.
	CreatedAt time.Time
}

// Result is what an import produced: the definitions, and a failure for
// each capability that could not be imported.
type Result struct {
	Definitions []capability.Definition
	Failures    []capability.ImportFailure
}

// Error is a problem that stops a whole manifest from being imported; its
// Path is the JSON path of the offending value.
type Error = srcfile.Error

// ImportFile imports the manifest at path (see Import); path names the
// file in provenance and in errors.
func ImportFile(path string, opts Options) (*Result, error) {
	data, err := srcfile.Read(path, "give the app's capabilities.json (usually <app>/agentos/capabilities.json)", "a manifest")
	if err != nil {
		return nil, err
	}
	return Import(path, data, opts)
}

// Import reads an Agent OS capabilities.json (data, read from source, which
// names it in provenance and in errors) and returns a definition for every
// capability it can import and a failure for every other. The error is an
// *Error when the file as a whole is not a manifest caphub can read.
func Import(source string, data []byte, opts Options) (*Result, error) {
	data = trimBOM(data)
	root, perr := parseJSON(data)
	if perr != nil {
		return nil, &Error{File: source, Line: perr.line, Column: perr.col, Message: perr.msg}
	}
	// A key written twice would be read as its last value and invalid text
	// as U+FFFD: the manifest is refused instead, at the place to fix.
	if e := jsoncheck.Check(data); e != nil {
		return nil, &Error{File: source, Line: e.Line, Column: e.Column, Path: e.Path, Message: e.Message}
	}
	m := manifestReader{source: source, root: root}
	app, err := m.app(opts)
	if err != nil {
		return nil, err
	}
	caps, err := m.capabilities()
	if err != nil {
		return nil, err
	}
	return importCapabilities(app, caps), nil
}

// manifestReader reads the app-level fields of a manifest.
type manifestReader struct {
	source string
	root   *node
}

// fail is an *Error at n for the JSON path.
func (m manifestReader) fail(n *node, path, format string, args ...any) error {
	return &Error{File: m.source, Line: n.line, Column: n.col, Path: path, Message: fmt.Sprintf(format, args...)}
}

// app checks the manifest's object, manifestVersion, package,
// displayName and version, and returns what its capabilities share.
func (m manifestReader) app(opts Options) (*appInfo, error) {
	root := m.root
	if root.kind != kindObject {
		return nil, m.fail(root, "", "the manifest is a JSON %s: an Agent OS capabilities.json is an object with manifestVersion, package and capabilities", root.kind)
	}
	mv, err := m.manifestVersion()
	if err != nil {
		return nil, err
	}
	pkg, domain, err := m.pkg()
	if err != nil {
		return nil, err
	}
	displayName, err := m.displayName()
	if err != nil {
		return nil, err
	}
	version, appVersion := manifestAppVersion(root.get("version"))
	if opts.Version != "" {
		ver, err := capability.ParseVersion(opts.Version)
		if err != nil {
			return nil, &Error{File: m.source, Message: fmt.Sprintf("the version to import as: %v", err)}
		}
		version = ver.Full()
	}
	app := &appInfo{
		source: m.source, pkg: pkg, domain: domain, displayName: displayName,
		manifestVersion: mv, version: version, appVersion: appVersion,
		createdAt: opts.CreatedAt,
	}
	if app.createdAt.IsZero() {
		app.createdAt = time.Now()
	}
	if extra := unknownFields(root, manifestFields); len(extra) > 0 {
		app.manifestExtra = extra
	}
	return app, nil
}

// manifestVersion checks manifestVersion: a 1.x MAJOR.MINOR string.
func (m manifestReader) manifestVersion() (string, error) {
	mv := m.root.get("manifestVersion")
	switch {
	case mv == nil:
		return "", m.fail(m.root, "manifestVersion", `missing: an Agent OS manifest declares its schema version, e.g. "manifestVersion": "1.0"`)
	case mv.kind != kindString || !manifestVersionRE.MatchString(mv.str):
		return "", m.fail(mv, "manifestVersion", `must be a string MAJOR.MINOR such as "1.0", got %s`, describe(mv))
	case !strings.HasPrefix(mv.str, "1."):
		return "", m.fail(mv, "manifestVersion", "%q is not supported: caphub reads Agent OS manifests 1.x", mv.str)
	}
	return mv.str, nil
}

// pkg reads the package and the domain it gives.
func (m manifestReader) pkg() (pkg, domain string, err error) {
	n := m.root.get("package")
	switch {
	case n == nil:
		return "", "", m.fail(m.root, "package", `missing: name the app's package, e.g. "package": "com.whatsapp"; it gives the capabilities' domain`)
	case n.kind != kindString:
		return "", "", m.fail(n, "package", "must be a string (the app's package name), got %s", describe(n))
	}
	domain = sanitizeDomain(n.str)
	if domain == "" {
		return "", "", m.fail(n, "package", "%q has no letters or digits to make a domain of: give the app's package name, e.g. com.whatsapp", n.str)
	}
	return n.str, domain, nil
}

// displayName reads the optional displayName, trimmed.
func (m manifestReader) displayName() (string, error) {
	dn := m.root.get("displayName")
	if dn == nil {
		return "", nil
	}
	if dn.kind != kindString {
		return "", m.fail(dn, "displayName", "must be a string (the app's name), got %s", describe(dn))
	}
	return strings.TrimSpace(dn.str), nil
}

// manifestAppVersion returns the capabilities' version (the manifest's
// version when it is a semantic version, else 1.0.0) and the app version
// as written.
func manifestAppVersion(v *node) (version, appVersion string) {
	if v == nil || (v.kind != kindString && v.kind != kindNumber) {
		return "1.0.0", ""
	}
	appVersion = v.str
	if v.kind == kindNumber {
		appVersion = v.num.String()
	}
	if ver, err := capability.ParseVersion(strings.TrimPrefix(appVersion, "v")); err == nil {
		return ver.Full(), appVersion
	}
	return "1.0.0", appVersion
}

// capabilities returns the capabilities array.
func (m manifestReader) capabilities() (*node, error) {
	caps := m.root.get("capabilities")
	switch {
	case caps == nil:
		return nil, m.fail(m.root, "capabilities", "missing: list the app's capabilities, e.g. \"capabilities\": [{\"id\": \"send_message\", ...}]")
	case caps.kind != kindArray:
		return nil, m.fail(caps, "capabilities", "must be an array of capabilities, got %s", describe(caps))
	}
	return caps, nil
}

// importCapabilities reads every capability; one whose name another already
// has, or that JSON cannot encode, is a failure.
func importCapabilities(app *appInfo, caps *node) *Result {
	res := &Result{}
	seen := map[string]int{} // name → index of the capability that has it
	for i, cn := range caps.items {
		c := &capReader{app: app, n: cn, index: i}
		d, ferr := c.read()
		if ferr == nil {
			if first, dup := seen[d.Name]; dup {
				ferr = c.failAt(cn.get("id"), "id", "%q is the same capability name (%s) as capabilities[%d]: give each capability its own id", c.id, d.Name, first)
			} else if _, err := json.Marshal(d); err != nil {
				ferr = c.failAt(cn, "", "cannot be encoded as JSON (%v): check its numbers", err)
			}
		}
		if ferr != nil {
			res.Failures = append(res.Failures, *ferr)
			continue
		}
		seen[d.Name] = i
		res.Definitions = append(res.Definitions, *d)
	}
	return res
}

var manifestVersionRE = regexp.MustCompile(`^\d+\.\d+$`)

// Known fields of each manifest object; the others are kept as metadata or
// x-agentos-… keywords.
var (
	manifestFields   = fieldSet("$schema", "manifestVersion", "package", "displayName", "version", "capabilities")
	capabilityFields = fieldSet("id", "intents", "description", "keywords", "inputs", "outputs", "handler", "permissions", "uiRequired")
	inputFields      = fieldSet("name", "type", "required", "description", "vaultKey", "label")
	outputFields     = fieldSet("name", "type", "description", "label")
)

func fieldSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// unknownFields returns the fields of object n not in known, as plain values.
func unknownFields(n *node, known map[string]bool) map[string]any {
	var out map[string]any
	for i, k := range n.keys {
		if known[k] {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = n.vals[i].value()
	}
	return out
}

// appInfo is what a manifest says about the app, shared by its capabilities.
type appInfo struct {
	source, pkg, domain, displayName string
	manifestVersion, version         string
	appVersion                       string
	createdAt                        time.Time
	manifestExtra                    map[string]any
}

// capReader turns one capability object into a Definition.
type capReader struct {
	app   *appInfo
	n     *node
	index int
	id    string // the id as written, once known
}

// failAt builds the failure of this capability, positioned at n (or at the
// capability when n is nil), for the field path within it.
func (c *capReader) failAt(n *node, path, format string, args ...any) *capability.ImportFailure {
	if n == nil {
		n = c.n
	}
	item := fmt.Sprintf("capabilities[%d]", c.index)
	if c.id != "" {
		item += " (" + c.id + ")"
	}
	reason := fmt.Sprintf(format, args...)
	if path != "" {
		reason = path + ": " + reason
	}
	return &capability.ImportFailure{Item: item, Reason: reason, File: c.app.source, Line: n.line, Column: n.col}
}

func (c *capReader) read() (*capability.Definition, *capability.ImportFailure) {
	n := c.n
	if n.kind != kindObject {
		return nil, c.failAt(n, "", "must be an object (a capability with id, intents, description and handler), got %s", describe(n))
	}
	name, f := c.readID()
	if f != nil {
		return nil, f
	}
	d := &capability.Definition{
		URI:     capability.NewURI(capability.SchemeOSSA, c.app.domain, name, capability.MustParseVersion(c.app.version)).String(),
		Name:    name,
		Domain:  c.app.domain,
		Version: c.app.version,
		Title:   title(c.app.displayName, c.id),
		Provenance: &capability.Provenance{
			Method:    provenanceMethod,
			SourceURL: c.app.source,
			CreatedAt: c.app.createdAt.UTC().Format(time.RFC3339),
		},
		Metadata: map[string]any{metadataNamespace: c.metadata()},
	}
	for _, read := range []func(*capability.Definition) *capability.ImportFailure{c.readTexts, c.readSchemas, c.readHandler} {
		if f := read(d); f != nil {
			return nil, f
		}
	}
	d.Normalize()
	// Domains and categories as CCOS infers them from the app's package and
	// the capability's name. Intents are not mapped to categories: the Agent
	// OS schema gives them no categories.
	d.ApplyInference(c.app.pkg)
	return d, nil
}

// readID reads the capability's id and returns the name it gives.
func (c *capReader) readID() (string, *capability.ImportFailure) {
	idn := c.n.get("id")
	switch {
	case idn == nil:
		return "", c.failAt(c.n, "id", `missing: give the capability an id unique in the app, e.g. "id": "send_message"`)
	case idn.kind != kindString:
		return "", c.failAt(idn, "id", "must be a string such as \"send_message\", got %s", describe(idn))
	}
	c.id = idn.str
	name := sanitizeName(idn.str)
	if name == "" {
		return "", c.failAt(idn, "id", "%q has no letters or digits to make a name of: use an id such as send_message", idn.str)
	}
	return name, nil
}

// readTexts reads description, intents, keywords, permissions and
// uiRequired.
func (c *capReader) readTexts(d *capability.Definition) *capability.ImportFailure {
	var f *capability.ImportFailure
	if d.Description, f = c.requiredString("description", "describe what the capability does in plain language; agents match intents against it"); f != nil {
		return f
	}
	if d.Intents, f = c.stringList("intents", `list the intents the capability handles, e.g. "intents": ["messaging.send_text"]`, true); f != nil {
		return f
	}
	if d.Keywords, f = c.stringList("keywords", "", false); f != nil {
		return f
	}
	if d.Permissions, f = c.stringList("permissions", "", true); f != nil {
		return f
	}
	if u := c.n.get("uiRequired"); u != nil {
		if u.kind != kindBool {
			return c.failAt(u, "uiRequired", "must be true or false, got %s", describe(u))
		}
		d.UIRequired = u.b
	}
	return nil
}

// readSchemas reads inputs and outputs; without outputs the result is
// free-form.
func (c *capReader) readSchemas(d *capability.Definition) *capability.ImportFailure {
	var f *capability.ImportFailure
	if d.Input, f = c.params("inputs", true); f != nil {
		return f
	}
	if d.Output, f = c.params("outputs", false); f != nil {
		return f
	}
	if d.Output == nil {
		d.Output = capability.Schema{} // no outputs declared: the result is free-form
	}
	return nil
}

// readHandler keeps the handler as the binding of its kind.
func (c *capReader) readHandler(d *capability.Definition) *capability.ImportFailure {
	kind, binding, f := c.handler()
	if f != nil {
		return f
	}
	d.Bindings = capability.Bindings{Extra: map[string]any{kind: binding}}
	return nil
}

// metadata is the capability's metadata.agentos.
func (c *capReader) metadata() map[string]any {
	meta := map[string]any{
		"package":          c.app.pkg,
		"manifest_version": c.app.manifestVersion,
		"capability_id":    c.id,
	}
	if c.app.displayName != "" {
		meta["display_name"] = c.app.displayName
	}
	if c.app.appVersion != "" {
		meta["app_version"] = c.app.appVersion
	}
	if extra := unknownFields(c.n, capabilityFields); extra != nil {
		meta["extra"] = extra
	}
	if c.app.manifestExtra != nil {
		meta["manifest_extra"] = capability.Normalize(capability.CloneValue(c.app.manifestExtra))
	}
	return meta
}

// requiredString reads a required, non-blank string field.
func (c *capReader) requiredString(field, what string) (string, *capability.ImportFailure) {
	v := c.n.get(field)
	switch {
	case v == nil:
		return "", c.failAt(nil, field, "missing: %s", what)
	case v.kind != kindString:
		return "", c.failAt(v, field, "must be a string, got %s", describe(v))
	case strings.TrimSpace(v.str) == "":
		return "", c.failAt(v, field, "is empty: %s", what)
	}
	return v.str, nil
}

// stringList reads an array of strings. A field with a non-empty ifMissing
// is required (ifMissing says what to write); nonEmpty refuses blank elements.
func (c *capReader) stringList(field, ifMissing string, nonEmpty bool) ([]string, *capability.ImportFailure) {
	v := c.n.get(field)
	if v == nil {
		if ifMissing != "" {
			return nil, c.failAt(nil, field, "missing: %s", ifMissing)
		}
		return nil, nil
	}
	if v.kind != kindArray {
		return nil, c.failAt(v, field, "must be an array of strings, got %s", describe(v))
	}
	out := make([]string, 0, len(v.items))
	for i, it := range v.items {
		path := fmt.Sprintf("%s[%d]", field, i)
		if it.kind != kindString {
			return nil, c.failAt(it, path, "must be a string, got %s", describe(it))
		}
		if nonEmpty && strings.TrimSpace(it.str) == "" {
			return nil, c.failAt(it, path, "is empty: remove it or write the value")
		}
		out = append(out, it.str)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// params turns inputs[] or outputs[] into an object schema; nil when the
// field is absent.
func (c *capReader) params(field string, inputs bool) (capability.Schema, *capability.ImportFailure) {
	v := c.n.get(field)
	if v == nil {
		if inputs {
			return capability.Schema{"type": "object", "properties": map[string]any{}}, nil
		}
		return nil, nil
	}
	if v.kind != kindArray {
		return nil, c.failAt(v, field, "must be an array of {name, type, ...} parameters, got %s", describe(v))
	}
	props := map[string]any{}
	var required []any
	where := map[string]int{}
	for i, p := range v.items {
		path := fmt.Sprintf("%s[%d]", field, i)
		if p.kind != kindObject {
			return nil, c.failAt(p, path, "must be an object {name, type, ...}, got %s", describe(p))
		}
		name, f := c.paramName(p, path, field, where)
		if f != nil {
			return nil, f
		}
		where[name] = i
		prop, isRequired, f := c.param(p, path, inputs)
		if f != nil {
			return nil, f
		}
		if isRequired {
			required = append(required, name)
		}
		props[name] = prop
	}
	s := capability.Schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s, nil
}

// paramName reads a parameter's name, which must be unique in field.
func (c *capReader) paramName(p *node, path, field string, where map[string]int) (string, *capability.ImportFailure) {
	nn := p.get("name")
	switch {
	case nn == nil:
		return "", c.failAt(p, path+".name", "missing: name the parameter, e.g. \"name\": \"recipient\"")
	case nn.kind != kindString:
		return "", c.failAt(nn, path+".name", "must be a string, got %s", describe(nn))
	case nn.str == "":
		return "", c.failAt(nn, path+".name", "is empty: name the parameter")
	}
	if first, dup := where[nn.str]; dup {
		return "", c.failAt(nn, path+".name", "%q is already the name of %s[%d]: parameter names must be unique", nn.str, field, first)
	}
	return nn.str, nil
}

// param reads one parameter's schema (see the package doc), and for an
// input whether it is required.
func (c *capReader) param(p *node, path string, inputs bool) (map[string]any, bool, *capability.ImportFailure) {
	prop, f := c.paramType(p, path)
	if f != nil {
		return nil, false, f
	}
	if f := c.optionalString(p, path, "description", "description", "must be a string, got %s", prop); f != nil {
		return nil, false, f
	}
	// label is not in the seed's schema, but a common addition.
	if f := c.optionalString(p, path, "label", "title", "must be a string, got %s", prop); f != nil {
		return nil, false, f
	}
	known := outputFields
	isRequired := false
	if inputs {
		known = inputFields
		if isRequired, f = c.inputExtras(p, path, prop); f != nil {
			return nil, false, f
		}
	}
	for k, val := range unknownFields(p, known) {
		prop["x-agentos-"+k] = val
	}
	return prop, isRequired, nil
}

// paramType reads a parameter's DataType and returns its schema, with the
// DataType kept as x-agentos-type.
func (c *capReader) paramType(p *node, path string) (map[string]any, *capability.ImportFailure) {
	tn := p.get("type")
	switch {
	case tn == nil:
		return nil, c.failAt(p, path+".type", "missing: give the parameter's DataType (%s)", strings.Join(dataTypes, ", "))
	case tn.kind != kindString:
		return nil, c.failAt(tn, path+".type", "must be a DataType string (%s), got %s", strings.Join(dataTypes, ", "), describe(tn))
	}
	prop, ok := dataTypeSchema(tn.str)
	if !ok {
		return nil, c.failAt(tn, path+".type", "%q is not an Agent OS DataType%s: use one of %s", tn.str, dataTypeHint(tn.str), strings.Join(sortedDataTypes, ", "))
	}
	prop["x-agentos-type"] = tn.str
	return prop, nil
}

// dataTypeHint suggests the DataType meant by a type that is not one.
func dataTypeHint(t string) string {
	if h, ok := dataTypeHints[strings.ToLower(t)]; ok {
		return fmt.Sprintf(" (for %q use %q)", t, h)
	}
	if _, ok := dataTypeSchema(strings.ToLower(t)); ok {
		return fmt.Sprintf(" (DataTypes are lower case: %q)", strings.ToLower(t))
	}
	return ""
}

// inputExtras reads an input's required (true by default, as the seed
// says) and vaultKey.
func (c *capReader) inputExtras(p *node, path string, prop map[string]any) (bool, *capability.ImportFailure) {
	isRequired := true // the seed: "required": {"type": "boolean", "default": true}
	if rn := p.get("required"); rn != nil {
		if rn.kind != kindBool {
			return false, c.failAt(rn, path+".required", "must be true or false, got %s", describe(rn))
		}
		isRequired = rn.b
	}
	f := c.optionalString(p, path, "vaultKey", "x-vault-key", "must be a string (a Personal Data Vault key such as \"contacts\"), got %s", prop)
	return isRequired, f
}

// optionalString copies the string field of p, when present and not
// empty, to prop[key]; a field of another type fails with the message
// wrongType (given the field's description).
func (c *capReader) optionalString(p *node, path, field, key, wrongType string, prop map[string]any) *capability.ImportFailure {
	n := p.get(field)
	if n == nil {
		return nil
	}
	if n.kind != kindString {
		return c.failAt(n, path+"."+field, wrongType, describe(n))
	}
	if n.str != "" {
		prop[key] = n.str
	}
	return nil
}

// handler reads the handler and returns its kind and the binding kept for it.
func (c *capReader) handler() (string, map[string]any, *capability.ImportFailure) {
	h := c.n.get("handler")
	switch {
	case h == nil:
		return "", nil, c.failAt(nil, "handler", `missing: say how the app runs the capability, e.g. "handler": {"type": "intent", "target": "com.example.ACTION"}`)
	case h.kind != kindObject:
		return "", nil, c.failAt(h, "handler", "must be an object {type, target, extras}, got %s", describe(h))
	}
	t := h.get("type")
	switch {
	case t == nil:
		return "", nil, c.failAt(h, "handler.type", "missing: use one of %s", strings.Join(handlerKinds, ", "))
	case t.kind != kindString:
		return "", nil, c.failAt(t, "handler.type", "must be one of %s, got %s", strings.Join(handlerKinds, ", "), describe(t))
	case !IsDeviceBinding(t.str):
		return "", nil, c.failAt(t, "handler.type", "%q is not an Agent OS handler type: use one of %s", t.str, strings.Join(handlerKinds, ", "))
	}
	if tg := h.get("target"); tg != nil && tg.kind != kindString {
		return "", nil, c.failAt(tg, "handler.target", "must be a string (an intent action, service class or deeplink template), got %s", describe(tg))
	}
	if ex := h.get("extras"); ex != nil && ex.kind != kindObject {
		return "", nil, c.failAt(ex, "handler.extras", "must be an object of static extras, got %s", describe(ex))
	}
	b := h.value().(map[string]any)
	if _, ok := b["package"]; !ok {
		b["package"] = c.app.pkg // the device needs it to route the handler to the app
	}
	b[executableOnServer] = false
	return t.str, b, nil
}

// describe names a node's JSON type and, for scalars, its value.
func describe(n *node) string {
	switch n.kind {
	case kindString:
		return fmt.Sprintf("the string %q", n.str)
	case kindNumber:
		return "the number " + n.num.String()
	case kindBool:
		return fmt.Sprintf("%t", n.b)
	case kindNull:
		return "null"
	}
	return "an " + n.kind.String()
}

// sanitizeDomain turns a package id into a domain, [a-z][a-z0-9-]*.
func sanitizeDomain(pkg string) string {
	s := squash(strings.ToLower(pkg), '-')
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		s = "app-" + s
	}
	return s
}

// sanitizeName turns a capability id into a name, [a-z][a-z0-9_]*.
func sanitizeName(id string) string {
	var b strings.Builder
	rs := []rune(id)
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
			i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsLower(rs[i+1])) {
			b.WriteByte('_') // camelCase and HTTPServer boundaries
		}
		b.WriteRune(unicode.ToLower(r))
	}
	s := squash(b.String(), '_')
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		s = "cap_" + s
	}
	return s
}

// squash keeps ASCII lower-case letters and digits and makes every run of
// other characters one sep, dropping sep at both ends.
func squash(s string, sep byte) string { return naming.JoinRuns(s, naming.IsLowerAlnum, sep) }

// title makes a display title: "WhatsApp: Send message".
func title(app, id string) string {
	words := strings.Fields(strings.ReplaceAll(sanitizeName(id), "_", " "))
	t := strings.Join(words, " ")
	if t != "" {
		t = strings.ToUpper(t[:1]) + t[1:]
	}
	if app == "" {
		return t
	}
	return app + ": " + t
}

func trimBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}
