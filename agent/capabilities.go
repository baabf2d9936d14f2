package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// Resolver finds the registered version a capability URI names (OSSA §7.2
// compatibility, deprecation warnings, sunset). registry.API, so both a local
// *registry.Service and the REST client, implements it.
type Resolver interface {
	Resolve(ctx context.Context, uri string) (registry.Resolution, error)
}

// CheckKind says which part of the manifest a CapabilityCheck is about.
type CheckKind string

const (
	// CheckDeclared is an entry of spec.capabilities (OSSA §10.1).
	CheckDeclared CheckKind = "declared"
	// CheckRequired is an entry of spec.required_capabilities (OSSA §10.2).
	CheckRequired CheckKind = "required"
	// CheckBinding is a spec.capability_bindings entry whose key is not a
	// declared capability (bindings of declared ones are reported on the
	// declared capability's check).
	CheckBinding CheckKind = "binding"
)

// Status is the outcome of a CapabilityCheck.
type Status string

const (
	StatusResolved  Status = "resolved"  // the registry has a compatible version (it may carry deprecation warnings)
	StatusMissing   Status = "missing"   // the registry has no compatible version, or only ones past their sunset
	StatusInvalid   Status = "invalid"   // the entry is not a capability URI, or a binding entry is wrong
	StatusInline    Status = "inline"    // an inline capability object rather than a URI: nothing to resolve
	StatusUnchecked Status = "unchecked" // no registry was given: only the URI's syntax was checked
	StatusError     Status = "error"     // the registry could not answer (unreachable, timed out, …)
)

// CapabilityCheck is the OSSA §10 verdict on one capability an agent
// declares (spec.capabilities[i]) or requires (spec.required_capabilities[i]),
// or on a capability_bindings entry that names no declared capability.
//
// For a declared capability, Bindings are the effective bindings for this
// agent: the manifest's capability_bindings entry for it when there is one
// (it replaces the registered bindings as a whole; BindingSource "agent"),
// else the registered version's (BindingSource "registry"), else nil.
// Issues lists every problem found for the entry, with path and position;
// a missing or invalid capability is an error, advice is a warning.
type CapabilityCheck struct {
	Kind   CheckKind `json:"kind"`
	Path   string    `json:"path"` // e.g. spec.capabilities[2]
	Line   int       `json:"line,omitempty"`
	Column int       `json:"column,omitempty"`
	URI    string    `json:"uri,omitempty"`    // as written
	Name   string    `json:"name,omitempty"`   // an inline capability's name
	Reason string    `json:"reason,omitempty"` // required capabilities: why the agent needs it
	Status Status    `json:"status"`

	ResolvedURI string             `json:"resolved_uri,omitempty"` // the chosen version's URI (@MAJOR.MINOR)
	Version     string             `json:"version,omitempty"`      // its full version
	Error       string             `json:"error,omitempty"`        // why it is missing, invalid or unchecked
	Warnings    []registry.Warning `json:"warnings,omitempty"`     // deprecation notices from the registry

	Bindings      *capability.Bindings `json:"bindings,omitempty"`
	BindingSource string               `json:"binding_source,omitempty"` // "agent" or "registry"

	Issues []capability.Issue `json:"issues,omitempty"`
}

// Binding sources of CapabilityCheck.BindingSource.
const (
	BindingsFromAgent    = "agent"
	BindingsFromRegistry = "registry"
)

// resolveTimeout bounds each registry lookup.
const resolveTimeout = 10 * time.Second

// CheckCapabilities applies OSSA §10 to m: every spec.capabilities URI must
// parse and resolve in reg; every spec.capability_bindings key must be a
// declared capability URI and its value valid bindings (checked as
// capability.Validate checks a definition's bindings, against the resolved
// definition's input schema and error codes when there is one); every
// spec.required_capabilities entry must name a URI that resolves, and should
// say why. With a nil reg nothing is resolved (StatusUnchecked) but
// everything else is checked. Checks come in manifest order: declared,
// stray bindings, required.
func CheckCapabilities(ctx context.Context, m *Manifest, reg Resolver) []CapabilityCheck {
	c := &checker{ctx: ctx, m: m, reg: reg, cache: map[string]resolved{}}
	spec, _ := m.Document["spec"].(map[string]any)
	if spec == nil {
		return nil
	}
	c.declared(spec)
	c.bindings(spec)
	c.required(spec)
	return c.checks
}

