package storetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// RunService runs registry.Service over the store under concurrent load,
// as caphub serve does: registrations sharing transactions (the group
// commit), each with its own answer and its own audit event, and
// registrations on one replica while another appends invocation events to
// the same chain. newTarget returns a new, empty database (a file, a
// schema URL) and open opens a store on it; it is called twice for the
// replicas, as two processes would.
func RunService(t *testing.T, newTarget func(t *testing.T) string, open func(ctx context.Context, target string) (registry.Store, error)) {
	openT := func(t *testing.T, target string) registry.Store {
		t.Helper()
		s, err := open(context.Background(), target)
		if err != nil {
			t.Fatalf("open %s: %v", target, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("ConcurrentRegistrations", func(t *testing.T) {
		testConcurrentRegistrations(t, openT(t, newTarget(t)))
	})
	t.Run("RegistrationsWhileInvoking", func(t *testing.T) {
		target := newTarget(t)
		testRegistrationsWhileInvoking(t, openT(t, target), openT(t, target))
	})
}

// auditedService is a Service over s recording in l, quiet.
func auditedService(s registry.Store, l *audit.Log) *registry.Service {
	return registry.NewService(s, registry.WithRecorder(l), registry.WithLogger(slog.New(slog.DiscardHandler)))
}

// serviceDef is the i-th definition of a Service test: capability c_i of
// domain, version 1.0.0, with the given description.
func serviceDef(domain string, i int, desc string) capability.Definition {
	name := fmt.Sprintf("c_%d", i)
	return capability.Definition{
		URI:  capability.NewURI(capability.SchemeOSSA, domain, name, capability.MustParseVersion("1.0.0")).String(),
		Name: name, Domain: domain, Version: "1.0.0", Description: desc,
		Input:    capability.Schema{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}},
		Output:   capability.Schema{"type": "object"},
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "noop"}},
	}
}

// testConcurrentRegistrations registers from many callers at once, some of
// them what is registered already (a no-op) and a few a version already
// registered with other content: those get their own conflict, and the
// others their own result, each created version recorded by one event of
// an intact chain.
func testConcurrentRegistrations(t *testing.T, s registry.Store) {
	ctx := context.Background()
	l := audit.New(s)
	defer l.Close()
	svc := auditedService(s, l)
	const conflicting = 4
	for i := range conflicting {
		if _, err := svc.Register(ctx, serviceDef("taken", i, "The first content.")); err != nil {
			t.Fatal(err)
		}
	}
	const callers = 48
	// Every third caller registers again what is registered already: a
	// no-op, Created false.
	again := func(i int) bool { return i%3 == 0 }
	for i := range callers {
		if again(i) {
			if _, err := svc.Register(ctx, serviceDef("group", i, "A capability registered concurrently.")); err != nil {
				t.Fatal(err)
			}
		}
	}
	type outcome struct {
		res registry.RegisterResult
		err error
	}
	out := make([]outcome, callers+conflicting)
	var wg sync.WaitGroup
	for i := range callers + conflicting {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := serviceDef("group", i, "A capability registered concurrently.")
			if i >= callers {
				d = serviceDef("taken", i-callers, "Other content under the same version.")
			}
			out[i].res, out[i].err = svc.Register(ctx, d)
		}()
	}
	wg.Wait()
	for i, o := range out {
		if i >= callers {
			if !errors.Is(o.err, registry.ErrConflict) {
				t.Errorf("registration %d of a taken version: error %v, want a conflict", i, o.err)
			}
			continue
		}
		want := fmt.Sprintf("ossa:group/c_%d@1.0", i)
		if o.err != nil || o.res.Created == again(i) || o.res.URI != want {
			t.Errorf("registration %d: %+v, %v; want %s, created %v", i, o.res, o.err, want, !again(i))
		}
	}
	checkChain(t, l, s, conflicting+callers)
}

// testRegistrationsWhileInvoking registers on replica a while replica b
// appends invocation events to the same chain: both go on, and the chain
// holds every event, intact.
func testRegistrationsWhileInvoking(t *testing.T, a, b registry.Store) {
	ctx := context.Background()
	la, lb := audit.New(a), audit.New(b)
	defer la.Close()
	defer lb.Close()
	svc := auditedService(a, la)
	const registrars, perRegistrar, invokers, perInvoker = 8, 12, 4, 40
	var wg sync.WaitGroup
	errs := make(chan error, registrars+invokers)
	for r := range registrars {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perRegistrar {
				if _, err := svc.Register(ctx, serviceDef("replica", r*perRegistrar+j, "Registered on replica A.")); err != nil {
					errs <- fmt.Errorf("register on A: %w", err)
					return
				}
			}
		}()
	}
	for range invokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perInvoker {
				if _, err := lb.Record(ctx, audit.KindInvocation, "agent:b", "ossa:everruns/noop@1.0", map[string]any{"outcome": "ok"}); err != nil {
					errs <- fmt.Errorf("record an invocation on B: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkChain(t, la, a, registrars*perRegistrar+invokers*perInvoker)
}

// checkChain verifies l's chain over s: intact, of n events, and every
// stored version recorded.
func checkChain(t *testing.T, l *audit.Log, s registry.Store, n int64) {
	t.Helper()
	ctx := context.Background()
	v, err := l.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK || v.Count != n {
		t.Errorf("audit verify: ok %v, %d events; want an intact chain of %d: %+v", v.OK, v.Count, n, v)
	}
	c, err := l.CheckRegistrations(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !c.OK {
		t.Errorf("registrations: %s", c)
	}
}
