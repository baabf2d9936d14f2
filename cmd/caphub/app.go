package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/auth"
	"github.com/caphub/caphub/builtin"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/governance/sign"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/clibind"
	"github.com/caphub/caphub/invoke/binding/delegation"
	"github.com/caphub/caphub/invoke/binding/grpcbind"
	"github.com/caphub/caphub/invoke/binding/httpbind"
	"github.com/caphub/caphub/invoke/binding/mcpbind"
	"github.com/caphub/caphub/invoke/binding/native"
	"github.com/caphub/caphub/metrics"
	"github.com/caphub/caphub/permit"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// app is caphub assembled: the store, the registry, saved servers, the
// built-ins, every binding and the invocation pipeline.
type app struct {
	store   registry.Store
	svc     *registry.Service
	servers *discover.Servers
	// permits are the operator's allow-lists (programs, variables, hosts).
	permits *permit.Permits
	audit   *audit.Log
	// governance enforces per-agent policies and human approval.
	governance *policy.Engine
	metrics    *metrics.Metrics
	pipeline   *invoke.Pipeline
	// agents are the agents kept in the store; their capability_bindings
	// apply when they invoke.
	agents  *agent.Agents
	closers []func() error
}

// appConfig is what serve and invoke take from flags and the environment.
type appConfig struct {
	db           string
	allowHosts   []string // outbound HTTP allowlist
	allowTargets []string // gRPC targets allowlist
	allowCmds    []string // programs cli bindings and API-saved servers may run (empty: none)
	allowEnv     []string // variables definitions and API-saved servers may read (empty: none)
	a2aAgents    map[string]string
	log          *slog.Logger
}

// addInvokeFlags adds the flags that configure the bindings.
func addInvokeFlags(cmd *cobra.Command) {
	cmd.Flags().StringArray("allow-host", nil, "host an http binding may reach (host, host:port, *.domain, loopback or *); repeatable; default $CAPHUB_ALLOW_HOSTS, else loopback only")
	cmd.Flags().StringArray("allow-grpc-target", nil, "host:port a grpc binding may reach; repeatable; default $CAPHUB_ALLOW_GRPC_TARGETS, else loopback only")
	cmd.Flags().StringArray("allow-command", nil, "program a cli binding, or an MCP server saved over the API, may run (name or path, * for any); repeatable; default $CAPHUB_ALLOW_COMMANDS, else none")
	cmd.Flags().StringArray("allow-env", nil, "environment variable a definition (http auth env, cli env ${VAR}, delegation token_env) or an MCP server saved over the API may read (* for any); repeatable; default $CAPHUB_ALLOW_ENV, else none")
	cmd.Flags().StringArray("a2a-agent", nil, "NAME=URL of an A2A agent that delegation bindings may name; repeatable")
}

func listFlag(cmd *cobra.Command, name, env string) []string {
	v, _ := cmd.Flags().GetStringArray(name)
	if len(v) == 0 && os.Getenv(env) != "" {
		for _, s := range strings.Split(os.Getenv(env), ",") {
			if s = strings.TrimSpace(s); s != "" {
				v = append(v, s)
			}
		}
	}
	return v
}

func appConfigFrom(cmd *cobra.Command, log *slog.Logger) (appConfig, error) {
	c := appConfig{db: dbFlag(cmd), log: log,
		allowHosts:   listFlag(cmd, "allow-host", "CAPHUB_ALLOW_HOSTS"),
		allowTargets: listFlag(cmd, "allow-grpc-target", "CAPHUB_ALLOW_GRPC_TARGETS"),
		allowCmds:    listFlag(cmd, "allow-command", "CAPHUB_ALLOW_COMMANDS"),
		allowEnv:     listFlag(cmd, "allow-env", "CAPHUB_ALLOW_ENV"),
		a2aAgents:    map[string]string{},
	}
	agents, _ := cmd.Flags().GetStringArray("a2a-agent")
	for _, a := range agents {
		name, url, ok := strings.Cut(a, "=")
		if !ok || name == "" || !strings.HasPrefix(url, "http") {
			return c, &usageError{fmt.Errorf("--a2a-agent %q: write NAME=URL", a)}
		}
		c.a2aAgents[name] = url
	}
	return c, nil
}

