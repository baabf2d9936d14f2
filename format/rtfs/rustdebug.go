package rtfs

import (
	"strings"
)

// Some CCOS versions wrote a schema as the Rust Debug text of their type
// expression instead of RTFS, e.g.
//
//	:input-schema Map { entries: [MapTypeEntry { key: Keyword("owner"),
//	  value_type: Primitive(String), optional: false }, …], wildcard: None }
//
// As far as that text reads as RTFS (commas are blanks; `Map {…}` is a symbol
// and a map; `Keyword("owner")` a symbol and a list), the value of
// :input-schema or :output-schema may be such a pair, and rustType turns it
// into the RTFS type it stands for.

// rustNode is one Rust Debug expression.
type rustNode struct {
	at     Value               // where it is
	name   string              // Map, MapTypeEntry, Primitive, … ("" for a literal or an array)
	fields map[string]rustNode // Name { field: value, … }
	args   []rustNode          // Name(arg, …) or [elem, …]
	lit    *Value              // a literal: string, number, boolean, or an identifier such as None
	array  bool
}

// isRustDebugStart reports whether v (a value after a key) and next start a
// Rust Debug struct or tuple: a capitalised symbol followed by a map or list.
func isRustDebugStart(v Value, next *Value) bool {
	if v.Kind != KindSymbol || v.Str == "" || v.Str[0] < 'A' || v.Str[0] > 'Z' || next == nil {
		return false
	}
	return next.Kind == KindMap || next.Kind == KindList
}

// rustExpr reads one expression from items at i.
func rustExpr(items []Value, i int) (rustNode, int, error) {
	v := items[i]
	switch v.Kind {
	case KindSymbol:
		n := rustNode{at: v, name: v.Str}
		if i+1 < len(items) {
			switch next := items[i+1]; next.Kind {
			case KindMap:
				fields, err := rustFields(next)
				if err != nil {
					return rustNode{}, 0, err
				}
				n.fields = fields
				return n, i + 2, nil
			case KindList:
				args, err := rustSeq(next.Items)
				if err != nil {
					return rustNode{}, 0, err
				}
				n.args = args
				return n, i + 2, nil
			}
		}
		return n, i + 1, nil
	case KindVector:
		args, err := rustSeq(v.Items)
		if err != nil {
			return rustNode{}, 0, err
		}
		return rustNode{at: v, args: args, array: true}, i + 1, nil
	case KindString, KindInt, KindFloat, KindBool, KindNil:
		lit := v
		return rustNode{at: v, lit: &lit}, i + 1, nil
	}
	return rustNode{}, 0, typeErrorf(v, "%s does not read as Rust Debug output: write the schema as an RTFS type, e.g. [:map [:key :string]]", v.Describe())
}

func rustSeq(items []Value) ([]rustNode, error) {
	var out []rustNode
	for i := 0; i < len(items); {
		n, next, err := rustExpr(items, i)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
		i = next
	}
	return out, nil
}

// rustFields reads `{ name: value, … }`.
func rustFields(m Value) (map[string]rustNode, error) {
	fields := map[string]rustNode{}
	items := m.Items
	for i := 0; i < len(items); {
		k := items[i]
		if k.Kind != KindSymbol || !strings.HasSuffix(k.Str, ":") || i+1 >= len(items) {
			return nil, typeErrorf(k, "expected `field: value` in Rust Debug output, found %s", k.Describe())
		}
		n, next, err := rustExpr(items, i+1)
		if err != nil {
			return nil, err
		}
		fields[strings.TrimSuffix(k.Str, ":")] = n
		i = next
	}
	return fields, nil
}

// rustPrimitives maps Rust PrimitiveType variants to RTFS type names.
var rustPrimitives = map[string]string{
	"String": "string", "Int": "int", "Integer": "int", "Float": "float", "Number": "number",
	"Bool": "bool", "Boolean": "bool", "Nil": "nil", "Keyword": "keyword", "Symbol": "symbol",
	"Timestamp": "timestamp", "Uuid": "uuid",
}

func kw(at Value, name string) Value {
	return Value{Kind: KindKeyword, Str: name, Line: at.Line, Column: at.Column, Offset: at.Offset, End: at.End}
}

func vec(at Value, items ...Value) Value {
	return Value{Kind: KindVector, Items: items, Line: at.Line, Column: at.Column, Offset: at.Offset, End: at.End}
}

// rustType converts a Rust Debug TypeExpr to the RTFS type it stands for,
// with the converter of its variant (see rustTypes).
func rustType(n rustNode, depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, typeErrorf(n.at, "type nested deeper than %d levels: simplify it", MaxDepth)
	}
	convert, ok := rustTypes[n.name]
	if !ok {
		return unsupportedRustType(n)
	}
	return convert(n, depth)
}

