package mcpgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/server/guard"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodeAgentConfig is the JSON-RPC error code of a tools/list or tools/call
// on an agent whose capabilities cannot be composed (an unknown or
// unavailable capability, a tool-name conflict): the error's message names
// every problem and its data holds them as agent.Problem objects. It lies
// in the range JSON-RPC reserves for implementation-defined server errors.
const CodeAgentConfig = -32001

// agentTTL bounds how long an agent's tool table is served without being
// composed again: agents are documents, which the store does not watch, so
// an agent updated (caphub agent apply, PUT …/capabilities) shows within
// it. Registry changes, which the store reports, apply at the next request.
const agentTTL = 2 * time.Second

// AgentGateways serves each stored agent as its own MCP server, at
// /mcp/agents/{id}: its tools are exactly those of the agent's AgentConfig
// (agent.Agents.Config), named as the gateway names them, and every
// tools/call runs through the invocation pipeline as the agent (its ID is
// the caller's identity.Caller.Agent), so that the agent's policy and state namespace apply whatever the
// client claims (the X-Caphub-Agent header is ignored here). An agent
// client is thereby handed its configured tools and nothing else, without
// composing the configuration itself.
//
// One mcp.Server is kept per agent ID, built on the first request for it
// and updated in place (tools added, replaced or removed, which sends
// notifications/tools/list_changed to its sessions) when a request finds
// it stale: the registry changed since it was composed (the store is
// watched), or agentTTL passed. It is safe for concurrent use.
type AgentGateways struct {
	agents *agent.Agents
	store  registry.Store
	inv    Invoker
	opts   Options
	log    *slog.Logger
	sdkLog *slog.Logger
	// checks holds only log and opts: it lends the gateway's tool-error
	// results, which read nothing else, so both endpoints answer alike.
	checks *Gateway
	guard  *guard.Guard // Host, Origin and body type checks

	gen atomic.Uint64 // bumped on every registry change the store reports

	ctx      context.Context
	cancel   context.CancelFunc
	watching <-chan struct{} // closed when the store's watch ended; nil without a store
	closed   atomic.Bool
	once     sync.Once

	mu      sync.Mutex
	servers map[string]*agentServer
}

// agentServer is one agent's MCP server and the tool table it serves.
type agentServer struct {
	id         string
	server     *mcp.Server
	streamable *mcp.StreamableHTTPHandler

	refreshMu sync.Mutex // serialises refresh; guards the fields below
	built     bool       // composed at least once
	gen       uint64     // registry generation it was composed at
	at        time.Time  // when it was composed
	byName    map[string]*toolEntry

	// problem is the *agent.ConfigError of the last composition, nil when
	// it composed; tools/list and tools/call answer it as an MCP error.
	problem atomic.Pointer[agent.ConfigError]
}

