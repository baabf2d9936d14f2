package capability

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
)

// The model's structs keep fields they do not know in an Extra map. YAML does
// this through `yaml:",inline"`; JSON needs the helpers below, used by each
// struct's MarshalJSON and UnmarshalJSON.

// knownJSONKeys caches the JSON field names of a struct type.
var knownJSONKeys sync.Map // reflect.Type → map[string]bool

func jsonKeys(t reflect.Type) map[string]bool {
	if v, ok := knownJSONKeys.Load(t); ok {
		return v.(map[string]bool)
	}
	keys := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || name == "" {
			continue
		}
		keys[name] = true
	}
	knownJSONKeys.Store(t, keys)
	return keys
}

// marshalWithExtra encodes v (a struct without custom methods) and adds the
// extra fields that do not collide with v's own.
func marshalWithExtra(v any, extra map[string]any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1]) // drop the closing brace
	known := jsonKeys(reflect.TypeOf(v))
	first := len(b) == 2
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if known[k] {
			continue
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(extra[k])
		if err != nil {
			return nil, err
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// unmarshalWithExtra decodes data into v (a pointer to a struct without custom
// methods) and returns the fields v does not know, normalised.
func unmarshalWithExtra(data []byte, v any) (map[string]any, error) {
	// UseNumber keeps whole numbers beyond 2^53 exact; Normalize turns them
	// into int64.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return nil, err
	}
	known := jsonKeys(reflect.TypeOf(v).Elem())
	if onlyKnownKeys(data, known) {
		return nil, nil // the common case: no second decoding to find none
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil || all == nil {
		return nil, err
	}
	var extra map[string]any
	for k, raw := range all {
		if known[k] {
			continue
		}
		var x any
		xd := json.NewDecoder(bytes.NewReader(raw))
		xd.UseNumber()
		if err := xd.Decode(&x); err != nil {
			return nil, err
		}
		if extra == nil {
			extra = map[string]any{}
		}
		extra[k] = Normalize(x)
	}
	return extra, nil
}

// onlyKnownKeys reports whether data is one JSON object whose keys are
// all in known, spelled exactly (encoding/json matches field names without
// regard to case, and such a key is an extra field too). It scans the
// object's top-level keys without decoding anything. False means "maybe
// not": for anything else (another value, an escaped key, trailing data)
// the caller decodes the object to find the extra fields.
func onlyKnownKeys(data []byte, known map[string]bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for i < len(data) && data[i] == '"' {
		j := i + 1
		for j < len(data) && data[j] != '"' {
			if data[j] == '\\' {
				return false
			}
			j++
		}
		if j >= len(data) || !known[string(data[i+1:j])] {
			return false
		}
		i = skipSpace(data, j+1)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		var ok bool
		if i, ok = skipValue(data, skipSpace(data, i+1)); !ok {
			return false
		}
		i = skipSpace(data, i)
		switch {
		case i < len(data) && data[i] == ',':
			i = skipSpace(data, i+1)
		case i < len(data) && data[i] == '}':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
	return false
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at i,
// false when none does.
func skipValue(data []byte, i int) (int, bool) {
	depth := 0
	for i < len(data) {
		switch c := data[i]; c {
		case '"':
			i++
			for i < len(data) && data[i] != '"' {
				if data[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(data) {
				return 0, false
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i, true // the end of the enclosing object
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i, true
			}
			i++
		default:
			i++
		}
		if depth == 0 && (i >= len(data) || data[i] == ',' || data[i] == '}' || data[i] == ']' || data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
			return i, true
		}
	}
	return 0, false
}

// Normalize converts a decoded JSON or YAML value to the canonical form the
// model holds: maps with string keys, []any, and whole numbers as int64 (so a
// value read from YAML equals the same value read from JSON).
//
// Maps and slices are changed in place, and only where an element changes:
// a value already in canonical form is only read, so goroutines may
// normalise definitions that share parts of their schemas (an OpenAPI
// import's components) at the same time.
func Normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if n, changed := normalizeElem(e); changed {
				x[k] = n
			}
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[toString(k)] = Normalize(e)
		}
		return m
	case []any:
		for i, e := range x {
			if n, changed := normalizeElem(e); changed {
				x[i] = n
			}
		}
		return x
	case time.Time:
		return dateText(x)
	}
	return normalizeNumber(v)
}

// dateText is a timestamp YAML read from an unquoted date, as the text it
// was: a date at midnight UTC as YYYY-MM-DD, else RFC 3339.
func dateText(t time.Time) string {
	if t.Equal(t.Truncate(24*time.Hour)) && t.Location() == time.UTC {
		return t.Format("2006-01-02")
	}
	return t.Format(time.RFC3339Nano)
}

// normalizeNumber turns a number into int64 when it is whole and exact,
// else float64; any other value is returned as it is.
func normalizeNumber(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
		return float64(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
		return x
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return normalizeNumber(f)
	}
	return v
}

// normalizeElem normalises an element of a map or slice and says whether
// it must be written back: maps with string keys and slices are normalised
// in place, and a scalar only changes when its type does (float64 2 →
// int64 2, a date → its text).
func normalizeElem(e any) (any, bool) {
	switch e.(type) {
	case map[string]any, []any:
		Normalize(e)
		return e, false
	case string, bool, int64, nil:
		return e, false
	}
	n := Normalize(e)
	return n, reflect.TypeOf(n) != reflect.TypeOf(e)
}

// CloneValue deep-copies the maps and slices of a decoded JSON or YAML
// value, so that a copy can be changed (or normalised) while the original is
// read elsewhere.
func CloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = CloneValue(e)
		}
		return m
	case map[any]any:
		m := make(map[any]any, len(x))
		for k, e := range x {
			m[k] = CloneValue(e)
		}
		return m
	case []any:
		if x == nil {
			return x
		}
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = CloneValue(e)
		}
		return s
	}
	return v
}

