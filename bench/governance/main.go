// Command governance benchmarks the overhead governance adds to an
// invocation (issue: "invocation overhead with policy and audit on vs off";
// target: on ≤ 2× off, and ≤ 100 µs added p50 on SQLite).
//
// One in-process pipeline per configuration, over the same registry (the
// built-ins registered in a real SQLite file in a temp dir, with the
// registry's cache, as caphub serve has it), invokes
// ossa:everruns/add@1.0 through its native binding, sequentially:
//
//   - off: no policy hook (invoke.AllowAll) and no recorder;
//   - policy: the policy engine, with a default "*" policy granting every
//     permission and effect, but no audit log (attribution only);
//   - audit: the audit log as recorder, no policy hook (attribution only);
//   - on: the policy engine with that policy and the audit log (so each
//     call appends a policy_decision event), the audit log as recorder (an
//     invocation event), and the agents' capability_bindings lookup: what
//     caphub serve runs (with its default CAPHUB_AUDIT_SYNC=false: events
//     are group-committed by the audit writer, not waited for).
//
// The configurations take turns in rounds, so that drift (caches, the WAL
// growing, CPU frequency) affects them alike. It prints p50, p99 and mean
// per configuration, and for "on" the ratio to "off" and the added p50,
// against the targets.
//
// Run: go run ./bench/governance [-n 20000] [-rounds 10] [-warmup 2000]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/builtin"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/native"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

const (
	uri    = "ossa:everruns/add@1.0"
	caller = "bench-agent"
)

// config is one pipeline under test and the latencies measured on it.
type config struct {
	name string
	pipe *invoke.Pipeline
	lat  []time.Duration
}

func main() {
	n := flag.Int("n", 20000, "measured invocations per configuration")
	rounds := flag.Int("rounds", 10, "rounds the invocations are spread over, configurations taking turns")
	warmup := flag.Int("warmup", 2000, "unmeasured invocations per configuration first")
	flag.Parse()
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)

	dir, err := os.MkdirTemp("", "caphub-bench-governance")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "caphub.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	svc := registry.NewService(st, registry.WithLogger(quiet), registry.WithCache())
	if _, err := svc.RegisterBatch(ctx, builtin.Definitions()); err != nil {
		log.Fatal(err)
	}
	handlers := map[string]native.Handler{}
	for name, h := range builtin.Handlers(builtin.Env{Registry: svc, Docs: st, Log: quiet, Now: time.Now}) {
		handlers[name] = native.Handler(h)
	}
	bindings := []invoke.Binding{native.New(handlers)}
	newPipe := func(opts invoke.Options) *invoke.Pipeline { return invoke.New(svc, bindings, opts) }

	auditLog := audit.New(st, audit.WithLogger(quiet))
	defer auditLog.Close()
	grantAll := policy.Policy{Agent: policy.DefaultAgent, GrantedPermissions: []string{"*"}, AllowedEffects: []string{"*"}}
	newEngine := func(l *audit.Log) *policy.Engine {
		opts := policy.Options{Tiers: policy.ResolverTiers(svc), Log: quiet}
		if l != nil {
			opts.Audit = l
		}
		e := policy.NewEngine(st, opts)
		if err := e.Policies().Put(ctx, grantAll); err != nil {
			log.Fatal(err)
		}
		return e
	}

	off := newPipe(invoke.Options{})
	polOnly := newPipe(invoke.Options{Policy: newEngine(nil)})
	auditOnly := newPipe(invoke.Options{Recorder: auditLog})
	on := newPipe(invoke.Options{Policy: newEngine(auditLog), Recorder: auditLog, Overrides: agent.NewAgents(st, svc).Overrides()})
	configs := []*config{{name: "off", pipe: off}, {name: "policy", pipe: polOnly}, {name: "audit", pipe: auditOnly}, {name: "on", pipe: on}}

	callerCtx := identity.With(ctx, identity.Caller{Agent: caller})
	call := func(p *invoke.Pipeline) time.Duration {
		start := time.Now()
		res, err := p.Invoke(callerCtx, invoke.Request{URI: uri, Input: map[string]any{"a": 2, "b": 3}})
		d := time.Since(start)
		if err != nil {
			log.Fatalf("invoke %s: %v", uri, err)
		}
		if out, _ := res.Output.(map[string]any); out == nil {
			log.Fatalf("invoke %s: unexpected output %#v", uri, res.Output)
		}
		return d
	}
	for _, c := range configs {
		for range *warmup {
			call(c.pipe)
		}
	}
	per := max(1, *n / *rounds)
	for range *rounds {
		for _, c := range configs {
			for range per {
				c.lat = append(c.lat, call(c.pipe))
			}
		}
	}

	// The "on" configuration must have written both kinds of event.
	for _, kind := range []string{audit.KindPolicyDecision, audit.KindInvocation} {
		evs, err := auditLog.List(ctx, chain.Filter{Kind: kind, Limit: 1})
		if err != nil || len(evs) == 0 {
			log.Fatalf("no %s event in the audit chain (%v): the benchmark does not measure what it says", kind, err)
		}
	}
	v, err := auditLog.Verify(ctx)
	if err != nil || !v.OK {
		log.Fatalf("audit chain: %v %v", v, err)
	}

	fmt.Printf("## Governance overhead: %s via the native binding, %d sequential calls per configuration (%d rounds), SQLite WAL in %s\n\n", uri, per**rounds, *rounds, os.TempDir())
	fmt.Printf("| configuration | p50 | p99 | mean | p50 vs off | added p50 |\n|---|---:|---:|---:|---:|---:|\n")
	base := stats(configs[0].lat)
	for _, c := range configs {
		s := stats(c.lat)
		fmt.Printf("| %s | %s | %s | %s | %.2f× | %s |\n", c.name, us(s.p50), us(s.p99), us(s.mean), float64(s.p50)/float64(base.p50), us(s.p50-base.p50))
	}
	s := stats(configs[3].lat)
	ratio, added := float64(s.p50)/float64(base.p50), s.p50-base.p50
	fmt.Printf("\naudit chain: %d events, intact\n", v.Count)
	fmt.Printf("target on ≤ 2× off (p50): %.2f× — %s\n", ratio, verdict(ratio <= 2))
	fmt.Printf("target added p50 ≤ 100 µs: %s — %s\n", us(added), verdict(added <= 100*time.Microsecond))
	fmt.Printf("mean: on %.2f× off, %s added\n", float64(s.mean)/float64(base.mean), us(s.mean-base.mean))
}

type summary struct{ p50, p99, mean time.Duration }

func stats(d []time.Duration) summary {
	s := slices.Clone(d)
	slices.Sort(s)
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	return summary{p50: s[len(s)/2], p99: s[len(s)*99/100], mean: sum / time.Duration(len(s))}
}

func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond)) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
