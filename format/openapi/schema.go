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

// converter turns OpenAPI Schema Objects into JSON Schema 2020-12.
//
// A $ref to a schema becomes a $ref to "#/$defs/<name>", and the schema it
// names is a component (see component): converted once per document, and
// put under $defs by withDefs in each capability schema that needs it.
// Recursive schemas are therefore kept as they are, and every schema costs
// its conversion once, whatever the number of places that use it.
type converter struct {
	root    map[string]any
	version specVersion
	comps   map[string]*component // by JSON pointer
	byName  map[string]*component // by $defs name
	work    int                   // nodes left to convert before errBudget
	regexps map[string]bool
}

func newConverter(root map[string]any, v specVersion, budget int) *converter {
	c := &converter{
		root:    root,
		version: v,
		comps:   map[string]*component{},
		byName:  map[string]*component{},
		work:    budget,
		regexps: map[string]bool{},
	}
	c.nameComponents()
	return c
}

// refError is a $ref that cannot be followed.
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
	override := map[string]any{}
	for hops := 0; ; hops++ {
		ref, has := m["$ref"]
		if !has {
			break
		}
		if hops >= 32 {
			return nil, fmt.Errorf("%s: $ref chain longer than 32 (a reference loop?): fix the references", what)
		}
		for _, k := range []string{"description", "summary"} {
			if d, ok := m[k].(string); ok && override[k] == nil {
				override[k] = d
			}
		}
		var err error
		if m, err = c.follow(ref, what); err != nil {
			return nil, err
		}
	}
	if len(override) > 0 {
		m = shallowCopy(m)
		maps.Copy(m, override)
	}
	return m, nil
}

