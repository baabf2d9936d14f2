package rtfs

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/caphub/caphub/capability"
)

// RTFS types and JSON Schema.
//
// The mapping (TypeToSchema one way, SchemaToType the other):
//
//	:string                    {"type":"string"}
//	:int  (:integer)           {"type":"integer"}
//	:float (:number)           {"type":"number"}
//	:bool (:boolean)           {"type":"boolean"}
//	:nil                       {"type":"null"}
//	:any                       {}
//	:keyword, :symbol          {"type":"string","x-rtfs-type":"keyword"|"symbol"}
//	:timestamp, :uuid          {"type":"string","format":"date-time"|"uuid"}
//	:map, :vector              {"type":"object"}, {"type":"array"}
//	T? (outside a map entry)   [:union T :nil]
//	[:vector T]                {"type":"array","items":T}
//	[:map [:k T] [:o T?] [:* W]]  {"type":"object","properties":{…},"required":["k"],"additionalProperties":W}
//	{:k T :o T ;; optional}    the same, as CCOS writes brace maps
//	[:map-of K V]              {"type":"object","additionalProperties":V} (+ "propertyNames":K unless K is :string or :keyword)
//	[:tuple A B]               {"type":"array","prefixItems":[A,B],"items":false}
//	[:union A B]               {"type":[a,b]} when all are bare primitives, else {"anyOf":[A,B]}
//	[:enum "a" "b"]            {"type":"string","enum":["a","b"]} (type given when all values share one)
//	[:val 1]                   {"const":1}
//	[:and T [:>= 0] …]         T with minimum, exclusiveMinimum (:>), maximum (:<=),
//	                           exclusiveMaximum (:<), const (:=), minLength, maxLength
//	                           (:min-length :max-length :length), pattern (:matches-regex),
//	                           minItems, maxItems (:min-count :max-count :count),
//	                           :in-range, :non-empty; other types in [:and …] → allOf
//
// In a map entry, T? (or `[:k T ?]`, or a `;; optional` comment after a
// brace-map entry) makes the key optional (not in "required"); the property
// keeps T's schema, as CCOS means it. "required" is written sorted.
//
// JSON Schema says more than RTFS types can (descriptions, formats, defaults,
// additionalProperties: false …); SchemaToType writes the nearest RTFS type
// and WriteCapability carries the full schema beside it when they differ.

// TypeError is a type expression that cannot be read, and where it is.
type TypeError struct {
	Line, Column int
	Message      string
}

func (e *TypeError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Message) }

func typeErrorf(v Value, format string, args ...any) error {
	return &TypeError{Line: v.Line, Column: v.Column, Message: fmt.Sprintf(format, args...)}
}

// primitiveTypes are the RTFS primitive type names and their schemas.
var primitiveTypes = map[string]func() map[string]any{
	"string":    func() map[string]any { return map[string]any{"type": "string"} },
	"int":       func() map[string]any { return map[string]any{"type": "integer"} },
	"integer":   func() map[string]any { return map[string]any{"type": "integer"} },
	"float":     func() map[string]any { return map[string]any{"type": "number"} },
	"number":    func() map[string]any { return map[string]any{"type": "number"} },
	"bool":      func() map[string]any { return map[string]any{"type": "boolean"} },
	"boolean":   func() map[string]any { return map[string]any{"type": "boolean"} },
	"nil":       func() map[string]any { return map[string]any{"type": "null"} },
	"any":       func() map[string]any { return map[string]any{} },
	"keyword":   func() map[string]any { return map[string]any{"type": "string", "x-rtfs-type": "keyword"} },
	"symbol":    func() map[string]any { return map[string]any{"type": "string", "x-rtfs-type": "symbol"} },
	"timestamp": func() map[string]any { return map[string]any{"type": "string", "format": "date-time"} },
	"uuid":      func() map[string]any { return map[string]any{"type": "string", "format": "uuid"} },
	"map":       func() map[string]any { return map[string]any{"type": "object"} },
	"vector":    func() map[string]any { return map[string]any{"type": "array"} },
}

const primitiveList = ":string :int :float :bool :nil :any :keyword :symbol :timestamp :uuid :map :vector"

