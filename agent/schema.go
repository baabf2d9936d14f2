package agent

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/caphub/caphub/capability"
)

// The OSSA v0.2.9 agent-manifest schema (ossa-0.2.9.schema.json, draft-07)
// uses a small, regular part of JSON Schema: every subschema has a `type`;
// objects list `properties`, `required` and `additionalProperties` (false, or
// a schema for map-like objects); strings have enum, pattern, format: uri,
// minLength and maxLength; numbers minimum and maximum (inclusive); arrays
// items and maxItems; and `$ref`s to definitions, which never recurse. There
// is no oneOf, anyOf, allOf, not, const or if/then/else.
//
// A rule is one such subschema, built with the constructors below; rules.go
// holds the tables for every definition. check applies a rule with draft-07
// semantics: keywords for one type ignore values of another type, `type`
// fails otherwise, and integer accepts numbers with a zero fraction.

// jsonType is the JSON Schema type a rule requires.
type jsonType int

const (
	typeString jsonType = iota + 1
	typeInteger
	typeNumber
	typeBoolean
	typeObject
	typeArray
)

var typeNames = map[jsonType]string{
	typeString: "a string", typeInteger: "an integer", typeNumber: "a number",
	typeBoolean: "true or false", typeObject: "a mapping (object)", typeArray: "a list (array)",
}

// rule is one subschema.
type rule struct {
	name  string // definition name ("LLMConfig"), for messages and schema pointers
	typ   jsonType
	about string // the schema's description, quoted when it explains a constraint

	enumValues []string
	re         *regexp.Regexp
	reMeans    string // what the pattern accepts, in words
	uriFormat  bool
	minLen     int // -1: none
	maxLen     int // -1: none
	min, max   *float64

	items    *rule
	maxItemN int // -1: none

	props    []prop // in schema order
	byName   map[string]*rule
	required []string
	noExtra  bool  // additionalProperties: false
	extra    *rule // additionalProperties as a schema (nil: anything)
}

type prop struct {
	name string
	rule *rule
}

func newRule(t jsonType) *rule { return &rule{typ: t, minLen: -1, maxLen: -1, maxItemN: -1} }

func str() *rule     { return newRule(typeString) }
func integer() *rule { return newRule(typeInteger) }
func number() *rule  { return newRule(typeNumber) }
func boolean() *rule { return newRule(typeBoolean) }

func array(items *rule) *rule {
	r := newRule(typeArray)
	r.items = items
	return r
}

func object(props ...prop) *rule {
	r := newRule(typeObject)
	r.props = props
	r.byName = make(map[string]*rule, len(props))
	for _, p := range props {
		r.byName[p.name] = p.rule
	}
	return r
}

func property(name string, r *rule) prop { return prop{name: name, rule: r} }

func (r *rule) named(n string) *rule { r.name = n; return r }
func (r *rule) doc(s string) *rule   { r.about = s; return r }

func (r *rule) enum(values ...string) *rule { r.enumValues = values; return r }

// pattern sets the regular expression (Go syntax; the schema's patterns use
// no ECMA-262-only feature) and says in words what it accepts.
func (r *rule) pattern(re, means string) *rule {
	r.re, r.reMeans = regexp.MustCompile(re), means
	return r
}

func (r *rule) format(f string) *rule {
	if f != "uri" {
		panic("agent: unsupported format " + f)
	}
	r.uriFormat = true
	return r
}

func (r *rule) minLength(n int) *rule { r.minLen = n; return r }
func (r *rule) maxLength(n int) *rule { r.maxLen = n; return r }
func (r *rule) minimum(x float64) *rule {
	r.min = &x
	return r
}
func (r *rule) maximum(x float64) *rule {
	r.max = &x
	return r
}
func (r *rule) maxItems(n int) *rule          { r.maxItemN = n; return r }
func (r *rule) require(names ...string) *rule { r.required = names; return r }
func (r *rule) closed() *rule                 { r.noExtra = true; return r }
func (r *rule) additional(x *rule) *rule      { r.extra = x; return r }

// validator applies rules to a document and collects issues.
type validator struct {
	m      *Manifest // for positions; may have none
	issues []capability.Issue
}

func (v *validator) report(path, ptr, keyword string, atKey bool, format string, args ...any) {
	v.issues = append(v.issues, v.m.issue(capability.SeverityError, RuleSchemaBase+ptr+"/"+keyword, path, !atKey, format, args...))
}