func normalizeSchema(s Schema) Schema {
	if s == nil {
		return nil
	}
	return Normalize(s).(map[string]any)
}

func toString(k any) string {
	if s, ok := k.(string); ok {
		return s
	}
	b, _ := json.Marshal(k)
	return strings.Trim(string(b), `"`)
}

// Normalize puts every free-form value of d (schemas, metadata, examples,
// extra fields) in canonical form; see the package function Normalize.
func (d *Definition) Normalize() {
	// Empty lists and maps are written as absent; read them as absent too.
	for _, l := range []*[]string{&d.Permissions, &d.Effects, &d.Domains, &d.Categories, &d.Intents, &d.Keywords, &d.Tools} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	if len(d.Errors) == 0 {
		d.Errors = nil
	}
	if len(d.Examples) == 0 {
		d.Examples = nil
	}
	if len(d.Metadata) == 0 {
		d.Metadata = nil
	}
	if len(d.Extra) == 0 {
		d.Extra = nil
	}
	d.Input = normalizeSchema(d.Input)
	d.Output = normalizeSchema(d.Output)
	if d.Metadata != nil {
		d.Metadata = Normalize(d.Metadata).(map[string]any)
	}
	if d.Extra != nil {
		d.Extra = Normalize(d.Extra).(map[string]any)
	}
	for i := range d.Examples {
		d.Examples[i].Input = Normalize(d.Examples[i].Input)
		d.Examples[i].Output = Normalize(d.Examples[i].Output)
		normalizeExtra(d.Examples[i].Extra)
	}
	for i := range d.Errors {
		normalizeExtra(d.Errors[i].Extra)
	}
	b := &d.Bindings
	normalizeExtra(b.Extra)
	for _, x := range []any{b.Native, b.MCP, b.HTTP, b.GRPC, b.CLI, b.Delegation, d.Display, d.Attestation, d.Provenance} {
		normalizeExtra(extraOf(x))
	}
	if b.HTTP != nil {
		normalizeExtra(extraOf(b.HTTP.Auth))
	}
}

// normalizeExtra normalises the values of an Extra map in place.
func normalizeExtra(m map[string]any) {
	for k, v := range m {
		m[k] = Normalize(v)
	}
}

// MarshalJSON encodes d with its extra fields.
func (d Definition) MarshalJSON() ([]byte, error) {
	type plain Definition
	return marshalWithExtra(plain(d), d.Extra)
}

// UnmarshalJSON decodes d, keeping unknown fields in Extra.
func (d *Definition) UnmarshalJSON(b []byte) error {
	type plain Definition
	var p plain
	extra, err := unmarshalWithExtra(b, &p)
	if err != nil {
		return err
	}
	*d = Definition(p)
	d.Extra = extra
	d.Normalize()
	return nil
}

// The same pair for every other struct of the model.