// NewAgentGateways returns the per-agent MCP servers of the agents, whose
// tools invoke through inv (the pipeline). store, when not nil, is watched
// so that a registry change (a capability registered or deprecated)
// updates the agents' tool tables at their next request; it also supplies
// each tool's full definition (title, effects, deprecation) for its MCP
// description and hints. opts are the gateway's: Version, Log,
// AllowedHosts, AllowedOrigins and MaxListBytes apply; Mode, Lazy,
// MaxTools and LargeCatalog do not (an agent's server always serves its
// own tools, built on demand). Close stops it.
func NewAgentGateways(agents *agent.Agents, inv Invoker, store registry.Store, opts Options) *AgentGateways {
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	opts.Mode = ModeTools
	opts = opts.withDefaults(log)
	a := &AgentGateways{
		agents: agents, store: store, inv: inv, opts: opts, log: log,
		sdkLog:  slog.New(minLevelHandler{h: log.Handler(), min: slog.LevelWarn}),
		checks:  &Gateway{opts: opts, log: log},
		guard:   opts.newGuard(),
		servers: map[string]*agentServer{},
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	if store != nil {
		// Watch before serving anything, so that no change goes unnoticed.
		a.watching = registry.Subscribe(a.ctx, store, a.subscriber())
	}
	return a
}

// Close ends every agent's MCP sessions and stops watching the registry.
// Requests after it get 503. It always returns nil.
func (a *AgentGateways) Close() error {
	a.once.Do(func() {
		a.closed.Store(true)
		a.cancel()
		a.mu.Lock()
		servers := a.servers
		a.servers = map[string]*agentServer{}
		a.mu.Unlock()
		for _, s := range servers {
			s.closeSessions()
		}
		if a.watching != nil {
			<-a.watching
		}
	})
	return nil
}

// subscriber bumps the registry generation on every change, and whenever
// a watch is (re-)established, since changes may have been missed
// meanwhile.
func (a *AgentGateways) subscriber() registry.Subscriber {
	return registry.Subscriber{
		Watching: func(bool) { a.gen.Add(1) },
		Event:    func(registry.Event) { a.gen.Add(1) },
		Failed: func(err error, retryIn time.Duration) {
			a.log.Warn("mcp agent gateways: cannot watch the registry for changes; agents' tools follow it within "+agentTTL.String()+" instead", "error", err, "retry_in", retryIn)
		},
		MinRetry: minRetry, MaxRetry: maxRetry,
	}
}

// Handler serves the streamable HTTP transport of each agent's MCP server
// at …/agents/{id} (mount it as mux.Handle("/mcp/agents/", h), prefix
// stripped or not; a pattern with an {id} wildcard works too). It applies
// the gateway's Host and Origin checks (403) and its deadlines, answers
// 404 for an invalid ID or an agent that does not exist (or no longer
// does: its sessions are then closed), and 503 when the agent cannot be
// read from the store before its server was first built.
func (a *AgentGateways) Handler() http.Handler { return http.HandlerFunc(a.serveHTTP) }

func (a *AgentGateways) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !admit(w, r, a.closed.Load(), "the MCP agent endpoints are shut down: caphub is stopping", a.guard) {
		return
	}
	id, ok := agentIDOf(r)
	if !ok {
		http.Error(w, "not found: an agent's MCP endpoint is /mcp/agents/{id}, one agent ID with no further path", http.StatusNotFound)
		return
	}
	if err := agent.CheckID(id); err != nil {
		http.Error(w, "not found: "+err.Error(), http.StatusNotFound)
		return
	}
	s, err := a.serverFor(r.Context(), id)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		http.Error(w, fmt.Sprintf("not found: there is no agent %q (list them with caphub agent list, or GET /v1/agents)", id), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, fmt.Sprintf("the MCP server of agent %q cannot be built now: %v", id, err), http.StatusServiceUnavailable)
		return
	}
	if full(w, r, s.server, a.opts.MaxSessions, "the MCP endpoint of agent "+id) {
		return
	}
	setDeadlines(w, r)
	s.streamable.ServeHTTP(w, r)
}

