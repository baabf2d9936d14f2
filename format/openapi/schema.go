package openapi

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/caphub/caphub/capability"
)

// specVersion is the OpenAPI family a document belongs to.
type specVersion int

const (
	swagger2 specVersion = iota + 1
	oas30
	oas31
)

// noCut is the cut depth of a converted schema that cut no recursive
// reference to a schema still being resolved above it.
const noCut = math.MaxInt

// cutInside is the cut depth of a converted schema whose cuts all refer to
// schemas inside it: it cut no ancestor, yet it depends on the path it was
// reached by, so it must not be cached.
const cutInside = math.MaxInt - 1

// sizeCap is where node counts saturate: a document can describe an
// astronomically large expansion (22 schemas of 8 $refs each to the next
// expand into 8^22 nodes), and a count that wrapped around would pass every
// limit. Counts are added with addSize; any count is at most sizeCap plus
// a few, so sums of them cannot overflow.
const sizeCap = 1 << 40

// addSize adds two node counts, saturating at sizeCap.
func addSize(a, b int) int { return min(a+b, sizeCap) }

// errBudget reports that the work budget of an import ran out: the document
// expands into more schema nodes than a real API needs (an "alias bomb" or a
// reference fan-out).
var errBudget = errors.New("the schemas expand into too many nodes (the document's work budget is exhausted): simplify the schemas or import a smaller document")

// expansionError reports a referenced schema that expands, every $ref in it
// inlined, into more nodes than one definition may hold: it is refused when
// it is converted, before anything is copied.
type expansionError struct {
	ptr   string // JSON pointer of the schema
	limit int
}

func (e *expansionError) Error() string {
	return fmt.Sprintf("the document's expansion exceeds %d nodes at %s; caphub inlines every $ref, so a schema used many times (directly or through others) is copied each time: reference it fewer times or simplify it",
		e.limit, dotted(e.ptr))
}

// dotted renders a JSON pointer as a dotted path ("/components/schemas/A"
// → "components.schemas.A").
func dotted(ptr string) string {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return strings.Join(parts, ".")
}

// converter turns OpenAPI Schema Objects into JSON Schema 2020-12 with every
// $ref inlined.
//
// Each referenced schema is converted once and reused (the converted value is
// shared by every place that references it until build clones each
// definition's schemas). A $ref whose target is already being
// resolved further up the current path is a cycle; it is cut (see
// cutPlaceholder). A converted target is cached only when it does not depend
// on where it was reached from, i.e. when it cut no reference to a schema
// above it.
type converter struct {
	root    map[string]any
	version specVersion
	cache   map[string]cachedSchema
	onStack map[string]int // pointer → its depth on the current resolution path
	work    int            // nodes left to convert before errBudget
	// maxNodes bounds the expansion of one referenced schema (see
	// expansionError); 0 means no bound.
	maxNodes int
	regexps  map[string]bool
}

type cachedSchema struct {
	v    any
	size int
}

func newConverter(root map[string]any, v specVersion, budget, maxNodes int) *converter {
	return &converter{
		root:     root,
		version:  v,
		cache:    map[string]cachedSchema{},
		onStack:  map[string]int{},
		work:     budget,
		maxNodes: maxNodes,
		regexps:  map[string]bool{},
	}
}

// refError is a $ref that cannot be inlined.
type refError struct {
	ref    string
	reason string
}

func (e *refError) Error() string { return fmt.Sprintf("$ref %q %s", e.ref, e.reason) }

// pointer returns the JSON pointer of a local reference ("#/a/b" → "/a/b").
func pointer(ref string) (string, error) {
	if !strings.HasPrefix(ref, "#") {
		return "", &refError{ref, "points outside the document, which caphub does not follow: bundle the spec into one file first (for example with `redocly bundle` or `swagger-cli bundle`)"}
	}
	frag := ref[1:]
	if strings.Contains(frag, "%") {
		if u, err := url.PathUnescape(frag); err == nil {
			frag = u
		}
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		return "", &refError{ref, "is not a JSON pointer (#/components/...): anchors are not supported; point at the definition by its path"}
	}
	return frag, nil
}

