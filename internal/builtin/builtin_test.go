package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// ---- helpers -----------------------------------------------------------------

// openStore opens a real SQLite store in the test's temporary directory.
func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatalf("open sqlite store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// registered returns a registry service over a new SQLite store holding the
// built-in definitions.
func registered(t testing.TB) (*registry.Service, *sqlite.Store) {
	t.Helper()
	st := openStore(t)
	svc := registry.NewService(st, registry.WithLogger(discardLogger()))
	if _, err := svc.RegisterBatch(context.Background(), Definitions()); err != nil {
		t.Fatalf("register the built-ins: %v", err)
	}
	return svc, st
}

// fixedClock returns a clock stuck at t.
func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// harness runs built-ins as the invoke pipeline would: the input is checked
// against the input schema first (when check is set), and every successful
// output is checked against the output schema, as is and after a JSON round
// trip; every *invoke.Error must carry a declared code (or INVALID_INPUT)
// with the declared retryability.
type harness struct {
	t        testing.TB
	handlers map[string]Handler
	defs     map[string]capability.Definition
}

func newHarness(t testing.TB, env Env) *harness {
	t.Helper()
	h := &harness{t: t, handlers: Handlers(env), defs: map[string]capability.Definition{}}
	for _, d := range Definitions() {
		h.defs[d.URI] = d
	}
	return h
}

// in is h reporting to t (a subtest's), so that its failures stop t.
func (h *harness) in(t testing.TB) *harness {
	c := *h
	c.t = t
	return &c
}

// call invokes uri as caller with input, without checking the input against
// the schema (so handlers' own checks can be tested).
func (h *harness) call(uri, caller string, input map[string]any) (any, error) {
	h.t.Helper()
	d, ok := h.defs[uri]
	if !ok {
		h.t.Fatalf("no built-in %s", uri)
	}
	handler := h.handlers[d.Bindings.Native.Handler]
	if handler == nil {
		h.t.Fatalf("no handler %q for %s", d.Bindings.Native.Handler, uri)
	}
	out, err := handler(context.Background(), &invoke.Call{URI: uri, Definition: &d, Input: input, Caller: caller, Attempt: 1})
	if err != nil {
		var ie *invoke.Error
		if errors.As(err, &ie) && ie.Code != invoke.CodeInvalidInput {
			declared := false
			for _, e := range d.Errors {
				if e.Code == ie.Code {
					declared = true
					if e.Retryable != ie.Retryable {
						h.t.Errorf("%s: error %s has retryable %v, declared %v", uri, ie.Code, ie.Retryable, e.Retryable)
					}
				}
			}
			if !declared {
				h.t.Errorf("%s: error code %s is not declared (%v)", uri, ie.Code, err)
			}
		}
		return nil, err
	}
	checkAgainst(h.t, uri+" output", d.Output, out)
	return out, nil
}

// callValid is call with the input first checked against the input schema.
func (h *harness) callValid(uri, caller string, input map[string]any) (any, error) {
	h.t.Helper()
	checkAgainst(h.t, uri+" input", h.defs[uri].Input, input)
	return h.call(uri, caller, input)
}

// ok calls and fails the test on error; it returns the output as a map.
func (h *harness) ok(uri, caller string, input map[string]any) map[string]any {
	h.t.Helper()
	out, err := h.callValid(uri, caller, input)
	if err != nil {
		h.t.Fatalf("%s %v: %v", uri, input, err)
	}
	m, isMap := out.(map[string]any)
	if !isMap {
		h.t.Fatalf("%s: output is %T, want an object", uri, out)
	}
	return m
}

// checkAgainst validates v against schema, as is and after a JSON round trip.
func checkAgainst(t testing.TB, what string, schema capability.Schema, v any) {
	t.Helper()
	sch, issues := capability.CompileSchema(schema)
	if len(issues) > 0 {
		t.Fatalf("%s: schema does not compile: %v", what, issues)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("%s %v does not match its schema: %s", what, v, capability.FirstSchemaError(err))
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: not JSON-encodable: %v", what, err)
	}
	rt, err := decodeJSON(b)
	if err != nil {
		t.Fatalf("%s: decode %s: %v", what, b, err)
	}
	if err := sch.Validate(rt); err != nil {
		t.Errorf("%s %s (JSON) does not match its schema: %s", what, b, capability.FirstSchemaError(err))
	}
}

// wantCode checks that err is an *invoke.Error with code, and that its
// message mentions each of mention.
func wantCode(t testing.TB, err error, code string, mention ...string) *invoke.Error {
	t.Helper()
	var ie *invoke.Error
	if !errors.As(err, &ie) {
		t.Fatalf("error = %v, want an *invoke.Error with code %s", err, code)
	}
	if ie.Code != code {
		t.Fatalf("error code = %s (%v), want %s", ie.Code, err, code)
	}
	for _, m := range mention {
		if !strings.Contains(ie.Message, m) {
			t.Errorf("error message %q does not mention %q", ie.Message, m)
		}
	}
	return ie
}

// jsonEqual reports whether a and b encode to the same JSON.
func jsonEqual(t testing.TB, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

// ---- definitions -------------------------------------------------------------

// allURIs lists every built-in, so that adding or dropping one is a
// deliberate change of this test.
var allURIs = []string{
	"ossa:everruns/noop@1.0", "ossa:everruns/current_time@1.0", "ossa:everruns/test_math@1.0", "ossa:everruns/test_weather@1.0",
	"ossa:everruns/research@1.0", "ossa:everruns/sandbox@1.0", "ossa:everruns/file_system@1.0",
	"ossa:everruns/get_current_time@1.0",
	"ossa:everruns/add@1.0", "ossa:everruns/subtract@1.0", "ossa:everruns/multiply@1.0", "ossa:everruns/divide@1.0",
	"ossa:everruns/get_weather@1.0", "ossa:everruns/get_forecast@1.0",
	"ossa:state/read@1.0", "ossa:state/write@1.0", "ossa:state/list@1.0", "ossa:state/delete@1.0", "ossa:state/checkpoint@1.0", "ossa:state/rollback@1.0",
	"ossa:observability/log@1.0", "ossa:observability/metric@1.0",
	"ossa:a2a/discover@1.0", "ossa:a2a/negotiate@1.0",
}

// availableBundles are the everruns bundles whose invocation cannot fail.
var availableBundles = map[string]bool{
	"ossa:everruns/noop@1.0": true, "ossa:everruns/current_time@1.0": true, "ossa:everruns/test_math@1.0": true, "ossa:everruns/test_weather@1.0": true,
}

func TestDefinitionsValid(t *testing.T) {
	defs := Definitions()
	var uris []string
	for _, d := range defs {
		uris = append(uris, d.URI)
	}
	if !slices.Equal(uris, allURIs) {
		t.Fatalf("built-in URIs:\n got %v\nwant %v", uris, allURIs)
	}
	for _, d := range defs {
		t.Run(d.URI, func(t *testing.T) {
			for _, iss := range capability.Validate(&d) {
				// The available bundles cannot fail, so they declare no
				// error codes; that SHOULD warning is the only one allowed.
				if iss.Severity == capability.SeverityWarning && iss.Rule == capability.RuleErrorCodes && availableBundles[d.URI] {
					continue
				}
				t.Errorf("%s", iss)
			}
			if d.Version != "1.0.0" || !strings.HasSuffix(d.URI, "@1.0") {
				t.Errorf("version %s, URI %s: want 1.0.0 and @1.0", d.Version, d.URI)
			}
			if want := "https://caphub.dev/builtin/" + d.Domain + "/" + d.Name; d.DocumentationURL != want {
				t.Errorf("documentation_url = %q, want %q", d.DocumentationURL, want)
			}
			if d.Bindings.Native == nil || d.Bindings.Native.Handler != d.Domain+"."+d.Name || len(d.Bindings.Types()) != 1 {
				t.Errorf("bindings = %+v: want only native {handler: %s.%s}", d.Bindings, d.Domain, d.Name)
			}
			if d.Title == "" || d.Description == "" {
				t.Errorf("title %q, description %q: want both", d.Title, d.Description)
			}
			wantStability := capability.StabilityStable
			if d.Name == "research" || d.Name == "sandbox" || d.Name == "file_system" {
				wantStability = capability.StabilityExperimental
			}
			if d.Stability != wantStability {
				t.Errorf("stability = %q, want %q", d.Stability, wantStability)
			}
			if d.Input["type"] != "object" || d.Output["type"] != "object" {
				t.Errorf("input and output must be object schemas")
			}
			for i, ex := range d.Examples {
				if ex.Input != nil {
					checkAgainst(t, fmt.Sprintf("examples[%d].input", i), d.Input, ex.Input)
				}
				if ex.Output != nil {
					checkAgainst(t, fmt.Sprintf("examples[%d].output", i), d.Output, ex.Output)
				}
			}
			if len(d.Examples) == 0 && d.Stability == capability.StabilityStable {
				t.Errorf("no example")
			}
		})
	}
}

// TestUnitNamesUnique: names become MCP tool names, so they must be unique
// across every built-in, not just within a domain.
func TestUnitNamesUnique(t *testing.T) {
	seen := map[string]string{}
	for _, d := range Definitions() {
		if other, dup := seen[d.Name]; dup {
			t.Errorf("name %q is used by %s and %s", d.Name, other, d.URI)
		}
		seen[d.Name] = d.URI
	}
}

func TestBundlesListUnitDefinitions(t *testing.T) {
	byURI := map[string]capability.Definition{}
	for _, d := range Definitions() {
		byURI[d.URI] = d
	}
	want := map[string][]string{
		"ossa:everruns/noop@1.0":         nil,
		"ossa:everruns/current_time@1.0": {"ossa:everruns/get_current_time@1.0"},
		"ossa:everruns/test_math@1.0":    {"ossa:everruns/add@1.0", "ossa:everruns/subtract@1.0", "ossa:everruns/multiply@1.0", "ossa:everruns/divide@1.0"},
		"ossa:everruns/test_weather@1.0": {"ossa:everruns/get_weather@1.0", "ossa:everruns/get_forecast@1.0"},
		"ossa:everruns/research@1.0":     nil,
		"ossa:everruns/sandbox@1.0":      nil,
		"ossa:everruns/file_system@1.0":  nil,
	}
	for _, d := range Definitions() {
		if len(d.Tools) > 0 {
			if _, isBundle := want[d.URI]; !isBundle {
				t.Errorf("%s lists tools but is not an everruns bundle", d.URI)
			}
		}
	}
	for uri, tools := range want {
		d, ok := byURI[uri]
		if !ok {
			t.Errorf("bundle %s missing", uri)
			continue
		}
		if !slices.Equal(d.Tools, tools) {
			t.Errorf("%s tools = %v, want %v", uri, d.Tools, tools)
		}
		for _, tool := range d.Tools {
			u, ok := byURI[tool]
			if !ok {
				t.Errorf("%s lists %s, which is not a built-in", uri, tool)
				continue
			}
			if len(u.Tools) > 0 {
				t.Errorf("%s lists %s, which is itself a bundle", uri, tool)
			}
		}
	}
}

// TestBundlesAsSeed checks the everruns bundles against the everruns seed:
// display, system-prompt additions and statuses.
func TestBundlesAsSeed(t *testing.T) {
	tests := []struct {
		id, title, icon, category, prompt, stability string
	}{
		{"noop", "No-Op", "circle-off", "Testing", "", "stable"},
		{"current_time", "Current Time", "clock", "Utilities", "", "stable"},
		{"test_math", "Test Math", "calculator", "Testing", "You have access to math tools. Use them for calculations: add, subtract, multiply, divide.", "stable"},
		{"test_weather", "Test Weather", "cloud-sun", "Testing", "You have access to weather tools. Use get_weather for current conditions and get_forecast for multi-day forecasts.", "stable"},
		{"research", "Research", "search", "AI", "You have access to a research scratchpad. Use it to organize your thoughts and findings.", "experimental"},
		{"sandbox", "Sandbox", "box", "Execution", "You can execute code in a sandboxed environment. Use the execute_code tool to run code safely.", "experimental"},
		{"file_system", "File System", "folder", "File Operations", "You have access to file system tools. You can read, write, and search files.", "experimental"},
	}
	byURI := map[string]capability.Definition{}
	for _, d := range Definitions() {
		byURI[d.URI] = d
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			d := byURI["ossa:everruns/"+tt.id+"@1.0"]
			if d.Title != tt.title || d.Display == nil || d.Display.Icon != tt.icon || d.Display.Category != tt.category ||
				d.SystemPromptAddition != tt.prompt || d.Stability != tt.stability {
				t.Errorf("%s = title %q display %+v prompt %q stability %q; want %q %s/%s %q %q",
					tt.id, d.Title, d.Display, d.SystemPromptAddition, d.Stability, tt.title, tt.icon, tt.category, tt.prompt, tt.stability)
			}
		})
	}
	if d := byURI["ossa:everruns/current_time@1.0"]; d.Description != "Tool to get current date and time in various formats and timezones." {
		t.Errorf("current_time description = %q, want the seed's", d.Description)
	}
}

