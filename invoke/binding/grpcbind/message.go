package grpcbind

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/caphub/caphub/invoke"
)

// buildRequest renames input's top-level fields by mapping (capability field
// → request field; unmapped fields keep their names) and reads the result
// into a new md with protojson. Input that does not fit is INVALID_INPUT
// naming the offending field in the capability's terms.
func buildRequest(md protoreflect.MessageDescriptor, input map[string]any, mapping map[string]string, types *dynamicpb.Types) (*dynamicpb.Message, error) {
	mapped := make(map[string]any, len(input))
	from := make(map[string]string, len(input)) // request field → input field
	for _, k := range slices.Sorted(maps.Keys(input)) {
		name := k
		if m := mapping[k]; m != "" {
			name = m
		}
		if prev, dup := from[name]; dup {
			return nil, invalidInput(k, "input fields %q and %q both map to request field %q of %s; fix bindings.grpc.mapping", prev, k, name, md.FullName())
		}
		mapped[name] = input[k]
		from[name] = k
	}
	raw, err := json.Marshal(mapped)
	if err != nil {
		return nil, invalidInput("", "the input cannot be encoded as JSON for request %s: %v", md.FullName(), err)
	}
	msg := dynamicpb.NewMessage(md)
	if err := (protojson.UnmarshalOptions{Resolver: types}).Unmarshal(raw, msg); err != nil {
		p := inputChecker{types}.message(md, mapped, "")
		if p == nil {
			return nil, invalidInput("", "the input does not fit request message %s: %s", md.FullName(), protojsonReason(err))
		}
		field := p.path
		if in := from[p.top]; in != "" {
			field = in + p.path[len(p.top):]
		}
		where := fmt.Sprintf("input field %q", field)
		if field != p.path {
			where += fmt.Sprintf(" (request field %q)", p.path)
		}
		return nil, invalidInput(field, "%s does not fit request message %s: %s", where, md.FullName(), p.reason)
	}
	return msg, nil
}

func invalidInput(field, format string, args ...any) *invoke.Error {
	e := invoke.Errorf(invoke.CodeInvalidInput, false, format, args...)
	e.Binding = Kind
	if field != "" {
		e.Details = map[string]any{"field": field}
	}
	return e
}

// inputProblem is the first place where a value does not fit its field:
// path in request terms ("bonus.value", "items[2].label"), top its first
// segment.
type inputProblem struct {
	top, path, reason string
}

// protojsonLocation is the "(line 1:7): " in protojson's errors, which
// points into JSON the caller never wrote.
var protojsonLocation = regexp.MustCompile(`^\(line \d+:\d+\): `)

func protojsonReason(err error) string {
	return protojsonLocation.ReplaceAllString(strings.TrimPrefix(err.Error(), "proto: "), "")
}

// inputChecker explains why input does not fit a request message. It runs
// only after protojson has refused the input, to name the field; when it
// finds nothing wrong, protojson's own message is used.
type inputChecker struct{ types *dynamicpb.Types }

// message checks v, the JSON of a message md at path. Well-known types
// (google.protobuf.*) have JSON forms of their own, so protojson judges
// them.
func (c inputChecker) message(md protoreflect.MessageDescriptor, v any, path string) *inputProblem {
	if isWellKnown(md) {
		return c.wellKnown(md, v, path)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return problem(path, "expected an object (message %s), got %s", md.FullName(), describe(v))
	}
	fields := md.Fields()
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		p := joinPath(path, k)
		fd := fields.ByJSONName(k)
		if fd == nil {
			fd = fields.ByName(protoreflect.Name(k))
		}
		if fd == nil {
			return problem(p, "unknown field; %s has fields: %s", md.FullName(), fieldNames(fields))
		}
		if pr := c.field(fd, obj[k], p); pr != nil {
			return pr
		}
	}
	return nil
}

// wellKnown checks v, the JSON of a well-known type md, with protojson.
func (c inputChecker) wellKnown(md protoreflect.MessageDescriptor, v any, path string) *inputProblem {
	raw, err := json.Marshal(v)
	if err == nil {
		err = protojson.UnmarshalOptions{Resolver: c.types}.Unmarshal(raw, dynamicpb.NewMessage(md))
	}
	if err != nil {
		return problem(path, "%s", protojsonReason(err))
	}
	return nil
}

// field checks the value of field fd at path: a map, a list or one value;
// null means unset.
func (c inputChecker) field(fd protoreflect.FieldDescriptor, val any, p string) *inputProblem {
	switch {
	case val == nil:
		return nil
	case fd.IsMap():
		return c.mapField(fd, val, p)
	case fd.IsList():
		list, ok := val.([]any)
		if !ok {
			return problem(p, "expected an array (repeated %s), got %s", kindName(fd), describe(val))
		}
		for i, e := range list {
			if pr := c.singular(fd, e, fmt.Sprintf("%s[%d]", p, i)); pr != nil {
				return pr
			}
		}
		return nil
	default:
		return c.singular(fd, val, p)
	}
}

