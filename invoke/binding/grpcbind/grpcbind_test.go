package grpcbind

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
)

// def returns a definition whose grpc binding calls service/method on target.
func def(target, service, method string, mapping map[string]string, errs ...capability.ErrorDef) *capability.Definition {
	return &capability.Definition{
		URI:    "ossa:test/grpc_call@1.0",
		Name:   "grpc_call",
		Domain: "test",
		Errors: errs,
		Bindings: capability.Bindings{GRPC: &capability.GRPCBinding{
			Target: target, Service: service, Method: method, Mapping: mapping,
		}},
	}
}

func call(d *capability.Definition, input map[string]any) *invoke.Call {
	return &invoke.Call{URI: d.URI, Definition: d, Input: input, Attempt: 1}
}

func newBinding(t testing.TB, opts Options) *Binding {
	t.Helper()
	b := New(opts)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustInvoke invokes and fails the test on error; it returns the output
// object.
func mustInvoke(t *testing.T, b *Binding, c *invoke.Call) map[string]any {
	t.Helper()
	out, err := b.Invoke(ctxT(t), c)
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	m, ok := out.Output.(map[string]any)
	if !ok {
		t.Fatalf("output is %T, want an object", out.Output)
	}
	return m
}

// invokeErr invokes, expects an *invoke.Error and returns it.
func invokeErr(t *testing.T, ctx context.Context, b *Binding, c *invoke.Call) *invoke.Error {
	t.Helper()
	out, err := b.Invoke(ctx, c)
	if err == nil {
		t.Fatalf("Invoke succeeded with %v, want an error", out.Output)
	}
	var ie *invoke.Error
	if !errors.As(err, &ie) {
		t.Fatalf("error %T %v is not an *invoke.Error", err, err)
	}
	if ie.Binding != "grpc" {
		t.Errorf("error binding = %q, want grpc", ie.Binding)
	}
	return ie
}

func TestKind(t *testing.T) {
	var _ invoke.Binding = (*Binding)(nil)
	if k := New(Options{}).Kind(); k != "grpc" {
		t.Fatalf("Kind() = %q", k)
	}
}

func TestInvokeAddWithMapping(t *testing.T) {
	ts := startServer(t, serverConfig{})
	b := newBinding(t, Options{})
	d := def(ts.addr, mathService, "Add", map[string]string{"x": "a", "y": "b"})
	out := mustInvoke(t, b, call(d, map[string]any{
		"x":     int64(2),
		"y":     "3", // int64 as a decimal string, as proto3 JSON allows
		"extra": []any{float64(4)},
		"big":   "18446744073709551615",
	}))
	want := map[string]any{
		"sum":       int64(9),
		"op":        "OP_UNSPECIFIED",
		"terms":     []any{int64(2), int64(3), int64(4)},
		"summary":   "2+3+4",
		"labels":    []any{},
		"big":       uint64(18446744073709551615),
		"mean":      float64(3),
		"note_text": "",
	}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("output\n got %#v\nwant %#v", out, want)
	}
}

func TestInvokeEnumNestedRepeatedWellKnown(t *testing.T) {
	ts := startServer(t, serverConfig{})
	b := newBinding(t, Options{})
	d := def(ts.addr, mathService, "Add", nil)
	out := mustInvoke(t, b, call(d, map[string]any{
		"a":        2,
		"b":        3,
		"op":       "OP_MUL",
		"bonus":    map[string]any{"label": "bonus", "value": "5"},
		"items":    []any{map[string]any{"label": "i1", "value": 7}, map[string]any{"value": 1}},
		"at":       "2024-01-02T03:04:05Z",
		"weights":  map[string]any{"w": 2},
		"noteText": "json name accepted",
	}))
	if got := out["sum"]; got != int64(2*3*5*7*1*2) {
		t.Errorf("sum = %#v, want %d", got, 2*3*5*7*1*2)
	}
	if got := out["op"]; got != "OP_MUL" {
		t.Errorf("op = %#v, want OP_MUL (enums by name)", got)
	}
	if got := out["labels"]; !reflect.DeepEqual(got, []any{"bonus", "i1"}) {
		t.Errorf("labels = %#v", got)
	}
	if got := out["at"]; got != "2024-01-02T03:04:05Z" {
		t.Errorf("at = %#v, want the RFC 3339 timestamp back", got)
	}
	if got := out["note_text"]; got != "json name accepted" {
		t.Errorf("note_text = %#v (output keeps proto names)", got)
	}
	// An enum by number works too.
	out = mustInvoke(t, b, call(d, map[string]any{"a": 1, "b": 1, "op": 2}))
	if out["op"] != "OP_MUL" || out["sum"] != int64(1) {
		t.Errorf("enum by number: %#v", out)
	}
}

