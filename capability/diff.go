package capability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// This file classifies the differences between two versions of a capability
// into the version bump they need (OSSA §6.2/§6.3, CCOS §4.3, with the decisions below),
// so that the registry can refuse a new version whose declared bump is too
// small and say which changes need which bump.
//
// Decisions where the specifications are silent or loose:
//
//   - Removing an optional input field is major, not minor: callers that still
//     send it may be rejected (when the object is closed, or by the binding's
//     upstream), and at best the value they send is now silently ignored.
//   - Changing the set of types of a field is major in both directions, as
//     OSSA §6.2 says ("changing type of existing field"), even when the new set
//     is wider (adding "null").
//   - Value restrictions (enum, const, additionalProperties, numeric, string
//     and array bounds, pattern, format, multipleOf, uniqueItems) are
//     classified the same way on both sides: restricting is major and relaxing
//     is minor. For output enums the issue asks for exactly that; the other
//     output restrictions follow the same rule so that there is one rule.
//     Fields (presence and required-ness) follow per-side rules.
//   - An input default changing is minor (callers that omit the field get a
//     different value); an output default is documentation, so patch.
//   - Schema keywords Diff does not analyse (not, if/then/else,
//     patternProperties, dependentRequired, ...) are compared for equality and
//     any change is major: the gate fails safe. allOf/anyOf/oneOf are compared
//     branch by branch when the number of branches is unchanged.
//   - A local $ref is resolved before comparing. Each pair of (old, new)
//     referenced schemas is compared once, so a definition shared by several
//     fields reports its changes at the first path that uses it (walking
//     properties in name order), and recursive schemas terminate.
//     Definitions that no field references are not compared.
//   - Effects, permissions and the tools of a bundle: adding is major for
//     effects and permissions (CCOS: broadened authority), minor for tools;
//     removing is minor for effects and permissions and major for tools
//     (agents using the bundle lose a tool). ui_required turning on is major
//     (the capability can no longer run headless), turning off is minor.
//   - Unknown top-level fields (Extra) and the metadata fields listed in the
//     brief are patch. Attestation is never reported: it signs the content and
//     changes with every other change.
//   - A 0.x version gets no special treatment: breaking changes need a new
//     major even below 1.0, because Compatible (OSSA §7.2) treats 0.1 and 0.2
//     as compatible.

// Bump is the size of a version increment a change needs, or that a new
// version declares. Bumps are ordered: BumpNone < BumpPatch < BumpMinor <
// BumpMajor.
type Bump int

// The bumps, smallest first.
const (
	BumpNone  Bump = iota // nothing changed
	BumpPatch             // documentation and metadata only
	BumpMinor             // backward-compatible additions (OSSA §6.3)
	BumpMajor             // breaking changes (OSSA §6.2)
)

var diffBumpNames = [...]string{"none", "patch", "minor", "major"}

// String returns "none", "patch", "minor" or "major".
func (b Bump) String() string {
	if b >= BumpNone && b <= BumpMajor {
		return diffBumpNames[b]
	}
	return "Bump(" + strconv.Itoa(int(b)) + ")"
}

// MarshalText writes the bump's name, so that JSON and YAML show "major"
// rather than 3.
func (b Bump) MarshalText() ([]byte, error) {
	if b < BumpNone || b > BumpMajor {
		return nil, fmt.Errorf("capability: invalid bump %d", int(b))
	}
	return []byte(diffBumpNames[b]), nil
}

// UnmarshalText reads a bump's name, so that a DiffReport received as JSON
// (by the REST client) decodes back.
func (b *Bump) UnmarshalText(text []byte) error {
	for i, name := range diffBumpNames {
		if string(text) == name {
			*b = Bump(i)
			return nil
		}
	}
	return fmt.Errorf("capability: invalid bump %q: want none, patch, minor or major", text)
}

// Change is one difference between two versions of a capability.
type Change struct {
	// Path locates the change: a JSON-Schema path such as
	// "input.properties.filters.properties.severity" or
	// "output.properties.results.items.properties.id", "errors[SCAN_FAILED]",
	// "effects", "bindings.mcp", or a top-level field name.
	Path string `json:"path"`
	// Kind is a short machine name: "input_required_added",
	// "input_field_removed", "type_changed", "enum_narrowed",
	// "output_field_removed", "error_removed", "effects_broadened",
	// "binding_added", "description_changed", ...
	Kind string `json:"kind"`
	// Description says what changed and why it needs Bump.
	Description string `json:"description"`
	Bump        Bump   `json:"bump"`
}

// DiffReport lists every change between an old and a new version of a
// capability and whether the new version's number is big enough for them.
type DiffReport struct {
	Old string `json:"old"` // the old definition's full version
	New string `json:"new"` // the new definition's full version

	// Changes are sorted by Path, then Kind. Never nil.
	Changes []Change `json:"changes"`
	// Required is the largest bump any change needs (BumpNone without changes).
	Required Bump `json:"required"`
	// Declared is the bump the two versions show: the first of major, minor
	// and patch that differs (patch when only the pre-release differs), none
	// when the versions have equal precedence.
	Declared Bump `json:"declared"`
	// Satisfied is true when new is a different capability version of the
	// same capability, higher than old and with Declared >= Required; or when
	// nothing changed and the version is the same.
	Satisfied bool `json:"satisfied"`
	// Problem says, when not Satisfied, what is wrong and which version to use
	// instead.
	Problem string `json:"problem,omitempty"`
}

// Diff compares two versions of a capability: it lists the changes from old
// to new, the bump they need, the bump new's version declares, and whether
// that is enough.
//
// Diff does not modify its arguments. It expects schemas as the readers
// produce them (decoded JSON or YAML, see Normalize) but compares numbers by
// value, so 1 and 1.0 are equal. A nil definition is reported as a Problem.
func Diff(old, new *Definition) *DiffReport {
	var problems []string
	if old == nil {
		problems = append(problems, "the old definition is missing")
		old = &Definition{}
	}
	if new == nil {
		problems = append(problems, "the new definition is missing")
		new = &Definition{}
	}
	r := &DiffReport{Old: old.Version, New: new.Version}

	d := &differ{}
	d.definitions(old, new)
	slices.SortStableFunc(d.changes, func(a, b Change) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Description, b.Description)
	})
	r.Changes = d.changes
	if r.Changes == nil {
		r.Changes = []Change{}
	}
	for _, c := range r.Changes {
		r.Required = max(r.Required, c.Bump)
	}

	if p := diffIdentityProblem(old, new); p != "" {
		problems = append(problems, p)
	}
	problems = append(problems, r.versionProblems(old.Version, new.Version)...)
	r.Satisfied = len(problems) == 0
	r.Problem = strings.Join(problems, "; ")
	return r
}