// TypeToSchema converts an RTFS type expression to a JSON Schema (2020-12).
// Errors are *TypeError with the position of the offending part.
func TypeToSchema(v Value) (capability.Schema, error) {
	s, err := typeSchema(v, 0)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// optionalType splits `T?` (a keyword or symbol ending in ?) into T and true.
func optionalType(v Value) (Value, bool) {
	if (v.Kind == KindKeyword || v.Kind == KindSymbol) && len(v.Str) > 1 && strings.HasSuffix(v.Str, "?") {
		v.Str = strings.TrimSuffix(v.Str, "?")
		return v, true
	}
	return v, false
}

func typeSchema(v Value, depth int) (map[string]any, error) {
	if depth > MaxDepth {
		return nil, typeErrorf(v, "type nested deeper than %d levels: simplify it", MaxDepth)
	}
	switch v.Kind {
	case KindKeyword, KindSymbol:
		base, opt := optionalType(v)
		mk, ok := primitiveTypes[base.Str]
		if !ok {
			return nil, typeErrorf(v, "unknown type %s: use one of %s, or a form such as [:vector T] or [:map [:key T]]", v.Describe(), primitiveList)
		}
		if opt {
			return unionSchemas([]map[string]any{mk(), primitiveTypes["nil"]()}), nil
		}
		return mk(), nil
	case KindNil:
		return primitiveTypes["nil"](), nil
	case KindMap:
		return braceMapSchema(v, depth)
	case KindVector:
		if len(v.Items) == 0 || v.Items[0].Kind != KindKeyword {
			return nil, typeErrorf(v, "a type vector starts with a keyword naming its form, e.g. [:vector :string] or [:map [:key :string]]")
		}
		return vectorTypeSchema(v, depth)
	}
	return nil, typeErrorf(v, "%s is not a type: write a keyword such as :string, or a form such as [:vector T], [:map …] or {:key T}", v.Describe())
}

// vectorTypeSchema converts a type form [:head args…] with the converter
// of its head (see typeForms).
func vectorTypeSchema(v Value, depth int) (map[string]any, error) {
	head, args := v.Items[0].Str, v.Items[1:]
	convert, ok := typeForms[head]
	if !ok {
		return nil, typeErrorf(v, "unknown type form [:%s …]: use :vector, :map, :map-of, :tuple, :union, :enum, :val or :and", head)
	}
	return convert(v, args, depth)
}

// typeForms convert each type form [:head args…] to a schema; it is filled
// in init because the converters recurse into typeSchema.
var typeForms map[string]func(v Value, args []Value, depth int) (map[string]any, error)

func init() {
	typeForms = map[string]func(v Value, args []Value, depth int) (map[string]any, error){
		"vector": vectorFormSchema,
		"map":    mapEntriesSchema,
		"map-of": mapOfSchema,
		"tuple":  tupleSchema,
		"union":  unionFormSchema,
		"enum":   enumSchema,
		"val":    valSchema,
		"and": func(v Value, args []Value, depth int) (map[string]any, error) {
			if err := needArgs(v, args, 1, "a base type"); err != nil {
				return nil, err
			}
			return andSchema(v, args, depth)
		},
	}
	for _, head := range []string{"fn", "=>", "resource", "array"} {
		typeForms[head] = func(v Value, _ []Value, _ int) (map[string]any, error) {
			return nil, typeErrorf(v, "[:%s …] has no JSON Schema equivalent: a capability's input and output must be data; use :any if it must pass through", v.Items[0].Str)
		}
	}
}

// needArgs fails when a type form has fewer than n arguments.
func needArgs(v Value, args []Value, n int, what string) error {
	if len(args) < n {
		return typeErrorf(v, "[:%s …] needs %s", v.Items[0].Str, what)
	}
	return nil
}

// typeSchemas converts a list of types.
func typeSchemas(args []Value, depth int) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(args))
	for _, a := range args {
		s, err := typeSchema(a, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// vectorFormSchema converts [:vector] and [:vector T].
func vectorFormSchema(v Value, args []Value, depth int) (map[string]any, error) {
	if len(args) == 0 {
		return map[string]any{"type": "array"}, nil
	}
	if len(args) > 1 {
		return nil, typeErrorf(v, "[:vector T] takes one element type, got %d: use [:tuple …] for fixed positions or [:union …] for alternatives", len(args))
	}
	items, err := typeSchema(args[0], depth+1)
	if err != nil {
		return nil, err
	}
	return map[string]any{"type": "array", "items": items}, nil
}

// mapOfSchema converts [:map-of K V].
func mapOfSchema(v Value, args []Value, depth int) (map[string]any, error) {
	if len(args) != 2 {
		return nil, typeErrorf(v, "[:map-of K V] takes a key type and a value type, got %d", len(args))
	}
	val, err := typeSchema(args[1], depth+1)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"type": "object", "additionalProperties": val}
	k := args[0]
	if (k.Kind == KindKeyword || k.Kind == KindSymbol) && (k.Str == "string" || k.Str == "keyword") {
		return out, nil
	}
	key, err := typeSchema(k, depth+1)
	if err != nil {
		return nil, err
	}
	out["propertyNames"] = key
	return out, nil
}

// tupleSchema converts [:tuple A B …].
func tupleSchema(v Value, args []Value, depth int) (map[string]any, error) {
	if err := needArgs(v, args, 1, "at least one element type"); err != nil {
		return nil, err
	}
	items, err := typeSchemas(args, depth)
	if err != nil {
		return nil, err
	}
	prefix := make([]any, len(items))
	for i, s := range items {
		prefix[i] = s
	}
	return map[string]any{"type": "array", "prefixItems": prefix, "items": false}, nil
}

// unionFormSchema converts [:union A B …].
func unionFormSchema(v Value, args []Value, depth int) (map[string]any, error) {
	if err := needArgs(v, args, 1, "at least one member type"); err != nil {
		return nil, err
	}
	members, err := typeSchemas(args, depth)
	if err != nil {
		return nil, err
	}
	return unionSchemas(members), nil
}

// enumSchema converts [:enum "a" "b" …], typed when all values share a
// JSON type.
func enumSchema(v Value, args []Value, _ int) (map[string]any, error) {
	if err := needArgs(v, args, 1, "at least one value"); err != nil {
		return nil, err
	}
	var vals []any
	for _, a := range args {
		lit, err := literal(a)
		if err != nil {
			return nil, err
		}
		vals = append(vals, lit)
	}
	out := map[string]any{"enum": vals}
	if t := commonJSONType(vals); t != "" {
		out["type"] = t
	}
	return out, nil
}

// valSchema converts [:val X].
func valSchema(v Value, args []Value, _ int) (map[string]any, error) {
	if len(args) != 1 {
		return nil, typeErrorf(v, "[:val X] takes one literal value, got %d", len(args))
	}
	lit, err := literal(args[0])
	if err != nil {
		return nil, err
	}
	return map[string]any{"const": lit}, nil
}

// mapEntriesSchema converts [:map [:k T] [:k T?] [:k T ?] [:* W]].
func mapEntriesSchema(_ Value, entries []Value, depth int) (map[string]any, error) {
	props := map[string]any{}
	var required []string
	var wildcard map[string]any
	for _, e := range entries {
		k, t, opt, err := mapEntry(e)
		if err != nil {
			return nil, err
		}
		if k.IsKeyword("*") {
			if wildcard, err = wildcardSchema(e, t, opt, wildcard != nil, depth); err != nil {
				return nil, err
			}
			continue
		}
		name, err := entryKey(k)
		if err != nil {
			return nil, err
		}
		if _, dup := props[name]; dup {
			return nil, typeErrorf(k, "key %q appears twice in the map type: keep one", name)
		}
		if base, o := optionalType(t); o {
			t, opt = base, true
		}
		if props[name], err = typeSchema(t, depth+1); err != nil {
			return nil, err
		}
		if !opt {
			required = append(required, name)
		}
	}
	return objectSchema(props, required, wildcard), nil
}

// mapEntry splits a [:map …] entry into its key, its type and whether the
// optional marker ? follows.
func mapEntry(e Value) (k, t Value, opt bool, err error) {
	if e.Kind != KindVector || len(e.Items) < 2 || len(e.Items) > 3 {
		return k, t, false, typeErrorf(e, "a [:map …] entry is [:key Type], [:key Type?] or [:* Type], not %s", e.Describe())
	}
	if len(e.Items) == 3 {
		if !e.Items[2].IsSymbol("?") {
			return k, t, false, typeErrorf(e.Items[2], "a [:map …] entry has a key, a type and at most the optional marker ?, not %s", e.Items[2].Describe())
		}
		opt = true
	}
	return e.Items[0], e.Items[1], opt, nil
}

// wildcardSchema converts the wildcard entry [:* W] of a [:map …], which
// can be neither optional nor repeated.
func wildcardSchema(e, t Value, opt, repeated bool, depth int) (map[string]any, error) {
	if opt {
		return nil, typeErrorf(e, "the wildcard entry [:* Type] cannot be optional")
	}
	if repeated {
		return nil, typeErrorf(e, "[:map …] has two wildcard entries [:* Type]: keep one")
	}
	return typeSchema(t, depth+1)
}

// braceMapSchema converts {:k T …}; `T?` or a trailing `;; optional` comment
// after an entry makes its key optional.
func braceMapSchema(v Value, depth int) (map[string]any, error) {
	props := map[string]any{}
	var required []string
	for i := 0; i+1 < len(v.Items); i += 2 {
		k, t := v.Items[i], v.Items[i+1]
		name, err := entryKey(k)
		if err != nil {
			return nil, err
		}
		if _, dup := props[name]; dup {
			return nil, typeErrorf(k, "key %q appears twice in the map type: keep one", name)
		}
		opt := isOptionalComment(t.Comment) || isOptionalComment(k.Comment)
		if base, o := optionalType(t); o {
			t, opt = base, true
		}
		s, err := typeSchema(t, depth+1)
		if err != nil {
			return nil, err
		}
		props[name] = s
		if !opt {
			required = append(required, name)
		}
	}
	return objectSchema(props, required, nil), nil
}

// isOptionalComment reports whether a trailing comment marks an entry
// optional: its first word is "optional" (any case).
func isOptionalComment(c string) bool {
	word := strings.FieldsFunc(strings.ToLower(c), func(r rune) bool {
		return !(r >= 'a' && r <= 'z')
	})
	return len(word) > 0 && word[0] == "optional"
}

func entryKey(k Value) (string, error) {
	switch k.Kind {
	case KindKeyword, KindString:
		return k.Str, nil
	}
	return "", typeErrorf(k, "a map type key is a keyword (:name) or a string, not %s", k.Describe())
}

func objectSchema(props map[string]any, required []string, wildcard map[string]any) map[string]any {
	out := map[string]any{"type": "object"}
	if len(props) > 0 {
		out["properties"] = props
	}
	if len(required) > 0 {
		sort.Strings(required)
		req := make([]any, len(required))
		for i, r := range required {
			req[i] = r
		}
		out["required"] = req
	}
	if wildcard != nil {
		out["additionalProperties"] = wildcard
	}
	return out
}

// simpleJSONTypes are the types a bare {"type": T} schema can have and still
// be merged into a type array by a union.
var simpleJSONTypes = map[string]bool{"string": true, "integer": true, "number": true, "boolean": true, "null": true, "object": true, "array": true}

// bareType returns T when s is exactly {"type": T} with a simple T.
func bareType(s map[string]any) (string, bool) {
	if len(s) != 1 {
		return "", false
	}
	t, ok := s["type"].(string)
	return t, ok && simpleJSONTypes[t]
}

// unionSchemas is the schema of [:union members…].
func unionSchemas(members []map[string]any) map[string]any {
	if len(members) == 1 {
		return members[0]
	}
	var types []any
	seen := map[string]bool{}
	for _, m := range members {
		t, ok := bareType(m)
		if !ok {
			alts := make([]any, len(members))
			for i, m := range members {
				alts[i] = m
			}
			return map[string]any{"anyOf": alts}
		}
		if !seen[t] {
			seen[t] = true
			types = append(types, t)
		}
	}
	if len(types) == 1 {
		return map[string]any{"type": types[0]}
	}
	return map[string]any{"type": types}
}

// literal converts an enum or val literal to its JSON value. Keywords become
// their name.
func literal(v Value) (any, error) {
	switch v.Kind {
	case KindString, KindKeyword, KindTimestamp, KindUUID:
		return v.Str, nil
	case KindInt:
		return v.Int, nil
	case KindFloat:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return nil, typeErrorf(v, "%s cannot be a JSON value: use a finite number", v.Describe())
		}
		return wholeToInt(v.Float), nil
	case KindBool:
		return v.Bool, nil
	case KindNil:
		return nil, nil
	}
	return nil, typeErrorf(v, "%s is not a literal: enum and val values are strings, keywords, numbers, booleans or nil", v.Describe())
}