// lookup returns the value a JSON pointer names in the document.
func (c *converter) lookup(ref, ptr string) (any, error) {
	var cur any = c.root
	if ptr == "" {
		return cur, nil
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return nil, &refError{ref, fmt.Sprintf("points at nothing (no %q there): define it, or fix the reference", tok)}
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, &refError{ref, fmt.Sprintf("points at nothing (no item %q there): fix the reference", tok)}
			}
			cur = x[i]
		default:
			return nil, &refError{ref, fmt.Sprintf("points into a value that is not an object (at %q): fix the reference", tok)}
		}
	}
	return cur, nil
}

// resolve follows a chain of $refs from an object that is not a schema (a
// parameter, request body, response, path item or security scheme) to the
// object itself. A description or summary beside the $ref (OpenAPI 3.1)
// overrides the target's.
func (c *converter) resolve(v any, what string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", what)
	}
	var override map[string]any
	for hops := 0; ; hops++ {
		ref, has := m["$ref"]
		if !has {
			break
		}
		if hops >= 32 {
			return nil, fmt.Errorf("%s: $ref chain longer than 32 (a reference loop?): fix the references", what)
		}
		s, ok := ref.(string)
		if !ok {
			return nil, fmt.Errorf("%s: $ref must be a string", what)
		}
		for _, k := range []string{"description", "summary"} {
			if d, ok := m[k].(string); ok && override[k] == nil {
				if override == nil {
					override = map[string]any{}
				}
				override[k] = d
			}
		}
		ptr, err := pointer(s)
		if err != nil {
			return nil, err
		}
		t, err := c.lookup(s, ptr)
		if err != nil {
			return nil, err
		}
		if m, ok = t.(map[string]any); !ok {
			return nil, &refError{s, "does not point at an object: fix the reference"}
		}
	}
	if override != nil {
		m = shallowCopy(m)
		for k, v := range override {
			m[k] = v
		}
	}
	return m, nil
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// spend takes n nodes from the work budget.
func (c *converter) spend(n int) error {
	c.work -= n
	if c.work < 0 {
		return errBudget
	}
	return nil
}

// schema converts one Schema Object. It returns the JSON Schema, its size
// once every shared part is expanded (in nodes), and the depth of the
// outermost schema it cut a reference to (noCut when none).
func (c *converter) schema(v any, nest int) (any, int, int, error) {
	if err := c.spend(1); err != nil {
		return nil, 0, 0, err
	}
	if nest > capability.MaxSchemaNesting {
		return nil, 0, 0, fmt.Errorf("schema nesting exceeds %d levels (counting each $ref followed): flatten the schema", capability.MaxSchemaNesting)
	}
	switch x := v.(type) {
	case bool:
		return x, 1, noCut, nil
	case map[string]any:
		if ref, ok := x["$ref"]; ok {
			return c.ref(x, ref, nest)
		}
		return c.object(x, nest)
	}
	// null or a value that is not a schema: accept anything.
	return map[string]any{}, 1, noCut, nil
}

// ref inlines a $ref, applying its siblings.
func (c *converter) ref(x map[string]any, refv any, nest int) (any, int, int, error) {
	ref, ok := refv.(string)
	if !ok {
		return nil, 0, 0, fmt.Errorf("$ref must be a string, not %T", refv)
	}
	ptr, err := pointer(ref)
	if err != nil {
		return nil, 0, 0, err
	}
	var (
		target any
		size   int
		cut    = noCut
	)
	if depth, on := c.onStack[ptr]; on {
		target, size, cut = c.cutPlaceholder(ref, ptr), 3, depth
	} else if e, ok := c.cache[ptr]; ok {
		target, size = e.v, e.size
	} else {
		raw, err := c.lookup(ref, ptr)
		if err != nil {
			return nil, 0, 0, err
		}
		depth := len(c.onStack)
		c.onStack[ptr] = depth
		t, sz, ct, err := c.schema(raw, nest+1)
		delete(c.onStack, ptr)
		if err != nil {
			var re *refError
			var ee *expansionError
			if !errors.As(err, &re) && !errors.As(err, &ee) && err != errBudget && !strings.Contains(err.Error(), " (in $ref ") {
				err = fmt.Errorf("%w (in $ref %q)", err, ref)
			}
			return nil, 0, 0, err
		}
		if c.maxNodes > 0 && sz > c.maxNodes {
			return nil, 0, 0, &expansionError{ptr: ptr, limit: c.maxNodes}
		}
		if ct == noCut {
			c.cache[ptr] = cachedSchema{t, sz}
		} else if ct >= depth {
			ct = cutInside // the cuts are below: ancestors are not cut, but not cacheable either
		}
		target, size, cut = t, sz, ct
	}
	if len(x) == 1 {
		return target, size, cut, nil
	}
	return c.siblings(x, target, size, cut, nest)
}

