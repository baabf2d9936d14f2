package rest

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// invokerFunc is an Invoker made of a function.
type invokerFunc func(ctx context.Context, req invoke.Request) (*invoke.Result, error)

func (f invokerFunc) Invoke(ctx context.Context, req invoke.Request) (*invoke.Result, error) {
	return f(ctx, req)
}

func newBudgetServer(t *testing.T, inv Invoker, opts ...Option) *httptest.Server {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	svc := registry.NewService(st)
	srv := httptest.NewServer(New(svc, slog.New(slog.DiscardHandler), append([]Option{WithInvoker(inv)}, opts...)...))
	t.Cleanup(func() { srv.Close(); svc.Close() })
	return srv
}

func TestRequestTimeBudget(t *testing.T) {
	const budget = 200 * time.Millisecond
	body := []byte(`{"uri": "ossa:test/slow@1.0", "input": {}}`)

	// A handler that honours its context: it is cancelled at the budget,
	// and the client gets the budget problem.
	cancelled := make(chan error, 1)
	srv := newBudgetServer(t, invokerFunc(func(ctx context.Context, _ invoke.Request) (*invoke.Result, error) {
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	}), WithRequestTimeout(budget))
	start := time.Now()
	a := call(t, srv, "POST", "/v1/invoke", "application/json", body)
	expect(t, a, 503, "a request past its budget")
	if d := a.json(t)["detail"].(string); !strings.Contains(d, budget.String()) || !strings.Contains(d, "--request-timeout") {
		t.Errorf("detail %q does not name the budget and how to raise it", d)
	}
	if err := <-cancelled; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the handler's context ended with %v, want the deadline", err)
	}
	if el := time.Since(start); el > budget+5*time.Second {
		t.Errorf("answered after %s", el)
	}

	// A handler that ignores its context: the client is answered at the
	// budget all the same.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv = newBudgetServer(t, invokerFunc(func(ctx context.Context, _ invoke.Request) (*invoke.Result, error) {
		<-release
		return &invoke.Result{}, nil
	}), WithRequestTimeout(budget))
	a = call(t, srv, "POST", "/v1/invoke", "application/json", body)
	expect(t, a, 503, "a handler that ignores the budget")

	// Within the budget the answer passes unchanged; with 0 there is none.
	for _, b := range []time.Duration{time.Minute, 0} {
		srv = newBudgetServer(t, invokerFunc(func(ctx context.Context, _ invoke.Request) (*invoke.Result, error) {
			_, has := ctx.Deadline()
			return &invoke.Result{Output: map[string]any{"deadline": has}}, nil
		}), WithRequestTimeout(b))
		a = call(t, srv, "POST", "/v1/invoke", "application/json", body)
		expect(t, a, 200, "a fast request")
		if got := a.json(t)["output"].(map[string]any)["deadline"]; got != (b > 0) || a.header.Get("Content-Type") != "application/json" {
			t.Errorf("budget %s: deadline %v, Content-Type %q", b, got, a.header.Get("Content-Type"))
		}
	}
	doc := call(t, newBudgetServer(t, nil, WithRequestTimeout(90*time.Second)), "GET", "/openapi.json", "", nil).json(t)
	if d := doc["info"].(map[string]any)["description"].(string); !strings.Contains(d, "1m30s") {
		t.Errorf("the OpenAPI description does not give the budget: %s", d)
	}
}