// commonJSONType is the JSON type all values share, or "".
func commonJSONType(vals []any) string {
	t := ""
	for _, v := range vals {
		var vt string
		switch v.(type) {
		case string:
			vt = "string"
		case int64:
			vt = "integer"
		case float64:
			vt = "number"
		case bool:
			vt = "boolean"
		default:
			return ""
		}
		switch {
		case t == "" || t == vt:
			t = vt
		case t == "integer" && vt == "number" || t == "number" && vt == "integer":
			t = "number"
		default:
			return ""
		}
	}
	return t
}

// predicateKeys says which JSON Schema keywords each [:and …] predicate sets.
var predicateKeys = map[string][]string{
	">": {"exclusiveMinimum"}, ">=": {"minimum"}, "<": {"exclusiveMaximum"}, "<=": {"maximum"}, "=": {"const"},
	"min-length": {"minLength"}, "max-length": {"maxLength"}, "length": {"minLength", "maxLength"},
	"matches-regex": {"pattern"}, "in-range": {"minimum", "maximum"},
	"min-count": {"minItems"}, "max-count": {"maxItems"}, "count": {"minItems", "maxItems"},
	"non-empty": nil,
}

func isPredicate(v Value) bool {
	if v.Kind != KindVector || len(v.Items) == 0 || v.Items[0].Kind != KindKeyword {
		return false
	}
	_, ok := predicateKeys[v.Items[0].Str]
	return ok
}

