package capability

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Severity says whether an Issue blocks a definition (error: an OSSA MUST
// rule or a caphub rule) or only advises (warning: an OSSA SHOULD rule).
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Issue is one finding of validation. Path is the field path inside the
// definition ("bindings.cli.command", "errors[1].code"); readers of files
// prefix it with the document path and fill File, Line and Column.
type Issue struct {
	Severity Severity `json:"severity"`
	Path     string   `json:"path"`
	Message  string   `json:"message"`
	Rule     string   `json:"rule,omitempty"`
	File     string   `json:"file,omitempty"`
	Line     int      `json:"line,omitempty"`
	Column   int      `json:"column,omitempty"`
}

// String renders the issue as "file:line:col: severity: path: message".
func (i Issue) String() string {
	var b strings.Builder
	if i.File != "" {
		b.WriteString(i.File)
		if i.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", i.Line, i.Column)
		}
		b.WriteString(": ")
	}
	b.WriteString(string(i.Severity))
	b.WriteString(": ")
	if i.Path != "" {
		b.WriteString(i.Path)
		b.WriteString(": ")
	}
	b.WriteString(i.Message)
	return b.String()
}

// ValidationError carries the issues that make a definition invalid (and the
// warnings found with them).
type ValidationError struct {
	Issues []Issue
}

func (e *ValidationError) Error() string {
	var errs []string
	for _, i := range e.Issues {
		if i.Severity == SeverityError {
			errs = append(errs, i.String())
		}
	}
	switch len(errs) {
	case 0:
		return "invalid capability definition"
	case 1:
		return "invalid capability definition: " + errs[0]
	}
	return fmt.Sprintf("invalid capability definition (%d errors):\n  %s", len(errs), strings.Join(errs, "\n  "))
}