// annotationKeys are the sibling keywords of a $ref that override the
// target's in every version (OpenAPI 3.0 says siblings are ignored, but
// writers put descriptions there meaning them).
var annotationKeys = []string{"description", "title"}

// siblings applies the keywords written beside a $ref: description and
// title override the target's; nullable (or x-nullable) makes it accept
// null; in OpenAPI 3.1 any other keyword also applies (the result is the
// target and the siblings under allOf). In 3.0 and Swagger 2.0 other
// siblings are ignored, as those versions say.
func (c *converter) siblings(x map[string]any, target any, size, cut, nest int) (any, int, int, error) {
	var rest map[string]any
	nullable := x["nullable"] == true || x["x-nullable"] == true
	for k, v := range x {
		switch k {
		case "$ref", "nullable", "x-nullable", "description", "title":
			continue
		}
		if c.version == oas31 && !strings.HasPrefix(k, "x-") {
			if rest == nil {
				rest = map[string]any{}
			}
			rest[k] = v
		}
	}
	var out map[string]any
	if rest != nil {
		conv, sz, ct, err := c.object(rest, nest)
		if err != nil {
			return nil, 0, 0, err
		}
		out, size, cut = conv, addSize(size, sz), min(cut, ct)
		all, _ := out["allOf"].([]any)
		out["allOf"] = append([]any{target}, all...)
	} else if tm, ok := target.(map[string]any); ok {
		out = shallowCopy(tm)
	} else {
		out = map[string]any{"allOf": []any{target}}
	}
	for _, k := range annotationKeys {
		if s, ok := x[k].(string); ok {
			out[k] = s
		}
	}
	if nullable {
		out = makeNullable(out)
	}
	return out, addSize(size, 2), cut, nil
}

// cutPlaceholder is what a recursive $ref becomes: a schema with the
// target's type (when it declares one) that says what was cut, so that no
// schema is infinite and none holds a $ref.
func (c *converter) cutPlaceholder(ref, ptr string) map[string]any {
	name := ptr[strings.LastIndexByte(ptr, '/')+1:]
	out := map[string]any{
		"description": fmt.Sprintf("recursive reference to %s (cut: the value has the same shape as the enclosing %s)", name, name),
		"$comment":    "caphub: recursive $ref " + ref + " cut",
	}
	if raw, err := c.lookup(ref, ptr); err == nil {
		if m, ok := raw.(map[string]any); ok {
			if t := normType(m["type"]); t != nil {
				out["type"] = t
				if m["nullable"] == true || m["x-nullable"] == true {
					out["type"] = addNull(t)
				}
			}
		}
	}
	return out
}