func (e ErrorDef) MarshalJSON() ([]byte, error) {
	type plain ErrorDef
	return marshalWithExtra(plain(e), e.Extra)
}

func (e *ErrorDef) UnmarshalJSON(b []byte) error {
	type plain ErrorDef
	var p plain
	extra, err := unmarshalWithExtra(b, &p)
	*e = ErrorDef(p)
	e.Extra = extra
	return err
}

func (b Bindings) MarshalJSON() ([]byte, error) {
	type plain Bindings
	return marshalWithExtra(plain(b), b.Extra)
}

func (b *Bindings) UnmarshalJSON(data []byte) error {
	type plain Bindings
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	*b = Bindings(p)
	b.Extra = extra
	return err
}

func (b NativeBinding) MarshalJSON() ([]byte, error) {
	type plain NativeBinding
	return marshalWithExtra(plain(b), b.Extra)
}

func (b *NativeBinding) UnmarshalJSON(data []byte) error {
	type plain NativeBinding
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	*b = NativeBinding(p)
	b.Extra = extra
	return err
}

func (b MCPBinding) MarshalJSON() ([]byte, error) {
	type plain MCPBinding
	return marshalWithExtra(plain(b), b.Extra)
}

func (b *MCPBinding) UnmarshalJSON(data []byte) error {
	type plain MCPBinding
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	*b = MCPBinding(p)
	b.Extra = extra
	return err
}

func (b HTTPBinding) MarshalJSON() ([]byte, error) {
	type plain HTTPBinding
	return marshalWithExtra(plain(b), b.Extra)
}

func (b *HTTPBinding) UnmarshalJSON(data []byte) error {
	type plain HTTPBinding
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	*b = HTTPBinding(p)
	b.Extra = extra
	return err
}

func (a HTTPAuth) MarshalJSON() ([]byte, error) {
	type plain HTTPAuth
	return marshalWithExtra(plain(a), a.Extra)
}

func (a *HTTPAuth) UnmarshalJSON(data []byte) error {
	type plain HTTPAuth
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	*a = HTTPAuth(p)
	a.Extra = extra
	return err
}

func (b GRPCBinding) MarshalJSON() ([]byte, error) {
	type plain GRPCBinding
	return marshalWithExtra(plain(b), b.Extra)
}

func (b *GRPCBinding) UnmarshalJSON(data []byte) error {
	type plain GRPCBinding
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	*b = GRPCBinding(p)
	b.Extra = extra
	return err
}

func (b CLIBinding) MarshalJSON() ([]byte, error) {
	type plain CLIBinding
	return marshalWithExtra(plain(b), b.Extra)
}

func (b *CLIBinding) UnmarshalJSON(data []byte) error {
	type plain CLIBinding
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	*b = CLIBinding(p)
	b.Extra = extra
	return err
}

func (b DelegationBinding) MarshalJSON() ([]byte, error) {
	type plain DelegationBinding
	return marshalWithExtra(plain(b), b.Extra)
}

func (b *DelegationBinding) UnmarshalJSON(data []byte) error {
	type plain DelegationBinding
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	*b = DelegationBinding(p)
	b.Extra = extra
	return err
}

func (d Display) MarshalJSON() ([]byte, error) {
	type plain Display
	return marshalWithExtra(plain(d), d.Extra)
}

func (d *Display) UnmarshalJSON(data []byte) error {
	type plain Display
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	*d = Display(p)
	d.Extra = extra
	return err
}

func (a Attestation) MarshalJSON() ([]byte, error) {
	type plain Attestation
	return marshalWithExtra(plain(a), a.Extra)
}

func (a *Attestation) UnmarshalJSON(data []byte) error {
	type plain Attestation
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	*a = Attestation(p)
	a.Extra = extra
	return err
}

func (p Provenance) MarshalJSON() ([]byte, error) {
	type plain Provenance
	return marshalWithExtra(plain(p), p.Extra)
}

func (p *Provenance) UnmarshalJSON(data []byte) error {
	type plain Provenance
	var q plain
	extra, err := unmarshalWithExtra(data, &q)
	*p = Provenance(q)
	p.Extra = extra
	return err
}

func (e Example) MarshalJSON() ([]byte, error) {
	type plain Example
	return marshalWithExtra(plain(e), e.Extra)
}

func (e *Example) UnmarshalJSON(data []byte) error {
	type plain Example
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	*e = Example(p)
	e.Extra = extra
	return err
}