// versionProblems sets r.Declared from the two versions and returns what is
// wrong with new's version given r.Required.
func (r *DiffReport) versionProblems(oldVersion, newVersion string) []string {
	ov, oerr := ParseVersion(oldVersion)
	nv, nerr := ParseVersion(newVersion)
	if oerr != nil || nerr != nil {
		var problems []string
		if oerr != nil {
			problems = append(problems, "old version: "+oerr.Error())
		}
		if nerr != nil {
			problems = append(problems, "new version: "+nerr.Error())
		}
		return problems
	}
	r.Declared = declaredBump(ov, nv)
	if p := r.orderProblem(ov, nv, oldVersion, newVersion); p != "" {
		return []string{p}
	}
	return nil
}

// declaredBump is the bump from ov to nv: the highest component that
// differs (a pre-release change is a patch).
func declaredBump(ov, nv Version) Bump {
	switch {
	case ov.Major != nv.Major:
		return BumpMajor
	case ov.Minor != nv.Minor:
		return BumpMinor
	case ov.Patch != nv.Patch || ov.Compare(nv) != 0:
		return BumpPatch
	}
	return BumpNone
}

// orderProblem says why the new version does not follow the old one for
// the changes found, "" when it does.
func (r *DiffReport) orderProblem(ov, nv Version, oldVersion, newVersion string) string {
	// A suggestion always bumps at least the patch: a new version must be
	// higher than the old one even when nothing changed.
	use := diffNextVersion(ov, max(r.Required, BumpPatch))
	switch c := nv.Compare(ov); {
	case c < 0:
		return fmt.Sprintf("version %s is lower than the old version %s: a new version must be higher; use %s",
			newVersion, oldVersion, use)
	case c == 0 && len(r.Changes) == 0 && slices.Equal(ov.Build, nv.Build):
		return "" // the same version, unchanged: registering it again is a no-op
	case c == 0 && len(r.Changes) == 0:
		return fmt.Sprintf("version %s differs from %s only in build metadata, which does not order versions: use %s",
			newVersion, oldVersion, use)
	case c == 0:
		return fmt.Sprintf("version %s has the same precedence as the old version %s but the changes need a %s bump: use %s",
			newVersion, oldVersion, r.Required, use)
	case r.Declared < r.Required:
		return fmt.Sprintf("version %s is a %s bump but the changes need a %s bump: use %s",
			newVersion, r.Declared, r.Required, use)
	}
	return ""
}

// diffNextVersion returns the smallest release after v with a bump of b.
func diffNextVersion(v Version, b Bump) string {
	switch b {
	case BumpMajor:
		return fmt.Sprintf("%d.0.0", v.Major+1)
	case BumpMinor:
		return fmt.Sprintf("%d.%d.0", v.Major, v.Minor+1)
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch+1)
}

// diffIdentityProblem reports when old and new are not the same capability
// (scheme, domain, name): comparing them as versions would be meaningless.
func diffIdentityProblem(old, new *Definition) string {
	os, od, on := diffIdentity(old)
	ns, nd, nn := diffIdentity(new)
	if os == ns && od == nd && on == nn {
		return ""
	}
	return fmt.Sprintf("old and new are different capabilities (%s and %s): a version can only be compared with another version of the same scheme, domain and name; register the new one under its own name, or keep the old name",
		diffShowIdentity(os, od, on), diffShowIdentity(ns, nd, nn))
}

// diffIdentity returns a definition's scheme, domain and name, taking the
// scheme (and any missing domain or name) from its URI.
func diffIdentity(d *Definition) (scheme, domain, name string) {
	domain, name = d.Domain, d.Name
	if u, err := ParseURI(d.URI); err == nil {
		scheme = u.Scheme
		if domain == "" {
			domain = u.Domain
		}
		if name == "" {
			name = u.Name
		}
	} else if s, _, ok := strings.Cut(d.URI, ":"); ok {
		scheme = s
	}
	return scheme, domain, name
}

func diffShowIdentity(scheme, domain, name string) string {
	if scheme == "" {
		return domain + "/" + name
	}
	return scheme + ":" + domain + "/" + name
}

// differ collects the changes between two definitions.
type differ struct {
	changes []Change
}

func (d *differ) add(path, kind string, bump Bump, format string, args ...any) {
	d.changes = append(d.changes, Change{Path: path, Kind: kind, Description: fmt.Sprintf(format, args...), Bump: bump})
}