func TestHandlersMatchDefinitions(t *testing.T) {
	hs := Handlers(Env{})
	names := map[string]bool{}
	for _, d := range Definitions() {
		names[d.Bindings.Native.Handler] = true
		if hs[d.Bindings.Native.Handler] == nil {
			t.Errorf("%s: handler %q is not in Handlers()", d.URI, d.Bindings.Native.Handler)
		}
	}
	for name := range hs {
		if !names[name] {
			t.Errorf("handler %q belongs to no definition", name)
		}
	}
}

// TestDefinitionsStable: caphub registers the built-ins on every start, so
// Definitions must give the same content every time (and fresh values, so a
// caller's changes never leak into the next call).
func TestDefinitionsStable(t *testing.T) {
	a, b := Definitions(), Definitions()
	if !jsonEqual(t, a, b) {
		t.Fatal("two calls of Definitions differ")
	}
	a[0].Input["properties"].(map[string]any)["x"] = true
	a[0].Tools = append(a[0].Tools, "x")
	if !jsonEqual(t, b, Definitions()) {
		t.Fatal("changing what Definitions returned changed the next call")
	}
}

func TestRegisterIdempotent(t *testing.T) {
	ctx := context.Background()
	svc, _ := registered(t)
	res, err := svc.RegisterBatch(ctx, Definitions())
	if err != nil {
		t.Fatalf("second registration: %v", err)
	}
	for _, r := range res {
		if r.Created {
			t.Errorf("%s was registered again: the built-ins changed between two calls", r.URI)
		}
	}
	page, err := svc.List(ctx, registry.ListFilter{BindingType: capability.BindingNative, CountTotal: true})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != len(allURIs) {
		t.Errorf("the registry lists %d native capabilities, want %d", page.Total, len(allURIs))
	}
	rec, err := svc.Get(ctx, "ossa", "everruns", "test_math", "1.0")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Definition.SystemPromptAddition == "" || len(rec.Definition.Tools) != 4 || rec.Definition.Display.Icon != "calculator" {
		t.Errorf("stored test_math lost bundle fields: %+v", rec.Definition)
	}
}