// mapField checks the keys and values of a map field.
func (c inputChecker) mapField(fd protoreflect.FieldDescriptor, val any, p string) *inputProblem {
	m, ok := val.(map[string]any)
	if !ok {
		return problem(p, "expected an object (map<%s, %s>), got %s", kindName(fd.MapKey()), kindName(fd.MapValue()), describe(val))
	}
	for _, mk := range slices.Sorted(maps.Keys(m)) {
		kp := p + "." + mk
		if r := checkMapKey(fd.MapKey(), mk); r != "" {
			return problem(kp, "%s", r)
		}
		if pr := c.singular(fd.MapValue(), m[mk], kp); pr != nil {
			return pr
		}
	}
	return nil
}

// scalarChecks are the checks of the scalar kinds that take one JSON type:
// whether a value fits, and what was expected.
var scalarChecks = map[protoreflect.Kind]struct {
	fits func(any) bool
	want string
}{
	protoreflect.BoolKind:   {func(v any) bool { _, ok := v.(bool); return ok }, "a bool"},
	protoreflect.StringKind: {func(v any) bool { _, ok := v.(string); return ok }, "a string"},
	protoreflect.BytesKind:  {func(v any) bool { _, ok := v.(string); return ok }, "bytes as a base64 string"},
}

// singular checks one value of fd (an element, for lists and maps).
func (c inputChecker) singular(fd protoreflect.FieldDescriptor, v any, path string) *inputProblem {
	if v == nil {
		return nil
	}
	if sc, ok := scalarChecks[fd.Kind()]; ok {
		if !sc.fits(v) {
			return problem(path, "expected %s, got %s", sc.want, describe(v))
		}
		return nil
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return c.message(fd.Message(), v, path)
	case protoreflect.EnumKind:
		return enumProblem(fd.Enum(), v, path)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if r := checkFloat(v); r != "" {
			return problem(path, "expected %s (a number, or \"NaN\", \"Infinity\", \"-Infinity\"), got %s", fd.Kind(), describe(v))
		}
	default: // integers
		bits, unsigned := intShape(fd.Kind())
		if r := checkInt(v, bits, unsigned); r != "" {
			return problem(path, "expected %s (%s), got %s", fd.Kind(), r, describe(v))
		}
	}
	return nil
}

// enumProblem checks a value of enum ed: one of its names, or a number.
func enumProblem(ed protoreflect.EnumDescriptor, v any, path string) *inputProblem {
	if ed.FullName() == "google.protobuf.NullValue" {
		return nil
	}
	if s, ok := v.(string); ok {
		if ed.Values().ByName(protoreflect.Name(s)) == nil {
			return problem(path, "unknown value %q of enum %s; its values are: %s", s, ed.FullName(), enumNames(ed))
		}
		return nil
	}
	if r := checkInt(v, 32, false); r != "" {
		return problem(path, "expected a value of enum %s (%s, or its number), got %s", ed.FullName(), enumNames(ed), describe(v))
	}
	return nil
}

func checkMapKey(fd protoreflect.FieldDescriptor, k string) string {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if k != "true" && k != "false" {
			return fmt.Sprintf("map key %q is not a bool (true or false)", k)
		}
	case protoreflect.StringKind:
	default:
		bits, unsigned := intShape(fd.Kind())
		if r := checkInt(k, bits, unsigned); r != "" {
			return fmt.Sprintf("map key %q is not a %s (%s)", k, fd.Kind(), r)
		}
	}
	return ""
}

// intShape returns the width and signedness of an integer kind.
func intShape(k protoreflect.Kind) (bits int, unsigned bool) {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return 32, false
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return 32, true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return 64, true
	}
	return 64, false
}

// checkInt returns why v is not an integer of the given shape, or "".
// Like protojson it accepts numbers and numeric strings with an integral
// value.
func checkInt(v any, bits int, unsigned bool) string {
	want := "a whole number"
	if bits == 64 {
		want += " or a decimal string"
	}
	f, ok := numberValue(v)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return want
	}
	return intRange(f, bits, unsigned, want)
}