// definitions compares every field of the model except URI, Version and
// Attestation.
func (d *differ) definitions(o, n *Definition) {
	// Documentation and lifecycle metadata: patch.
	for _, f := range []struct{ name, old, new, why string }{
		{"title", o.Title, n.Title, "documentation only"},
		{"description", o.Description, n.Description, "documentation only"},
		{"documentation_url", o.DocumentationURL, n.DocumentationURL, "documentation only"},
		{"system_prompt_addition", o.SystemPromptAddition, n.SystemPromptAddition, "prompt text; the contract is unchanged"},
		{"stability", o.Stability, n.Stability, "lifecycle metadata; the contract is unchanged"},
		{"deprecated_by", o.DeprecatedBy, n.DeprecatedBy, "lifecycle metadata; the contract is unchanged"},
		{"sunset_date", o.SunsetDate, n.SunsetDate, "lifecycle metadata; the contract is unchanged"},
		{"migration_guide", o.MigrationGuide, n.MigrationGuide, "lifecycle metadata; the contract is unchanged"},
	} {
		if f.old != f.new {
			d.add(f.name, f.name+"_changed", BumpPatch, "%s changed from %s to %s (%s)", f.name, diffShowText(f.old), diffShowText(f.new), f.why)
		}
	}
	for _, f := range []struct {
		name     string
		old, new []string
	}{
		{"keywords", o.Keywords, n.Keywords},
		{"domains", o.Domains, n.Domains},
		{"categories", o.Categories, n.Categories},
		{"intents", o.Intents, n.Intents},
	} {
		if added, removed := diffStringSets(f.old, f.new); len(added)+len(removed) > 0 {
			d.add(f.name, f.name+"_changed", BumpPatch, "%s changed (%s): discovery metadata; the contract is unchanged", f.name, diffAddedRemoved(added, removed))
		}
	}
	for _, f := range []struct {
		name     string
		old, new any
	}{
		{"display", o.Display, n.Display},
		{"metadata", o.Metadata, n.Metadata},
		{"provenance", o.Provenance, n.Provenance},
		{"examples", o.Examples, n.Examples},
	} {
		if !diffSameJSON(f.old, f.new) {
			d.add(f.name, f.name+"_changed", BumpPatch, "%s changed: documentation and metadata only; the contract is unchanged", f.name)
		}
	}
	for _, k := range diffUnionKeys(o.Extra, n.Extra) {
		ov, oOK := o.Extra[k]
		nv, nOK := n.Extra[k]
		if oOK != nOK || !diffSameJSON(ov, nv) {
			d.add(k, "field_changed", BumpPatch, "field %q, which caphub does not model, changed: kept as metadata, so patch", k)
		}
	}

	// The contract.
	newSchemaDiffer(d, true, o.Input, n.Input).compare("input", diffRoot(o.Input), diffRoot(n.Input), 0)
	newSchemaDiffer(d, false, o.Output, n.Output).compare("output", diffRoot(o.Output), diffRoot(n.Output), 0)
	d.errors(o.Errors, n.Errors)

	// Authority (CCOS §4.3: broadening effects or permissions is breaking).
	d.authority("effects", o.Effects, n.Effects)
	d.authority("permissions", o.Permissions, n.Permissions)
	if o.UIRequired != n.UIRequired {
		if n.UIRequired {
			d.add("ui_required", "ui_required_added", BumpMajor, "the capability now requires a user interface: callers running without one can no longer use it")
		} else {
			d.add("ui_required", "ui_required_removed", BumpMinor, "the capability no longer requires a user interface: every caller that could use it still can")
		}
	}
	if added, removed := diffStringSets(o.Tools, n.Tools); len(added)+len(removed) > 0 {
		if len(removed) > 0 {
			d.add("tools", "tools_removed", BumpMajor, "the bundle no longer provides %s: agents that use the bundle lose those tools", diffList(removed))
		}
		if len(added) > 0 {
			d.add("tools", "tools_added", BumpMinor, "the bundle now also provides %s: additive", diffList(added))
		}
	}

	d.bindings(o.Bindings, n.Bindings)
}

// diffRoot turns a nil root schema into nil (anything) and keeps the rest; a
// Schema is a map, so this only normalises the interface value.
func diffRoot(s Schema) any {
	if s == nil {
		return nil
	}
	return s
}

// authority compares a list of effects or permissions: anything new is a
// broadening (major), removals alone narrow it (minor).
func (d *differ) authority(name string, old, new []string) {
	added, removed := diffStringSets(old, new)
	if len(added) > 0 {
		d.add(name, name+"_broadened", BumpMajor, "%s broadened with %s: callers and policies that approved the old %s did not approve these (CCOS §4.3)", name, diffList(added), name)
	}
	if len(removed) > 0 {
		d.add(name, name+"_narrowed", BumpMinor, "%s narrowed, %s removed: the capability needs less than before", name, diffList(removed))
	}
}

// errors compares error definitions by code.
func (d *differ) errors(old, new []ErrorDef) {
	om, nm := diffErrorsByCode(old), diffErrorsByCode(new)
	for _, code := range diffUnionKeys(om, nm) {
		o, oOK := om[code]
		n, nOK := nm[code]
		path := "errors[" + code + "]"
		switch {
		case !nOK:
			d.add(path, "error_removed", BumpMajor, "error code %s was removed: callers that handle it will never see it again and may get another code instead (OSSA §6.2: changing error codes)", code)
		case !oOK:
			d.add(path, "error_added", BumpMinor, "new error code %s: additive (OSSA §6.3), though callers may not handle it specially yet", code)
		default:
			if o.Retryable != n.Retryable {
				d.add(path, "error_changed", BumpMajor, "error %s changed retryable from %t to %t: callers' retry behaviour depends on it (OSSA §6.2: changing error codes)", code, o.Retryable, n.Retryable)
			}
			if o.Description != n.Description {
				d.add(path, "error_description_changed", BumpPatch, "description of error %s changed: documentation only", code)
			}
			if !diffSameJSON(o.Extra, n.Extra) {
				d.add(path, "error_metadata_changed", BumpPatch, "fields of error %s that caphub does not model changed (%s): metadata only", code, strings.Join(diffChangedKeys(o.Extra, n.Extra), ", "))
			}
		}
	}
}

// diffErrorsByCode indexes errors by code; the first of duplicate codes wins
// (Validate reports duplicates).
func diffErrorsByCode(errs []ErrorDef) map[string]ErrorDef {
	m := make(map[string]ErrorDef, len(errs))
	for _, e := range errs {
		if _, dup := m[e.Code]; !dup {
			m[e.Code] = e
		}
	}
	return m
}

// bindings compares bindings by type: adding one is minor (OSSA §6.3),
// removing one is minor too (callers keep the same contract and the invoker
// falls through to the others), changing one is patch.
func (d *differ) bindings(old, new Bindings) {
	ot, nt := old.Types(), new.Types()
	for _, typ := range BindingOrder {
		d.binding(typ, slices.Contains(ot, typ), slices.Contains(nt, typ), diffBindingValue(old, typ), diffBindingValue(new, typ), len(nt))
	}
	for _, typ := range diffUnionKeys(old.Extra, new.Extra) {
		ov, oOK := old.Extra[typ]
		nv, nOK := new.Extra[typ]
		d.binding(typ, oOK, nOK, ov, nv, len(nt))
	}
}

func (d *differ) binding(typ string, oOK, nOK bool, ov, nv any, remaining int) {
	path := "bindings." + typ
	switch {
	case oOK && !nOK:
		note := ""
		if remaining == 0 {
			note = "; note that the new version declares no binding at all, so it cannot be invoked until one is added"
		}
		d.add(path, "binding_removed", BumpMinor, "the %s binding was removed: the contract (input, output, errors) is unchanged and the invoker uses the remaining bindings%s", typ, note)
	case !oOK && nOK:
		d.add(path, "binding_added", BumpMinor, "new %s binding: another way to execute the same contract (OSSA §6.3: adding a new binding type)", typ)
	case oOK && nOK && !diffSameJSON(ov, nv):
		d.add(path, "binding_changed", BumpPatch, "the %s binding changed (%s): how the capability is executed, not its contract", typ, strings.Join(diffChangedKeys(ov, nv), ", "))
	}
}