// HasErrors reports whether any issue is an error.
func HasErrors(issues []Issue) bool {
	for _, i := range issues {
		if i.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Rule identifiers name where a rule comes from.
const (
	RuleURI            = "OSSA-12.1.1" // MUST have a valid URI
	RuleSchemas        = "OSSA-12.1.2" // MUST define input and output schemas
	RuleBinding        = "OSSA-12.1.3" // MUST define at least one binding
	RuleDocURL         = "OSSA-12.2.1" // SHOULD include documentation_url
	RuleErrorCodes     = "OSSA-12.2.2" // SHOULD define error codes
	RuleMigrationGuide = "OSSA-12.2.3" // deprecated SHOULD specify migration_guide
	RuleMappings       = "OSSA-12.2.4" // bindings SHOULD include field mappings
	RuleCaphub         = "caphub"      // caphub's own rules
)

var (
	errorCodeRE  = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)
	domainNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	ossaNameRE   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	mcpNameRE    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Validate checks d against the OSSA compliance rules (§12: MUST → error,
// SHOULD → warning) and caphub's own: valid JSON Schemas, binding templates
// that name input fields, absolute http(s) URLs, complete bindings, unique
// UPPER_SNAKE error codes, coherent deprecation. It never stops at the first
// problem: every issue is returned, errors and warnings, sorted by path.
//
// A definition over a budget (see MaxSchemaNesting) is refused with only
// those issues: nothing else is checked, and no schema compiled.
func Validate(d *Definition) []Issue {
	return ValidateEncoded(d, EncodedSchemas{})
}

// ValidateEncoded is Validate with d's schemas encoded already (enc, from
// EncodeSchemas(d)), so that compiling them does not encode them again; a
// zero enc encodes them as Validate does.
func ValidateEncoded(d *Definition, enc EncodedSchemas) []Issue {
	if issues := checkBudgets(d); len(issues) > 0 {
		return issues
	}
	v := &validator{d: d, enc: enc}
	v.identity()
	v.docs()
	v.lifecycle()
	v.schemas()
	v.errorDefs()
	v.bindings()
	v.rest()
	sort.SliceStable(v.issues, func(i, j int) bool { return v.issues[i].Path < v.issues[j].Path })
	return v.issues
}

type validator struct {
	d      *Definition
	issues []Issue
	input  *jsonschema.Schema // compiled input schema, nil when invalid
	enc    EncodedSchemas     // d's schemas encoded, when the caller has them
}

func (v *validator) errorf(path, rule, format string, args ...any) {
	v.issues = append(v.issues, Issue{Severity: SeverityError, Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) warnf(path, rule, format string, args ...any) {
	v.issues = append(v.issues, Issue{Severity: SeverityWarning, Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// identity checks uri, name, domain and version and that they agree.
func (v *validator) identity() {
	scheme := v.uri()
	v.name(scheme)
	v.domain()
	v.version()
}

// uri checks the URI and that it agrees with domain, name and version; it
// returns the URI's scheme (ossa when there is no valid URI).
func (v *validator) uri() string {
	d := v.d
	if d.URI == "" {
		v.errorf("uri", RuleURI, "missing: every capability must have a URI such as %s", suggestURI(d))
		return SchemeOSSA
	}
	u, err := ParseURI(d.URI)
	if err != nil {
		v.errorf("uri", RuleURI, "%v", err)
		return SchemeOSSA
	}
	if !u.HasVersion {
		v.errorf("uri", RuleURI, "%q has no version: append @MAJOR.MINOR, e.g. %s", d.URI, suggestURI(d))
	}
	if d.Domain != "" && u.Domain != d.Domain {
		v.errorf("uri", RuleURI, "URI domain %q differs from domain %q: make them the same", u.Domain, d.Domain)
	}
	if d.Name != "" && u.Name != d.Name {
		v.errorf("uri", RuleURI, "URI name %q differs from name %q: make them the same", u.Name, d.Name)
	}
	if ver, err := ParseVersion(d.Version); err == nil && u.HasVersion &&
		(ver.Major != u.Version.Major || ver.Minor != u.Version.Minor) {
		v.errorf("uri", RuleURI, "URI version @%s differs from version %s: the URI carries MAJOR.MINOR of the version, so write @%d.%d",
			u.Version.String(), d.Version, ver.Major, ver.Minor)
	}
	return u.Scheme
}

// name checks the capability name against the grammar of its scheme.
func (v *validator) name(scheme string) {
	d := v.d
	switch {
	case d.Name == "":
		v.errorf("name", RuleURI, "missing: set the capability name (pattern [a-z][a-z0-9_]*)")
	case scheme == SchemeMCP && !mcpNameRE.MatchString(d.Name):
		v.errorf("name", RuleURI, "%q must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127} (an MCP tool name)", d.Name)
	case scheme != SchemeMCP && !ossaNameRE.MatchString(d.Name):
		v.errorf("name", RuleURI, "%q must match [a-z][a-z0-9_]* (lower-case letters, digits and underscores, starting with a letter)", d.Name)
	}
}

// domain checks the capability domain against its grammar.
func (v *validator) domain() {
	d := v.d
	switch {
	case d.Domain == "":
		v.errorf("domain", RuleURI, "missing: set the capability domain (pattern [a-z][a-z0-9-]*)")
	case !domainNameRE.MatchString(d.Domain):
		v.errorf("domain", RuleURI, "%q must match [a-z][a-z0-9-]* (lower-case letters, digits and hyphens, starting with a letter)", d.Domain)
	}
}

// version checks that the version is a full semantic version.
func (v *validator) version() {
	d := v.d
	if d.Version == "" {
		v.errorf("version", RuleURI, "missing: set the full semantic version, e.g. 1.0.0")
	} else if ver, err := ParseVersion(d.Version); err != nil {
		v.errorf("version", RuleURI, "%v", err)
	} else if ver.Parts < 3 {
		v.errorf("version", RuleURI, "%q is not a full semantic version: write MAJOR.MINOR.PATCH, e.g. %s", d.Version, ver.Full())
	}
}

func suggestURI(d *Definition) string {
	domain, name := d.Domain, d.Name
	if domain == "" {
		domain = "<domain>"
	}
	if name == "" {
		name = "<name>"
	}
	short := "1.0"
	if ver, err := ParseVersion(d.Version); err == nil {
		short = ver.Short()
	}
	return fmt.Sprintf("ossa:%s/%s@%s", domain, name, short)
}

func (v *validator) docs() {
	d := v.d
	if strings.TrimSpace(d.Description) == "" {
		v.warnf("description", RuleCaphub, "missing: describe what the capability does; search and agents rely on it")
	}
	if d.DocumentationURL == "" {
		v.warnf("documentation_url", RuleDocURL, "missing: capabilities should link to their documentation")
	} else if err := absoluteHTTPURL(d.DocumentationURL); err != nil {
		v.errorf("documentation_url", RuleCaphub, "%v", err)
	}
}

// lifecycle checks stability and the deprecation fields.
func (v *validator) lifecycle() {
	d := v.d
	switch d.Stability {
	case "":
		v.warnf("stability", RuleCaphub, "missing: set one of %s (stable is assumed)", strings.Join(Stabilities, ", "))
	case StabilityExperimental, StabilityBeta, StabilityStable, StabilityDeprecated:
	default:
		v.errorf("stability", RuleCaphub, "%q is not a stability: use one of %s", d.Stability, strings.Join(Stabilities, ", "))
	}
	if d.Stability == StabilityDeprecated {
		if d.DeprecatedBy == "" && d.MigrationGuide == "" {
			v.errorf("stability", RuleCaphub, "a deprecated capability needs deprecated_by (its replacement) or migration_guide")
		}
		if d.MigrationGuide == "" {
			v.warnf("migration_guide", RuleMigrationGuide, "missing: a deprecated capability should tell its users how to migrate")
		}
	}
	if d.DeprecatedBy != "" {
		if u, err := ParseURI(d.DeprecatedBy); err != nil {
			v.errorf("deprecated_by", RuleCaphub, "%v", err)
		} else if !u.HasVersion {
			v.errorf("deprecated_by", RuleCaphub, "%q has no version: name the replacement with @MAJOR.MINOR", d.DeprecatedBy)
		}
	}
	if d.SunsetDate != "" {
		if _, err := ParseDate(d.SunsetDate); err != nil {
			v.errorf("sunset_date", RuleCaphub, "%v", err)
		}
	}
}

// ParseDate reads an ISO 8601 date (2025-06-01) or timestamp (RFC 3339), as
// used by sunset_date.
func ParseDate(s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a date: write it as YYYY-MM-DD (ISO 8601), e.g. 2026-06-01", s)
}

func absoluteHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q must be an absolute http(s) URL, e.g. https://example.com/path", raw)
	}
	return nil
}

// schemas compiles input and output as JSON Schemas.
func (v *validator) schemas() {
	d := v.d
	if d.Input == nil {
		v.errorf("input", RuleSchemas, "missing: define the input JSON Schema (e.g. {type: object, properties: {...}})")
	} else if sch, issues := compileEncoded(d.Input, v.enc.Input); len(issues) > 0 {
		v.addSchemaIssues("input", issues)
	} else {
		v.input = sch
	}
	if d.Output == nil {
		v.errorf("output", RuleSchemas, "missing: define the output JSON Schema (use {} when the output is free-form)")
	} else if _, issues := compileEncoded(d.Output, v.enc.Output); len(issues) > 0 {
		v.addSchemaIssues("output", issues)
	}
	if d.Input != nil {
		if t, ok := d.Input["type"].(string); ok && t != "object" {
			v.errorf("input.type", RuleCaphub, "the input schema must describe an object (type: object), not %q: capabilities take named fields", t)
		}
	}
	for i, ex := range d.Examples {
		if v.input != nil && ex.Input != nil {
			if err := v.input.Validate(ex.Input); err != nil {
				v.errorf(fmt.Sprintf("examples[%d].input", i), RuleCaphub, "does not match the input schema: %s", FirstSchemaError(err))
			}
		}
	}
}

func (v *validator) addSchemaIssues(prefix string, issues []SchemaIssue) {
	for _, si := range issues {
		path := prefix
		if si.Pointer != "" {
			path += "." + si.Pointer
		}
		v.errorf(path, RuleSchemas, "not a valid JSON Schema: %s", si.Message)
	}
}

func (v *validator) errorDefs() {
	d := v.d
	if len(d.Errors) == 0 {
		v.warnf("errors", RuleErrorCodes, "no error codes: declare the errors callers can expect (code, description, retryable)")
	}
	seen := map[string]int{}
	for i, e := range d.Errors {
		p := fmt.Sprintf("errors[%d]", i)
		switch {
		case e.Code == "":
			v.errorf(p+".code", RuleCaphub, "missing: give the error an UPPER_SNAKE code, e.g. NOT_FOUND")
		case !errorCodeRE.MatchString(e.Code):
			v.errorf(p+".code", RuleCaphub, "%q must be UPPER_SNAKE_CASE ([A-Z][A-Z0-9]*(_[A-Z0-9]+)*), e.g. %s", e.Code, upperSnake(e.Code))
		}
		if first, dup := seen[e.Code]; dup && e.Code != "" {
			v.errorf(p+".code", RuleCaphub, "%q is already declared at errors[%d]: error codes must be unique", e.Code, first)
		} else {
			seen[e.Code] = i
		}
		if e.Description == "" {
			v.warnf(p+".description", RuleCaphub, "missing: say when %s happens", e.Code)
		}
	}
}

func upperSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			if i > 0 && r >= 'A' && r <= 'Z' && s[i-1] >= 'a' && s[i-1] <= 'z' {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return strings.Trim(b.String(), "_")
}

// inputFields returns the top-level property names of the input schema.
func (v *validator) inputFields() map[string]bool {
	fields := map[string]bool{}
	if props, ok := v.d.Input["properties"].(map[string]any); ok {
		for k := range props {
			fields[k] = true
		}
	}
	return fields
}

func (v *validator) inputFieldList() string {
	names := slices.Sorted(maps.Keys(v.inputFields()))
	if len(names) == 0 {
		return "the input schema declares no properties"
	}
	return "input fields are " + strings.Join(names, ", ")
}

// checkPlaceholders reports each {placeholder} of a template that does not
// name an input field.
func (v *validator) checkPlaceholders(path, template string) {
	fields := v.inputFields()
	for _, p := range Placeholders(template) {
		root, _, _ := strings.Cut(p, ".")
		if !fields[root] {
			v.errorf(path, RuleCaphub, "placeholder {%s} does not name an input field (%s)", p, v.inputFieldList())
		}
	}
}

// checkMapping reports mapping keys that are not input fields.
func (v *validator) checkMapping(path string, mapping map[string]string) {
	fields := v.inputFields()
	for _, k := range slices.Sorted(maps.Keys(mapping)) {
		if !fields[k] {
			v.errorf(path+"."+k, RuleCaphub, "mapping key %q does not name an input field (%s)", k, v.inputFieldList())
		}
	}
}

var httpMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true, "OPTIONS": true, "TRACE": true}
var authTypes = map[string]bool{"api_key": true, "bearer": true, "basic": true, "oauth2": true, "none": true}

func (v *validator) bindings() {
	b := v.d.Bindings
	if b.Empty() {
		v.errorf("bindings", RuleBinding, "no binding: declare at least one of %s", strings.Join(BindingOrder, ", "))
	}
	hasInput := len(v.inputFields()) > 0
	if n := b.Native; n != nil && n.Handler == "" {
		v.errorf("bindings.native.handler", RuleCaphub, "missing: name the built-in handler")
	}
	if b.MCP != nil {
		v.mcpBinding(b.MCP, hasInput)
	}
	if b.HTTP != nil {
		v.httpBinding(b.HTTP)
	}
	if b.GRPC != nil {
		v.grpcBinding(b.GRPC, hasInput)
	}
	if b.CLI != nil {
		v.cliBinding(b.CLI)
	}
	if b.Delegation != nil {
		v.delegationBinding(b.Delegation)
	}
	v.unknownBindings(b)
}

// mcpBinding checks an MCP binding: server and tool named, mapping onto
// input fields, error mapping onto declared codes.
func (v *validator) mcpBinding(m *MCPBinding, hasInput bool) {
	if m.Server == "" {
		v.errorf("bindings.mcp.server", RuleCaphub, "missing: name the saved MCP server that serves the tool")
	}
	if m.Tool == "" {
		v.errorf("bindings.mcp.tool", RuleCaphub, "missing: name the tool on the MCP server")
	}
	v.checkMapping("bindings.mcp.mapping", m.Mapping)
	if len(m.Mapping) == 0 && hasInput {
		v.warnf("bindings.mcp.mapping", RuleMappings, "no field mapping: input fields are passed to the tool under their own names")
	}
	for _, k := range slices.Sorted(maps.Keys(m.ErrorMapping)) {
		if !v.declaresError(m.ErrorMapping[k]) {
			v.errorf("bindings.mcp.error_mapping."+k, RuleCaphub, "maps to %q, which is not a declared error code: add it to errors", m.ErrorMapping[k])
		}
	}
}

// httpBinding checks an HTTP binding: method, absolute URL, templates that
// name input fields, and its auth.
func (v *validator) httpBinding(h *HTTPBinding) {
	if !httpMethods[strings.ToUpper(h.Method)] {
		v.errorf("bindings.http.method", RuleCaphub, "%q is not an HTTP method: use GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS or TRACE", h.Method)
	}
	if h.URL == "" {
		v.errorf("bindings.http.url", RuleCaphub, "missing: give the endpoint's absolute http(s) URL")
	} else {
		filled := placeholderRE.ReplaceAllString(h.URL, "x")
		if err := absoluteHTTPURL(filled); err != nil {
			v.errorf("bindings.http.url", RuleCaphub, "%v", err)
		}
		v.checkPlaceholders("bindings.http.url", h.URL)
	}
	v.checkPlaceholders("bindings.http.body_template", h.BodyTemplate)
	for _, k := range slices.Sorted(maps.Keys(h.Headers)) {
		v.checkPlaceholders("bindings.http.headers."+k, h.Headers[k])
	}
	if h.Auth != nil {
		v.httpAuth(h.Auth)
	}
}

// httpAuth checks an HTTP binding's auth: a known type, the environment
// variable of the secret, and where an api_key goes.
func (v *validator) httpAuth(a *HTTPAuth) {
	if !authTypes[a.Type] {
		v.errorf("bindings.http.auth.type", RuleCaphub, "%q is not an auth type: use api_key, bearer, basic or oauth2", a.Type)
	}
	if a.Type != "none" && a.Env == "" {
		v.errorf("bindings.http.auth.env", RuleCaphub, "missing: name the environment variable that holds the secret (secrets are never stored)")
	}
	if a.Type != "api_key" {
		return
	}
	if a.Location != "header" && a.Location != "query" {
		v.errorf("bindings.http.auth.location", RuleCaphub, "%q: an api_key goes in a header or the query; use header or query", a.Location)
	}
	if a.ParamName == "" {
		v.errorf("bindings.http.auth.param_name", RuleCaphub, "missing: name the header or query parameter that carries the key")
	}
}

// grpcBinding checks a gRPC binding: service, method and target named,
// mapping onto input fields.
func (v *validator) grpcBinding(g *GRPCBinding, hasInput bool) {
	if g.Service == "" {
		v.errorf("bindings.grpc.service", RuleCaphub, "missing: give the fully-qualified gRPC service name")
	}
	if g.Method == "" {
		v.errorf("bindings.grpc.method", RuleCaphub, "missing: give the gRPC method name")
	}
	if g.Target == "" {
		v.warnf("bindings.grpc.target", RuleCaphub, "missing: give the server address (host:port); without it the binding cannot be invoked")
	}
	v.checkMapping("bindings.grpc.mapping", g.Mapping)
	if len(g.Mapping) == 0 && hasInput {
		v.warnf("bindings.grpc.mapping", RuleMappings, "no field mapping: input fields are sent under their own names")
	}
}

// cliBinding checks a CLI binding: a command that splits, whose program is
// not a placeholder, and a known output parser.
func (v *validator) cliBinding(c *CLIBinding) {
	if strings.TrimSpace(c.Command) == "" {
		v.errorf("bindings.cli.command", RuleCaphub, "missing: give the command to run, e.g. \"tool {field}\"")
	} else if argv, err := SplitCommand(c.Command); err != nil {
		v.errorf("bindings.cli.command", RuleCaphub, "%v", err)
	} else if len(argv) > 0 && len(Placeholders(argv[0])) > 0 {
		v.errorf("bindings.cli.command", RuleCaphub, "the program name %q must not be a placeholder: an input must never choose what runs", argv[0])
	}
	v.checkPlaceholders("bindings.cli.command", c.Command)
	switch c.Parser {
	case "", "json", "text", "yaml":
	default:
		v.errorf("bindings.cli.parser", RuleCaphub, "%q is not a parser: use json, text or yaml", c.Parser)
	}
}

// delegationBinding checks a delegation binding: an agent or URL to
// delegate to, a valid capability URI and token variable name.
func (v *validator) delegationBinding(dl *DelegationBinding) {
	if dl.Agent == "" && dl.URL == "" {
		v.errorf("bindings.delegation", RuleCaphub, "name the agent or the url to delegate to")
	}
	if dl.URL != "" {
		if err := absoluteHTTPURL(dl.URL); err != nil {
			v.errorf("bindings.delegation.url", RuleCaphub, "%v", err)
		}
	}
	if dl.Capability != "" {
		if _, err := ParseURI(dl.Capability); err != nil {
			v.errorf("bindings.delegation.capability", RuleCaphub, "%v", err)
		}
	}
	if dl.TokenEnv != "" && !envNameRE.MatchString(dl.TokenEnv) {
		v.errorf("bindings.delegation.token_env", RuleCaphub, "%q is not an environment variable name: use letters, digits and _, not starting with a digit", dl.TokenEnv)
	}
}

// unknownBindings warns of binding types and binding fields caphub does
// not know (x- extensions aside).
func (v *validator) unknownBindings(b Bindings) {
	for _, k := range slices.Sorted(maps.Keys(b.Extra)) {
		if !strings.HasPrefix(k, "x-") {
			v.warnf("bindings."+k, RuleCaphub, "unknown binding type %q: caphub keeps it but cannot execute it (known: %s)", k, strings.Join(BindingOrder, ", "))
		}
	}
	v.unknown("bindings.native", extraOf(b.Native))
	v.unknown("bindings.mcp", extraOf(b.MCP))
	v.unknown("bindings.http", extraOf(b.HTTP))
	if b.HTTP != nil {
		v.unknown("bindings.http.auth", extraOf(b.HTTP.Auth))
	}
	v.unknown("bindings.grpc", extraOf(b.GRPC))
	v.unknown("bindings.cli", extraOf(b.CLI))
	v.unknown("bindings.delegation", extraOf(b.Delegation))
}

func (v *validator) declaresError(code string) bool {
	for _, e := range v.d.Errors {
		if e.Code == code {
			return true
		}
	}
	return false
}

// extraOf returns the Extra map (the unknown members kept) of a pointer to
// a model struct; nil for a nil pointer or a struct without one.
func extraOf(x any) map[string]any {
	p := reflect.ValueOf(x)
	if p.Kind() != reflect.Pointer || p.IsNil() {
		return nil
	}
	f := p.Elem().FieldByName("Extra")
	if !f.IsValid() {
		return nil
	}
	m, _ := f.Interface().(map[string]any)
	return m
}

// unknown warns about each field caphub does not model ("x-" extensions are
// expected and not reported). The field is kept, never dropped.
func (v *validator) unknown(path string, extra map[string]any) {
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if strings.HasPrefix(k, "x-") {
			continue
		}
		p := k
		if path != "" {
			p = path + "." + k
		}
		v.warnf(p, RuleCaphub, "unknown field: caphub keeps it but does not use it (check the spelling, or prefix extensions with x-)")
	}
}

// rest checks the remaining fields.
func (v *validator) rest() {
	d := v.d
	v.unknown("", d.Extra)
	v.unknown("display", extraOf(d.Display))
	v.unknown("provenance", extraOf(d.Provenance))
	for i, e := range d.Errors {
		v.unknown(fmt.Sprintf("errors[%d]", i), e.Extra)
	}
	for i, t := range d.Tools {
		if _, err := ParseURI(t); err != nil {
			v.errorf(fmt.Sprintf("tools[%d]", i), RuleCaphub, "%v", err)
		}
	}
	if a := d.Attestation; a != nil {
		v.unknown("attestation", a.Extra)
		if a.Algorithm != "ed25519" {
			v.errorf("attestation.algorithm", RuleCaphub, "%q is not supported: caphub signs and verifies ed25519", a.Algorithm)
		}
		if a.KeyID == "" || a.Signature == "" {
			v.errorf("attestation", RuleCaphub, "an attestation needs key_id and signature")
		}
	}
	for _, list := range []struct {
		name   string
		values []string
	}{{"permissions", d.Permissions}, {"effects", d.Effects}, {"domains", d.Domains}, {"categories", d.Categories}, {"intents", d.Intents}} {
		seen := map[string]bool{}
		for i, s := range list.values {
			if strings.TrimSpace(s) == "" {
				v.errorf(fmt.Sprintf("%s[%d]", list.name, i), RuleCaphub, "empty value: remove it")
			} else if seen[s] {
				v.warnf(fmt.Sprintf("%s[%d]", list.name, i), RuleCaphub, "%q is listed twice", s)
			}
			seen[s] = true
		}
	}
}

// SchemaIssue is one problem found when compiling a JSON Schema. Pointer is
// the dotted path inside the schema ("properties.target.type").
type SchemaIssue struct {
	Pointer string
	Message string
}

// refusingLoader keeps schema compilation offline: a definition's $ref may
// only point inside itself, never at files or the network.
type refusingLoader struct{}

func (refusingLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed: inline the referenced schema (only local #/... references are resolved)", u)
}

const schemaResource = "urn:caphub:schema.json"

// CompileSchema compiles s as a JSON Schema (2020-12 by default; draft-07
// and others when $schema says so). It returns the compiled schema, or the
// issues that make it invalid, each with its location in the schema. A
// schema over the budgets (MaxSchemaNesting, MaxSchemaNodes,
// MaxSchemaObjects) is refused before the compiler sees it.
//
// Compiled schemas are cached by content (see schemaCache): a registry
// validates the same schemas again and again (an import validates, then
// the registration; versions of a capability share them).
func CompileSchema(s Schema) (*jsonschema.Schema, []SchemaIssue) {
	return compileEncoded(s, nil)
}

// compileEncoded is CompileSchema with s encoded already as enc
// (json.Marshal(s)), nil when the caller does not have it.
func compileEncoded(s Schema, enc []byte) (*jsonschema.Schema, []SchemaIssue) {
	if issues := schemaBudget(s); len(issues) > 0 {
		return nil, issues
	}
	key, ok := schemaKey(s, enc)
	if ok {
		if c, hit := compiledSchemas.get(key); hit {
			return c.schema, slices.Clone(c.issues)
		}
	}
	sch, issues := compileSchema(s)
	if ok {
		compiledSchemas.put(key, compiled{sch, slices.Clone(issues)})
	}
	return sch, issues
}

// compileSchema compiles s, within the budgets.
func compileSchema(s Schema) (*jsonschema.Schema, []SchemaIssue) {
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	c.UseRegexpEngine(compiledPatterns.compile)
	if err := c.AddResource(schemaResource, map[string]any(s)); err != nil {
		return nil, []SchemaIssue{{Message: err.Error()}}
	}
	sch, err := c.Compile(schemaResource)
	if err != nil {
		return nil, schemaIssues(err)
	}
	return sch, nil
}

func schemaIssues(err error) []SchemaIssue {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			var out []SchemaIssue
			for _, leaf := range leaves(ve) {
				out = append(out, SchemaIssue{Pointer: strings.Join(leaf.InstanceLocation, "."), Message: leafMessage(leaf)})
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	msg := err.Error()
	msg = strings.ReplaceAll(msg, schemaResource+"#", "#")
	msg = strings.ReplaceAll(msg, schemaResource, "the schema")
	var nf *jsonschema.JSONPointerNotFoundError
	if errors.As(err, &nf) {
		ptr := strings.TrimPrefix(nf.URL, schemaResource)
		msg = fmt.Sprintf("$ref %s points at nothing: define it in the schema (e.g. under definitions or $defs)", ptr)
	}
	return []SchemaIssue{{Message: msg}}
}

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func leafMessage(ve *jsonschema.ValidationError) string {
	msg := ve.Error()
	// The library's message starts with a location header line; keep the last line, which says what is wrong.
	if i := strings.LastIndex(msg, "\n"); i >= 0 {
		msg = msg[i+1:]
	}
	return strings.TrimLeft(strings.TrimSpace(msg), "- ")
}

// FirstSchemaError renders an instance validation error from a compiled
// schema as "at <path>: <reason>", naming the first failing location.
func FirstSchemaError(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	for _, leaf := range leaves(ve) {
		loc := "/" + strings.Join(leaf.InstanceLocation, "/")
		parts = append(parts, fmt.Sprintf("at %s: %s", loc, leafMessage(leaf)))
	}
	return strings.Join(parts, "; ")
}