// andSchema converts [:and Base pred… T…]: predicates refine the base; other
// types make an allOf with it.
func andSchema(v Value, args []Value, depth int) (map[string]any, error) {
	base, err := typeSchema(args[0], depth+1)
	if err != nil {
		return nil, err
	}
	var others []any
	for _, a := range args[1:] {
		if !isPredicate(a) {
			s, err := typeSchema(a, depth+1)
			if err != nil {
				return nil, err
			}
			others = append(others, s)
			continue
		}
		if err := applyPredicate(base, a); err != nil {
			return nil, err
		}
	}
	if len(others) == 0 {
		return base, nil
	}
	return map[string]any{"allOf": append([]any{base}, others...)}, nil
}

func applyPredicate(s map[string]any, p Value) error {
	pr := predicate{s: s, p: p, op: p.Items[0].Str}
	args := p.Items[1:]
	want, ok := predicateArgs[pr.op]
	if !ok {
		want = 1
	}
	if len(args) != want {
		return typeErrorf(p, "[:%s …] takes %d argument(s), got %d", pr.op, want, len(args))
	}
	apply, ok := predicates[pr.op]
	if !ok {
		return typeErrorf(p, "unknown predicate [:%s …]", pr.op)
	}
	return apply(pr, args)
}

// predicateArgs are the argument counts of the predicates that do not take
// one argument.
var predicateArgs = map[string]int{"in-range": 2, "non-empty": 0}