// check applies r to the value x found at path; ptr is r's location in the
// schema (a JSON pointer).
func (v *validator) check(r *rule, x any, path, ptr string) {
	if r.name != "" && r.name != manifestRuleName {
		ptr = "#/definitions/" + r.name
	}
	if !hasType(x, r.typ) {
		v.report(path, ptr, "type", false, "must be %s, found %s%s", typeNames[r.typ], describe(x), typeHint(r, x))
		return
	}
	switch r.typ {
	case typeString:
		v.checkString(r, x.(string), path, ptr)
	case typeInteger, typeNumber:
		v.checkNumber(r, x, path, ptr)
	case typeArray:
		items := x.([]any)
		if r.maxItemN >= 0 && len(items) > r.maxItemN {
			v.report(path, ptr, "maxItems", false, "has %d items: at most %d are allowed", len(items), r.maxItemN)
		}
		if r.items != nil {
			for i, item := range items {
				v.check(r.items, item, indexPath(path, i), ptr+"/items")
			}
		}
	case typeObject:
		v.checkObject(r, x.(map[string]any), path, ptr)
	}
}

func (v *validator) checkString(r *rule, s, path, ptr string) {
	if len(r.enumValues) > 0 && !contains(r.enumValues, s) {
		if len(r.enumValues) == 1 {
			v.report(path, ptr, "enum", false, "%q is not allowed: the only allowed value is %s%s", s, r.enumValues[0], about(r))
		} else {
			v.report(path, ptr, "enum", false, "%q is not allowed: use one of %s%s", s, strings.Join(r.enumValues, ", "), suggest(s, r.enumValues))
		}
	}
	n := utf8.RuneCountInString(s)
	if r.minLen >= 0 && n < r.minLen {
		if r.minLen == 1 {
			v.report(path, ptr, "minLength", false, "must not be empty%s", about(r))
		} else {
			v.report(path, ptr, "minLength", false, "has %d characters: at least %d are required", n, r.minLen)
		}
	}
	if r.maxLen >= 0 && n > r.maxLen {
		v.report(path, ptr, "maxLength", false, "has %d characters: at most %d are allowed", n, r.maxLen)
	}
	if r.re != nil && !r.re.MatchString(s) {
		pat := ""
		if len(r.re.String()) <= 60 {
			pat = " (pattern " + r.re.String() + ")"
		}
		v.report(path, ptr, "pattern", false, "%q is not %s%s", s, r.reMeans, pat)
	}
	if r.uriFormat {
		if err := checkURI(s); err != nil {
			v.report(path, ptr, "format", false, "%q is not an absolute URI (%v): write it with a scheme, e.g. https://host/path", s, err)
		}
	}
}

func (v *validator) checkNumber(r *rule, x any, path, ptr string) {
	f := toFloat(x)
	if r.min != nil && f < *r.min {
		v.report(path, ptr, "minimum", false, "must be at least %s, found %s", fmtNum(*r.min), fmtValue(x))
	}
	if r.max != nil && f > *r.max {
		v.report(path, ptr, "maximum", false, "must be at most %s, found %s", fmtNum(*r.max), fmtValue(x))
	}
}

