package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/caphub/caphub/internal/server/rest"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/client"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/embed"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/governance/sign"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/internal/builtin"
	"github.com/caphub/caphub/internal/metrics"
	"github.com/caphub/caphub/internal/permit"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/clibind"
	"github.com/caphub/caphub/invoke/binding/delegation"
	"github.com/caphub/caphub/invoke/binding/grpcbind"
	"github.com/caphub/caphub/invoke/binding/httpbind"
	"github.com/caphub/caphub/invoke/binding/mcpbind"
	"github.com/caphub/caphub/invoke/binding/native"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/postgres"
	"github.com/caphub/caphub/store/sqlite"
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
	agents *agent.Agents
	// tokens are the API tokens serve authenticates requests with.
	tokens *auth.Tokens
	// ranker orders capabilities by meaning for semantic search: nil
	// unless an embedding provider is configured (config.embed), when the
	// indexer keeps its vectors current.
	ranker  *embed.Ranker
	indexer *embed.Indexer
	// semantic is the registry's view of ranker, set once it exists.
	semantic *semanticRanker
	closers  []func() error
}

// openStore opens the store a --db value names.
func openStore(ctx context.Context, db string) (registry.Store, error) {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		return postgres.Open(ctx, db)
	}
	return sqlite.Open(ctx, db)
}

// openTokens opens the token store of the local database (caphub token),
// its changes recorded in the database's audit chain; the caller calls the
// returned close.
func openTokens(ctx context.Context, c config) (*auth.Tokens, func() error, error) {
	st, err := openStore(ctx, c.db)
	if err != nil {
		return nil, nil, err
	}
	log := audit.New(st)
	closeAll := func() error { log.Close(); return st.Close() }
	return auth.New(st, log), closeAll, nil
}

// openAuditLog opens the local database and its audit chain (caphub
// audit); the caller closes the store.
func openAuditLog(ctx context.Context, c config) (*audit.Log, registry.Store, error) {
	st, err := openStore(ctx, c.db)
	if err != nil {
		return nil, nil, err
	}
	return audit.New(st), st, nil
}

// openGovernance opens the policies and approvals of the local database,
// with decisions recorded in its audit chain (caphub approval and policy);
// the caller calls the returned close.
func openGovernance(ctx context.Context, c config) (*policy.Policies, *policy.Approvals, func(), error) {
	st, err := openStore(ctx, c.db)
	if err != nil {
		return nil, nil, nil, err
	}
	log := audit.New(st)
	closeAll := func() { log.Close(); st.Close() }
	return policy.NewPolicies(st, log), policy.NewApprovals(st, log, nil, 0), closeAll, nil
}

// openService is the app's first stage: the local database, its audit
// chain and the registry service recording into it, which verifies
// attestations against the trusted keys. Closing the service closes the
// store; the audit log is the caller's to close.
func openService(ctx context.Context, c config, opts ...registry.Option) (*registry.Service, *audit.Log, error) {
	st, err := openStore(ctx, c.db)
	if err != nil {
		return nil, nil, err
	}
	auditOpts := []audit.Option{audit.WithLogger(c.log)}
	if c.invocation.auditSync {
		auditOpts = append(auditOpts, audit.WithSyncInvocations())
	}
	if r := c.auditRetention; !r.IsZero() {
		c.log.Info("audit retention: pruning the audit chain in the background", "keep", r.String())
		auditOpts = append(auditOpts, audit.WithRetention(r.MaxEvents, r.MaxAge))
	}
	if c.auditCommits != nil {
		auditOpts = append(auditOpts, audit.WithCommitObserver(c.auditCommits))
	}
	log := audit.New(st, auditOpts...)
	verifier, err := trustVerifier(c.trustedKeys)
	if err != nil {
		log.Close()
		st.Close()
		return nil, nil, err
	}
	opts = append([]registry.Option{registry.WithLogger(c.log), registry.WithRecorder(log), registry.WithVerifier(verifier)}, opts...)
	return registry.NewService(st, opts...), log, nil
}