// agentIDOf reads the agent ID from the path: the {id} wildcard when the
// mux set one, else the one segment after "/agents/" (or the whole path
// when a prefix was stripped). ok is false when more path follows.
func agentIDOf(r *http.Request) (string, bool) {
	if id := r.PathValue("id"); id != "" {
		return id, true
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	if i := strings.LastIndex(p, "/agents/"); i >= 0 {
		p = p[i+len("/agents/"):]
	} else {
		p = strings.TrimPrefix(p, "/")
	}
	if p == "" || strings.Contains(p, "/") {
		return "", false
	}
	return p, true
}

// serverFor returns the agent's server, creating it on first use and
// composing its tool table again when stale. The error wraps
// registry.ErrNotFound when there is no such agent; the server is then
// forgotten and its sessions closed.
func (a *AgentGateways) serverFor(ctx context.Context, id string) (*agentServer, error) {
	a.mu.Lock()
	s := a.servers[id]
	if s == nil {
		s = a.newAgentServer(id)
		a.servers[id] = s
	}
	a.mu.Unlock()
	err := a.refresh(ctx, s)
	if err != nil && errors.Is(err, registry.ErrNotFound) {
		a.mu.Lock()
		if a.servers[id] == s {
			delete(a.servers, id)
		}
		a.mu.Unlock()
		s.closeSessions()
	}
	return s, err
}

// newAgentServer returns the (empty) MCP server of agent id.
func (a *AgentGateways) newAgentServer(id string) *agentServer {
	s := &agentServer{id: id, byName: map[string]*toolEntry{}}
	s.server = mcp.NewServer(&mcp.Implementation{Name: "caphub-agent-" + id, Title: "caphub agent " + id, Version: a.opts.Version}, &mcp.ServerOptions{
		Instructions: fmt.Sprintf("These are the tools of caphub agent %q, as its configuration gives them: each is one registered capability (its URI is in the tool's _meta under dev.caphub/uri), run under the agent's policy. Failures are tool errors whose structured content carries the capability's error code and whether retrying may help.", id),
		Logger:       a.sdkLog,
		PageSize:     sdkPageSize,
		Capabilities: &mcp.ServerCapabilities{
			//lint:ignore SA1019 session logging, deprecated from protocol 2026-07-28, is served through the deprecation window
			Logging: &mcp.LoggingCapabilities{},
			Tools:   &mcp.ToolCapabilities{ListChanged: true},
		},
	})
	s.server.AddReceivingMiddleware(tracing.MCPMethods, func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" || method == "tools/call" {
				if ce := s.problem.Load(); ce != nil {
					return nil, configRPCError(ce)
				}
			}
			return next(ctx, method, req)
		}
	}, newListPager(a.opts.MaxListBytes, a.log).middleware)
	s.streamable = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.server }, &mcp.StreamableHTTPOptions{
		DisableLocalhostProtection: true, // checked by serveHTTP, with the configured exceptions
		SessionTimeout:             max(a.opts.IdleTimeout, 0),
		JSONResponse:               true,
		Logger:                     a.sdkLog,
	})
	return s
}

// configRPCError is the MCP (JSON-RPC) error of an agent whose
// capabilities cannot be composed.
func configRPCError(ce *agent.ConfigError) error {
	data, _ := json.Marshal(map[string]any{"agent": ce.Agent, "problems": ce.Problems})
	return &jsonrpc.Error{Code: CodeAgentConfig, Message: ce.Error(), Data: data}
}

func (s *agentServer) closeSessions() {
	for ss := range s.server.Sessions() {
		_ = ss.Close()
	}
}

// refresh composes the agent's configuration again when s is stale, and
// updates its tools to match. A *agent.ConfigError removes every tool and
// is served as the MCP error of tools/list and tools/call. When the store
// fails to answer, a server built before keeps its tools (the error is
// logged and the next request tries again); one never built returns the
// error.
func (a *AgentGateways) refresh(ctx context.Context, s *agentServer) error {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	gen := a.gen.Load() // read first: a change during Compose makes the next request compose again
	if s.built && s.gen == gen && time.Since(s.at) < agentTTL {
		return nil
	}
	cfg, err := a.agents.Config(ctx, s.id)
	var ce *agent.ConfigError
	switch {
	case err == nil:
	case errors.As(err, &ce):
		s.problem.Store(ce)
		s.setTools(nil, nil, a.log)
		s.built, s.gen, s.at = true, gen, time.Now()
		return nil
	case errors.Is(err, registry.ErrNotFound):
		return err
	default:
		if s.built {
			a.log.Warn("mcp agent gateways: cannot compose the agent's tools; serving the previous ones", "agent", s.id, "error", err)
			return nil
		}
		return err
	}
	entries := make(map[string]*toolEntry, len(cfg.Tools))
	for _, t := range cfg.Tools {
		prev := s.byName[t.Name]
		rec, err := a.record(ctx, t)
		if err != nil {
			a.log.Warn("mcp agent gateways: capability left out of the agent's tools", "agent", s.id, "uri", t.URI, "error", err)
			continue
		}
		if prev != nil && prev.fingerprint == fingerprint(rec, t.Name) {
			entries[t.Name] = prev
			continue
		}
		e, err := newToolEntry(rec, t.Name)
		if err != nil {
			a.log.Warn("mcp agent gateways: capability left out of the agent's tools", "agent", s.id, "uri", t.URI, "error", err)
			continue
		}
		entries[t.Name] = e
	}
	s.problem.Store(nil)
	s.setTools(entries, func(e *toolEntry) mcp.ToolHandler { return a.toolHandler(s.id, e) }, a.log)
	s.built, s.gen, s.at = true, gen, time.Now()
	return nil
}