// newApp opens the store and assembles caphub. The built-in capabilities
// are registered (a no-op when they already are).
func newApp(ctx context.Context, c appConfig) (*app, error) {
	st, err := openStore(ctx, c.db)
	if err != nil {
		return nil, err
	}
	a := &app{store: st, closers: []func() error{st.Close}}
	auditOpts := []audit.Option{audit.WithLogger(c.log)}
	if sync, err := audit.SyncFromEnv(); err != nil {
		a.Close()
		return nil, err
	} else if sync {
		auditOpts = append(auditOpts, audit.WithSyncInvocations())
	}
	a.audit = audit.New(st, auditOpts...)
	a.closers = append(a.closers, a.audit.Close)
	verifier, err := trustVerifier()
	if err != nil {
		a.Close()
		return nil, err
	}
	a.svc = registry.NewService(st, registry.WithLogger(c.log), registry.WithCache(), registry.WithRecorder(a.audit), registry.WithVerifier(verifier))
	a.closers[0] = a.svc.Close // stops the cache's watch, then closes the store
	// What definitions and API-saved servers may make caphub do: the
	// operator's allow-lists, never the definitions' own say.
	a.permits = &permit.Permits{Commands: c.allowCmds, Env: c.allowEnv, Hosts: c.allowHosts}
	a.servers = discover.NewServers(st, discover.APIPermits(a.permits), discover.WithRecorder(a.audit))
	a.metrics = metrics.New()
	if _, err := a.svc.RegisterBatch(registry.WithActor(ctx, "caphub"), builtin.Definitions()); err != nil {
		a.Close()
		return nil, fmt.Errorf("register the built-in capabilities: %w", err)
	}
	handlers := map[string]native.Handler{}
	for name, h := range builtin.Handlers(builtin.Env{Registry: a.svc, Docs: st, Log: c.log, Metrics: metricSink{a.metrics}, Now: time.Now}) {
		handlers[name] = native.Handler(h)
	}
	mcpB := mcpbind.New(a.servers, mcpbind.Options{ClientVersion: buildVersion(), Log: c.log})
	grpcB := grpcbind.New(grpcbind.Options{AllowedTargets: c.allowTargets, Logger: c.log})
	a.closers = append(a.closers, mcpB.Close, grpcB.Close)
	bindings := []invoke.Binding{
		native.New(handlers),
		mcpB,
		httpbind.New(httpbind.Options{AllowedHosts: c.allowHosts, Getenv: a.permits.Getenv}),
		grpcB,
		clibind.New(clibind.Options{AllowedCommands: c.allowCmds, Getenv: a.permits.Getenv}),
		delegation.New(delegation.Options{Agents: c.a2aAgents, AllowedHosts: c.allowHosts, Getenv: a.permits.Getenv}),
	}
	humanApproval, err := policy.HumanApprovalFromEnv()
	if err != nil {
		a.Close()
		return nil, err
	}
	a.governance = policy.NewEngine(st, policy.Options{Tiers: policy.ResolverTiers(a.svc), Audit: a.audit, ApprovalRequired: humanApproval, Log: c.log})
	a.agents = agent.NewAgents(st, a.svc, agent.WithRecorder(a.audit))
	a.pipeline = invoke.New(a.svc, bindings, invoke.Options{
		Policy:    a.governance,
		Recorder:  recorders{logRecorder{c.log}, a.audit},
		Observer:  a.metrics,
		Overrides: a.agents.Overrides(),
	})
	return a, nil
}

// trustVerifier checks attestations against the trusted keys of
// $CAPHUB_TRUSTED_KEYS (files of PUBLIC KEY blocks or directories of *.pub,
// separated like PATH) and gives each definition its trust tier. A signed
// definition whose signature does not verify is refused.
func trustVerifier() (func(context.Context, *capability.Definition) (string, error), error) {
	keys := sign.NewKeyRing()
	if v := os.Getenv("CAPHUB_TRUSTED_KEYS"); v != "" {
		var err error
		if keys, err = sign.LoadKeyRing(filepath.SplitList(v)...); err != nil {
			return nil, fmt.Errorf("CAPHUB_TRUSTED_KEYS: %w", err)
		}
	}
	return (&sign.Verifier{Keys: keys, Admin: byAdminToken}).Check, nil
}

// byAdminToken reports whether a request was authenticated with a token
// that has the admin scope: what it registers is TierTrusted.
func byAdminToken(ctx context.Context) bool {
	t, ok := auth.FromContext(ctx)
	return ok && t.Has(auth.ScopeAdmin)
}

// Close releases everything, bindings first (they kill their servers).
func (a *app) Close() error {
	var first error
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// metricSink hands ossa:observability/metric samples to Prometheus.
type metricSink struct{ m *metrics.Metrics }

func (s metricSink) Record(name string, value float64, labels map[string]string) error {
	return s.m.Record(name, metrics.Gauge, value, labels)
}

func (s metricSink) RecordTyped(typ builtin.MetricType, name string, value float64, labels map[string]string) error {
	return s.m.Record(name, string(typ), value, labels)
}

// recorders hands each invocation record to every recorder in turn.
type recorders []invoke.Recorder

func (rs recorders) RecordInvocation(ctx context.Context, rec invoke.Record) {
	for _, r := range rs {
		r.RecordInvocation(ctx, rec)
	}
}

// logRecorder writes a structured log line per invocation: failures as
// warnings, successes at debug level.
type logRecorder struct{ log *slog.Logger }

func (r logRecorder) RecordInvocation(ctx context.Context, rec invoke.Record) {
	// Successes are debug lines: the audit chain and /metrics already hold
	// every call, and a line per call at thousands of calls a second is
	// work on the hot path. Failures stay visible.
	level := slog.LevelDebug
	if rec.Code != "" {
		level = slog.LevelWarn
	}
	if !r.log.Enabled(ctx, level) {
		return
	}
	r.log.Log(ctx, level, "invocation", "uri", rec.URI, "version", rec.Version, "caller", rec.Caller, "binding", rec.Binding,
		"attempts", len(rec.Attempts), "duration_ms", rec.DurationMS, "code", rec.Code)
}