func TestHealthCheck(t *testing.T) {
	ts := startServer(t, serverConfig{})
	b := newBinding(t, Options{})
	out, err := b.Invoke(ctxT(t), call(def(ts.addr, "grpc.health.v1.Health", "Check", nil), map[string]any{"service": ""}))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Output.(map[string]any)["status"]; got != "SERVING" {
		t.Fatalf("status = %#v, want SERVING", got)
	}
	if out.Meta["method"] != "/grpc.health.v1.Health/Check" || out.Meta["target"] != ts.addr {
		t.Errorf("meta = %v", out.Meta)
	}
	// The method may also be written with its service.
	if _, err := b.Invoke(ctxT(t), call(def(ts.addr, "", "/grpc.health.v1.Health/Check", nil), nil)); err != nil {
		t.Errorf("method as /service/method: %v", err)
	}
}

func TestV1AlphaFallback(t *testing.T) {
	ts := startServer(t, serverConfig{reflection: reflectV1AlphaOnly})
	b := newBinding(t, Options{})
	out := mustInvoke(t, b, call(def(ts.addr, mathService, "Add", nil), map[string]any{"a": 40, "b": 2}))
	if out["sum"] != int64(42) {
		t.Fatalf("sum = %#v", out["sum"])
	}
}

func TestInvalidInput(t *testing.T) {
	ts := startServer(t, serverConfig{})
	b := newBinding(t, Options{})
	d := def(ts.addr, mathService, "Add", map[string]string{"x": "a"})
	tests := []struct {
		name     string
		input    map[string]any
		field    string
		mentions []string
	}{
		{name: "unknown field", input: map[string]any{"zzz": 1}, field: "zzz", mentions: []string{"unknown field", "a, b, op"}},
		{name: "wrong type, mapped", input: map[string]any{"x": "abc"}, field: "x", mentions: []string{`request field "a"`, "int64", `string "abc"`}},
		{name: "not an integer", input: map[string]any{"b": 1.5}, field: "b", mentions: []string{"whole number"}},
		{name: "nested", input: map[string]any{"bonus": map[string]any{"value": true}}, field: "bonus.value", mentions: []string{"bool true"}},
		{name: "repeated element", input: map[string]any{"items": []any{map[string]any{}, map[string]any{"label": 5}}}, field: "items[1].label", mentions: []string{"expected a string"}},
		{name: "not an array", input: map[string]any{"extra": 3}, field: "extra", mentions: []string{"expected an array"}},
		{name: "enum name", input: map[string]any{"op": "OP_DIV"}, field: "op", mentions: []string{"OP_DIV", "OP_ADD, OP_MUL"}},
		{name: "map value", input: map[string]any{"weights": map[string]any{"w": "heavy"}}, field: "weights.w", mentions: []string{"int64"}},
		{name: "nested unknown", input: map[string]any{"bonus": map[string]any{"weight": 1}}, field: "bonus.weight", mentions: []string{"caphub.test.v1.Operand has fields: label, value"}},
		{name: "bad timestamp", input: map[string]any{"at": "yesterday"}, field: "at", mentions: []string{`invalid google.protobuf.Timestamp value "yesterday"`}},
		{name: "out of range", input: map[string]any{"a": 1e30}, field: "a", mentions: []string{"9223372036854775807"}},
		{name: "mapping collision", input: map[string]any{"x": 1, "a": 2}, mentions: []string{`both map to request field "a"`}, field: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := invokeErr(t, ctxT(t), b, call(d, tt.input))
			if e.Code != invoke.CodeInvalidInput || e.Retryable {
				t.Fatalf("got %s retryable=%v: %s", e.Code, e.Retryable, e.Message)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(e.Message, m) {
					t.Errorf("message %q does not mention %q", e.Message, m)
				}
			}
			if got := e.Details["field"]; got != tt.field {
				t.Errorf("details.field = %#v, want %q (message %q)", got, tt.field, e.Message)
			}
		})
	}
	if n := ts.calls.Load(); n != 0 {
		t.Errorf("the server handled %d calls; invalid input must not be sent", n)
	}
}