// setTools makes the server's tools entries (none when nil): tools no
// longer there are removed, new or changed ones added with the handler
// made for them (the SDK then notifies the sessions).
func (s *agentServer) setTools(entries map[string]*toolEntry, handler func(*toolEntry) mcp.ToolHandler, log *slog.Logger) {
	var removed []string
	for name := range s.byName {
		if _, ok := entries[name]; !ok {
			removed = append(removed, name)
		}
	}
	if len(removed) > 0 {
		s.server.RemoveTools(removed...)
	}
	next := make(map[string]*toolEntry, len(entries))
	for name, e := range entries {
		if p, ok := s.byName[name]; ok && p == e {
			next[name] = e
			continue
		}
		if addAgentTool(s.server, e, handler(e), log, s.id) {
			next[name] = e
		} else if _, had := s.byName[name]; had {
			s.server.RemoveTools(name) // the old version must not linger
		}
	}
	s.byName = next
}

// addAgentTool serves e, unless the SDK refuses it (it panics on schemas
// it cannot use): the tool is then left out and the reason logged.
func addAgentTool(srv *mcp.Server, e *toolEntry, h mcp.ToolHandler, log *slog.Logger, id string) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("mcp agent gateways: the MCP SDK refused a tool; it is left out", "agent", id, "tool", e.name, "uri", e.uri, "reason", fmt.Sprint(r))
			ok = false
		}
	}()
	srv.AddTool(e.tool, h)
	return true
}

// record is the registry record of a configuration tool, for its MCP
// description: read from the store, or, without a store or when the read
// fails, made from what the configuration says (description and schemas,
// without title, effects or lifecycle). The error is a URI Config should
// never give.
func (a *AgentGateways) record(ctx context.Context, t agent.ConfigTool) (registry.Record, error) {
	u, err := capability.ParseURI(t.URI)
	if err != nil {
		return registry.Record{}, err
	}
	k := registry.Key{Scheme: u.Scheme, Domain: u.Domain, Name: u.Name, Version: t.Version}
	if a.store != nil {
		if rec, err := a.store.Get(ctx, k); err == nil {
			return rec, nil
		}
	}
	return registry.Record{Key: k, Definition: capability.Definition{Description: t.Description, Input: t.InputSchema, Output: t.OutputSchema}}, nil
}

// toolHandler runs e's capability for agent id.
func (a *AgentGateways) toolHandler(id string, e *toolEntry) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := decodeArguments(req.Params.Arguments)
		if err != nil {
			return a.checks.errorResult(ctx, req, e.uri, &invoke.Error{Code: invoke.CodeInvalidInput, Message: err.Error()}, e.errStructured), nil
		}
		res, err := a.inv.Invoke(withProgress(callContext(ctx, req, id, ""), req), invoke.Request{URI: e.uri, Input: args})
		if err != nil {
			return a.checks.errorResult(ctx, req, e.uri, err, e.errStructured), nil
		}
		return capabilityResult(res, e.structured), nil
	}
}