// diffBindingValue returns the binding of type typ (a typed nil pointer when
// absent; only used when present).
func diffBindingValue(b Bindings, typ string) any {
	switch typ {
	case BindingNative:
		return b.Native
	case BindingMCP:
		return b.MCP
	case BindingHTTP:
		return b.HTTP
	case BindingGRPC:
		return b.GRPC
	case BindingCLI:
		return b.CLI
	case BindingDelegation:
		return b.Delegation
	}
	return b.Extra[typ]
}

// Schemas.

// diffMaxDepth bounds how deep the schema walk goes. Decoded JSON cannot be
// deeper than its text and $ref cycles are cut by the seen set, so this only
// stops schemas built in Go with a map that contains itself.
const diffMaxDepth = 256

// diffMaxRefHops bounds a chain of $refs that point at $refs.
const diffMaxRefHops = 32

// Identities of schemas that are not maps, for the seen set.
const (
	diffIDAnything uintptr = 1 + iota // missing or true
	diffIDNothing                     // false
	diffIDInvalid                     // neither a map nor a boolean
)

// schemaDiffer compares one side (input or output) of two definitions.
type schemaDiffer struct {
	d                *differ
	input            bool
	oldRoot, newRoot Schema
	// seen holds the (old, new) pairs of schemas reached through a $ref that
	// were already compared; see resolve for the identities.
	seen map[[2]uintptr]struct{}
}

func newSchemaDiffer(d *differ, input bool, oldRoot, newRoot Schema) *schemaDiffer {
	return &schemaDiffer{d: d, input: input, oldRoot: oldRoot, newRoot: newRoot, seen: map[[2]uintptr]struct{}{}}
}

// schemaNode is a schema after $ref resolution.
type schemaNode struct {
	m       map[string]any // keywords; nil for "anything"
	nothing bool           // the schema false
	invalid bool           // not a schema: neither a map nor a boolean
	viaRef  bool           // reached through a resolved $ref
	// id identifies what the node is made of: the target map of a $ref (or
	// the outermost $ref with sibling keywords, which are merged in), the map
	// itself otherwise, or a diffID constant. Only schemas in the two
	// documents have ids, so the seen set is finite and the walk terminates.
	id uintptr
}

// resolve turns a schema value into a node, following local $refs into root.
// A $ref that cannot be resolved (another document, a bad pointer, a loop of
// $refs) is left in place and compared as a keyword.
func (s *schemaDiffer) resolve(root Schema, v any) schemaNode {
	switch x := v.(type) {
	case nil:
		return schemaNode{id: diffIDAnything}
	case bool:
		if x {
			return schemaNode{id: diffIDAnything}
		}
		return schemaNode{nothing: true, id: diffIDNothing}
	case map[string]any:
		if _, ok := x["$ref"].(string); !ok {
			return schemaNode{m: x, id: diffMapID(x)}
		}
		var siblings []map[string]any // $ref sites with other keywords, outermost first
		cur := x
		for hop := 0; hop < diffMaxRefHops; hop++ {
			if len(cur) > 1 {
				siblings = append(siblings, cur)
			}
			target, ok := diffPointer(root, cur["$ref"].(string))
			if !ok {
				break
			}
			switch t := target.(type) {
			case map[string]any:
				if _, again := t["$ref"].(string); again {
					cur = t
					continue
				}
				if len(siblings) == 0 {
					return schemaNode{m: t, id: diffMapID(t), viaRef: true}
				}
				return schemaNode{m: diffOverlay(t, siblings), id: diffMapID(siblings[0]), viaRef: true}
			case bool:
				if !t {
					return schemaNode{nothing: true, id: diffIDNothing, viaRef: true}
				}
				if len(siblings) == 0 {
					return schemaNode{id: diffIDAnything, viaRef: true}
				}
				return schemaNode{m: diffOverlay(nil, siblings), id: diffMapID(siblings[0]), viaRef: true}
			}
			break
		}
		return schemaNode{m: x, id: diffMapID(x)}
	}
	return schemaNode{invalid: true, id: diffIDInvalid}
}

// diffOverlay merges the keywords of $ref sites over their target, the
// outermost site winning (as JSON Schema 2019+ applies both; draft-07
// ignores siblings, which rarely differ from the target in practice).
func diffOverlay(target map[string]any, sites []map[string]any) map[string]any {
	m := make(map[string]any, len(target)+4)
	for k, v := range target {
		m[k] = v
	}
	for i := len(sites) - 1; i >= 0; i-- {
		for k, v := range sites[i] {
			if k != "$ref" {
				m[k] = v
			}
		}
	}
	return m
}

// LocalRef returns the value a local $ref ("#", "#/$defs/Name", any
// "#/…" JSON pointer, with ~0/~1 and percent escapes) names in the schema
// root, false when it names nothing there (or is not local). Readers of a
// schema use it to look through the $refs into its own $defs.
func LocalRef(root Schema, ref string) (any, bool) { return diffPointer(root, ref) }