func TestStatusErrors(t *testing.T) {
	ts := startServer(t, serverConfig{})
	b := newBinding(t, Options{})
	tests := []struct {
		name      string
		status    string
		declared  []capability.ErrorDef
		code      string
		retryable bool
	}{
		{name: "undeclared not found", status: "NOT_FOUND", code: "GRPC_NOT_FOUND"},
		{name: "declared not found", status: "NOT_FOUND", declared: []capability.ErrorDef{{Code: "NOT_FOUND"}}, code: "NOT_FOUND"},
		{name: "declared retryable", status: "NOT_FOUND", declared: []capability.ErrorDef{{Code: "NOT_FOUND", Retryable: true}}, code: "NOT_FOUND", retryable: true},
		{name: "declared with prefix", status: "ABORTED", declared: []capability.ErrorDef{{Code: "GRPC_ABORTED", Retryable: false}}, code: "GRPC_ABORTED"},
		{name: "unavailable retryable", status: "UNAVAILABLE", code: "GRPC_UNAVAILABLE", retryable: true},
		{name: "unavailable declared not retryable", status: "UNAVAILABLE", declared: []capability.ErrorDef{{Code: "UNAVAILABLE"}}, code: "UNAVAILABLE"},
		{name: "resource exhausted", status: "RESOURCE_EXHAUSTED", code: "GRPC_RESOURCE_EXHAUSTED", retryable: true},
		{name: "aborted", status: "ABORTED", code: "GRPC_ABORTED", retryable: true},
		{name: "server deadline", status: "DEADLINE_EXCEEDED", code: "GRPC_DEADLINE_EXCEEDED", retryable: true},
		{name: "invalid argument", status: "INVALID_ARGUMENT", code: "GRPC_INVALID_ARGUMENT"},
		{name: "permission", status: "PERMISSION_DENIED", code: "GRPC_PERMISSION_DENIED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := def(ts.addr, mathService, "Fail", nil, tt.declared...)
			e := invokeErr(t, ctxT(t), b, call(d, map[string]any{"code": tt.status, "message": "widget 7 is gone"}))
			if e.Code != tt.code || e.Retryable != tt.retryable {
				t.Fatalf("got %s retryable=%v, want %s retryable=%v (%s)", e.Code, e.Retryable, tt.code, tt.retryable, e.Message)
			}
			if !strings.Contains(e.Message, "widget 7 is gone") || !strings.Contains(e.Message, tt.status) {
				t.Errorf("message %q lacks the status name or message", e.Message)
			}
			if e.Details["grpc_code"] != tt.status {
				t.Errorf("details = %v", e.Details)
			}
		})
	}
}

func TestDeadlineIsTimeout(t *testing.T) {
	ts := startServer(t, serverConfig{})
	b := newBinding(t, Options{})
	d := def(ts.addr, mathService, "Sleep", nil)
	mustInvoke(t, b, call(d, map[string]any{"ms": 1})) // warm: connect and resolve
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	e := invokeErr(t, ctx, b, call(d, map[string]any{"ms": 10000}))
	if e.Code != invoke.CodeTimeout || !e.Retryable {
		t.Fatalf("got %s retryable=%v: %s", e.Code, e.Retryable, e.Message)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %v; the deadline was 150ms", el)
	}
}