// CheckIssues returns the issues of every check, sorted by position.
func CheckIssues(checks []CapabilityCheck) []capability.Issue {
	var out []capability.Issue
	for _, ch := range checks {
		out = append(out, ch.Issues...)
	}
	sortIssues(out)
	return out
}

type resolved struct {
	res registry.Resolution
	err error
}

type checker struct {
	ctx      context.Context
	m        *Manifest
	reg      Resolver
	cache    map[string]resolved
	regDown  error // set after the registry failed to answer: later lookups are not attempted
	checks   []CapabilityCheck
	declByID map[string]int // canonical URI → index in checks
}

func (c *checker) issue(ch *CapabilityCheck, sev capability.Severity, rule, path, format string, args ...any) {
	c.issueAt(ch, sev, rule, path, true, format, args...)
}

// issueAt reports at the value of path, or at its key when atValue is false.
func (c *checker) issueAt(ch *CapabilityCheck, sev capability.Severity, rule, path string, atValue bool, format string, args ...any) {
	ch.Issues = append(ch.Issues, c.m.issue(sev, rule, path, atValue, format, args...))
}

// invalid marks ch invalid, why being its error, and reports the issue.
func (c *checker) invalid(ch *CapabilityCheck, why string, sev capability.Severity, rule, path, format string, args ...any) {
	ch.Status = StatusInvalid
	ch.Error = why
	c.issue(ch, sev, rule, path, format, args...)
}

func (c *checker) newCheck(kind CheckKind, path string) CapabilityCheck {
	line, col := c.m.locate(path, true)
	return CapabilityCheck{Kind: kind, Path: path, Line: line, Column: col}
}

// canonical returns the normalised form of a capability URI, or "" when it
// does not parse.
func canonical(uri string) string {
	u, err := capability.ParseURI(strings.TrimSpace(uri))
	if err != nil {
		return ""
	}
	return u.String()
}

func (c *checker) declared(spec map[string]any) {
	c.declByID = map[string]int{}
	raw, ok := spec["capabilities"]
	if !ok {
		return
	}
	list, ok := raw.([]any)
	if !ok {
		ch := c.newCheck(CheckDeclared, "spec.capabilities")
		c.invalid(&ch, "not a list of capability URIs", capability.SeverityWarning, RuleOSSA10, ch.Path, "is %s, not a list of capability URIs (OSSA §10.1, e.g. - ossa:security/scan_vulnerabilities@1.0): caphub cannot resolve it", describe(raw))
		c.checks = append(c.checks, ch)
		return
	}
	for i, entry := range list {
		path := indexPath("spec.capabilities", i)
		ch := c.newCheck(CheckDeclared, path)
		switch x := entry.(type) {
		case string:
			ch.URI = x
		case map[string]any:
			if u, ok := x["uri"].(string); ok {
				ch.URI = u
				break
			}
			ch.Name, _ = x["name"].(string)
			ch.Status = StatusInline
			c.checks = append(c.checks, ch)
			continue
		default:
			c.invalid(&ch, "not a capability URI", capability.SeverityError, capability.RuleURI, path, "is %s: list capability URIs such as ossa:security/scan_vulnerabilities@1.0", describe(entry))
			c.checks = append(c.checks, ch)
			continue
		}
		if !c.parse(&ch, path) {
			c.checks = append(c.checks, ch)
			continue
		}
		id := canonical(ch.URI)
		if first, dup := c.declByID[id]; dup {
			c.issue(&ch, capability.SeverityWarning, RuleOSSA10, path, "%s is already declared at %s: remove one", ch.URI, c.checks[first].Path)
		}
		c.resolve(&ch, path)
		c.checks = append(c.checks, ch)
		if _, dup := c.declByID[id]; !dup {
			c.declByID[id] = len(c.checks) - 1
		}
	}
}

