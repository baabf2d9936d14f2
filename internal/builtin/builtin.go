// Package builtin holds the native capabilities compiled into caphub. They
// are registered on first start and listed, searched and invoked like any
// other capability; their definitions carry a native binding that names a
// handler of this package.
//
// The built-ins are:
//
//   - the everruns built-ins (domain "everruns"), each an everruns capability
//     modelled as a bundle (system-prompt addition, display, and Tools listing
//     the URIs of its unit capabilities) plus one unit capability per
//     everruns tool: noop, current_time (get_current_time), test_math (add,
//     subtract, multiply, divide), test_weather (get_weather, get_forecast),
//     and the "coming soon" research, sandbox and file_system as experimental
//     bundles without tools;
//   - the OSSA state domain (ossa:state/read|write|list|delete|checkpoint|
//     rollback@1.0): durable per-agent key/value state in the registry's
//     document store, with atomic checkpoint and rollback (see state.go for
//     the document layout);
//   - the OSSA observability domain: ossa:observability/log@1.0 and
//     ossa:observability/metric@1.0;
//   - the OSSA a2a domain, answered from the registry: ossa:a2a/discover@1.0
//     and ossa:a2a/negotiate@1.0.
//
// Definitions and Handlers are built from one table, so every native binding
// of a definition names a handler that Handlers returns.
package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
)

// Handler runs one native capability. call.Input holds the input under the
// capability's field names (the invoke pipeline has validated it and applied
// the schema's defaults; handlers check it again, so that a direct call with
// a bad input fails with INVALID_INPUT rather than a panic). The result is
// decoded JSON (map[string]any, []any, string, int64, float64, bool or nil).
// A failure the capability declares is an *invoke.Error with its code; any
// other error is reported by the pipeline as BINDING_FAILED.
type Handler func(ctx context.Context, call *invoke.Call) (any, error)

// Env is what the handlers need from caphub. A nil Log logs to slog.Default,
// a nil Now reads the wall clock; the capabilities that need Registry, Docs
// or Metrics fail with an error saying so when it is nil.
type Env struct {
	// Registry answers ossa:a2a/discover and ossa:a2a/negotiate.
	Registry registry.API
	// Docs keeps the ossa:state documents.
	Docs registry.DocStore
	// Log receives ossa:observability/log entries.
	Log *slog.Logger
	// Metrics receives ossa:observability/metric samples.
	Metrics MetricSink
	// Now is the clock of current_time, checkpoints and forecasts; tests fix it.
	Now func() time.Time
}

// MetricSink receives the samples recorded with ossa:observability/metric.
// Name and label names have been checked against the Prometheus data model
// ([a-zA-Z_:][a-zA-Z0-9_:]* and [a-zA-Z_][a-zA-Z0-9_]*, no "__" prefix on
// label names). labels is never nil and is the sink's to keep.
//
// A sink that also implements TypedMetricSink is told each sample's type
// through RecordTyped instead, so it can add to a counter, set a gauge or
// observe a histogram.
type MetricSink interface {
	Record(name string, value float64, labels map[string]string) error
}

// TypedMetricSink is a MetricSink that wants the metric type of each sample.
// When a sink implements it, RecordTyped is called instead of Record.
type TypedMetricSink interface {
	MetricSink
	RecordTyped(typ MetricType, name string, value float64, labels map[string]string) error
}

// MetricType is the type of a recorded metric, as ossa:observability/metric
// accepts it.
type MetricType string

// Metric types.
const (
	MetricCounter   MetricType = "counter"   // a value added to a monotonic total; never negative
	MetricGauge     MetricType = "gauge"     // the current value of something
	MetricHistogram MetricType = "histogram" // one observation of a distribution
)

// MetricSinkFunc adapts a function to a MetricSink.
type MetricSinkFunc func(name string, value float64, labels map[string]string) error

// Record calls f.
func (f MetricSinkFunc) Record(name string, value float64, labels map[string]string) error {
	return f(name, value, labels)
}

// builtinVersion is the full version of every built-in definition; their URIs carry
// @1.0.
const builtinVersion = "1.0.0"

// documentationBase is where the built-ins' documentation lives; a
// definition's documentation_url is documentationBase + "<domain>/<name>".
const documentationBase = "https://caphub.dev/builtin/"

// entry is one built-in: its definition and how to make its handler from an
// Env. The handler name is the definition's native binding.
type entry struct {
	def     capability.Definition
	handler func(e *env) Handler
}

// entries returns every built-in, freshly built (callers may modify what
// they get), in a stable order: everruns bundles and units, state,
// observability, a2a.
func entries() []entry {
	var out []entry
	out = append(out, everrunsEntries()...)
	out = append(out, stateEntries()...)
	out = append(out, observabilityEntries()...)
	out = append(out, a2aEntries()...)
	return out
}

// Definitions returns every built-in definition, each valid
// (capability.Validate reports no error) with a native binding naming its
// handler in Handlers. Each call builds new values, so a caller may modify
// them; the content is the same on every call, so registering them again
// on the next start is an idempotent no-op.
func Definitions() []capability.Definition {
	es := entries()
	out := make([]capability.Definition, len(es))
	for i := range es {
		out[i] = es[i].def
	}
	return out
}