func (v *validator) checkObject(r *rule, obj map[string]any, path, ptr string) {
	for _, name := range r.required {
		if _, ok := obj[name]; !ok {
			what := "this mapping"
			switch r.name {
			case manifestRuleName:
				what = "an agent manifest"
			case "":
			default:
				what = r.name
			}
			hint := ""
			if sub := r.byName[name]; sub != nil && sub.about != "" {
				hint = ": " + sub.about
			}
			v.report(keyPath(path, name), ptr, "required", true, "missing: %s requires the field %s%s", what, name, hint)
		}
	}
	for _, p := range r.props {
		if x, ok := obj[p.name]; ok {
			v.check(p.rule, x, keyPath(path, p.name), ptr+"/properties/"+escapePointer(p.name))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if _, known := r.byName[k]; known {
			continue
		}
		switch {
		case r.noExtra:
			v.report(keyPath(path, k), ptr, "additionalProperties", true, "unknown field %q: %s%s", k, allowedKeys(r), suggest(k, propNames(r)))
		case r.extra != nil:
			v.check(r.extra, obj[k], keyPath(path, k), ptr+"/additionalProperties")
		}
	}
}

// manifestRuleName names the root rule, whose schema pointer is "#".
const manifestRuleName = "Manifest"

func allowedKeys(r *rule) string {
	names := propNames(r)
	if len(names) == 0 {
		return "no fields are allowed here"
	}
	who := "only"
	if r.name != "" {
		who = r.name + " allows only"
	} else {
		who = "allowed fields are"
	}
	return who + " " + strings.Join(names, ", ")
}

func propNames(r *rule) []string {
	out := make([]string, len(r.props))
	for i, p := range r.props {
		out[i] = p.name
	}
	return out
}

func about(r *rule) string {
	if r.about == "" {
		return ""
	}
	return " (" + r.about + ")"
}

// hasType reports whether x, a value of the JSON data model, has type t.
// As in draft-07 (and later), an integer is any number with a zero fraction.
func hasType(x any, t jsonType) bool {
	switch t {
	case typeString:
		_, ok := x.(string)
		return ok
	case typeBoolean:
		_, ok := x.(bool)
		return ok
	case typeObject:
		_, ok := x.(map[string]any)
		return ok
	case typeArray:
		_, ok := x.([]any)
		return ok
	case typeNumber:
		switch x.(type) {
		case int64, float64:
			return true
		}
	case typeInteger:
		switch n := x.(type) {
		case int64:
			return true
		case float64:
			return n == math.Trunc(n) && !math.IsInf(n, 0)
		}
	}
	return false
}

func toFloat(x any) float64 {
	switch n := x.(type) {
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return math.NaN()
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func fmtValue(x any) string {
	switch n := x.(type) {
	case int64:
		return strconv.FormatInt(n, 10)
	case float64:
		return fmtNum(n)
	}
	return fmt.Sprint(x)
}

// describe names the type and value of x for messages.
func describe(x any) string {
	switch v := x.(type) {
	case nil:
		return "nothing (null)"
	case string:
		return fmt.Sprintf("a string (%q)", clip(v))
	case bool:
		return fmt.Sprintf("a boolean (%v)", v)
	case int64, float64:
		return "a number (" + fmtValue(v) + ")"
	case []any:
		return fmt.Sprintf("a list of %d items", len(v))
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", x)
}

func clip(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:57]) + "..."
	}
	return s
}

// typeHint adds advice for the common mistakes: an unquoted version read as
// a number, a single value where a list is expected.
func typeHint(r *rule, x any) string {
	switch {
	case r.typ == typeString && (isNumber(x) || isBool(x)):
		return ": quote the value to make it a string"
	case r.typ == typeArray && x != nil:
		if _, isObj := x.(map[string]any); !isObj {
			return ": write it as a list, e.g. [value]"
		}
	case r.typ == typeInteger && isNumber(x):
		return ": use a whole number"
	case r.typ == typeObject && x == nil:
		return ": give it fields, or remove the key"
	}
	return ""
}

func isNumber(x any) bool {
	switch x.(type) {
	case int64, float64:
		return true
	}
	return false
}

func isBool(x any) bool { _, ok := x.(bool); return ok }

// checkURI applies format "uri" as the reference validator
// (santhosh-tekuri/jsonschema, which asserts formats for draft-07) does: the
// string must parse as a URL, an IPv6 host must be bracketed and valid, and
// the URL must be absolute (have a scheme).
func checkURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err
		}
		return err
	}
	if host := u.Hostname(); strings.Contains(host, ":") {
		if !strings.Contains(u.Host, "[") || !strings.Contains(u.Host, "]") {
			return errors.New("IPv6 address not enclosed in brackets")
		}
		addr, err := netip.ParseAddr(host)
		if err != nil {
			return fmt.Errorf("invalid IPv6 address: %v", err)
		}
		if addr.Zone() != "" {
			return errors.New("a zone id is not part of an IPv6 address")
		}
	}
	if !u.IsAbs() {
		return errors.New("no scheme")
	}
	return nil
}

// suggest proposes the closest allowed value for a likely misspelling.
func suggest(got string, allowed []string) string {
	best, bestD := "", 0
	for _, a := range allowed {
		d := editDistance(strings.ToLower(got), strings.ToLower(a))
		if best == "" || d < bestD {
			best, bestD = a, d
		}
	}
	if best == "" || bestD > 2 && !(normalizeKey(got) == normalizeKey(best)) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// normalizeKey folds case and separators, so maxTokens matches max_tokens.
func normalizeKey(s string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 1 << 20
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			c := prev[j-1]
			if ra[i-1] != rb[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Validate checks m against the rules of the OSSA v0.2.9 agent-manifest
// schema and returns every violation, sorted by position, each as an error
// with the field path ("spec.llm.temperature"), file:line:column, what is
// wrong and what is allowed. The manifest is valid, exactly when the official
// schema accepts it, if and only if no issue is returned. Issues found while
// reading (ReadManifest's) are not repeated here.
func Validate(m *Manifest) []capability.Issue {
	if m == nil {
		return []capability.Issue{{Severity: capability.SeverityError, Message: "no manifest"}}
	}
	v := &validator{m: m}
	v.check(manifestDef, m.Document, "", ruleSchemaRoot)
	sortIssues(v.issues)
	return v.issues
}

// validateDocument checks a manifest given as a decoded JSON value (for
// example the body of a request) against the same rules. Issues carry paths
// but no positions.
func validateDocument(doc any) []capability.Issue {
	v := &validator{}
	v.check(manifestDef, doc, "", ruleSchemaRoot)
	sortIssues(v.issues)
	return v.issues
}

func sortIssues(issues []capability.Issue) {
	sort.SliceStable(issues, func(i, j int) bool {
		a, b := issues[i], issues[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Path < b.Path
	})
}