// parse checks ch.URI; false when it is not a capability URI.
func (c *checker) parse(ch *CapabilityCheck, path string) bool {
	u, err := capability.ParseURI(strings.TrimSpace(ch.URI))
	if err != nil {
		c.invalid(ch, err.Error(), capability.SeverityError, capability.RuleURI, path, "%v", err)
		return false
	}
	if !u.HasVersion {
		c.issue(ch, capability.SeverityWarning, RuleOSSA10, path,
			"%s has no version: pin @MAJOR.MINOR (e.g. %s@1.0) so that a new major version cannot change what the agent gets", ch.URI, u.Base())
	}
	return true
}

// resolve asks the registry for ch.URI and records the outcome.
func (c *checker) resolve(ch *CapabilityCheck, path string) {
	if c.reg == nil {
		ch.Status = StatusUnchecked
		ch.Error = "no registry given"
		return
	}
	uri := strings.TrimSpace(ch.URI)
	r, ok := c.cache[uri]
	if !ok {
		if c.regDown != nil {
			r.err = c.regDown
		} else {
			ctx, cancel := context.WithTimeout(c.ctx, resolveTimeout)
			r.res, r.err = c.reg.Resolve(ctx, uri)
			cancel()
		}
		c.cache[uri] = r
	}
	var sunset *registry.SunsetError
	switch {
	case r.err == nil:
		ch.Status = StatusResolved
		ch.ResolvedURI, ch.Version, ch.Warnings = r.res.URI, r.res.Version, r.res.Warnings
		for _, w := range r.res.Warnings {
			c.issue(ch, capability.SeverityWarning, RuleRegistry, path, "%s resolves to %s (%s) with a warning: %s", ch.URI, r.res.URI, r.res.Version, w.Message)
		}
	case errors.Is(r.err, registry.ErrNotFound), errors.As(r.err, &sunset):
		ch.Status = StatusMissing
		ch.Error = r.err.Error()
		if ch.Kind == CheckRequired {
			why := ""
			if ch.Reason != "" {
				why = fmt.Sprintf(" (the agent needs it for: %s)", ch.Reason)
			}
			c.issue(ch, capability.SeverityError, RuleRegistry, path, "required capability %s is missing from the registry%s: %v", ch.URI, why, r.err)
		} else {
			c.issue(ch, capability.SeverityError, RuleRegistry, path, "capability %s is missing from the registry: %v", ch.URI, r.err)
		}
	case errors.Is(r.err, registry.ErrInvalid):
		c.invalid(ch, r.err.Error(), capability.SeverityError, RuleRegistry, path, "the registry refuses %s: %v", ch.URI, r.err)
	default:
		if c.regDown == nil {
			c.regDown = r.err
		}
		ch.Status = StatusError
		ch.Error = r.err.Error()
		c.issue(ch, capability.SeverityWarning, RuleRegistry, path, "%s was not checked: the registry did not answer: %v", ch.URI, r.err)
	}
}

