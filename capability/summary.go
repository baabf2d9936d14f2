package capability

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Summary is the compact form of a capability that search answers carry: enough
// for an agent to choose one and call it, in at most MaxSummaryBytes of JSON
// whatever its schemas (GitHub's REST API has operations whose input and output
// schemas take 400 KB). The full definition stays one request away (REST
// view=full, the MCP tool describe_capability).
type Summary struct {
	// ToolName is the capability's MCP tool name (ToolName of its URI).
	ToolName string `json:"tool_name"`
	// URI is scheme:domain/name@MAJOR.MINOR of this version, the URI to
	// invoke it by.
	URI string `json:"uri"`
	// Version is the full version summarised.
	Version string `json:"version,omitempty"`
	// Title is the display name, when there is one, cut to fit.
	Title string `json:"title,omitempty"`
	// Description is the description's first sentence on one line, cut to
	// fit.
	Description string `json:"description,omitempty"`
	// Params sums up the input: each property as name: type, "*" after the
	// name of a required one, required ones first. Enums list their first
	// values, an object property its own properties one level down
	// ({a*: string, b: integer}), an array its items' type (string[]);
	// "+N more" ends a list cut short.
	Params string `json:"params,omitempty"`
	// Stability is given when it is not stable (experimental, beta,
	// deprecated).
	Stability string `json:"stability,omitempty"`
	// DeprecatedBy is the replacement of a deprecated capability.
	DeprecatedBy string `json:"deprecated_by,omitempty"`
	// TrustTier is the governance tier of the version (verified, trusted,
	// community, untrusted), when the summary is of a registered one.
	TrustTier string `json:"trust_tier,omitempty"`
}

// MaxSummaryBytes bounds the JSON of a Summary (encoding/json's, HTML
// escaping included) for URIs of up to 200 bytes: its title, description
// and parameters are cut to fit.
const MaxSummaryBytes = 1024

// Budgets of a Summary's parts, in bytes of JSON string content.
const (
	summaryTitleMax       = 100
	summaryDescriptionMax = 240
	summaryParamsMax      = 512 // all the parameters
	summaryParamMax       = 200 // one parameter, nested object included
	summaryNestedMax      = 6   // properties shown of a nested object
	summaryNestedBytes    = 120 // bytes of a nested object's properties
	summaryEnumMax        = 4   // enum values shown
	summaryEnumValueMax   = 24  // bytes of one enum value or default
	summaryUnionMax       = 4   // alternatives shown of a union type
	summaryRefHops        = 4   // local $refs followed to find a type
	summaryVisitMax       = 256 // subschemas inspected for one parameter's type
	summaryPropsMax       = 512 // properties of an object looked at (sorted)
)

// Summarize returns the compact summary of a definition (see Summary). It
// reads the definition only and is bounded in time and output by the
// constants above, whatever the input schema holds.
func Summarize(d *Definition) Summary {
	s := Summary{URI: d.URI, Version: d.Version}
	if u, err := ParseURI(d.URI); err == nil {
		if v, err := ParseVersion(d.Version); err == nil {
			s.URI = NewURI(u.Scheme, u.Domain, u.Name, v).String()
		}
	}
	s.ToolName = ToolName(s.URI)
	if d.Stability != "" && d.Stability != StabilityStable {
		s.Stability = d.Stability
	}
	if d.Stability == StabilityDeprecated {
		s.DeprecatedBy = d.DeprecatedBy
	}
	s.Title = clipJSON(oneLine(d.Title), summaryTitleMax)
	fixed, _ := json.Marshal(s)
	// What is left for the description and the parameters, keys included.
	room := MaxSummaryBytes - len(fixed) - len(`,"description":"","params":""`)
	desc := firstSentence(d.Description)
	s.Description = clipJSON(desc, min(summaryDescriptionMax, max(room/3, 0)))
	room -= jsonLen(s.Description)
	s.Params = summarizeParams(d.Input, min(summaryParamsMax, max(room, 0)))
	return s
}

// Fit shortens s so that its JSON (encoding/json's) takes at most max
// bytes when cutting can get it there: the parameter list first (cut
// after a parameter, ending in ", …"), then the description and the
// title. The tool name, URI, version and stability are never cut. A
// search answer uses it to share a budget among its hits.
func (s *Summary) Fit(max int) {
	for _, field := range []*string{&s.Params, &s.Description, &s.Title} {
		b, _ := json.Marshal(s)
		over := len(b) - max
		if over <= 0 {
			return
		}
		keep := jsonLen(*field) - over
		switch {
		case keep <= len("…") && field == &s.Params && *field != "":
			*field = "…"
		case keep <= len("…"):
			*field = ""
		case field == &s.Params:
			*field = clipList(*field, keep)
		default:
			*field = clipJSON(*field, keep)
		}
	}
}