// predicate is one [:op args…] of an [:and …] type being applied to the
// schema s.
type predicate struct {
	s  map[string]any
	p  Value
	op string
}

// set sets a keyword of the schema, which must not have it yet.
func (pr predicate) set(key string, val any) error {
	if _, dup := pr.s[key]; dup {
		return typeErrorf(pr.p, "[:%s …] sets %s, which the type already has: keep one constraint", pr.op, key)
	}
	pr.s[key] = val
	return nil
}

// number reads an argument that must be a number.
func (pr predicate) number(a Value) (any, error) {
	if a.Kind != KindInt && a.Kind != KindFloat {
		return nil, typeErrorf(a, "[:%s …] needs a number, not %s", pr.op, a.Describe())
	}
	return literal(a)
}

// predicates apply each predicate, its argument count checked.
var predicates = map[string]func(pr predicate, args []Value) error{
	">": boundPredicate, ">=": boundPredicate, "<": boundPredicate, "<=": boundPredicate,
	"=":          constPredicate,
	"min-length": countPredicate, "max-length": countPredicate, "min-count": countPredicate,
	"max-count": countPredicate, "length": countPredicate, "count": countPredicate,
	"matches-regex": regexPredicate,
	"in-range":      rangePredicate,
	"non-empty":     nonEmptyPredicate,
}