func TestCallTimeoutWithoutDeadline(t *testing.T) {
	ts := startServer(t, serverConfig{})
	b := newBinding(t, Options{CallTimeout: 200 * time.Millisecond})
	e := invokeErr(t, context.Background(), b, call(def(ts.addr, mathService, "Sleep", nil), map[string]any{"ms": 10000}))
	if e.Code != invoke.CodeTimeout {
		t.Fatalf("got %s: %s", e.Code, e.Message)
	}
}

func TestCancelled(t *testing.T) {
	ts := startServer(t, serverConfig{})
	b := newBinding(t, Options{})
	d := def(ts.addr, mathService, "Sleep", nil)
	mustInvoke(t, b, call(d, map[string]any{"ms": 1}))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := b.Invoke(ctx, call(d, map[string]any{"ms": 10000}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want one wrapping context.Canceled", err)
	}
}

func TestConfigurationErrors(t *testing.T) {
	ts := startServer(t, serverConfig{})
	noRefl := startServer(t, serverConfig{reflection: reflectNone})
	b := newBinding(t, Options{})
	tests := []struct {
		name     string
		call     *invoke.Call
		mentions []string
	}{
		{name: "no grpc binding", call: &invoke.Call{URI: "ossa:x/y@1.0", Definition: &capability.Definition{}}, mentions: []string{"ossa:x/y@1.0", "has no grpc binding"}},
		{name: "no definition", call: &invoke.Call{}, mentions: []string{"has no grpc binding"}},
		{name: "no target", call: call(def("", mathService, "Add", nil), nil), mentions: []string{"no target", "bindings.grpc.target"}},
		{name: "no service", call: call(def(ts.addr, "", "Add", nil), nil), mentions: []string{"no service"}},
		{name: "no method", call: call(def(ts.addr, mathService, "", nil), nil), mentions: []string{"no method"}},
		{name: "bad target", call: call(def("nowhere", mathService, "Add", nil), nil), mentions: []string{`"nowhere" is not host:port`}},
		{name: "unix target", call: call(def("unix:///tmp/x.sock", mathService, "Add", nil), nil), mentions: []string{`scheme "unix"`}},
		{name: "unknown service", call: call(def(ts.addr, "caphub.test.v1.Nope", "Add", nil), nil),
			mentions: []string{`does not serve service "caphub.test.v1.Nope"`, "caphub.test.v1.Math", "grpc.health.v1.Health"}},
		{name: "unknown method", call: call(def(ts.addr, mathService, "Mul", nil), nil),
			mentions: []string{`has no method "Mul"`, "Add, Fail, Sleep, Watch"}},
		{name: "streaming method", call: call(def(ts.addr, mathService, "Watch", nil), nil),
			mentions: []string{"server-streaming", "unary methods only"}},
		{name: "no reflection", call: call(def(noRefl.addr, mathService, "Add", nil), nil),
			mentions: []string{"does not serve gRPC server reflection", "reflection.Register"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := invokeErr(t, ctxT(t), b, tt.call)
			if e.Code != invoke.CodeNoBinding || e.Retryable {
				t.Fatalf("got %s retryable=%v: %s", e.Code, e.Retryable, e.Message)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(e.Message, m) {
					t.Errorf("message %q does not mention %q", e.Message, m)
				}
			}
		})
	}
	if n := ts.calls.Load() + noRefl.calls.Load(); n != 0 {
		t.Errorf("%d Math calls reached a server", n)
	}
}

func TestTargetNotAllowedIsNotDialed(t *testing.T) {
	ts := startServer(t, serverConfig{})
	b := newBinding(t, Options{AllowedTargets: []string{"svc.example.invalid:50051", "*.internal.example.invalid"}})
	e := invokeErr(t, ctxT(t), b, call(def(ts.addr, mathService, "Add", nil), nil))
	if e.Code != invoke.CodeNoBinding || !strings.Contains(e.Message, "not allowed") || !strings.Contains(e.Message, "svc.example.invalid:50051") {
		t.Fatalf("got %s: %s", e.Code, e.Message)
	}
	// With no list, loopback only: a remote name is refused before dialing.
	def2 := newBinding(t, Options{})
	e = invokeErr(t, ctxT(t), def2, call(def("svc.example.invalid:443", mathService, "Add", nil), nil))
	if e.Code != invoke.CodeNoBinding || !strings.Contains(e.Message, "loopback only") {
		t.Fatalf("got %s: %s", e.Code, e.Message)
	}
	if n := ts.accepts.Load(); n != 0 {
		t.Errorf("the server accepted %d connections; a refused target must not be dialed", n)
	}
	for _, bb := range []*Binding{b, def2} {
		if n := len(bb.conns); n != 0 {
			t.Errorf("%d connections created for refused targets", n)
		}
	}
}

func TestConnectionAndDescriptorReuse(t *testing.T) {
	ts := startServer(t, serverConfig{})
	b := newBinding(t, Options{})
	d := def(ts.addr, mathService, "Add", nil)
	for i := range 3 {
		out := mustInvoke(t, b, call(d, map[string]any{"a": i, "b": 1}))
		if out["sum"] != int64(i+1) {
			t.Fatalf("call %d: sum = %#v", i, out["sum"])
		}
	}
	// localhost is another target string, hence another connection.
	if got := ts.accepts.Load(); got != 1 {
		t.Errorf("server accepted %d connections for 3 calls, want 1 (pooled)", got)
	}
	if got := ts.reflections.Load(); got != 1 {
		t.Errorf("%d reflection streams for 3 calls, want 1 (descriptors cached)", got)
	}
	if got := len(b.conns); got != 1 {
		t.Errorf("pool holds %d connections, want 1", got)
	}
}

func TestConcurrentCalls(t *testing.T) {
	ts := startServer(t, serverConfig{})
	b := newBinding(t, Options{})
	d := def(ts.addr, mathService, "Add", nil)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			out, err := b.Invoke(ctxT(t), call(d, map[string]any{"a": i, "b": i}))
			if err != nil {
				errs <- err
				return
			}
			if s := out.Output.(map[string]any)["sum"]; s != int64(2*i) {
				errs <- errors.New("wrong sum")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := ts.accepts.Load(); got != 1 {
		t.Errorf("server accepted %d connections, want 1", got)
	}
	if got := ts.reflections.Load(); got != 1 {
		t.Errorf("%d reflection streams for 32 concurrent first calls, want 1 (shared)", got)
	}
}

// TestRedeployedServer: a server restarted on the same address without a
// method the cache still lists answers "unknown method"; the binding drops
// the cache, resolves again and reports the method as missing. A method
// added by the redeploy is found without any error.
func TestRedeployedServer(t *testing.T) {
	v1 := startServer(t, serverConfig{methods: []string{"Add", "Old"}})
	addr := v1.addr
	b := newBinding(t, Options{})
	mustInvoke(t, b, call(def(addr, mathService, "Old", nil), map[string]any{"a": 1}))
	v1.srv.Stop()
	// Wait until the client has seen the connection go, as it would between
	// a redeploy and a later call (a call racing the restart is UNAVAILABLE,
	// which is retryable).
	cc := b.conns[addr]
	for ctx := ctxT(t); cc.GetState() == connectivity.Ready; {
		if !cc.WaitForStateChange(ctx, connectivity.Ready) {
			t.Fatal("the client never noticed the server stopping")
		}
	}

	v2 := startServer(t, serverConfig{addr: addr, methods: []string{"Add", "New"}})
	e := invokeErr(t, ctxT(t), b, call(def(addr, mathService, "Old", nil), map[string]any{"a": 1}))
	if e.Code != invoke.CodeNoBinding || !strings.Contains(e.Message, `has no method "Old"`) || !strings.Contains(e.Message, "Add, New") {
		t.Fatalf("got %s: %s", e.Code, e.Message)
	}
	if got := v2.reflections.Load(); got != 1 {
		t.Errorf("%d reflection streams after the unknown method, want 1", got)
	}
	out := mustInvoke(t, b, call(def(addr, mathService, "New", nil), map[string]any{"a": 5}))
	if out["sum"] != int64(5) {
		t.Fatalf("New: %#v", out)
	}
	if got := v2.reflections.Load(); got != 1 {
		t.Errorf("%d reflection streams, want 1: the refreshed cache already lists New", got)
	}
}

func TestServerDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	b := newBinding(t, Options{DialTimeout: 2 * time.Second})
	e := invokeErr(t, ctxT(t), b, call(def(addr, mathService, "Add", nil), nil))
	if e.Code != "GRPC_UNAVAILABLE" || !e.Retryable || !strings.Contains(e.Message, addr) {
		t.Fatalf("got %s retryable=%v: %s", e.Code, e.Retryable, e.Message)
	}
}

func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	ts := startServer(t, serverConfig{creds: credentials.NewServerTLSFromCert(&cert)})
	b := newBinding(t, Options{TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	out := mustInvoke(t, b, call(def(ts.addr, mathService, "Add", nil), map[string]any{"a": 1, "b": 2}))
	if out["sum"] != int64(3) {
		t.Fatalf("sum = %#v", out["sum"])
	}
	// Plaintext against the TLS server fails as unavailable.
	plain := newBinding(t, Options{DialTimeout: time.Second})
	e := invokeErr(t, ctxT(t), plain, call(def(ts.addr, mathService, "Add", nil), nil))
	if e.Code != "GRPC_UNAVAILABLE" {
		t.Fatalf("plaintext to a TLS server: %s: %s", e.Code, e.Message)
	}
}

func TestClose(t *testing.T) {
	ts := startServer(t, serverConfig{})
	b := New(Options{})
	mustInvoke(t, b, call(def(ts.addr, mathService, "Add", nil), nil))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Invoke(ctxT(t), call(def(ts.addr, mathService, "Add", nil), nil)); err == nil || !strings.Contains(err.Error(), "after Close") {
		t.Fatalf("after Close: %v", err)
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in, host, port, err string
	}{
		{in: "127.0.0.1:50051", host: "127.0.0.1", port: "50051"},
		{in: "LocalHost.:80", host: "localhost", port: "80"},
		{in: "[::1]:443", host: "::1", port: "443"},
		{in: "dns:///svc.example.com:443", host: "svc.example.com", port: "443"},
		{in: "dns://8.8.8.8/svc.example.com:443", err: "names a DNS server"},
		{in: "unix:///tmp/s.sock", err: `scheme "unix"`},
		{in: "svc.example.com", err: "not host:port"},
		{in: ":50051", err: "no host"},
		{in: "h:0", err: "1 to 65535"},
		{in: "h:http", err: "1 to 65535"},
		{in: "h:+80", err: "1 to 65535"},
		{in: "h:080", host: "h", port: "80"},
		{in: ".:1", err: "no host"},
		{in: "a/b:1", err: "neither an IP address nor a DNS name"},
		{in: "a..b:1", err: "neither an IP address nor a DNS name"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			host, port, err := parseTarget(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("parseTarget(%q) err = %v, want it to mention %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil || host != tt.host || port != tt.port {
				t.Errorf("parseTarget(%q) = %q, %q, %v; want %q, %q", tt.in, host, port, err, tt.host, tt.port)
			}
		})
	}
}

func TestTargetAllowed(t *testing.T) {
	tests := []struct {
		patterns   []string
		host, port string
		want       bool
	}{
		{nil, "127.0.0.1", "1", true},
		{nil, "127.9.9.9", "1", true},
		{nil, "::1", "1", true},
		{nil, "localhost", "1", true},
		{nil, "10.0.0.1", "1", false},
		{nil, "example.com", "443", false},
		{[]string{"example.com"}, "127.0.0.1", "1", false}, // a list replaces the loopback default
		{[]string{"example.com", "loopback"}, "127.0.0.1", "1", true},
		{[]string{"example.com"}, "example.com", "443", true},
		{[]string{"Example.COM:443"}, "example.com", "443", true},
		{[]string{"example.com:443"}, "example.com", "80", false},
		{[]string{"*.example.com"}, "api.example.com", "1", true},
		{[]string{"*.example.com"}, "a.b.example.com", "1", true},
		{[]string{"*.example.com"}, "example.com", "1", false},
		{[]string{"*.example.com"}, "evilexample.com", "1", false},
		{[]string{"*.example.com:8443"}, "api.example.com", "443", false},
		{[]string{"10.0.0.0/8"}, "10.1.2.3", "1", true},
		{[]string{"10.0.0.0/8"}, "11.1.2.3", "1", false},
		{[]string{"10.0.0.0/8"}, "ten.example.com", "1", false},
		{[]string{"[fd00::/8]:443"}, "fd00::1", "443", true},
		{[]string{"fd00::/8"}, "fd00::1", "1", true},
		{[]string{"192.168.1.5"}, "192.168.1.5", "1", true},
		{[]string{"example.com:*"}, "example.com", "9", true},
		{[]string{"*"}, "anything.example", "1", true},
		{[]string{"", "  "}, "127.0.0.1", "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.host+":"+tt.port, func(t *testing.T) {
			if got := targetAllowed(tt.patterns, tt.host, tt.port); got != tt.want {
				t.Errorf("targetAllowed(%q, %s:%s) = %v, want %v", tt.patterns, tt.host, tt.port, got, tt.want)
			}
		})
	}
}

func TestSplitMethod(t *testing.T) {
	tests := []struct{ svc, m, wantSvc, wantM string }{
		{"a.B", "C", "a.B", "C"},
		{"", "a.B/C", "a.B", "C"},
		{"", "/a.B/C", "a.B", "C"},
		{"a.B", "a.B/C", "a.B", "C"},
		{"x.Y", "a.B/C", "x.Y", "C"},
	}
	for _, tt := range tests {
		t.Run(tt.svc+"/"+tt.m, func(t *testing.T) {
			if s, m := splitMethod(tt.svc, tt.m); s != tt.wantSvc || m != tt.wantM {
				t.Errorf("splitMethod(%q, %q) = %q, %q", tt.svc, tt.m, s, m)
			}
		})
	}
}

func BenchmarkInvokeUnary(b *testing.B) {
	ts := startServer(b, serverConfig{})
	bind := newBinding(b, Options{})
	d := def(ts.addr, mathService, "Add", map[string]string{"x": "a"})
	c := call(d, map[string]any{"x": int64(2), "b": int64(3), "op": "OP_ADD", "items": []any{map[string]any{"label": "i", "value": 4}}})
	ctx := context.Background()
	if _, err := bind.Invoke(ctx, c); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := bind.Invoke(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// selfSigned returns a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "caphub test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true,

		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// FuzzParseTarget: any string is either refused or yields a host and port
// that join back into a target parsing to the same.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"127.0.0.1:1", "[::1]:443", "dns:///a.example:80", "unix:///x", "h", ":1", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, port, err := parseTarget(s)
		if err != nil {
			return
		}
		h2, p2, err := parseTarget(net.JoinHostPort(host, port))
		if err != nil || h2 != host || p2 != port {
			t.Fatalf("%q → %q %q → %q %q %v", s, host, port, h2, p2, err)
		}
		_ = targetAllowed(nil, host, port)
	})
}