// bindings checks spec.capability_bindings and sets the effective bindings
// of every declared capability.
func (c *checker) bindings(spec map[string]any) {
	raw, present := spec["capability_bindings"]
	overrides, isMap := raw.(map[string]any)
	if present && !isMap {
		ch := c.newCheck(CheckBinding, "spec.capability_bindings")
		c.invalid(&ch, "not a mapping", capability.SeverityError, RuleOSSA10, ch.Path,
			"is %s: write a mapping from declared capability URIs to bindings (OSSA §10.1), e.g. \"ossa:security/scan_vulnerabilities@1.0\": {mcp: {server: trivy, tool: scan}}", describe(raw))
		c.checks = append(c.checks, ch)
	}
	for _, key := range slices.Sorted(maps.Keys(overrides)) {
		path := keyPath("spec.capability_bindings", key)
		idx, declared := c.declByID[canonical(key)]
		var target *CapabilityCheck
		if declared {
			target = &c.checks[idx]
		} else {
			ch := c.newCheck(CheckBinding, path)
			ch.URI = key
			ch.Status = StatusInvalid
			if _, err := capability.ParseURI(strings.TrimSpace(key)); err != nil {
				ch.Error = err.Error()
				c.issue(&ch, capability.SeverityError, capability.RuleURI, path, "key: %v", err)
			} else {
				ch.Error = "not a declared capability"
				c.issue(&ch, capability.SeverityError, RuleOSSA10, path,
					"binds %s, which spec.capabilities does not declare: add it to spec.capabilities, or remove this binding (declared: %s)", key, c.declaredList())
			}
			c.checks = append(c.checks, ch)
			target = &c.checks[len(c.checks)-1]
		}
		b, ok := c.decodeBindings(target, path, overrides[key])
		if !ok {
			continue
		}
		c.checkBindings(target, path, b)
		if declared {
			target.Bindings, target.BindingSource = b, BindingsFromAgent
		}
	}
	for i := range c.checks {
		ch := &c.checks[i]
		if ch.Kind == CheckDeclared && ch.Bindings == nil && ch.Status == StatusResolved {
			if res, ok := c.cache[strings.TrimSpace(ch.URI)]; ok {
				b := res.res.Record.Definition.Bindings
				ch.Bindings, ch.BindingSource = &b, BindingsFromRegistry
			}
		}
	}
}