// boundPredicate applies :> :>= :< :<=.
func boundPredicate(pr predicate, args []Value) error {
	n, err := pr.number(args[0])
	if err != nil {
		return err
	}
	return pr.set(predicateKeys[pr.op][0], n)
}

// constPredicate applies [:= X].
func constPredicate(pr predicate, args []Value) error {
	lit, err := literal(args[0])
	if err != nil {
		return err
	}
	return pr.set("const", lit)
}

// countPredicate applies the length and count predicates, which take a
// non-negative integer.
func countPredicate(pr predicate, args []Value) error {
	a := args[0]
	if a.Kind != KindInt || a.Int < 0 {
		return typeErrorf(a, "[:%s …] needs a non-negative integer, not %s", pr.op, a.Describe())
	}
	for _, k := range predicateKeys[pr.op] {
		if err := pr.set(k, a.Int); err != nil {
			return err
		}
	}
	return nil
}

// regexPredicate applies [:matches-regex "pattern"].
func regexPredicate(pr predicate, args []Value) error {
	if args[0].Kind != KindString {
		return typeErrorf(args[0], "[:matches-regex …] needs a string pattern, not %s", args[0].Describe())
	}
	return pr.set("pattern", args[0].Str)
}

// rangePredicate applies [:in-range lo hi].
func rangePredicate(pr predicate, args []Value) error {
	lo, err := pr.number(args[0])
	if err != nil {
		return err
	}
	hi, err := pr.number(args[1])
	if err != nil {
		return err
	}
	if err := pr.set("minimum", lo); err != nil {
		return err
	}
	return pr.set("maximum", hi)
}

// nonEmptyPredicate applies [:non-empty] by the schema's type.
func nonEmptyPredicate(pr predicate, _ []Value) error {
	switch pr.s["type"] {
	case "string":
		return pr.set("minLength", int64(1))
	case "object":
		return pr.set("minProperties", int64(1))
	}
	return pr.set("minItems", int64(1))
}

// SchemaToType writes a JSON Schema as the nearest RTFS type expression (see
// the table at the top of this file). For every schema TypeToSchema makes,
// TypeToSchema(SchemaToType(s)) gives s back; for other schemas the type is
// the closest RTFS can say (descriptions, defaults, formats other than
// date-time and uuid, additionalProperties: false … are not expressed).
func SchemaToType(s capability.Schema) string {
	var b strings.Builder
	writeType(&b, map[string]any(s), 0)
	return b.String()
}

// constraintOrder lists the JSON Schema keywords [:and …] predicates express,
// in the order they are written, with their predicate.
var constraintOrder = []struct{ key, pred string }{
	{"minLength", "min-length"}, {"maxLength", "max-length"}, {"pattern", "matches-regex"},
	{"minimum", ">="}, {"exclusiveMinimum", ">"}, {"maximum", "<="}, {"exclusiveMaximum", "<"},
	{"minItems", "min-count"}, {"maxItems", "max-count"}, {"minProperties", "non-empty"}, {"const", "="},
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64, int:
		return true
	}
	return false
}