// object converts a Schema Object that is not a $ref. Keywords of JSON
// Schema 2020-12 are kept when their value is well-formed and dropped when
// not; OpenAPI's own keywords are converted (nullable, boolean
// exclusiveMinimum/Maximum, example, type: file, discriminator); everything
// else (xml, externalDocs, x- extensions, $id, $schema, $defs, definitions,
// unknown keywords) is dropped.
func (c *converter) object(x map[string]any, nest int) (map[string]any, int, int, error) {
	out := make(map[string]any, len(x))
	size, cut := 1, noCut
	var firstErr error
	sub := func(v any) any {
		if firstErr != nil {
			return nil
		}
		s, sz, ct, err := c.schema(v, nest+1)
		if err != nil {
			firstErr = err
			return nil
		}
		size = addSize(size, sz)
		cut = min(cut, ct)
		return s
	}
	data := func(v any) any {
		if firstErr != nil {
			return nil
		}
		cv, n, err := c.copyValue(v, 0)
		if err != nil {
			firstErr = err
			return nil
		}
		size = addSize(size, n)
		return cv
	}
	var (
		nullable     bool
		exMin, exMax any
		example      any
		itemsArray   bool
	)
	for k, v := range x {
		switch k {
		case "properties", "patternProperties", "dependentSchemas":
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			pm := make(map[string]any, len(m))
			for _, pk := range slices.Sorted(maps.Keys(m)) {
				if pk == "$ref" || (k == "patternProperties" && !c.regexOK(pk)) {
					continue // a property named $ref is ambiguous (some tools read a reference): dropped
				}
				pm[pk] = sub(m[pk])
			}
			out[k] = pm
			size++
		case "items":
			if arr, ok := v.([]any); ok {
				if len(arr) > 0 {
					out["prefixItems"] = c.schemaList(arr, sub)
					itemsArray = true
					size++
				}
			} else if isSchema(v) {
				out["items"] = sub(v)
			}
		case "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
			"unevaluatedItems", "unevaluatedProperties", "contentSchema":
			if isSchema(v) {
				out[k] = sub(v)
			}
		case "allOf", "anyOf", "oneOf", "prefixItems":
			if arr, ok := v.([]any); ok && len(arr) > 0 {
				out[k] = c.schemaList(arr, sub)
				size++
			}
		case "type":
			if t := normType(v); t != nil {
				out["type"] = t
				size++
			}
		case "nullable", "x-nullable":
			nullable = nullable || v == true
		case "exclusiveMinimum":
			exMin = v
		case "exclusiveMaximum":
			exMax = v
		case "minimum", "maximum":
			if n, ok := number(v); ok {
				out[k] = n
				size++
			}
		case "multipleOf":
			if n, ok := number(v); ok && toFloat(n) > 0 {
				out[k] = n
				size++
			}
		case "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "maxContains", "minContains":
			if n, ok := number(v); ok {
				if i, isInt := n.(int64); isInt && i >= 0 {
					out[k] = i
					size++
				}
			}
		case "pattern":
			if s, ok := v.(string); ok && c.regexOK(s) {
				out[k] = s
				size++
			}
		case "format", "title", "description", "$comment", "contentMediaType", "contentEncoding":
			if s, ok := v.(string); ok {
				out[k] = s
				size++
			}
		case "required":
			if r := stringSet(v); r != nil {
				out[k] = r
				size += 1 + len(r)
			}
		case "enum", "examples":
			if arr, ok := v.([]any); ok {
				out[k] = data(arr)
			}
		case "const", "default":
			out[k] = data(v)
		case "example":
			example = v
		case "uniqueItems", "readOnly", "writeOnly", "deprecated":
			if b, ok := v.(bool); ok {
				out[k] = b
				size++
			}
		case "dependentRequired":
			if m, ok := v.(map[string]any); ok {
				dr := map[string]any{}
				for dk, dv := range m {
					if r := stringSet(dv); r != nil && dk != "$ref" {
						dr[dk] = r
						size += 1 + len(r)
					}
				}
				out[k] = dr
			}
		case "dependencies": // draft-07: split into dependentRequired and dependentSchemas
			if m, ok := v.(map[string]any); ok {
				for _, dk := range slices.Sorted(maps.Keys(m)) {
					dv := m[dk]
					if dk == "$ref" {
						continue
					}
					if r := stringSet(dv); r != nil {
						dr, _ := out["dependentRequired"].(map[string]any)
						if dr == nil {
							dr = map[string]any{}
							out["dependentRequired"] = dr
						}
						dr[dk] = r
					} else if isSchema(dv) {
						ds, _ := out["dependentSchemas"].(map[string]any)
						if ds == nil {
							ds = map[string]any{}
							out["dependentSchemas"] = ds
						}
						ds[dk] = sub(dv)
					}
				}
			}
		case "discriminator":
			if m, ok := v.(map[string]any); ok {
				if p, ok := m["propertyName"].(string); ok {
					out[k] = map[string]any{"propertyName": p}
					size += 2
				}
			}
		}
	}
	if firstErr != nil {
		return nil, 0, 0, firstErr
	}
	if _, has := out["format"]; !has && x["type"] == "file" {
		out["format"] = "binary" // Swagger 2.0 type: file is a binary string
	}
	if itemsArray {
		if ai, ok := x["additionalItems"]; ok && isSchema(ai) {
			out["items"] = sub(ai)
			if firstErr != nil {
				return nil, 0, 0, firstErr
			}
		}
	}
	exclusive(out, exMin, "minimum", "exclusiveMinimum")
	exclusive(out, exMax, "maximum", "exclusiveMaximum")
	if example != nil {
		if _, has := out["examples"]; !has {
			if ex := data(example); ex != nil {
				out["examples"] = []any{ex}
			}
			if firstErr != nil {
				return nil, 0, 0, firstErr
			}
		}
	}
	if nullable {
		out = makeNullable(out)
		size += 3
	}
	return out, size, cut, nil
}