// follow returns the object a $ref of an object that is not a schema
// points at.
func (c *converter) follow(ref any, what string) (map[string]any, error) {
	s, ok := ref.(string)
	if !ok {
		return nil, fmt.Errorf("%s: $ref must be a string", what)
	}
	ptr, err := pointer(s)
	if err != nil {
		return nil, err
	}
	t, err := c.lookup(s, ptr)
	if err != nil {
		return nil, err
	}
	m, ok := t.(map[string]any)
	if !ok {
		return nil, &refError{s, "does not point at an object: fix the reference"}
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

// schema converts one Schema Object. It returns the JSON Schema and its
// size in nodes (a $ref counts as its own two nodes: the components it
// names are counted where they are added, by withDefs).
func (c *converter) schema(v any, nest int) (any, int, error) {
	if err := c.spend(1); err != nil {
		return nil, 0, err
	}
	if nest > capability.MaxSchemaNesting {
		return nil, 0, fmt.Errorf("schema nesting exceeds %d levels: flatten the schema", capability.MaxSchemaNesting)
	}
	switch x := v.(type) {
	case bool:
		return x, 1, nil
	case map[string]any:
		if ref, ok := x["$ref"]; ok {
			return c.ref(x, ref, nest)
		}
		return c.object(x, nest)
	}
	// null or a value that is not a schema: accept anything.
	return map[string]any{}, 1, nil
}

// ref converts a $ref to a schema: {"$ref": "#/$defs/<name>"} with its
// siblings applied.
func (c *converter) ref(x map[string]any, refv any, nest int) (any, int, error) {
	ref, ok := refv.(string)
	if !ok {
		return nil, 0, fmt.Errorf("$ref must be a string, not %T", refv)
	}
	comp, err := c.component(ref)
	if err != nil {
		return nil, 0, err
	}
	out := map[string]any{"$ref": defsPrefix + comp.name}
	if len(x) == 1 {
		return out, 2, nil
	}
	return c.siblings(x, out, nest)
}

// inRef says in which $ref a conversion error happened, unless the error
// names its place already.
func inRef(err error, ref string) error {
	var re *refError
	if errors.As(err, &re) || err == errBudget || strings.Contains(err.Error(), " (in $ref ") {
		return err
	}
	return fmt.Errorf("%w (in $ref %q)", err, ref)
}

// annotationKeys are the sibling keywords of a $ref that override the
// target's in every version (OpenAPI 3.0 says siblings are ignored, but
// writers put descriptions there meaning them).
var annotationKeys = []string{"description", "title"}

// siblings applies the keywords written beside a $ref to out, the
// converted {"$ref": …}: description and title override the target's;
// nullable (or x-nullable) makes it accept null; in OpenAPI 3.1 any other
// keyword also applies (2020-12 applies keywords beside a $ref as well as
// the target). In 3.0 and Swagger 2.0 other siblings are ignored, as those
// versions say.
func (c *converter) siblings(x, out map[string]any, nest int) (any, int, error) {
	size := 2
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
	if rest != nil {
		conv, sz, err := c.object(rest, nest)
		if err != nil {
			return nil, 0, err
		}
		conv["$ref"] = out["$ref"]
		out, size = conv, addSize(size, sz)
	}
	for _, k := range annotationKeys {
		if s, ok := x[k].(string); ok {
			out[k] = s
			size++
		}
	}
	if nullable {
		out = makeNullable(out)
		size += 3
	}
	return out, size, nil
}

// object converts a Schema Object that is not a $ref. Keywords of JSON
// Schema 2020-12 are kept when their value is well-formed and dropped when
// not; OpenAPI's own keywords are converted (nullable, boolean
// exclusiveMinimum/Maximum, example, type: file, discriminator); everything
// else (xml, externalDocs, x- extensions, $id, $schema, $defs, definitions,
// unknown keywords) is dropped.
func (c *converter) object(x map[string]any, nest int) (map[string]any, int, error) {
	o := &objectConv{c: c, nest: nest, out: make(map[string]any, len(x)), size: 1}
	for k, v := range x {
		if h, ok := keywordHandlers[k]; ok {
			h(o, k, v)
		}
	}
	if o.err == nil {
		o.finish(x)
	}
	if o.err != nil {
		return nil, 0, o.err
	}
	return o.out, o.size, nil
}

// objectConv is the state of one object conversion: the schema being built,
// its size (see schema), the first error, and the OpenAPI keywords that are
// applied once every keyword has been seen.
type objectConv struct {
	c    *converter
	nest int
	out  map[string]any
	size int
	err  error

	nullable     bool
	exMin, exMax any
	example      any
	itemsArray   bool
}

// sub converts a subschema, accounting its size; after an error it does
// nothing.
func (o *objectConv) sub(v any) any {
	if o.err != nil {
		return nil
	}
	s, sz, err := o.c.schema(v, o.nest+1)
	if err != nil {
		o.err = err
		return nil
	}
	o.size = addSize(o.size, sz)
	return s
}

// data copies a data value (enum, const, default, examples), accounting its
// size; after an error it does nothing.
func (o *objectConv) data(v any) any {
	if o.err != nil {
		return nil
	}
	cv, n, err := o.c.copyValue(v, 0)
	if err != nil {
		o.err = err
		return nil
	}
	o.size = addSize(o.size, n)
	return cv
}

// set keeps a converted keyword, counting n nodes.
func (o *objectConv) set(k string, v any, n int) {
	o.out[k] = v
	o.size += n
}

// keywordHandlers convert each keyword object keeps (see object); it is
// filled in init because the handlers recurse into object.
var keywordHandlers map[string]func(o *objectConv, k string, v any)

func init() {
	keywordHandlers = map[string]func(o *objectConv, k string, v any){
		"items":             (*objectConv).items,
		"type":              (*objectConv).typ,
		"nullable":          (*objectConv).nullableFlag,
		"x-nullable":        (*objectConv).nullableFlag,
		"exclusiveMinimum":  func(o *objectConv, _ string, v any) { o.exMin = v },
		"exclusiveMaximum":  func(o *objectConv, _ string, v any) { o.exMax = v },
		"minimum":           (*objectConv).numberKeyword,
		"maximum":           (*objectConv).numberKeyword,
		"multipleOf":        (*objectConv).multipleOf,
		"pattern":           (*objectConv).pattern,
		"required":          (*objectConv).required,
		"enum":              (*objectConv).dataList,
		"examples":          (*objectConv).dataList,
		"const":             func(o *objectConv, k string, v any) { o.out[k] = o.data(v) },
		"default":           func(o *objectConv, k string, v any) { o.out[k] = o.data(v) },
		"example":           func(o *objectConv, _ string, v any) { o.example = v },
		"dependentRequired": (*objectConv).dependentRequired,
		"dependencies":      (*objectConv).dependencies,
		"discriminator":     (*objectConv).discriminator,
	}
	for _, k := range []string{"properties", "patternProperties", "dependentSchemas"} {
		keywordHandlers[k] = (*objectConv).schemaMap
	}
	for _, k := range []string{"additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
		"unevaluatedItems", "unevaluatedProperties", "contentSchema"} {
		keywordHandlers[k] = (*objectConv).subschema
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		keywordHandlers[k] = (*objectConv).schemaArray
	}
	for _, k := range []string{"maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "maxContains", "minContains"} {
		keywordHandlers[k] = (*objectConv).count
	}
	for _, k := range []string{"format", "title", "description", "$comment", "contentMediaType", "contentEncoding"} {
		keywordHandlers[k] = (*objectConv).text
	}
	for _, k := range []string{"uniqueItems", "readOnly", "writeOnly", "deprecated"} {
		keywordHandlers[k] = (*objectConv).flag
	}
}

// schemaMap converts properties, patternProperties and dependentSchemas: a
// map of names to subschemas.
func (o *objectConv) schemaMap(k string, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	pm := make(map[string]any, len(m))
	for _, pk := range slices.Sorted(maps.Keys(m)) {
		if pk == "$ref" || (k == "patternProperties" && !o.c.regexOK(pk)) {
			continue // a property named $ref is ambiguous (some tools read a reference): dropped
		}
		pm[pk] = o.sub(m[pk])
	}
	o.set(k, pm, 1)
}

// items converts items; an array of schemas (draft 4 tuples) becomes
// prefixItems.
func (o *objectConv) items(_ string, v any) {
	if arr, ok := v.([]any); ok {
		if len(arr) > 0 {
			o.set("prefixItems", o.c.schemaList(arr, o.sub), 1)
			o.itemsArray = true
		}
	} else if isSchema(v) {
		o.out["items"] = o.sub(v)
	}
}

// subschema converts a keyword whose value is one schema.
func (o *objectConv) subschema(k string, v any) {
	if isSchema(v) {
		o.out[k] = o.sub(v)
	}
}

// schemaArray converts allOf, anyOf, oneOf and prefixItems.
func (o *objectConv) schemaArray(k string, v any) {
	if arr, ok := v.([]any); ok && len(arr) > 0 {
		o.set(k, o.c.schemaList(arr, o.sub), 1)
	}
}

// typ keeps a type, its names normalised.
func (o *objectConv) typ(_ string, v any) {
	if t := normType(v); t != nil {
		o.set("type", t, 1)
	}
}

// nullableFlag notes nullable or x-nullable; applied in finish.
func (o *objectConv) nullableFlag(_ string, v any) {
	o.nullable = o.nullable || v == true
}

// numberKeyword keeps minimum and maximum when they are numbers.
func (o *objectConv) numberKeyword(k string, v any) {
	if n, ok := number(v); ok {
		o.set(k, n, 1)
	}
}

// multipleOf keeps a positive number.
func (o *objectConv) multipleOf(k string, v any) {
	if n, ok := number(v); ok && toFloat(n) > 0 {
		o.set(k, n, 1)
	}
}

// count keeps a length or count bound when it is a non-negative integer.
func (o *objectConv) count(k string, v any) {
	if n, ok := number(v); ok {
		if i, isInt := n.(int64); isInt && i >= 0 {
			o.set(k, i, 1)
		}
	}
}

// pattern keeps a pattern the schema compiler can compile.
func (o *objectConv) pattern(k string, v any) {
	if s, ok := v.(string); ok && o.c.regexOK(s) {
		o.set(k, s, 1)
	}
}

// text keeps a keyword whose value is a string.
func (o *objectConv) text(k string, v any) {
	if s, ok := v.(string); ok {
		o.set(k, s, 1)
	}
}

// flag keeps a keyword whose value is a boolean.
func (o *objectConv) flag(k string, v any) {
	if b, ok := v.(bool); ok {
		o.set(k, b, 1)
	}
}

// required keeps the required names, each once.
func (o *objectConv) required(k string, v any) {
	if r := stringSet(v); r != nil {
		o.set(k, r, 1+len(r))
	}
}

// dataList copies enum and examples when they are arrays.
func (o *objectConv) dataList(k string, v any) {
	if arr, ok := v.([]any); ok {
		o.out[k] = o.data(arr)
	}
}

// dependentRequired keeps each property's list of required names.
func (o *objectConv) dependentRequired(k string, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	dr := map[string]any{}
	for dk, dv := range m {
		if r := stringSet(dv); r != nil && dk != "$ref" {
			dr[dk] = r
			o.size += 1 + len(r)
		}
	}
	o.out[k] = dr
}

// dependencies (draft 7) is split into dependentRequired and
// dependentSchemas.
func (o *objectConv) dependencies(_ string, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for _, dk := range slices.Sorted(maps.Keys(m)) {
		dv := m[dk]
		if dk == "$ref" {
			continue
		}
		if r := stringSet(dv); r != nil {
			o.entryOf("dependentRequired")[dk] = r
		} else if isSchema(dv) {
			o.entryOf("dependentSchemas")[dk] = o.sub(dv)
		}
	}
}

// entryOf returns the map out[k], adding it when missing.
func (o *objectConv) entryOf(k string) map[string]any {
	m, _ := o.out[k].(map[string]any)
	if m == nil {
		m = map[string]any{}
		o.out[k] = m
	}
	return m
}

// discriminator keeps a discriminator's propertyName.
func (o *objectConv) discriminator(k string, v any) {
	if m, ok := v.(map[string]any); ok {
		if p, ok := m["propertyName"].(string); ok {
			o.set(k, map[string]any{"propertyName": p}, 2)
		}
	}
}

// finish applies what depends on several keywords: Swagger 2.0's type:
// file, additionalItems beside tuple items, OpenAPI 3.0's boolean
// exclusiveMinimum/Maximum, example and nullable.
func (o *objectConv) finish(x map[string]any) {
	if _, has := o.out["format"]; !has && x["type"] == "file" {
		o.out["format"] = "binary" // Swagger 2.0 type: file is a binary string
	}
	if ai, ok := x["additionalItems"]; ok && o.itemsArray && isSchema(ai) {
		o.out["items"] = o.sub(ai)
	}
	exclusive(o.out, o.exMin, "minimum", "exclusiveMinimum")
	exclusive(o.out, o.exMax, "maximum", "exclusiveMaximum")
	if _, has := o.out["examples"]; !has && o.example != nil {
		if ex := o.data(o.example); ex != nil {
			o.out["examples"] = []any{ex}
		}
	}
	if o.nullable {
		o.out = makeNullable(o.out)
		o.size += 3
	}
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
// anyOf, oneOf, not, $ref) or has a const, it becomes anyOf [schema, {type:
// null}] with its title and description moved to the outside.
func makeNullable(s map[string]any) map[string]any {
	_, combines := s["allOf"]
	for _, k := range []string{"anyOf", "oneOf", "not", "const", "$ref"} {
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
		return c.copyMap(x, depth)
	case []any:
		return c.copyList(x, depth)
	case float64:
		if nv, ok := number(x); ok {
			return nv, 1, nil
		}
		return nil, 1, nil
	}
	return v, 1, nil
}

// copyMap copies an object of a data value; a $ref that is not a
// reference (not a string) is dropped, so that no $ref is left.
func (c *converter) copyMap(x map[string]any, depth int) (any, int, error) {
	out := make(map[string]any, len(x))
	n := 1
	for k, e := range x {
		if k == "$ref" {
			continue
		}
		cv, cn, err := c.copyValue(e, depth+1)
		if err != nil {
			return nil, 0, err
		}
		out[k] = cv
		n = addSize(n, cn)
	}
	return out, n, nil
}

// copyList copies an array of a data value.
func (c *converter) copyList(x []any, depth int) (any, int, error) {
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