// TestExamplesRun runs every example whose output does not depend on stored
// state and compares the handler's output with the example's.
func TestExamplesRun(t *testing.T) {
	svc, _ := registered(t)
	env := Env{Registry: svc, Now: fixedClock(exampleNow), Metrics: MetricSinkFunc(func(string, float64, map[string]string) error { return nil }),
		Log: discardLogger()}
	h := newHarness(t, env)
	ran := 0
	for _, d := range Definitions() {
		if d.Domain == "state" {
			continue // depends on what is stored; state_test.go covers it
		}
		for _, ex := range d.Examples {
			if ex.Output == nil {
				continue
			}
			out, err := h.callValid(d.URI, "", ex.Input.(map[string]any))
			if err != nil {
				t.Errorf("%s example %v: %v", d.URI, ex.Input, err)
				continue
			}
			if !jsonEqual(t, out, ex.Output) {
				got, _ := json.Marshal(out)
				want, _ := json.Marshal(ex.Output)
				t.Errorf("%s example %v:\n got %s\nwant %s", d.URI, ex.Input, got, want)
			}
			ran++
		}
	}
	if ran < 15 {
		t.Errorf("only %d examples ran", ran)
	}
}

func TestCanonicalNumbers(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		{`3`, int64(3)},
		{`-3.5`, -3.5},
		{`1e3`, 1000.0},
		{`123456789012345678901234567890`, json.Number("123456789012345678901234567890")},
		{`{"a":[1,2.5]}`, map[string]any{"a": []any{int64(1), 2.5}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := decodeJSON([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decodeJSON(%s) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}
