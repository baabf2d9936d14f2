package invoke_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/native"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

func def(name string, input, output capability.Schema, errs ...capability.ErrorDef) capability.Definition {
	return capability.Definition{
		URI: "ossa:test/" + name + "@1.0", Name: name, Domain: "test", Version: "1.0.0", Stability: "stable",
		Description: "test capability " + name, Input: input, Output: output, Errors: errs,
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: name}},
	}
}

var obj = capability.Schema{"type": "object"}

// recorder keeps invocation records and observations.
type recorder struct {
	mu      sync.Mutex
	records []invoke.Record
	codes   []string
}

func (r *recorder) RecordInvocation(_ context.Context, rec invoke.Record) {
	r.mu.Lock()
	r.records = append(r.records, rec)
	r.mu.Unlock()
}

func (r *recorder) ObserveInvocation(binding, code string, _ time.Duration) {
	r.mu.Lock()
	r.codes = append(r.codes, binding+":"+code)
	r.mu.Unlock()
}

// setup returns a pipeline over the definitions, resolved in memory (the
// registry's own resolution is tested in registry/), with a recorder.
func setup(t *testing.T, handlers map[string]native.Handler, defs ...capability.Definition) (*invoke.Pipeline, *recorder) {
	t.Helper()
	rec := &recorder{}
	p := invoke.New(resolverOf(t, defs...), []invoke.Binding{native.New(handlers)},
		invoke.Options{BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Recorder: rec, Observer: rec})
	return p, rec
}

// memResolver resolves ossa:DOMAIN/NAME@MAJOR[.MINOR] to the one version of
// each definition it holds.
type memResolver map[string]registry.Resolution

func resolverOf(t testing.TB, defs ...capability.Definition) memResolver {
	t.Helper()
	r := memResolver{}
	for _, d := range defs {
		d.Normalize()
		id, _, _ := strings.Cut(d.URI, "@")
		r[id] = registry.Resolution{URI: d.URI, Version: d.Version,
			Record: registry.Record{Definition: d, Digest: d.URI + "|" + d.Version}}
	}
	return r
}

func (r memResolver) Resolve(_ context.Context, uri string) (registry.Resolution, error) {
	id, _, _ := strings.Cut(uri, "@")
	res, ok := r[id]
	if !ok {
		return registry.Resolution{}, fmt.Errorf("%s: %w", uri, registry.ErrNotFound)
	}
	return res, nil
}

func code(err error) string {
	var e *invoke.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return "not an *invoke.Error: " + err.Error()
}