// schemaList converts an array of schemas, dropping entries that are not
// schemas.
func (c *converter) schemaList(arr []any, sub func(any) any) []any {
	out := make([]any, 0, len(arr))
	for _, e := range arr {
		if isSchema(e) {
			out = append(out, sub(e))
		}
	}
	if len(out) == 0 {
		out = append(out, true)
	}
	return out
}

// exclusive converts OpenAPI 3.0's boolean exclusiveMinimum/Maximum (a flag
// on minimum/maximum) to 2020-12's numeric form, and keeps a numeric one.
func exclusive(out map[string]any, v any, bound, key string) {
	switch b := v.(type) {
	case nil:
	case bool:
		if b {
			if m, ok := out[bound]; ok {
				out[key] = m
				delete(out, bound)
			}
		}
	default:
		if n, ok := number(v); ok {
			out[key] = n
		}
	}
}

// makeNullable makes a converted schema also accept null: null is added to
// its type (and to its enum), or, when it combines subschemas (allOf,
// anyOf, oneOf, not) or has a const, it becomes anyOf [schema, {type:
// null}] with its title and description moved to the outside.
func makeNullable(s map[string]any) map[string]any {
	_, combines := s["allOf"]
	for _, k := range []string{"anyOf", "oneOf", "not", "const"} {
		if _, ok := s[k]; ok {
			combines = true
		}
	}
	t, typed := s["type"]
	if typed && !combines {
		s["type"] = addNull(t)
		if e, ok := s["enum"].([]any); ok && !containsNil(e) {
			s["enum"] = append(append([]any(nil), e...), nil)
		}
		return s
	}
	if !typed && !combines {
		if e, ok := s["enum"].([]any); ok && !containsNil(e) {
			s["enum"] = append(append([]any(nil), e...), nil)
		}
		return s // without type or combinators it already accepts null
	}
	outer := map[string]any{}
	for _, k := range annotationKeys {
		if v, ok := s[k]; ok {
			outer[k] = v
			delete(s, k)
		}
	}
	outer["anyOf"] = []any{s, map[string]any{"type": "null"}}
	return outer
}

func containsNil(a []any) bool {
	for _, v := range a {
		if v == nil {
			return true
		}
	}
	return false
}

// jsonTypes are the type names of JSON Schema; typeAliases are names that
// sloppy documents use for them.
var (
	jsonTypes   = map[string]bool{"array": true, "boolean": true, "integer": true, "null": true, "number": true, "object": true, "string": true}
	typeAliases = map[string]string{
		"file": "string", "int": "integer", "int32": "integer", "int64": "integer", "long": "integer",
		"float": "number", "double": "number", "decimal": "number", "bool": "boolean",
		"str": "string", "text": "string", "date": "string", "datetime": "string", "date-time": "string",
		"dict": "object", "map": "object", "list": "array",
	}
)