// clipList cuts a list joined with ", " after the last item that fits in
// max bytes of JSON string content, ending in ", …" (or "…" when no item
// fits).
func clipList(s string, max int) string {
	const tail = ", …"
	out, n := "", 0
	for _, item := range topLevelItems(s) {
		l := jsonLen(item)
		sep := 0
		if out != "" {
			sep = 2
		}
		if n+sep+l+len(tail) > max {
			break
		}
		if out != "" {
			out += ", "
		}
		out += item
		n += sep + l
	}
	if out == "" {
		return "…"
	}
	return out + tail
}

// topLevelItems splits a parameter list at the ", " that are not inside
// braces, parentheses or quotes.
func topLevelItems(s string) []string {
	var items []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '{' || c == '(':
			depth++
		case c == '}' || c == ')':
			depth--
		case c == ',' && depth == 0 && strings.HasPrefix(s[i:], ", "):
			items = append(items, s[start:i])
			start = i + 2
			i++
		}
	}
	return append(items, s[start:])
}

// oneLine collapses runs of white space and control characters (newlines
// included) to one space, invalid UTF-8 made U+FFFD.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return strings.Join(strings.Fields(s), " ")
}

var (
	mdLink     = regexp.MustCompile(`\[([^\]\n]{0,200})\]\([^)\s]{0,1000}\)`)
	mdEmphasis = strings.NewReplacer("**", "", "__", "")
)

// abbreviations end in a period without ending a sentence.
var abbreviations = []string{"e.g", "i.e", "etc", "vs", "cf", "approx", "no"}

// firstSentence is the first sentence of a description, on one line:
// markdown links keep their text, emphasis markers go, and the text stops
// at the first blank line or at a period, question or exclamation mark
// followed by a space (not after e.g., i.e. or a single letter, bracketed
// or quoted too: "(e.g. Europe/Paris)").
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 4*summaryDescriptionMax {
		s = s[:4*summaryDescriptionMax]
	}
	s = mdEmphasis.Replace(mdLink.ReplaceAllString(s, "$1"))
	s = oneLine(s)
	for i := 0; i < len(s)-1; i++ {
		c := s[i]
		if (c != '.' && c != '!' && c != '?') || s[i+1] != ' ' {
			continue
		}
		if c == '.' {
			word := strings.TrimLeft(s[strings.LastIndexByte(s[:i], ' ')+1:i], "([{\"'“‘")
			if utf8.RuneCountInString(word) <= 1 || slices.Contains(abbreviations, strings.ToLower(word)) {
				continue
			}
		}
		return s[:i+1]
	}
	return s
}

// jsonLen is the length of s written as JSON string content by
// encoding/json (which escapes <, > and & for HTML, and writes an invalid
// byte as \ufffd).
func jsonLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += 6
		} else {
			n += runeJSONLen(r)
		}
		i += size
	}
	return n
}

func runeJSONLen(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	}
	return utf8.RuneLen(r)
}

// clipJSON cuts s so that its JSON string content takes at most max bytes,
// at a word boundary when one is near, ending in "…".
func clipJSON(s string, max int) string {
	if jsonLen(s) <= max {
		return s
	}
	const ellipsis = "…"
	budget := max - len(ellipsis)
	if budget <= 0 {
		return ""
	}
	n, cut := 0, 0
	for cut < len(s) {
		r, size := utf8.DecodeRuneInString(s[cut:])
		l := runeJSONLen(r)
		if r == utf8.RuneError && size == 1 {
			l = 6
		}
		if n+l > budget {
			break
		}
		n += l
		cut += size
	}
	out := s[:cut]
	if sp := strings.LastIndexByte(out, ' '); sp > len(out)*2/3 {
		out = out[:sp]
	}
	return strings.TrimRight(out, " ,;:") + ellipsis
}