func (c *checker) declaredList() string {
	var out []string
	for _, ch := range c.checks {
		if ch.Kind == CheckDeclared && ch.URI != "" && ch.Status != StatusInvalid {
			out = append(out, ch.URI)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// decodeBindings reads one capability_bindings value into capability.Bindings.
func (c *checker) decodeBindings(ch *CapabilityCheck, path string, v any) (*capability.Bindings, bool) {
	if _, ok := v.(map[string]any); !ok {
		c.issue(ch, capability.SeverityError, RuleBinding, path,
			"is %s: write the bindings as a mapping, e.g. {mcp: {server: trivy, tool: scan}} (binding types: %s)", describe(v), strings.Join(capability.BindingOrder, ", "))
		return nil, false
	}
	data, err := json.Marshal(v)
	if err != nil {
		c.issue(ch, capability.SeverityError, RuleBinding, path, "cannot be read as bindings: %v", err)
		return nil, false
	}
	var b capability.Bindings
	if err := json.Unmarshal(data, &b); err != nil {
		sub, msg := explainJSONError(err)
		p := path
		if sub != "" {
			p = path + "." + sub
		}
		c.issue(ch, capability.SeverityError, RuleBinding, p, "%s", msg)
		return nil, false
	}
	return &b, true
}

// explainJSONError turns an encoding/json type error into a field path
// (relative to the bindings) and a message.
func explainJSONError(err error) (string, string) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.String()
		switch {
		case want == "string":
			want = "a string"
		case strings.HasPrefix(want, "map["):
			want = "a mapping of strings"
		case strings.HasPrefix(want, "[]"):
			want = "a list"
		case strings.HasPrefix(want, "capability."), strings.HasPrefix(want, "*capability."):
			want = "a mapping"
		}
		return te.Field, fmt.Sprintf("must be %s, found a %s", want, te.Value)
	}
	return "", "cannot be read as bindings: " + err.Error()
}

// checkBindings runs the binding rules of capability.Validate on b, as the
// bindings of the resolved definition when there is one (so field mappings
// are checked against its input schema and error mappings against its error
// codes). Without a definition, a stand-in whose input fields and error codes
// are exactly those b mentions lets every other rule run.
func (c *checker) checkBindings(ch *CapabilityCheck, path string, b *capability.Bindings) {
	var d capability.Definition
	if ch.Status == StatusResolved {
		d = c.cache[strings.TrimSpace(ch.URI)].res.Record.Definition
	} else {
		d = standIn(ch.URI, b)
	}
	d.Bindings = *b
	for _, iss := range capability.Validate(&d) {
		if iss.Path != "bindings" && !strings.HasPrefix(iss.Path, "bindings.") {
			continue
		}
		p := path + strings.TrimPrefix(iss.Path, "bindings")
		c.issueAt(ch, iss.Severity, RuleBinding, p, false, "%s", iss.Message)
	}
}

// standIn is a definition that satisfies every rule except the binding ones
// for a capability that did not resolve.
func standIn(uri string, b *capability.Bindings) capability.Definition {
	props := map[string]any{}
	add := func(name string) {
		if name != "" {
			props[name] = map[string]any{}
		}
	}
	var errs []capability.ErrorDef
	if m := b.MCP; m != nil {
		for k := range m.Mapping {
			add(k)
		}
		for _, code := range m.ErrorMapping {
			errs = append(errs, capability.ErrorDef{Code: code, Description: "stand-in"})
		}
	}
	if g := b.GRPC; g != nil {
		for k := range g.Mapping {
			add(k)
		}
	}
	templates := []string{}
	if h := b.HTTP; h != nil {
		templates = append(templates, h.URL, h.BodyTemplate)
		for _, v := range h.Headers {
			templates = append(templates, v)
		}
	}
	if cl := b.CLI; cl != nil {
		templates = append(templates, cl.Command)
	}
	for _, t := range templates {
		for _, p := range capability.Placeholders(t) {
			root, _, _ := strings.Cut(p, ".")
			add(root)
		}
	}
	d := capability.Definition{URI: uri, Input: capability.Schema{"type": "object", "properties": props}, Output: capability.Schema{}, Errors: errs}
	if u, err := capability.ParseURI(strings.TrimSpace(uri)); err == nil {
		d.Name, d.Domain = u.Name, u.Domain
	}
	return d
}

func (c *checker) required(spec map[string]any) {
	raw, ok := spec["required_capabilities"]
	if !ok {
		return
	}
	list, ok := raw.([]any)
	if !ok {
		ch := c.newCheck(CheckRequired, "spec.required_capabilities")
		c.invalid(&ch, "not a list", capability.SeverityError, RuleOSSA10, ch.Path, "is %s: write a list of {uri, reason} entries (OSSA §10.2), e.g. - {uri: \"ossa:a2a/delegate@1.0\", reason: \"Delegation to specialized workers\"}", describe(raw))
		c.checks = append(c.checks, ch)
		return
	}
	for i, entry := range list {
		path := indexPath("spec.required_capabilities", i)
		ch := c.newCheck(CheckRequired, path)
		uriPath := path
		switch x := entry.(type) {
		case string:
			ch.URI = x
			c.issue(&ch, capability.SeverityWarning, RuleOSSA10, path, "gives no reason: write {uri: %q, reason: \"why the agent needs it\"} (OSSA §10.2)", x)
		case map[string]any:
			uriPath = keyPath(path, "uri")
			u, hasURI := x["uri"].(string)
			ch.URI = u
			ch.Reason, _ = x["reason"].(string)
			if !hasURI {
				c.invalid(&ch, "no uri", capability.SeverityError, RuleOSSA10, uriPath, "missing: give the required capability's URI, e.g. uri: \"ossa:state/checkpoint@1.0\"")
				c.checks = append(c.checks, ch)
				continue
			}
			if strings.TrimSpace(ch.Reason) == "" {
				c.issue(&ch, capability.SeverityWarning, RuleOSSA10, keyPath(path, "reason"), "missing: say why the agent needs %s (OSSA §10.2)", u)
			}
		default:
			c.invalid(&ch, "not a {uri, reason} entry", capability.SeverityError, RuleOSSA10, path, "is %s: write {uri: ..., reason: ...} (OSSA §10.2)", describe(entry))
			c.checks = append(c.checks, ch)
			continue
		}
		if c.parse(&ch, uriPath) {
			c.resolve(&ch, uriPath)
		}
		c.checks = append(c.checks, ch)
	}
}