// Handlers returns the handler of every built-in, by handler name (the
// native binding of its definition, "<domain>.<name>", e.g. "everruns.add").
func Handlers(env Env) map[string]Handler {
	e := newEnv(env)
	es := entries()
	out := make(map[string]Handler, len(es))
	for _, en := range es {
		out[en.def.Bindings.Native.Handler] = en.handler(e)
	}
	return out
}

// env is Env with its defaults filled in.
type env struct {
	Env
}

func newEnv(e Env) *env {
	if e.Log == nil {
		e.Log = slog.Default()
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	return &env{Env: e}
}

// handlerName is the native handler name of a built-in.
func handlerName(domain, name string) string { return domain + "." + name }

// define completes a built-in definition from its domain and name: URI,
// version, documentation URL, stability (stable unless set) and native
// binding.
func define(d capability.Definition) capability.Definition {
	d.URI = fmt.Sprintf("ossa:%s/%s@1.0", d.Domain, d.Name)
	d.Version = builtinVersion
	d.DocumentationURL = documentationBase + d.Domain + "/" + d.Name
	if d.Stability == "" {
		d.Stability = capability.StabilityStable
	}
	d.Bindings = capability.Bindings{Native: &capability.NativeBinding{Handler: handlerName(d.Domain, d.Name)}}
	return d
}

// uriOf returns the URI define gives a built-in.
func uriOf(domain, name string) string { return fmt.Sprintf("ossa:%s/%s@1.0", domain, name) }

// Schema helpers. Every schema is built anew on each call, so that callers
// (and the registry, which normalises in place) never share maps.

// object returns an object schema with the given properties and required
// fields. Input schemas refuse unknown fields (closed); output schemas leave
// room for fields added in later minor versions (open).
func object(closed bool, props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		req := make([]any, len(required))
		for i, r := range required {
			req[i] = r
		}
		s["required"] = req
	}
	if closed {
		s["additionalProperties"] = false
	}
	return s
}

// prop returns a property schema of a type with a description and extra
// keywords given as key, value pairs.
func prop(typ, description string, kv ...any) map[string]any {
	s := map[string]any{"description": description}
	if typ != "" {
		s["type"] = typ
	}
	for i := 0; i+1 < len(kv); i += 2 {
		s[kv[i].(string)] = kv[i+1]
	}
	return s
}

// anyStrings returns ss as []any, the form decoded JSON holds.
func anyStrings(ss ...string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// errDef declares an error code.
func errDef(code string, retryable bool, description string) capability.ErrorDef {
	return capability.ErrorDef{Code: code, Retryable: retryable, Description: description}
}

// Input readers. The pipeline has validated the input against the schema;
// these check again and say what is wrong, for handlers called directly.

func inputOf(call *invoke.Call) map[string]any {
	if call == nil || call.Input == nil {
		return map[string]any{}
	}
	return call.Input
}

func invalidInput(format string, args ...any) *invoke.Error {
	return invoke.Errorf(invoke.CodeInvalidInput, false, format, args...)
}

// stringField returns the string field key; ok is false when it is absent
// or null.
func stringField(in map[string]any, key string) (s string, ok bool, err error) {
	v, present := in[key]
	if !present || v == nil {
		return "", false, nil
	}
	s, isString := v.(string)
	if !isString {
		return "", false, invalidInput("field %q must be a string, not %s", key, jsonType(v))
	}
	return s, true, nil
}

// numberField returns the number field key as a float64; it must be present.
func numberField(in map[string]any, key string) (float64, error) {
	v, present := in[key]
	if !present || v == nil {
		return 0, invalidInput("field %q is missing: give a number", key)
	}
	f, ok := toFloat(v)
	if !ok {
		return 0, invalidInput("field %q must be a number, not %s", key, jsonType(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, invalidInput("field %q must be a finite number", key)
	}
	return f, nil
}

// integerField returns the integer field key, or def when it is absent.
func integerField(in map[string]any, key string, def int64) (int64, error) {
	v, present := in[key]
	if !present || v == nil {
		return def, nil
	}
	f, ok := toFloat(v)
	if !ok || f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, invalidInput("field %q must be an integer, not %s", key, jsonType(v))
	}
	if f > math.MaxInt64/2 || f < math.MinInt64/2 {
		return 0, invalidInput("field %q is out of range", key)
	}
	return int64(f), nil
}

// toFloat converts any number decoded JSON may hold.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// jsonType names the JSON type of a decoded value, for messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	if _, ok := toFloat(v); ok {
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// decodeJSON decodes one JSON text into the canonical decoded form: whole
// numbers that fit as int64, other integers kept exact as json.Number, the
// rest as float64.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return canonicalNumbers(v), nil
}

func canonicalNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = canonicalNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = canonicalNumbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if !strings.ContainsAny(string(x), ".eE") {
			return x // an integer beyond int64: keep every digit
		}
		f, _ := x.Float64()
		return f
	}
	return v
}