// summarizeParams writes the parameters of an input schema within max
// bytes of JSON string content.
func summarizeParams(in Schema, max int) string {
	if len(in) == 0 || max <= 0 {
		return ""
	}
	w := schemaWalker{root: in}
	obj := w.resolve(map[string]any(in))
	props, required := w.objectProps(obj)
	if len(props) == 0 {
		if t := w.typeOf(obj, 0); t != "object" && t != "any" {
			return clipJSON("input: "+t, max)
		}
		return ""
	}
	return w.fields(props, required, 0, max, len(props))
}

// schemaWalker reads the types of a schema's properties within the budgets.
type schemaWalker struct {
	root   map[string]any
	visits int // subschemas inspected for the current parameter
}

// resolve follows a local $ref (#/$defs/… or #/definitions/…) a few hops.
func (w *schemaWalker) resolve(s map[string]any) map[string]any {
	for hop := 0; hop < summaryRefHops; hop++ {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		var target any = w.root
		for _, seg := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, ok := target.(map[string]any)
			if !ok || !strings.HasPrefix(ref, "#/") {
				return s
			}
			seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
			target = m[seg]
		}
		next, ok := target.(map[string]any)
		if !ok {
			return s
		}
		s = next
	}
	return s
}

// objectProps returns an object schema's properties with those of its
// allOf members (one level), and its required names.
func (w *schemaWalker) objectProps(s map[string]any) (map[string]any, []string) {
	props, _ := s["properties"].(map[string]any)
	required := stringList(s["required"])
	all, _ := s["allOf"].([]any)
	if len(all) == 0 {
		return props, required
	}
	merged := map[string]any{}
	for k, v := range props {
		merged[k] = v
	}
	for i, a := range all {
		if i == summaryUnionMax*2 {
			break
		}
		m, ok := a.(map[string]any)
		if !ok {
			continue
		}
		m = w.resolve(m)
		sub, _ := m["properties"].(map[string]any)
		for k, v := range sub {
			if _, ok := merged[k]; !ok {
				merged[k] = v
			}
		}
		required = append(required, stringList(m["required"])...)
	}
	return merged, required
}

func stringList(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = x
	}
	return out
}