func typeName(v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		return "", false
	}
	if jsonTypes[s] {
		return s, true
	}
	if a, ok := typeAliases[strings.ToLower(s)]; ok {
		return a, true
	}
	if l := strings.ToLower(s); jsonTypes[l] {
		return l, true
	}
	return "", false
}

// normType returns a valid JSON Schema type value (a name or a list of
// unique names) for v, or nil when v names no type.
func normType(v any) any {
	if s, ok := typeName(v); ok {
		return s
	}
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	var out []any
	seen := map[string]bool{}
	for _, e := range arr {
		if s, ok := typeName(e); ok && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// addNull adds "null" to a type value.
func addNull(t any) any {
	switch x := t.(type) {
	case string:
		if x == "null" {
			return x
		}
		return []any{x, "null"}
	case []any:
		for _, e := range x {
			if e == "null" {
				return x
			}
		}
		return append(append([]any(nil), x...), "null")
	}
	return t
}

func isSchema(v any) bool {
	switch v.(type) {
	case bool, map[string]any:
		return true
	}
	return false
}

// number returns v as int64 (whole values below 2^53) or float64.
func number(v any) (any, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false
		}
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
		return x, true
	}
	return nil, false
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

// stringSet returns v as a list of unique strings, or nil when v is not a
// list of strings.
func stringSet(v any) []any {
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]any, 0, len(arr))
	seen := make(map[string]bool, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// regexOK reports whether a pattern compiles with the regular-expression
// engine the JSON Schema compiler uses (Go's RE2 syntax); a pattern that
// does not (a look-ahead, say) is dropped rather than making the schema
// invalid.
func (c *converter) regexOK(p string) bool {
	ok, seen := c.regexps[p]
	if !seen {
		_, err := regexp.Compile(p)
		ok = err == nil
		c.regexps[p] = ok
	}
	return ok
}

// copyValue deep-copies a data value (default, enum, examples, const) in
// canonical form, counting its nodes against the work budget.
func (c *converter) copyValue(v any, depth int) (any, int, error) {
	if err := c.spend(1); err != nil {
		return nil, 0, err
	}
	if depth > capability.MaxSchemaNesting {
		return nil, 0, fmt.Errorf("a value nests deeper than %d levels: flatten it", capability.MaxSchemaNesting)
	}
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			return c.dataRef(ref, depth)
		}
		out := make(map[string]any, len(x))
		n := 1
		for k, e := range x {
			if k == "$ref" {
				continue // not a reference (not a string): dropped, no $ref is left
			}
			cv, cn, err := c.copyValue(e, depth+1)
			if err != nil {
				return nil, 0, err
			}
			out[k] = cv
			n = addSize(n, cn)
		}
		return out, n, nil
	case []any:
		out := make([]any, len(x))
		n := 1
		for i, e := range x {
			cv, cn, err := c.copyValue(e, depth+1)
			if err != nil {
				return nil, 0, err
			}
			out[i] = cv
			n = addSize(n, cn)
		}
		return out, n, nil
	case float64:
		if nv, ok := number(x); ok {
			return nv, 1, nil
		}
		return nil, 1, nil
	}
	return v, 1, nil
}

// dataRef resolves a Reference Object written where data belongs (GitHub
// writes example: {$ref: '#/components/examples/x'}): the referenced value
// is copied, the value of an Example Object; an unresolvable one is nil.
func (c *converter) dataRef(ref string, depth int) (any, int, error) {
	ptr, err := pointer(ref)
	if err != nil {
		return nil, 1, nil
	}
	t, err := c.lookup(ref, ptr)
	if err != nil {
		return nil, 1, nil
	}
	if m, ok := t.(map[string]any); ok && strings.HasPrefix(ptr, "/components/examples/") {
		t = m["value"]
	}
	return c.copyValue(t, depth+1)
}