// constraintPredicate returns the [:pred value] text for key, if the value
// suits it.
func constraintPredicate(key, pred string, v any) (string, bool) {
	switch key {
	case "pattern":
		if s, ok := v.(string); ok {
			return "[:" + pred + " " + quote(s) + "]", true
		}
	case "const":
		if lit, ok := literalText(v); ok {
			return "[:= " + lit + "]", true
		}
	case "minLength", "maxLength", "minItems", "maxItems":
		if n, ok := v.(int64); ok && n >= 0 {
			return "[:" + pred + " " + strconv.FormatInt(n, 10) + "]", true
		}
	case "minProperties":
		if n, ok := v.(int64); ok && n == 1 {
			return "[:non-empty]", true
		}
	default:
		if lit, ok := literalText(v); ok && isNumber(v) {
			return "[:" + pred + " " + lit + "]", true
		}
	}
	return "", false
}

func writeType(b *strings.Builder, v any, depth int) {
	s, ok := v.(map[string]any)
	if !ok || len(s) == 0 || depth > MaxDepth {
		b.WriteString(":any")
		return
	}
	// The first writer that can express the schema writes it.
	for _, write := range []func(*strings.Builder, map[string]any, int) bool{
		writeConstrained, writeAllOf, writeAnyOf, writeConst, writeEnum, writeByType,
	} {
		if write(b, s, depth) {
			return
		}
	}
	b.WriteString(":any")
}

// writeConstrained writes a schema with constraints as [:and base preds…]
// (a lone const is left to writeConst).
func writeConstrained(b *strings.Builder, s map[string]any, depth int) bool {
	if _, only := s["const"]; only && len(s) == 1 {
		return false
	}
	var preds []string
	base := maps.Clone(s)
	for _, c := range constraintOrder {
		if c.key == "minProperties" && s["type"] != "object" {
			continue // [:non-empty] means minProperties only on a map
		}
		if x, ok := s[c.key]; ok {
			if p, ok := constraintPredicate(c.key, c.pred, x); ok {
				preds = append(preds, p)
				delete(base, c.key)
			}
		}
	}
	if len(preds) == 0 {
		return false
	}
	b.WriteString("[:and ")
	writeType(b, base, depth+1)
	for _, p := range preds {
		b.WriteString(" " + p)
	}
	b.WriteString("]")
	return true
}

// writeAllOf writes a schema that is only an allOf as [:and A B …].
func writeAllOf(b *strings.Builder, s map[string]any, depth int) bool {
	all, ok := s["allOf"].([]any)
	if !ok || len(s) != 1 || len(all) == 0 {
		return false
	}
	writeTypeList(b, "[:and", all, depth)
	return true
}

// writeAnyOf writes an anyOf as [:union A B …].
func writeAnyOf(b *strings.Builder, s map[string]any, depth int) bool {
	anyOf, ok := s["anyOf"].([]any)
	if !ok || len(anyOf) == 0 {
		return false
	}
	writeTypeList(b, "[:union", anyOf, depth)
	return true
}

// writeTypeList writes head, the types of the schemas and "]".
func writeTypeList(b *strings.Builder, head string, list []any, depth int) {
	b.WriteString(head)
	for _, m := range list {
		b.WriteString(" ")
		writeType(b, m, depth+1)
	}
	b.WriteString("]")
}

// writeConst writes a const as [:val x].
func writeConst(b *strings.Builder, s map[string]any, _ int) bool {
	c, ok := s["const"]
	if !ok {
		return false
	}
	lit, ok := literalText(c)
	if ok {
		b.WriteString("[:val " + lit + "]")
	}
	return ok
}

// writeEnum writes an enum of literals as [:enum a b …].
func writeEnum(b *strings.Builder, s map[string]any, _ int) bool {
	enum, ok := s["enum"].([]any)
	if !ok || len(enum) == 0 {
		return false
	}
	lits := make([]string, 0, len(enum))
	for _, e := range enum {
		lit, ok := literalText(e)
		if !ok {
			return false
		}
		lits = append(lits, lit)
	}
	b.WriteString("[:enum " + strings.Join(lits, " ") + "]")
	return true
}