// diffPointer resolves a local reference ("#" or a "#/..." JSON pointer, with
// ~0/~1 and percent escapes) in root.
func diffPointer(root Schema, ref string) (any, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok || root == nil {
		return nil, false
	}
	if frag == "" {
		return root, true
	}
	if frag[0] != '/' {
		return nil, false // an $anchor name: not supported
	}
	var cur any = root
	for _, tok := range strings.Split(frag[1:], "/") {
		if strings.Contains(tok, "%") {
			u, err := url.PathUnescape(tok)
			if err != nil {
				return nil, false
			}
			tok = u
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			if cur, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func diffMapID(m map[string]any) uintptr {
	if m == nil {
		return diffIDAnything
	}
	return reflect.ValueOf(m).Pointer()
}

// restrict records a change that makes fewer values valid: major on either
// side (see the decisions at the top of the file).
func (s *schemaDiffer) restrict(path, kind, format string, args ...any) {
	why := "input that was valid before may now be rejected"
	if !s.input {
		why = "the output may no longer hold values consumers saw before (output restrictions are treated as breaking, like an output enum narrowed)"
	}
	s.d.add(path, kind, BumpMajor, "%s: %s", fmt.Sprintf(format, args...), why)
}

// relax records a change that makes more values valid: minor on either side.
func (s *schemaDiffer) relax(path, kind, format string, args ...any) {
	why := "every input valid before is still valid"
	if !s.input {
		why = "the output may now hold values it could not before (additive, like an output enum widened)"
	}
	s.d.add(path, kind, BumpMinor, "%s: %s", fmt.Sprintf(format, args...), why)
}

// compare compares the schemas ov and nv found at path.
func (s *schemaDiffer) compare(path string, ov, nv any, depth int) {
	o, n := s.resolve(s.oldRoot, ov), s.resolve(s.newRoot, nv)
	// The roots are marked too, so that a "$ref": "#" back to them stops.
	if o.viaRef || n.viaRef || depth == 0 {
		key := [2]uintptr{o.id, n.id}
		if _, done := s.seen[key]; done {
			return
		}
		s.seen[key] = struct{}{}
	}
	if depth > diffMaxDepth {
		s.d.add(path, "schema_too_deep", BumpMajor, "the schema is nested more than %d levels deep here; caphub stops comparing and treats the rest as changed", diffMaxDepth)
		return
	}
	switch {
	case o.nothing && n.nothing:
		return
	case o.nothing:
		s.relax(path, "schema_opened", "the schema was false (nothing valid) and now accepts values")
		return
	case n.nothing:
		s.restrict(path, "schema_closed", "the schema is now false (nothing valid)")
		return
	case o.invalid || n.invalid:
		if !diffSameJSON(ov, nv) {
			s.d.add(path, "schema_changed", BumpMajor, "the schema changed and is not a JSON Schema object on one side, so caphub cannot compare it: treated as breaking")
		}
		return
	}
	s.keywords(path, o.m, n.m, depth)
}

// Keyword classes for the leaf comparison in keywords.
const (
	diffKwStructural = iota + 1 // compared by keywords itself
	diffKwLower                 // a lower bound: raising it restricts
	diffKwUpper                 // an upper bound: lowering it restricts
	diffKwAssert                // any new or changed value restricts; removing relaxes
	diffKwFlag                  // true restricts
	diffKwDefault
	diffKwAnnotation
	diffKwContainer // $defs: compared where referenced
)

var diffKeywordClass = map[string]int{
	"type": diffKwStructural, "nullable": diffKwStructural, "enum": diffKwStructural, "const": diffKwStructural,
	"properties": diffKwStructural, "required": diffKwStructural, "additionalProperties": diffKwStructural,
	"items": diffKwStructural, "prefixItems": diffKwStructural, "additionalItems": diffKwStructural,
	"allOf": diffKwStructural, "anyOf": diffKwStructural, "oneOf": diffKwStructural,

	"minimum": diffKwLower, "exclusiveMinimum": diffKwLower, "minLength": diffKwLower, "minItems": diffKwLower,
	"minProperties": diffKwLower, "minContains": diffKwLower,
	"maximum": diffKwUpper, "exclusiveMaximum": diffKwUpper, "maxLength": diffKwUpper, "maxItems": diffKwUpper,
	"maxProperties": diffKwUpper, "maxContains": diffKwUpper,
	"pattern": diffKwAssert, "format": diffKwAssert, "multipleOf": diffKwAssert,
	"uniqueItems": diffKwFlag,
	"default":     diffKwDefault,

	"description": diffKwAnnotation, "title": diffKwAnnotation, "examples": diffKwAnnotation, "example": diffKwAnnotation,
	"$comment": diffKwAnnotation, "deprecated": diffKwAnnotation, "readOnly": diffKwAnnotation, "writeOnly": diffKwAnnotation,
	"$id": diffKwAnnotation, "$schema": diffKwAnnotation, "$anchor": diffKwAnnotation, "$dynamicAnchor": diffKwAnnotation,
	"$vocabulary": diffKwAnnotation,

	"$defs": diffKwContainer, "definitions": diffKwContainer,
}

// keywords compares two schema objects (either may be nil: anything).
func (s *schemaDiffer) keywords(path string, om, nm map[string]any, depth int) {
	ot, nt := diffTypes(om), diffTypes(nm)
	if !slices.Equal(ot, nt) {
		switch {
		case len(ot) == 0:
			s.d.add(path, "type_changed", BumpMajor, "type is now restricted to %s (it was unconstrained): values of other types are rejected (OSSA §6.2: changing the type of a field)", diffShowTypes(nt))
		case len(nt) == 0:
			s.d.add(path, "type_changed", BumpMajor, "type changed from %s to unconstrained: consumers and implementations written for %s may get other types (OSSA §6.2: changing the type of a field)", diffShowTypes(ot), diffShowTypes(ot))
		default:
			s.d.add(path, "type_changed", BumpMajor, "type changed from %s to %s (OSSA §6.2: changing the type of a field is breaking, even when the new types include the old)", diffShowTypes(ot), diffShowTypes(nt))
		}
	}
	s.values(path, om, nm)

	// Leaf keywords: none of these recurse, so their order does not matter.
	for k, ov := range om {
		nv, nOK := nm[k]
		s.leaf(path, k, ov, true, nv, nOK)
	}
	for k, nv := range nm {
		if _, oOK := om[k]; !oOK {
			s.leaf(path, k, nil, false, nv, true)
		}
	}

	if diffAllows(ot, "object") && diffAllows(nt, "object") {
		s.object(path, om, nm, depth)
	}
	if diffAllows(ot, "array") && diffAllows(nt, "array") {
		s.array(path, om, nm, depth)
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		s.branches(path, kw, om[kw], nm[kw], depth)
	}
}

// leaf compares one keyword that is not structural.
func (s *schemaDiffer) leaf(path, k string, ov any, oOK bool, nv any, nOK bool) {
	class := diffKeywordClass[k]
	if class == diffKwStructural || class == diffKwContainer {
		return // compared by keywords, or where referenced
	}
	if oOK && nOK && diffSameJSON(ov, nv) {
		return
	}
	if class == 0 && strings.HasPrefix(k, "x-") {
		class = diffKwAnnotation
	}
	switch class {
	case diffKwLower, diffKwUpper:
		s.bound(path, k, ov, oOK, nv, nOK, class == diffKwLower)
	case diffKwAssert:
		s.assertion(path, k, ov, oOK, nv, nOK)
	case diffKwFlag:
		s.flag(path, k, ov, nv)
	case diffKwDefault:
		s.defaultValue(path, ov, oOK, nv, nOK)
	case diffKwAnnotation:
		s.d.add(path, annotationKind(k), BumpPatch, "%s changed: documentation only", k)
	default:
		s.unanalysed(path, k, ov, oOK, nv, nOK)
	}
}

// assertion compares an assertion keyword (pattern, format, …): added or
// changed restricts, removed relaxes.
func (s *schemaDiffer) assertion(path, k string, ov any, oOK bool, nv any, nOK bool) {
	switch {
	case !nOK:
		s.relax(path, "constraint_loosened", "%s %s removed", k, diffShow(ov))
	case !oOK:
		s.restrict(path, "constraint_tightened", "%s %s added", k, diffShow(nv))
	default:
		s.restrict(path, "constraint_tightened", "%s changed from %s to %s", k, diffShow(ov), diffShow(nv))
	}
}

// flag compares a boolean keyword: becoming true restricts, ceasing to be
// true relaxes.
func (s *schemaDiffer) flag(path, k string, ov, nv any) {
	switch {
	case diffTrue(ov) == diffTrue(nv):
	case diffTrue(nv):
		s.restrict(path, "constraint_tightened", "%s is now true", k)
	default:
		s.relax(path, "constraint_loosened", "%s is no longer true", k)
	}
}

// defaultValue compares default: a minor change for input (callers that
// omit the field get another value), documentation for output.
func (s *schemaDiffer) defaultValue(path string, ov any, oOK bool, nv any, nOK bool) {
	what := fmt.Sprintf("default changed from %s to %s", diffShowOpt(ov, oOK), diffShowOpt(nv, nOK))
	if s.input {
		s.d.add(path, "default_changed", BumpMinor, "%s: callers that omit the field get a different value", what)
	} else {
		s.d.add(path, "default_changed", BumpPatch, "%s: an output default is documentation only", what)
	}
}

// annotationKind is the change kind of an annotation keyword k.
func annotationKind(k string) string {
	switch k {
	case "description", "title", "examples":
		return k + "_changed"
	case "example":
		return "examples_changed"
	}
	return "annotation_changed"
}

// unanalysed records a change of a keyword caphub does not analyse (an
// unresolvable $ref among them) as breaking.
func (s *schemaDiffer) unanalysed(path, k string, ov any, oOK bool, nv any, nOK bool) {
	if k == "$ref" {
		s.d.add(path, "ref_unresolved", BumpMajor, "$ref changed from %s to %s and cannot be resolved within the schema, so caphub cannot compare what it points to: treated as breaking", diffShowOpt(ov, oOK), diffShowOpt(nv, nOK))
		return
	}
	s.d.add(path, "schema_keyword_changed", BumpMajor, "keyword %s changed from %s to %s; caphub does not analyse it, so the change is treated as breaking", k, diffShowOpt(ov, oOK), diffShowOpt(nv, nOK))
}

// bound compares a minimum-like (lower) or maximum-like keyword. Draft-04
// boolean exclusiveMinimum/exclusiveMaximum are flags: true restricts.
func (s *schemaDiffer) bound(path, k string, ov any, oOK bool, nv any, nOK, lower bool) {
	_, ob := ov.(bool)
	_, nb := nv.(bool)
	if ob || nb {
		s.flag(path, k, ov, nv)
		return
	}
	of, oNum := diffNumber(ov)
	nf, nNum := diffNumber(nv)
	switch {
	case !nOK:
		s.relax(path, "constraint_loosened", "%s %s removed", k, diffShow(ov))
	case !oOK:
		s.restrict(path, "constraint_tightened", "%s %s added", k, diffShow(nv))
	case !oNum || !nNum:
		s.restrict(path, "constraint_tightened", "%s changed from %s to %s", k, diffShow(ov), diffShow(nv))
	case of == nf:
	case lower == (nf > of):
		s.restrict(path, "constraint_tightened", "%s %s from %s to %s", k, diffRaisedLowered(nf > of), diffShow(ov), diffShow(nv))
	default:
		s.relax(path, "constraint_loosened", "%s %s from %s to %s", k, diffRaisedLowered(nf > of), diffShow(ov), diffShow(nv))
	}
}

func diffRaisedLowered(raised bool) string {
	if raised {
		return "raised"
	}
	return "lowered"
}

// values compares enum and const: the set of allowed values.
func (s *schemaDiffer) values(path string, om, nm map[string]any) {
	ov, oHas, oEnum := diffAllowedValues(om)
	nv, nHas, nEnum := diffAllowedValues(nm)
	if !oHas && !nHas {
		return
	}
	kw := "enum"
	if !oEnum && !nEnum {
		kw = "const"
	}
	switch {
	case !nHas:
		s.relax(path, kw+"_removed", "%s %s removed: values are no longer restricted to it", kw, diffValueList(ov))
	case !oHas:
		s.restrict(path, kw+"_added", "%s %s added where any value was allowed", kw, diffValueList(nv))
	default:
		added, removed := diffValueSets(ov, nv)
		switch {
		case len(removed) > 0 && kw == "const":
			s.restrict(path, "const_changed", "const changed from %s to %s", diffValueList(ov), diffValueList(nv))
		case len(removed) > 0 && len(added) > 0:
			s.restrict(path, "enum_narrowed", "%s narrowed: %s removed (and %s added)", kw, diffValueList(removed), diffValueList(added))
		case len(removed) > 0:
			s.restrict(path, "enum_narrowed", "%s narrowed: %s removed", kw, diffValueList(removed))
		case len(added) > 0:
			s.relax(path, "enum_widened", "%s widened: %s added", kw, diffValueList(added))
		}
	}
}

// diffAllowedValues returns the values a schema restricts to with enum or
// const (an enum without the const when both are present), whether it
// restricts, and whether enum was used.
func diffAllowedValues(m map[string]any) (vals []any, has, enum bool) {
	e, hasEnum := m["enum"]
	c, hasConst := m["const"]
	list, _ := e.([]any)
	if s, ok := e.([]string); ok { // schemas built in Go
		for _, x := range s {
			list = append(list, x)
		}
	}
	switch {
	case hasEnum && hasConst:
		_, removed := diffValueSets([]any{c}, list)
		if len(removed) == 0 {
			return []any{c}, true, true
		}
		return nil, true, true // nothing satisfies both
	case hasEnum:
		return list, true, true
	case hasConst:
		return []any{c}, true, false
	}
	return nil, false, false
}

// object compares the fields of two object schemas: properties, required
// and additionalProperties.
func (s *schemaDiffer) object(path string, om, nm map[string]any, depth int) {
	oProps, _ := om["properties"].(map[string]any)
	nProps, _ := nm["properties"].(map[string]any)
	oReq, nReq := diffStrings(om["required"]), diffStrings(nm["required"])
	if len(oProps)+len(nProps)+len(oReq)+len(nReq) > 0 {
		names := make([]string, 0, len(oProps)+len(nProps))
		for k := range oProps {
			names = append(names, k)
		}
		for k := range nProps {
			if _, dup := oProps[k]; !dup {
				names = append(names, k)
			}
		}
		names = append(names, oReq...)
		names = append(names, nReq...)
		slices.Sort(names)
		names = slices.Compact(names)
		for _, name := range names {
			ov, oIn := oProps[name]
			nv, nIn := nProps[name]
			oR, nR := slices.Contains(oReq, name), slices.Contains(nReq, name)
			s.field(path+".properties"+diffPathName(name), name, ov, oIn || oR, oR, nv, nIn || nR, nR, depth)
		}
	}
	s.additional(path, om, nm, depth)
}

// field compares one property of an object: its presence and required-ness
// by the rules of its side, then its schema.
func (s *schemaDiffer) field(path, name string, ov any, oIn, oReq bool, nv any, nIn, nReq bool, depth int) {
	if s.input {
		s.inputField(path, name, nv, oIn, oReq, nIn, nReq)
	} else {
		s.outputField(path, name, oIn, oReq, nIn, nReq)
	}
	if oIn && nIn {
		s.compare(path, ov, nv, depth+1)
	}
}

// inputField records an input property removed, added or changing
// required-ness (nv is its new schema, for a default).
func (s *schemaDiffer) inputField(path, name string, nv any, oIn, oReq, nIn, nReq bool) {
	switch {
	case oIn && !nIn && oReq:
		s.d.add(path, "input_required_removed", BumpMajor, "required input field %q was removed: callers still send it and the capability no longer accepts or reads it (OSSA §6.2: removing a required input field)", name)
	case oIn && !nIn:
		// Removing an optional field is breaking too: callers that still
		// send it may be rejected (closed objects, upstream validation)
		// or see their value silently ignored.
		s.d.add(path, "input_field_removed", BumpMajor, "optional input field %q was removed: callers that still send it may be rejected, or see it ignored", name)
	case !oIn && nReq:
		s.d.add(path, "input_required_added", BumpMajor, "new required input field %q: existing callers do not send it and will be rejected (OSSA §6.2: adding a required input field)", name)
	case !oIn:
		if def, ok := s.resolve(s.newRoot, nv).m["default"]; ok {
			s.d.add(path, "input_field_added", BumpMinor, "new optional input field %q with default %s: existing callers keep working (OSSA §6.3: adding an optional input field with a default)", name, diffShow(def))
		} else {
			s.d.add(path, "input_field_added", BumpMinor, "new optional input field %q, with no default declared (the capability must handle its absence): existing callers keep working", name)
		}
	case !oReq && nReq:
		s.d.add(path, "input_became_required", BumpMajor, "input field %q is now required: callers that omit it will be rejected", name)
	case oReq && !nReq:
		s.d.add(path, "input_became_optional", BumpMinor, "input field %q is no longer required: every call valid before is still valid", name)
	}
}

// outputField records an output property removed, added or changing
// required-ness.
func (s *schemaDiffer) outputField(path, name string, oIn, oReq, nIn, nReq bool) {
	switch {
	case oIn && !nIn:
		s.d.add(path, "output_field_removed", BumpMajor, "output field %q was removed: consumers that read it will not find it (OSSA §6.2: removing an output field)", name)
	case !oIn:
		s.d.add(path, "output_field_added", BumpMinor, "new output field %q: consumers that do not know it can ignore it (OSSA §6.3: adding an output field)", name)
	case oReq && !nReq:
		s.d.add(path, "output_became_optional", BumpMajor, "output field %q is no longer required: consumers that rely on it may find it missing", name)
	case !oReq && nReq:
		s.d.add(path, "output_became_required", BumpMinor, "output field %q is now required: a stronger guarantee for consumers", name)
	}
}

// additional compares additionalProperties: absent, true and {} are open,
// false is closed, anything else is a schema for the extra properties.
func (s *schemaDiffer) additional(path string, om, nm map[string]any, depth int) {
	const (
		open = iota
		closed
		schema
	)
	state := func(m map[string]any) (int, any) {
		v, ok := m["additionalProperties"]
		switch x := v.(type) {
		case bool:
			if !x {
				return closed, nil
			}
			return open, nil
		case map[string]any:
			if len(x) == 0 {
				return open, nil
			}
		}
		if !ok || v == nil {
			return open, nil
		}
		return schema, v
	}
	os, ov := state(om)
	ns, nv := state(nm)
	p := path + ".additionalProperties"
	switch {
	case os == ns && os != schema:
	case ns == closed:
		s.restrict(p, "additional_properties_closed", "additionalProperties is now false: properties not listed are rejected")
	case os == closed:
		s.relax(p, "additional_properties_opened", "additionalProperties is no longer false: properties not listed are allowed")
	case ns == open:
		s.relax(p, "additional_properties_opened", "additionalProperties no longer constrains properties not listed")
	case os == open:
		s.restrict(p, "additional_properties_restricted", "properties not listed must now match the additionalProperties schema")
	default:
		s.compare(p, ov, nv, depth+1)
	}
}

// array compares items (a schema, or a draft-07 tuple), prefixItems and
// additionalItems.
func (s *schemaDiffer) array(path string, om, nm map[string]any, depth int) {
	oi, oHas := om["items"]
	ni, nHas := nm["items"]
	ot, oTuple := oi.([]any)
	nt, nTuple := ni.([]any)
	switch {
	case oTuple && nTuple:
		s.tuple(path+".items", ot, nt, depth)
	case !oTuple && !nTuple:
		if oHas || nHas {
			s.compare(path+".items", oi, ni, depth+1)
		}
	default:
		s.d.add(path+".items", "items_changed", BumpMajor, "items changed between a single schema and a tuple of schemas: the arrays accepted are different, treated as breaking")
	}
	op, _ := om["prefixItems"].([]any)
	np, _ := nm["prefixItems"].([]any)
	if len(op)+len(np) > 0 {
		s.tuple(path+".prefixItems", op, np, depth)
	}
	oa, oaHas := om["additionalItems"]
	na, naHas := nm["additionalItems"]
	if oaHas || naHas {
		s.compare(path+".additionalItems", oa, na, depth+1)
	}
}

// tuple compares tuple positions one by one; a position missing on one side
// allows anything.
func (s *schemaDiffer) tuple(path string, old, new []any, depth int) {
	for i := range max(len(old), len(new)) {
		var ov, nv any
		if i < len(old) {
			ov = old[i]
		}
		if i < len(new) {
			nv = new[i]
		}
		s.compare(path+"["+strconv.Itoa(i)+"]", ov, nv, depth+1)
	}
}

// branches compares allOf, anyOf or oneOf branch by branch when both have
// the same number of branches; otherwise any change is breaking.
func (s *schemaDiffer) branches(path, kw string, ov, nv any, depth int) {
	if ov == nil && nv == nil {
		return
	}
	ol, oOK := ov.([]any)
	nl, nOK := nv.([]any)
	if oOK && nOK && len(ol) == len(nl) {
		for i := range ol {
			s.compare(path+"."+kw+"["+strconv.Itoa(i)+"]", ol[i], nl[i], depth+1)
		}
		return
	}
	if !diffSameJSON(ov, nv) {
		s.d.add(path, "schema_keyword_changed", BumpMajor, "%s changed from %d to %d branches; caphub compares %s branch by branch only when their number is unchanged, so this is treated as breaking", kw, len(ol), len(nl), kw)
	}
}

// diffTypes returns the sorted set of types a schema allows (nil:
// unconstrained). OpenAPI 3.0's nullable adds "null".
func diffTypes(m map[string]any) []string {
	var ts []string
	switch t := m["type"].(type) {
	case string:
		ts = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				ts = append(ts, s)
			}
		}
	case []string:
		ts = slices.Clone(t)
	}
	if len(ts) > 0 && diffTrue(m["nullable"]) {
		ts = append(ts, "null")
	}
	if len(ts) > 1 {
		slices.Sort(ts)
		ts = slices.Compact(ts)
	}
	return ts
}

// diffAllows reports whether a type set allows t (an empty set allows
// everything).
func diffAllows(types []string, t string) bool {
	return len(types) == 0 || slices.Contains(types, t)
}

func diffShowTypes(ts []string) string {
	if len(ts) == 1 {
		return ts[0]
	}
	return "[" + strings.Join(ts, ", ") + "]"
}

// diffPathName writes a property name as a path segment: ".name", or
// `["a.b"]` when the name would be ambiguous.
func diffPathName(name string) string {
	if name == "" || strings.ContainsAny(name, `.[]" `) {
		return "[" + strconv.Quote(name) + "]"
	}
	return "." + name
}

// Values.

// diffSameJSON reports whether a and b encode to the same JSON (maps with
// sorted keys, numbers by value), which also ignores the difference between
// int and int64 left by schemas built in Go. Absent, null, {} and [] are the
// same: the model omits empty fields when it writes a definition.
func diffSameJSON(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	aj, aerr := json.Marshal(a)
	bj, berr := json.Marshal(b)
	return aerr == nil && berr == nil && bytes.Equal(diffEmptyJSON(aj), diffEmptyJSON(bj))
}

func diffEmptyJSON(b []byte) []byte {
	switch string(b) {
	case "null", "{}", "[]":
		return nil
	}
	return b
}

// diffChangedKeys lists the top-level JSON fields that differ between a and
// b (two bindings, or two Extra maps).
func diffChangedKeys(a, b any) []string {
	am, bm := diffJSONObject(a), diffJSONObject(b)
	var keys []string
	for _, k := range diffUnionKeys(am, bm) {
		av, aOK := am[k]
		bv, bOK := bm[k]
		if aOK != bOK || !diffSameJSON(av, bv) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return []string{"its content"}
	}
	return keys
}

func diffJSONObject(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// diffValueKey returns a string that is equal for equal JSON values.
func diffValueKey(v any) string {
	switch x := v.(type) {
	case string:
		return "s" + x
	case bool:
		return "b" + strconv.FormatBool(x)
	case nil:
		return "null"
	}
	if f, ok := diffNumber(v); ok {
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return "n" + strconv.FormatInt(int64(f), 10)
		}
		return "n" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return "j" + string(b)
}

// diffValueSets returns the values of new not in old, and of old not in new.
func diffValueSets(old, new []any) (added, removed []any) {
	ok := make(map[string]bool, len(old))
	for _, v := range old {
		ok[diffValueKey(v)] = true
	}
	nk := make(map[string]bool, len(new))
	for _, v := range new {
		k := diffValueKey(v)
		nk[k] = true
		if !ok[k] {
			added = append(added, v)
		}
	}
	for _, v := range old {
		if !nk[diffValueKey(v)] {
			removed = append(removed, v)
		}
	}
	return added, removed
}

// diffNumber returns v as a float64 when it is a number of any Go kind.
func diffNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func diffTrue(v any) bool {
	b, _ := v.(bool)
	return b
}

// diffStrings returns the strings of a JSON array ([]any or []string).
func diffStrings(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// diffStringSets returns the strings of new not in old, and of old not in
// new, each sorted and without duplicates.
func diffStringSets(old, new []string) (added, removed []string) {
	for _, s := range new {
		if !slices.Contains(old, s) {
			added = append(added, s)
		}
	}
	for _, s := range old {
		if !slices.Contains(new, s) {
			removed = append(removed, s)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return slices.Compact(added), slices.Compact(removed)
}

func diffUnionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, dup := a[k]; !dup {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// diffShow writes a value as compact JSON for a description.
func diffShow(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if r := []rune(string(b)); len(r) > 80 {
		return string(r[:77]) + "..."
	}
	return string(b)
}

func diffShowOpt(v any, ok bool) string {
	if !ok {
		return "(none)"
	}
	return diffShow(v)
}

func diffShowText(s string) string {
	if s == "" {
		return "(empty)"
	}
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "..."
	}
	return strconv.Quote(s)
}

// diffValueList writes up to ten values, then how many more.
func diffValueList(vs []any) string {
	parts := make([]string, 0, min(len(vs), 10))
	for i, v := range vs {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(vs)-10))
			break
		}
		parts = append(parts, diffShow(v))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// diffList writes strings as a list for a description.
func diffList(ss []string) string {
	return strings.Join(ss, ", ")
}

func diffAddedRemoved(added, removed []string) string {
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "added "+diffList(added))
	}
	if len(removed) > 0 {
		parts = append(parts, "removed "+diffList(removed))
	}
	return strings.Join(parts, "; ")
}