func TestDefaultsValidationAndOutput(t *testing.T) {
	in := capability.Schema{"type": "object", "required": []any{"a"}, "properties": map[string]any{
		"a":    map[string]any{"type": "number"},
		"mode": map[string]any{"type": "string", "enum": []any{"fast", "slow"}, "default": "fast"},
		"opts": map[string]any{"type": "object", "properties": map[string]any{"depth": map[string]any{"type": "integer", "default": 2}}},
	}}
	out := capability.Schema{"type": "object", "required": []any{"result"}, "properties": map[string]any{"result": map[string]any{"type": "number"}}}
	var seen map[string]any
	p, rec := setup(t, map[string]native.Handler{
		"echo": func(_ context.Context, c *invoke.Call) (any, error) {
			seen = c.Input
			return map[string]any{"result": c.Input["a"]}, nil
		},
		"bad": func(_ context.Context, c *invoke.Call) (any, error) {
			return map[string]any{"result": "not a number"}, nil
		},
	}, def("echo", in, out), def("bad", in, out))
	ctx := context.Background()

	res, err := p.Invoke(ctx, invoke.Request{URI: "ossa:test/echo@1", Input: map[string]any{"a": 2, "opts": map[string]any{}}})
	if err != nil {
		t.Fatal(err)
	}
	if seen["mode"] != "fast" || seen["opts"].(map[string]any)["depth"] != int64(2) {
		t.Errorf("defaults not applied: %v", seen)
	}
	if res.Binding != "native" || res.URI != "ossa:test/echo@1.0" || res.Version != "1.0.0" || len(res.Attempts) != 1 || res.Output.(map[string]any)["result"] != int64(2) {
		t.Errorf("result %+v", res)
	}

	_, err = p.Invoke(ctx, invoke.Request{URI: "ossa:test/echo@1.0", Input: map[string]any{"a": "x", "mode": "medium"}})
	if code(err) != invoke.CodeInvalidInput || !strings.Contains(err.Error(), "/a") {
		t.Errorf("invalid input: %v", err)
	}
	_, err = p.Invoke(ctx, invoke.Request{URI: "ossa:test/bad@1.0", Input: map[string]any{"a": 1}})
	if code(err) != invoke.CodeInvalidOutput || !strings.Contains(err.Error(), "/result") {
		t.Errorf("invalid output: %v", err)
	}
	lenient := true
	res, err = p.Invoke(ctx, invoke.Request{URI: "ossa:test/bad@1.0", Input: map[string]any{"a": 1}, Lenient: &lenient})
	if err != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "/result") {
		t.Errorf("lenient: %+v %v", res, err)
	}
	_, err = p.Invoke(ctx, invoke.Request{URI: "ossa:test/nope@1.0"})
	if code(err) != invoke.CodeNotFound {
		t.Errorf("unknown capability: %v", err)
	}
	if len(rec.records) != 5 || rec.records[0].Binding != "native" || rec.records[0].Code != "" || rec.records[1].Code != invoke.CodeInvalidInput {
		t.Errorf("records %+v", rec.records)
	}
	if rec.codes[0] != "native:" || rec.codes[2] != "native:"+invoke.CodeInvalidOutput {
		t.Errorf("observations %v", rec.codes)
	}
}

func TestRetriesOnlyRetryableDeclaredErrors(t *testing.T) {
	var flaky, fatal atomic.Int32
	p, _ := setup(t, map[string]native.Handler{
		"flaky": func(context.Context, *invoke.Call) (any, error) {
			if flaky.Add(1) < 3 {
				return nil, &invoke.Error{Code: "BUSY", Message: "try again"}
			}
			return map[string]any{}, nil
		},
		"fatal": func(context.Context, *invoke.Call) (any, error) {
			fatal.Add(1)
			return nil, &invoke.Error{Code: "BROKEN", Message: "no", Retryable: true}
		},
	},
		def("flaky", obj, obj, capability.ErrorDef{Code: "BUSY", Description: "busy", Retryable: true}),
		def("fatal", obj, obj, capability.ErrorDef{Code: "BROKEN", Description: "broken", Retryable: false}))
	ctx := context.Background()
	res, err := p.Invoke(ctx, invoke.Request{URI: "ossa:test/flaky@1.0"})
	if err != nil || len(res.Attempts) != 3 || res.Attempts[0].Error.Code != "BUSY" || res.Attempts[2].Error != nil {
		t.Fatalf("flaky: %+v %v", res, err)
	}
	_, err = p.Invoke(ctx, invoke.Request{URI: "ossa:test/fatal@1.0"})
	// The declared retryable: false wins over what the handler said.
	if code(err) != "BROKEN" || fatal.Load() != 1 {
		t.Errorf("fatal: %v after %d attempts", err, fatal.Load())
	}
	var e *invoke.Error
	errors.As(err, &e)
	if attempts, _ := e.Details["attempts"].([]invoke.Attempt); len(attempts) != 1 {
		t.Errorf("attempts in details: %+v", e.Details)
	}
}