// numberValue is v as a float64: a number of any Go type, a json.Number or
// a numeric string.
func numberValue(v any) (float64, bool) {
	switch n := v.(type) {
	case string:
		if i, err := strconv.ParseInt(n, 10, 64); err == nil {
			return float64(i), true
		}
		if u, err := strconv.ParseUint(n, 10, 64); err == nil {
			return float64(u), true
		}
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	r := reflect.ValueOf(v)
	switch {
	case r.CanInt():
		return float64(r.Int()), true
	case r.CanUint():
		return float64(r.Uint()), true
	case r.CanFloat():
		return r.Float(), true
	}
	return 0, false
}

func intRange(f float64, bits int, unsigned bool, want string) string {
	var lo, hi float64 // hi is exclusive; both are exact in float64
	var bounds string
	switch {
	case bits == 32 && unsigned:
		lo, hi, bounds = 0, 1<<32, "0 to 4294967295"
	case bits == 32:
		lo, hi, bounds = -(1 << 31), 1<<31, "-2147483648 to 2147483647"
	case unsigned:
		lo, hi, bounds = 0, 1<<64, "0 to 18446744073709551615"
	default:
		lo, hi, bounds = -(1 << 63), 1<<63, "-9223372036854775808 to 9223372036854775807"
	}
	if f < lo || f >= hi {
		return want + " from " + bounds
	}
	return ""
}

func checkFloat(v any) string {
	switch n := v.(type) {
	case string:
		switch n {
		case "NaN", "Infinity", "-Infinity":
			return ""
		}
		if _, err := strconv.ParseFloat(n, 64); err != nil {
			return "not a number"
		}
		return ""
	case json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return ""
	}
	return "not a number"
}

func problem(path, format string, args ...any) *inputProblem {
	top := path
	if i := strings.IndexAny(path, ".["); i >= 0 {
		top = path[:i]
	}
	return &inputProblem{top: top, path: path, reason: fmt.Sprintf(format, args...)}
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// describe names a JSON value's type, with the value when short.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("bool %v", x)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprintf("number %v", x)
	}
	return fmt.Sprintf("a %T", v)
}

func kindName(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return string(fd.Message().FullName())
	case protoreflect.EnumKind:
		return string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}

func fieldNames(fs protoreflect.FieldDescriptors) string {
	if fs.Len() == 0 {
		return "(none)"
	}
	names := make([]string, fs.Len())
	for i := range names {
		names[i] = string(fs.Get(i).Name())
	}
	return strings.Join(names, ", ")
}

func enumNames(ed protoreflect.EnumDescriptor) string {
	vs := ed.Values()
	names := make([]string, vs.Len())
	for i := range names {
		names[i] = string(vs.Get(i).Name())
	}
	return strings.Join(names, ", ")
}

func isWellKnown(md protoreflect.MessageDescriptor) bool {
	return md.ParentFile() != nil && md.ParentFile().Package() == "google.protobuf"
}

// outputOptions: proto field names, default values present (see the
// package doc).
var outputOptions = protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}

// encodeOutput returns msg as decoded JSON: protojson with outputOptions,
// then 64-bit integers turned from strings into int64/uint64, other
// integers into int64 and floating-point numbers into float64.
func encodeOutput(msg *dynamicpb.Message, types *dynamicpb.Types) (any, error) {
	opts := outputOptions
	opts.Resolver = types
	raw, err := opts.Marshal(msg)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return normalizeMessage(msg.Descriptor(), out), nil
}

// normalizeMessage converts the numbers in v, the JSON of a message md.
func normalizeMessage(md protoreflect.MessageDescriptor, v any) any {
	if isWellKnown(md) {
		switch md.FullName() {
		case "google.protobuf.Int64Value", "google.protobuf.UInt64Value":
			return toInteger(v)
		}
		return normalizeAny(v)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return normalizeAny(v)
	}
	fields := md.Fields()
	for k, val := range obj {
		fd := fields.ByName(protoreflect.Name(k))
		if fd == nil {
			fd = fields.ByJSONName(k)
		}
		switch {
		case fd == nil: // an extension
			obj[k] = normalizeAny(val)
		case fd.IsMap():
			if m, ok := val.(map[string]any); ok {
				for mk, mv := range m {
					m[mk] = normalizeSingular(fd.MapValue(), mv)
				}
			}
		case fd.IsList():
			if list, ok := val.([]any); ok {
				for i, e := range list {
					list[i] = normalizeSingular(fd, e)
				}
			}
		default:
			obj[k] = normalizeSingular(fd, val)
		}
	}
	return obj
}

func normalizeSingular(fd protoreflect.FieldDescriptor, v any) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return normalizeMessage(fd.Message(), v)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if n, ok := v.(json.Number); ok {
			if f, err := n.Float64(); err == nil {
				return f
			}
		}
		return v
	case protoreflect.BoolKind, protoreflect.StringKind, protoreflect.BytesKind:
		return v
	}
	return toInteger(v) // integers, and enums emitted as numbers
}

// toInteger turns a JSON number or decimal string into int64, or uint64
// when above MaxInt64; anything else is returned as it is.
func toInteger(v any) any {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = string(x)
	case string:
		s = x
	default:
		return v
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return u
	}
	return v
}

// normalizeAny converts the numbers in free-form JSON (Struct, Value, …):
// integral ones to int64, others to float64.
func normalizeAny(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return string(x)
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeAny(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeAny(e)
		}
	}
	return v
}