// serversOf returns where saved servers live for a registry: the local
// store, or the server behind a client.
func serversOf(reg registry.API) (discover.ServerAPI, error) {
	switch r := reg.(type) {
	case *client.Client:
		return r, nil
	case *registry.Service:
		return discover.NewServers(r.Store(), discover.WithRecorder(r.Recorder())), nil
	}
	return nil, fmt.Errorf("this registry cannot save MCP servers")
}

// registerBuiltins registers the built-in capabilities (a no-op when they
// already are), as caphub itself.
func registerBuiltins(ctx context.Context, svc *registry.Service) error {
	_, err := svc.RegisterBatch(identity.With(ctx, identity.Caller{Actor: "caphub"}), builtin.Definitions())
	return err
}

// openAgents opens the agents of the local database (caphub agent). The
// built-in capabilities are registered first, as serve does, so that
// agents can enable the everruns ones; builtinsFailed hears when they
// cannot be. The caller closes the returned service.
func openAgents(ctx context.Context, c config, builtinsFailed func(error)) (*agent.Agents, *registry.Service, error) {
	svc, log, err := openService(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	if err := registerBuiltins(ctx, svc); err != nil {
		builtinsFailed(err)
	}
	return agent.NewAgents(svc.Store(), svc, agent.WithRecorder(log)), svc, nil
}

// newApp opens the store and assembles caphub, its registry made with
// opts. The built-in capabilities are registered (a no-op when they
// already are).
func newApp(ctx context.Context, c config, opts ...registry.Option) (*app, error) {
	opts = append([]registry.Option{registry.WithCache()}, opts...)
	sem := &semanticRanker{}
	if c.embed.url != "" {
		opts = append(opts, registry.WithSemantic(sem))
	}
	// The metrics observe the registry and the audit writer from the start.
	m := metrics.New()
	opts = append(opts, registry.WithObserver(m.ObserveRegistry))
	c.auditCommits = m.ObserveAuditCommit
	svc, log, err := openService(ctx, c, opts...)
	if err != nil {
		return nil, err
	}
	// The service's Close stops the cache's watch, then closes the store.
	a := &app{store: svc.Store(), svc: svc, audit: log, closers: []func() error{svc.Close, log.Close}, semantic: sem, metrics: m}
	m.Watch(metrics.Sources{AuditQueue: log.QueueLen, Cache: svc.CacheStats})
	if err := a.addInvocation(ctx, c); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.addEmbedding(c); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// semanticRanker is an embed.Ranker as the registry's hybrid search asks
// for it; the registry is made before the ranker, which needs its store.
type semanticRanker struct{ ranker atomic.Pointer[embed.Ranker] }

var errNoRanker = errors.New("semantic search is starting")

func (s *semanticRanker) Similar(ctx context.Context, query string, limit int, keep func(registry.Key) bool) (map[registry.Key]float64, error) {
	r := s.ranker.Load()
	if r == nil {
		return nil, errNoRanker
	}
	got, err := r.RankWith(ctx, query, limit, embed.RankOptions{Keep: keep})
	out := make(map[registry.Key]float64, len(got))
	for _, g := range got {
		out[g.Key] = g.Similarity
	}
	return out, err
}

func (s *semanticRanker) Scores(ctx context.Context, query string, keys []registry.Key) (map[registry.Key]float64, error) {
	r := s.ranker.Load()
	if r == nil {
		return nil, errNoRanker
	}
	return r.Scores(ctx, query, keys)
}

// addEmbedding starts the indexer of semantic search when an embedding
// provider is configured: it embeds the versions without a vector in the
// background and each new one as it is registered, and stops with the
// app, before the store closes.
func (a *app) addEmbedding(c config) error {
	if c.embed.url == "" {
		return nil
	}
	client, err := embed.NewClient(c.embed.clientOptions())
	if err != nil {
		return fmt.Errorf("embedding provider: %w", err)
	}
	a.indexer = embed.NewIndexer(a.store, client, embed.IndexerOptions{
		Log:    c.log,
		Ranker: embed.RankerOptions{Dimensions: c.embed.dimensions},
	})
	a.ranker = a.indexer.Ranker()
	a.semantic.ranker.Store(a.ranker)
	ctx, cancel := context.WithCancel(context.Background())
	done := a.indexer.Start(ctx)
	a.closers = append(a.closers, func() error { cancel(); <-done; return nil })
	c.log.Info("semantic search on", "provider", client.Endpoint(), "model", client.Model(), "api_key", c.embed.apiKeyEnv != "")
	return nil
}

// addInvocation is the app's second stage: saved servers, metrics, the
// built-ins, the bindings, governance, agents and the pipeline.
func (a *app) addInvocation(ctx context.Context, c config) error {
	inv := c.invocation
	// What definitions and API-saved servers may make caphub do: the
	// operator's allow-lists, never the definitions' own say.
	a.permits = &permit.Permits{Commands: inv.allowCmds, Env: inv.allowEnv, Hosts: inv.allowHosts}
	a.servers = discover.NewServers(a.store, discover.APIPermits(a.permits), discover.WithRecorder(a.audit))
	if err := registerBuiltins(ctx, a.svc); err != nil {
		return fmt.Errorf("register the built-in capabilities: %w", err)
	}
	bindings := a.bindings(c)
	a.governance = policy.NewEngine(a.store, policy.Options{Tiers: policy.ResolverTiers(a.svc), Audit: a.audit, ApprovalRequired: inv.humanApproval, Log: c.log})
	a.agents = agent.NewAgents(a.store, a.svc, agent.WithRecorder(a.audit))
	a.tokens = auth.New(a.store, a.audit)
	a.pipeline = invoke.New(a.svc, bindings, invoke.Options{
		Policy:    a.governance,
		Recorder:  recorders{logRecorder{c.log}, a.audit},
		Observer:  a.metrics,
		Overrides: a.agents.Overrides(),
	})
	return nil
}

// bindings makes every binding the pipeline tries, under the operator's
// allow-lists; those that start servers or connections close with the app.
func (a *app) bindings(c config) []invoke.Binding {
	inv := c.invocation
	handlers := map[string]native.Handler{}
	for name, h := range builtin.Handlers(builtin.Env{Registry: a.svc, Docs: a.store, Log: c.log, Metrics: metricSink{a.metrics}, Now: time.Now}) {
		handlers[name] = native.Handler(h)
	}
	mcpB := mcpbind.New(a.servers, mcpbind.Options{ClientVersion: buildVersion(), Log: c.log})
	grpcB := grpcbind.New(grpcbind.Options{AllowedTargets: inv.allowTargets, Logger: c.log})
	a.closers = append(a.closers, mcpB.Close, grpcB.Close)
	return []invoke.Binding{
		native.New(handlers),
		mcpB,
		httpbind.New(httpbind.Options{AllowedHosts: inv.allowHosts, Getenv: a.permits.Getenv}),
		grpcB,
		clibind.New(clibind.Options{AllowedCommands: inv.allowCmds, Getenv: a.permits.Getenv}),
		delegation.New(delegation.Options{Agents: inv.a2aAgents, AllowedHosts: inv.allowHosts, Getenv: a.permits.Getenv}),
	}
}

// trustVerifier checks attestations against the trusted keys (files of
// PUBLIC KEY blocks or directories of *.pub; config.trustedKeys) and gives
// each definition its trust tier. A signed definition whose signature does
// not verify is refused.
func trustVerifier(paths []string) (func(context.Context, *capability.Definition) (string, error), error) {
	keys := sign.NewKeyRing()
	if len(paths) > 0 {
		var err error
		if keys, err = sign.LoadKeyRing(paths...); err != nil {
			return nil, fmt.Errorf("%s: %w", envTrustedKeys, err)
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

// readyChecks are serve's /readyz conditions beyond the store answering:
// every schema migration applied, and the audit writer committing (a Flush
// returns once everything queued before it is in the chain).
func (a *app) readyChecks() []rest.ReadyCheck {
	var checks []rest.ReadyCheck
	if st, ok := a.store.(interface{ Ready(context.Context) error }); ok {
		checks = append(checks, rest.ReadyCheck{Name: "migrations", Describe: "the database lacks a schema migration of this caphub, or does not answer", Check: st.Ready})
	}
	if a.audit != nil {
		checks = append(checks, rest.ReadyCheck{Name: "audit", Describe: "the audit writer does not commit", Check: a.audit.Flush})
	}
	return checks
}