// fields describes an object's properties, required ones first (in the
// order "required" lists them), then the others by name, joined with ", "
// within max bytes of JSON string content and count properties; "+N more"
// says how many are left out. depth 0 is the input's own properties; at
// depth 1 nested objects are not opened.
func (w *schemaWalker) fields(props map[string]any, required []string, depth, max, count int) string {
	names := make([]string, 0, len(props))
	isReq := map[string]bool{}
	for _, r := range required {
		if _, ok := props[r]; ok && !isReq[r] {
			isReq[r] = true
			names = append(names, r)
		}
	}
	var rest []string
	for k := range props {
		if !isReq[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	names = append(names, rest...)
	var b strings.Builder
	size := 0 // jsonLen of b
	for i, name := range names {
		sep := ""
		if i > 0 {
			sep = ", "
		}
		left := len(names) - i
		if i == count {
			return b.String() + fmt.Sprintf("%s+%d more", sep, left)
		}
		mark := ""
		if isReq[name] {
			mark = "*"
		}
		if depth == 0 {
			w.visits = 0
		}
		p := clipJSON(clipJSON(oneLine(name), 48)+mark+": "+w.describe(props[name], depth), summaryParamMax>>depth)
		tail := 0
		if left > 1 {
			tail = len(fmt.Sprintf(", +%d more", left-1))
		}
		if size+len(sep)+jsonLen(p)+tail > max {
			more := fmt.Sprintf("%s+%d more", sep, left)
			if size+len(more) > max {
				return b.String()
			}
			return b.String() + more
		}
		b.WriteString(sep)
		b.WriteString(p)
		size += len(sep) + jsonLen(p)
	}
	return b.String()
}

// describe is the type of one property, with its default value.
func (w *schemaWalker) describe(v any, depth int) string {
	s, ok := v.(map[string]any)
	if !ok {
		if b, ok := v.(bool); ok && !b {
			return "never"
		}
		return "any"
	}
	s = w.resolve(s)
	t := w.typeOf(s, depth)
	if def, ok := s["default"]; ok {
		if lit := literal(def); lit != "" {
			t += "=" + lit
		}
	}
	return t
}

// literal writes a scalar as JSON, or "" for others and long ones.
func literal(v any) string {
	switch v.(type) {
	case string, bool, float64, int64, int, json.Number:
	default:
		return ""
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil || b.Len() > summaryEnumValueMax+1 {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// typeOf writes the type of a schema: an enum's values, a const, a type
// (with its format), a union of alternatives, T[] for an array, and for
// an object at depth 0 its properties in braces.
func (w *schemaWalker) typeOf(s map[string]any, depth int) string {
	w.visits++
	if w.visits > summaryVisitMax {
		return "any"
	}
	s = w.resolve(s)
	if c, ok := s["const"]; ok {
		if lit := literal(c); lit != "" {
			return lit
		}
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return enumOf(e)
	}
	var types []string
	switch t := s["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		types = stringList(t)
	}
	var alts []string
	if len(types) == 0 || len(types) == 1 && types[0] == "object" && s["properties"] == nil {
		alts = w.alternativesOf(s, depth)
	}
	parts := w.typesOf(s, types, len(alts) > 0, depth)
	parts = append(parts, alts...)
	if len(parts) == 0 {
		switch {
		case s["properties"] != nil:
			return w.objectOf(s, depth)
		case s["items"] != nil:
			return w.arrayOf(s, depth)
		}
		return "any"
	}
	return union(parts)
}

// alternativesOf writes the types of a schema's oneOf and anyOf
// alternatives, at most summaryUnionMax*2 of each.
func (w *schemaWalker) alternativesOf(s map[string]any, depth int) []string {
	var alts []string
	for _, key := range []string{"oneOf", "anyOf"} {
		list, _ := s[key].([]any)
		for i, a := range list {
			if i == summaryUnionMax*2 {
				break
			}
			if m, ok := a.(map[string]any); ok {
				alts = append(alts, w.typeOf(m, depth+1))
			}
		}
	}
	return alts
}

// typesOf writes each of a schema's types: T[] for an array, an object's
// properties (none when it has alternatives: they say more), a string
// with its format.
func (w *schemaWalker) typesOf(s map[string]any, types []string, hasAlts bool, depth int) []string {
	var parts []string
	for _, t := range types {
		switch t {
		case "array":
			parts = append(parts, w.arrayOf(s, depth))
		case "object":
			if hasAlts {
				continue
			}
			parts = append(parts, w.objectOf(s, depth))
		case "string":
			if f, ok := s["format"].(string); ok && f != "" && len(f) <= 16 {
				t += "(" + f + ")"
			}
			parts = append(parts, t)
		default:
			parts = append(parts, t)
		}
	}
	return parts
}

// union joins alternatives with |, each once, null last, at most
// summaryUnionMax of them.
func union(parts []string) string {
	var out []string
	null := false
	for _, p := range parts {
		alts := []string{p}
		if !strings.ContainsAny(p, "{(\"") {
			alts = strings.Split(p, "|")
		}
		for _, q := range alts {
			if q == "null" {
				null = true
			} else if !slices.Contains(out, q) {
				out = append(out, q)
			}
		}
	}
	if len(out) > summaryUnionMax {
		out = append(out[:summaryUnionMax], "…")
	}
	if null {
		out = append(out, "null")
	}
	return strings.Join(out, "|")
}

// enumOf lists the first values of an enum, then how many more there are.
func enumOf(e []any) string {
	var vals []string
	for i, v := range e {
		if i == summaryEnumMax {
			vals = append(vals, fmt.Sprintf("+%d", len(e)-i))
			break
		}
		lit := literal(v)
		if lit == "" {
			if s, ok := v.(string); ok {
				lit = strconv.Quote(clipJSON(oneLine(s), summaryEnumValueMax-2))
			} else {
				lit = "…"
			}
		}
		vals = append(vals, lit)
	}
	return strings.Join(vals, "|")
}

// arrayOf writes T[] for an array of T ((a|b)[] for a union).
func (w *schemaWalker) arrayOf(s map[string]any, depth int) string {
	items, ok := s["items"].(map[string]any)
	if !ok {
		return "array"
	}
	t := w.typeOf(items, depth)
	if strings.Contains(t, "|") && !strings.HasPrefix(t, "{") {
		t = "(" + t + ")"
	}
	return t + "[]"
}

// objectOf writes an object: at depth 0 its properties, one level, in
// braces; deeper "object".
func (w *schemaWalker) objectOf(s map[string]any, depth int) string {
	props, required := w.objectProps(s)
	if depth > 0 || len(props) == 0 {
		return "object"
	}
	return "{" + w.fields(props, required, depth+1, summaryNestedBytes, summaryNestedMax) + "}"
}