// writeByType writes a schema by its type; without one, an object or
// array by its keywords (the nearest type).
func writeByType(b *strings.Builder, s map[string]any, depth int) bool {
	switch t := s["type"].(type) {
	case nil:
		if _, ok := s["properties"]; ok {
			writeObjectType(b, s, depth)
			return true
		}
		if _, ok := s["items"]; ok {
			writeTypeOf(b, "array", s, depth)
			return true
		}
	case string:
		writeTypeOf(b, t, s, depth)
		return true
	case []any:
		return writeTypeUnion(b, t, s, depth)
	}
	return false
}

// writeTypeUnion writes a list of types: one as that type, several as
// [:union …] of their primitives.
func writeTypeUnion(b *strings.Builder, t []any, s map[string]any, depth int) bool {
	if len(t) == 1 {
		if name, ok := t[0].(string); ok {
			writeTypeOf(b, name, s, depth)
			return true
		}
	}
	names := make([]string, 0, len(t))
	for _, x := range t {
		name, ok := x.(string)
		if !ok {
			return false
		}
		names = append(names, primitiveName(name))
	}
	if len(names) == 0 {
		return false
	}
	b.WriteString("[:union " + strings.Join(names, " ") + "]")
	return true
}

func primitiveName(jsonType string) string {
	switch jsonType {
	case "string":
		return ":string"
	case "integer":
		return ":int"
	case "number":
		return ":float"
	case "boolean":
		return ":bool"
	case "null":
		return ":nil"
	case "object":
		return ":map"
	case "array":
		return ":vector"
	}
	return ":any"
}

func writeTypeOf(b *strings.Builder, t string, s map[string]any, depth int) {
	switch t {
	case "string":
		switch {
		case s["x-rtfs-type"] == "keyword":
			b.WriteString(":keyword")
		case s["x-rtfs-type"] == "symbol":
			b.WriteString(":symbol")
		case s["format"] == "date-time":
			b.WriteString(":timestamp")
		case s["format"] == "uuid":
			b.WriteString(":uuid")
		default:
			b.WriteString(":string")
		}
	case "array":
		if prefix, ok := s["prefixItems"].([]any); ok && len(prefix) > 0 {
			b.WriteString("[:tuple")
			for _, p := range prefix {
				b.WriteString(" ")
				writeType(b, p, depth+1)
			}
			b.WriteString("]")
			return
		}
		if items, ok := s["items"]; ok {
			b.WriteString("[:vector ")
			writeType(b, items, depth+1)
			b.WriteString("]")
			return
		}
		b.WriteString(":vector")
	case "object":
		writeObjectType(b, s, depth)
	default:
		b.WriteString(primitiveName(t))
	}
}

func writeObjectType(b *strings.Builder, s map[string]any, depth int) {
	props, _ := s["properties"].(map[string]any)
	addl, hasAddl := s["additionalProperties"].(map[string]any)
	if _, isProps := s["properties"]; !isProps {
		if hasAddl {
			b.WriteString("[:map-of ")
			if pn, ok := s["propertyNames"]; ok {
				writeType(b, pn, depth+1)
			} else {
				b.WriteString(":string")
			}
			b.WriteString(" ")
			writeType(b, addl, depth+1)
			b.WriteString("]")
			return
		}
		b.WriteString(":map")
		return
	}
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	b.WriteString("[:map")
	for _, name := range slices.Sorted(maps.Keys(props)) {
		b.WriteString(" [")
		if name != "*" && isKeywordName(name) {
			b.WriteString(":" + name)
		} else {
			b.WriteString(quote(name))
		}
		b.WriteString(" ")
		var t strings.Builder
		writeType(&t, props[name], depth+1)
		b.WriteString(t.String())
		if !required[name] {
			b.WriteString("?") // :string? or [:vector :string]? — both read as optional
		}
		b.WriteString("]")
	}
	if hasAddl {
		b.WriteString(" [:* ")
		writeType(b, addl, depth+1)
		b.WriteString("]")
	}
	b.WriteString("]")
}

// schemasEqual compares two schemas as the model holds them.
func schemasEqual(a, b map[string]any) bool {
	return reflect.DeepEqual(capability.Normalize(capability.CloneValue(a)), capability.Normalize(capability.CloneValue(b)))
}