// rustTypes convert each TypeExpr variant; it is filled in init because
// the converters recurse into rustType.
var rustTypes map[string]func(n rustNode, depth int) (Value, error)

func init() {
	rustTypes = map[string]func(n rustNode, depth int) (Value, error){
		"Any":       func(n rustNode, _ int) (Value, error) { return kw(n.at, "any"), nil },
		"Primitive": rustPrimitive,
		"Vector":    rustWrapped,
		"Optional":  rustWrapped,
		"Union":     rustTypeList,
		"Tuple":     rustTypeList,
		"Map":       rustMap,
	}
}

func unsupportedRustType(n rustNode) (Value, error) {
	return Value{}, typeErrorf(n.at, "Rust Debug type %s is not supported: write the schema as an RTFS type, e.g. [:map [:key :string]]", n.at.Str)
}

// rustPrimitive converts Primitive(String) and the like.
func rustPrimitive(n rustNode, _ int) (Value, error) {
	if len(n.args) != 1 {
		return unsupportedRustType(n)
	}
	a := n.args[0]
	if name, ok := rustPrimitives[a.name]; ok && a.fields == nil && a.args == nil {
		return kw(n.at, name), nil
	}
	return Value{}, typeErrorf(a.at, "unknown Rust Debug primitive %s: write the schema as an RTFS type", a.at.Describe())
}

// rustWrapped converts Vector(T) to [:vector T] and Optional(T) to
// [:union T :nil].
func rustWrapped(n rustNode, depth int) (Value, error) {
	if len(n.args) != 1 {
		return unsupportedRustType(n)
	}
	t, err := rustType(n.args[0], depth+1)
	if err != nil {
		return Value{}, err
	}
	if n.name == "Optional" {
		return vec(n.at, kw(n.at, "union"), t, kw(n.at, "nil")), nil
	}
	return vec(n.at, kw(n.at, "vector"), t), nil
}

// rustTypeList converts Union([…]) and Tuple([…]).
func rustTypeList(n rustNode, depth int) (Value, error) {
	if len(n.args) != 1 || !n.args[0].array {
		return unsupportedRustType(n)
	}
	out := []Value{kw(n.at, strings.ToLower(n.name))}
	for _, m := range n.args[0].args {
		t, err := rustType(m, depth+1)
		if err != nil {
			return Value{}, err
		}
		out = append(out, t)
	}
	return vec(n.at, out...), nil
}

// rustMap converts Map { entries: […], wildcard: Some(T) } to [:map …].
func rustMap(n rustNode, depth int) (Value, error) {
	if n.fields == nil {
		return unsupportedRustType(n)
	}
	out := []Value{kw(n.at, "map")}
	for _, e := range n.fields["entries"].args {
		entry, err := rustMapEntry(e, depth)
		if err != nil {
			return Value{}, err
		}
		out = append(out, entry)
	}
	if w, ok := n.fields["wildcard"]; ok && w.name == "Some" && len(w.args) == 1 {
		t, err := rustType(w.args[0], depth+1)
		if err != nil {
			return Value{}, err
		}
		out = append(out, vec(w.at, kw(w.at, "*"), t))
	}
	return vec(n.at, out...), nil
}

func rustMapEntry(e rustNode, depth int) (Value, error) {
	if e.name != "MapTypeEntry" || e.fields == nil {
		return Value{}, typeErrorf(e.at, "expected MapTypeEntry { key: …, value_type: …, optional: … }, found %s", e.at.Describe())
	}
	key, ok := e.fields["key"]
	if !ok || !isRustKeyword(key) {
		return Value{}, typeErrorf(e.at, "MapTypeEntry needs key: Keyword(\"name\")")
	}
	vt, ok := e.fields["value_type"]
	if !ok {
		return Value{}, typeErrorf(e.at, "MapTypeEntry needs value_type")
	}
	t, err := rustType(vt, depth+1)
	if err != nil {
		return Value{}, err
	}
	k := kw(key.at, key.args[0].lit.Str)
	if opt, ok := e.fields["optional"]; ok && isRustTrue(opt) {
		return vec(e.at, k, t, Value{Kind: KindSymbol, Str: "?", Line: opt.at.Line, Column: opt.at.Column}), nil
	}
	return vec(e.at, k, t), nil
}

// isRustKeyword reports whether a node is Keyword("name").
func isRustKeyword(n rustNode) bool {
	return n.name == "Keyword" && len(n.args) == 1 && n.args[0].lit != nil && n.args[0].lit.Kind == KindString
}

// isRustTrue reports whether a node is the literal true.
func isRustTrue(n rustNode) bool {
	return n.lit != nil && n.lit.Kind == KindBool && n.lit.Bool
}