func TestTimeoutPolicyAndDeviceBindings(t *testing.T) {
	slow := def("slow", obj, obj)
	slow.Metadata = map[string]any{"caphub": map[string]any{"timeout": "30ms", "max_attempts": int64(2)}}
	device := def("device", obj, obj)
	device.Bindings = capability.Bindings{Extra: map[string]any{"intent": map[string]any{"action": "SEND"}}}
	odd := def("odd", obj, obj)
	odd.Bindings = capability.Bindings{Extra: map[string]any{"pigeon": map[string]any{"loft": "3"}}}
	var calls atomic.Int32
	handlers := map[string]native.Handler{
		"slow": func(ctx context.Context, _ *invoke.Call) (any, error) {
			calls.Add(1)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	p, _ := setup(t, handlers, slow, device, odd)
	ctx := context.Background()
	start := time.Now()
	_, err := p.Invoke(ctx, invoke.Request{URI: "ossa:test/slow@1.0"})
	if code(err) != invoke.CodeTimeout || calls.Load() != 2 || time.Since(start) > 5*time.Second {
		t.Errorf("timeout: %v after %d calls", err, calls.Load())
	}
	_, err = p.Invoke(ctx, invoke.Request{URI: "ossa:test/device@1.0"})
	if code(err) != invoke.CodeNotExecutable || !strings.Contains(err.Error(), "runs on a device") {
		t.Errorf("device binding: %v", err)
	}
	// A kind that is neither caphub's nor a device's is named as such.
	_, err = p.Invoke(ctx, invoke.Request{URI: "ossa:test/odd@1.0"})
	if code(err) != invoke.CodeNotExecutable || strings.Contains(err.Error(), "device") || !strings.Contains(err.Error(), "not one caphub runs") {
		t.Errorf("unknown binding kind: %v", err)
	}

	p = invoke.New(resolverOf(t, slow, device), []invoke.Binding{native.New(handlers)}, invoke.Options{Policy: policyFunc(func(_ context.Context, c *invoke.Call) error {
		return &invoke.Error{Code: invoke.CodeDenied, Message: "rule no-slow: " + c.URI}
	})})
	before := calls.Load()
	_, err = p.Invoke(ctx, invoke.Request{URI: "ossa:test/slow@1.0"})
	if code(err) != invoke.CodeDenied || calls.Load() != before {
		t.Errorf("denied call ran: %v", err)
	}
}

type policyFunc func(context.Context, *invoke.Call) error

func (f policyFunc) Check(ctx context.Context, c *invoke.Call) error { return f(ctx, c) }

// A handler panic is an error, not a crash.
func TestHandlerPanic(t *testing.T) {
	p, _ := setup(t, map[string]native.Handler{
		"boom": func(context.Context, *invoke.Call) (any, error) { panic("boom") },
	}, def("boom", obj, obj))
	_, err := p.Invoke(context.Background(), invoke.Request{URI: "ossa:test/boom@1.0"})
	if code(err) != invoke.CodeBindingFailed || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("panic: %v", err)
	}
}

func BenchmarkPipelineNative(b *testing.B) {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "c.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	svc := registry.NewService(st, registry.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	in := capability.Schema{"type": "object", "required": []any{"a", "b"}, "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}}
	out := capability.Schema{"type": "object", "properties": map[string]any{"result": map[string]any{"type": "number"}}}
	if _, err := svc.RegisterBatch(context.Background(), []capability.Definition{def("add", in, out)}); err != nil {
		b.Fatal(err)
	}
	res, err := svc.Resolve(context.Background(), "ossa:test/add@1.0")
	if err != nil {
		b.Fatal(err)
	}
	p := invoke.New(fixed{res}, []invoke.Binding{native.New(map[string]native.Handler{
		"add": func(_ context.Context, c *invoke.Call) (any, error) {
			return map[string]any{"result": toF(c.Input["a"]) + toF(c.Input["b"])}, nil
		},
	})}, invoke.Options{})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Invoke(ctx, invoke.Request{URI: "ossa:test/add@1.0", Input: map[string]any{"a": 1, "b": 2}}); err != nil {
			b.Fatal(err)
		}
	}
}

// fixed resolves to one resolution, so the benchmark measures the pipeline
// itself, not the store.
type fixed struct{ r registry.Resolution }

func (f fixed) Resolve(context.Context, string) (registry.Resolution, error) { return f.r, nil }

func toF(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}
