// Package rest serves the registry over HTTP: the OSSA registry API (§5.2),
// registration, deprecation, negotiation and search under /registry, the
// everruns capability shape under /v1, its own OpenAPI document at
// /openapi.json and /healthz. Errors are RFC 9457 problem documents.
package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/audit/stats"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/format/ossa"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/internal/permit"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/registry/jobs"
)

// MaxBodySize bounds a request body (a registration of many definitions fits).
const MaxBodySize = 32 << 20

// Server is the REST API over a registry.Service.
type Server struct {
	svc       *registry.Service
	servers   *discover.Servers // saved MCP servers; nil when the store keeps no documents
	invoker   Invoker           // POST /v1/invoke when set
	approvals *policy.Approvals // /v1/approvals when set
	agents    *agent.Agents     // /v1/agents; from the store's documents when not given
	metrics   http.Handler      // GET /metrics when set
	permits   *permit.Permits   // what servers saved over the API may do
	jobs      *jobs.Manager     // registration jobs (/registry/jobs)
	mux       *auth.Routes
	// yamlRoutes matches the routes whose body may be YAML (AcceptsYAML).
	yamlRoutes *http.ServeMux
	log        *slog.Logger
	version    string
	budget     time.Duration // time budget of a request; 0: none
	ready      []ReadyCheck  // /readyz, beside the store's answer
	admin      adminParts    // /v1/policies, /v1/tokens, /v1/audit (admin.go)
	statsOnce  sync.Once
	stats      *stats.Tracker // GET /v1/stats (stats.go)
}

// Option configures a Server.
type Option func(*Server)

// WithPermits sets the operator's allow-lists, which bound what a server
// saved or discovered over the API may make caphub do (start a program,
// read a variable, reach a host). Without it: nothing, and loopback only.
func WithPermits(p *permit.Permits) Option { return func(s *Server) { s.permits = p } }

// WithVersion sets caphub's version, reported by discoveries.
func WithVersion(v string) Option { return func(s *Server) { s.version = v } }

// WithApprovals adds the human-approval endpoints under /v1/approvals.
func WithApprovals(a *policy.Approvals) Option { return func(s *Server) { s.approvals = a } }

// WithAgents serves these agents under /v1/agents (the same Agents the
// invocation pipeline reads capability_bindings from, so that a change
// applies to the next call). Without it the server keeps its own over the
// registry's store.
func WithAgents(a *agent.Agents) Option { return func(s *Server) { s.agents = a } }

// New returns the REST API handler.
func New(svc *registry.Service, log *slog.Logger, opts ...Option) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{svc: svc, mux: auth.NewRoutes(), log: log, version: "dev", budget: DefaultRequestTimeout, jobs: jobs.New(svc, log)}
	for _, o := range opts {
		o(s)
	}
	// What is saved here arrived over the API: the operator's allow-lists
	// bound it.
	s.servers = discover.NewServers(svc.Store(), discover.SavedOverAPI(), discover.APIPermits(s.permits), discover.WithRecorder(svc.Recorder()))
	s.routes()
	return s
}

// ServeHTTP serves the API, each request within the time budget (see
// WithRequestTimeout), for its caller (see withCaller): changes are
// recorded as made by the request's token ("token:NAME", set by the auth
// middleware), else by the agent the request names (X-Caphub-Agent), else
// by the remote address.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.serveVersion(w, r) {
		return
	}
	s.withinBudget(w, withCaller(r), s.mux)
}

// route is one endpoint; the list feeds the mux, the auth middleware (the
// scope) and the OpenAPI document.
type route struct {
	method, path string
	scope        auth.Scope // what a token needs to call it (auth.Public: nothing)
	summary      string
	params       []param
	body         string // request body description, "" for none
	yaml         bool   // the body may be YAML (application/yaml) as well as JSON
	handler      func(http.ResponseWriter, *http.Request) error
	responses    map[int]string
}

type param struct {
	name, in, desc string
	required       bool
	schema         map[string]any // OpenAPI schema; a string when nil
}

var listParams = []param{
	{name: "domain", in: "query", desc: "domain, matching dotted prefixes both ways (github matches github.issues)"},
	{name: "category", in: "query", desc: "category, e.g. crud.read"},
	{name: "stability", in: "query", desc: "experimental, beta, stable or deprecated"},
	{name: "binding", in: "query", desc: "binding type: native, mcp, http, grpc, cli, delegation"},
	{name: "source", in: "query", desc: "provenance method, e.g. mcp_introspection, or manual"},
	{name: "intent", in: "query", desc: "Agent OS intent, e.g. messaging.send_text"},
	{name: "trust", in: "query", desc: "trust tier: verified, trusted, community or untrusted"},
	{name: "scheme", in: "query", desc: "ossa or mcp"},
	{name: "name", in: "query", desc: "exact capability name"},
	{name: "all_versions", in: "query", desc: "true to list every version, not only the highest of each capability"},
	pageParams[0], pageParams[1], totalParam,
}

// totalParam asks a list to count its matches.
var totalParam = param{name: "total", in: "query", desc: "true to count every match into total (it reads every match, so its cost grows with the registry: ask on a first page only); a search always counts"}

// wantTotal reads the total query parameter.
func wantTotal(q url.Values) (bool, error) {
	v := q.Get("total")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest(fmt.Sprintf("total=%q: use true or false", v))
	}
	return b, nil
}

func (s *Server) routeTable() []route {
	dn := []param{{name: "domain", in: "path", required: true, desc: "capability domain"}, {name: "name", in: "path", required: true, desc: "capability name, optionally @version (MAJOR, MAJOR.MINOR or full)"}}
	routes := []route{
		{method: "GET", path: "/registry/capabilities", scope: auth.ScopeRead, summary: "List capabilities (highest version of each unless all_versions), a page at a time", params: listParams, handler: s.list, responses: map[int]string{200: "items, next_cursor, and total when asked (total=true)", 400: pageRefused}},
		{method: "GET", path: "/registry/capabilities/{domain}", scope: auth.ScopeRead, summary: "List the capabilities of a domain, a page at a time", params: append([]param{{name: "domain", in: "path", required: true, desc: "domain"}}, listParams...), handler: s.listDomain, responses: map[int]string{200: "items, next_cursor, and total when asked (total=true)", 400: pageRefused}},
		{method: "GET", path: "/registry/capabilities/{domain}/{name}", scope: auth.ScopeRead, summary: "The versions of a capability (ascending, a page at a time), or with name@version one version", params: append(append(dn, param{name: "scheme", in: "query", desc: "ossa (default) or mcp"}), pageParams...), handler: s.getCapability, responses: map[int]string{200: "the definition(s)", 400: pageRefused, 404: "not found"}},
		{method: "POST", path: "/registry/capabilities", scope: auth.ScopePublish, summary: "Register one or many definitions (OSSA file format, JSON or YAML with Content-Type application/yaml), all or nothing; a body over 4 MiB is registered as a job instead (202, as POST /registry/jobs)", body: "OSSA capability document", yaml: true, handler: s.register,
			responses: map[int]string{201: "registered", 200: "identical content already registered", 202: "a large body: registered as a job; Location is its status URL", 409: "version registered with other content, or the MCP tool name is another capability's (tool-name-taken)", 422: "invalid definition or version bump too small"}},
		{method: "GET", path: "/registry/capabilities/{domain}/{name}/diff", scope: auth.ScopeRead, summary: "The changes between two versions of a capability, each classified major, minor or patch with its reason (as caphub capability diff prints)",
			params:  []param{dn[0], {name: "name", in: "path", required: true, desc: "capability name"}, {name: "from", in: "query", required: true, desc: "the older version (MAJOR, MAJOR.MINOR or full)"}, {name: "to", in: "query", required: true, desc: "the newer version"}, {name: "scheme", in: "query", desc: "ossa (default) or mcp"}},
			handler: s.diff, responses: map[int]string{200: "capability, old, new, changes (path, kind, description, bump), required, declared, satisfied, problem", 400: "a version missing or not a version", 404: "a version is not registered"}},
		{method: "POST", path: "/registry/capabilities/{domain}/{name}/deprecate", scope: auth.ScopePublish, summary: "Deprecate a version (name@version)", params: dn, body: "deprecated_by, sunset_date, migration_guide", handler: s.deprecate, responses: map[int]string{200: "deprecated", 400: "sunset date too early", 404: "not found"}},
		{method: "POST", path: "/registry/negotiate", scope: auth.ScopeRead, summary: "Negotiate a version (OSSA §7.1 capability_request)", body: "capability_request", handler: s.negotiate, responses: map[int]string{200: "capability_response"}},
		{method: "GET", path: "/registry/resolve", scope: auth.ScopeRead, summary: "Resolve a URI to the version it names", params: []param{{name: "uri", in: "query", required: true, desc: "capability URI"}}, handler: s.resolve, responses: map[int]string{200: "resolution", 404: "not found", 410: "sunset"}},
		{method: "GET", path: "/registry/search", scope: auth.ScopeRead, summary: "Ranked full-text search with filters, a page at a time: compact summaries by default, whole definitions with view=full", params: append([]param{{name: "q", in: "query", desc: "free text, as people ask: any word may match"}, viewParam, explainParam}, listParams...), handler: s.search,
			responses: map[int]string{200: "items (each a summary of at most 1 KB: tool_name, uri, version, title, a one-line description, params, and stability when not stable; or with view=full the whole definition), total and next_cursor, best first", 400: pageRefused + ", or a view other than compact and full"}},
		{method: "GET", path: "/registry/index.yaml", scope: auth.ScopeRead, summary: "The registry index in the OSSA §5.1 format, a page of versions at a time: the Link rel=\"next\" header (and a closing comment) give the next page", params: pageParams, handler: s.index, responses: map[int]string{200: "YAML index", 400: pageRefused}},
		{method: "GET", path: "/v1/capabilities", scope: auth.ScopeRead, summary: "Capabilities in the everruns shape, a page at a time", params: append(append([]param{}, pageParams...), totalParam), handler: s.everrunsList, responses: map[int]string{200: "items, next_cursor, and total when asked (total=true)", 400: pageRefused}},
		{method: "GET", path: "/v1/capabilities/{id...}", scope: auth.ScopeRead, summary: "One capability in the everruns shape (id: URI or unique name)", params: []param{{name: "id", in: "path", required: true, desc: "URI or name"}}, handler: s.everrunsGet, responses: map[int]string{200: "capability", 404: "not found"}},
		{method: "GET", path: "/healthz", scope: auth.Public, summary: "Liveness and store reachability", handler: s.healthz, responses: map[int]string{200: "ok", 503: "store unreachable"}},
		{method: "GET", path: "/readyz", scope: auth.Public, summary: "Readiness: the store answers with every migration applied, and the audit writer commits", handler: s.readyz, responses: map[int]string{200: "ready: every check ok", 503: "not ready: the checks that fail"}},
		{method: "GET", path: "/openapi.json", scope: auth.Public, summary: "This API's OpenAPI 3.1 document", handler: s.openapi, responses: map[int]string{200: "OpenAPI document"}},
	}
	routes = append(routes, s.jobRoutes()...)
	routes = append(routes, s.serverRoutes()...)
	routes = append(routes, s.mcpRegistryRoutes()...)
	agents := s.agents
	if agents == nil {
		agents = s.newAgents()
	}
	routes = append(routes, s.agentRoutes(agents)...)
	routes = append(routes, s.statsRoutes(agents)...)
	routes = append(routes, s.approvalRoutes(s.approvals)...)
	routes = append(routes, s.adminRoutes()...)
	return append(routes, s.invokeRoutes()...)
}

// AcceptsYAML reports whether the route a request goes to documents a YAML
// body; the request guard (package guard) refuses YAML elsewhere.
func (s *Server) AcceptsYAML(r *http.Request) bool {
	_, pattern := s.yamlRoutes.Handler(r)
	return pattern != ""
}

func (s *Server) routes() {
	s.yamlRoutes = http.NewServeMux()
	for _, rt := range s.routeTable() {
		if rt.yaml {
			s.yamlRoutes.Handle(rt.method+" "+rt.path, http.NotFoundHandler())
		}
		h := rt.handler
		s.mux.Handle(rt.method+" "+rt.path, rt.scope, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				s.writeError(w, r, err)
			}
		}))
	}
	s.mux.Handle("/", auth.ScopeAdmin, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, fmt.Errorf("no endpoint %s %s (see /openapi.json): %w", r.Method, r.URL.Path, registry.ErrNotFound))
	}))
}

// ScopeOf is the scope a request needs, from the route table (see
// auth.Routes): auth.Middleware takes it.
func (s *Server) ScopeOf(r *http.Request) (scope string, public bool) { return s.mux.ScopeOf(r) }

// Route is the pattern of the route a request goes to (see auth.Routes).
func (s *Server) Route(r *http.Request) string { return s.mux.Route(r) }

// filterFrom reads the list filter from query parameters.
func filterFrom(q url.Values) (registry.ListFilter, error) {
	f := registry.ListFilter{
		Scheme: q.Get("scheme"), Name: q.Get("name"), Domain: q.Get("domain"), Category: q.Get("category"), Stability: q.Get("stability"),
		BindingType: q.Get("binding"), Source: q.Get("source"), Intent: q.Get("intent"), TrustTier: q.Get("trust"), Cursor: q.Get("cursor"),
	}
	if v := q.Get("all_versions"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return f, badRequest(fmt.Sprintf("all_versions=%q: use true or false", v))
		}
		f.AllVersions = b
	}
	count, err := wantTotal(q)
	if err != nil {
		return f, err
	}
	f.CountTotal = count
	n, err := pageLimit(q)
	if err != nil {
		return f, err
	}
	f.Limit = n
	return f, nil
}

// ListResponse is a page of definitions. Total is there when counted: a
// list asked with total=true, a search, the versions of one capability.
type ListResponse struct {
	Items      []capability.Definition `json:"items"`
	Total      *int                    `json:"total,omitempty"`
	NextCursor string                  `json:"next_cursor,omitempty"`
	registry.Ranking
}

// rankingOf is what a search answers beside its items: the hits only
// when explained.
func rankingOf(p registry.Page, explain bool) registry.Ranking {
	r := p.Ranking
	if !explain {
		r.Hits = nil
	}
	return r
}

// totalOf is a page's total for an answer, nil when it was not counted.
func totalOf(p registry.Page) *int {
	if p.Total < 0 {
		return nil
	}
	return &p.Total
}

func pageResponse(p registry.Page) ListResponse {
	out := ListResponse{Items: make([]capability.Definition, len(p.Items)), Total: totalOf(p), NextCursor: p.NextCursor}
	for i, r := range p.Items {
		out.Items[i] = r.Definition
	}
	return out
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) error {
	f, err := filterFrom(r.URL.Query())
	if err != nil {
		return err
	}
	p, err := s.svc.ListRaw(r.Context(), f)
	if err != nil {
		return err
	}
	setNextLink(w, r, p.NextCursor)
	writeRawPage(w, p)
	return nil
}

func (s *Server) listDomain(w http.ResponseWriter, r *http.Request) error {
	f, err := filterFrom(r.URL.Query())
	if err != nil {
		return err
	}
	f.Domain = r.PathValue("domain")
	p, err := s.svc.ListRaw(r.Context(), f)
	if err != nil {
		return err
	}
	setNextLink(w, r, p.NextCursor)
	writeRawPage(w, p)
	return nil
}

// TrustTierHeader carries the trust tier of the version a GET of one
// version answers with (registry.TrustTierHeader).
const TrustTierHeader = registry.TrustTierHeader

// schemes lists the schemes to look a domain/name up in: the one asked for,
// or ossa then mcp.
func schemes(r *http.Request) []string {
	if sc := r.URL.Query().Get("scheme"); sc != "" {
		return []string{sc}
	}
	return []string{capability.SchemeOSSA, capability.SchemeMCP}
}

func (s *Server) getCapability(w http.ResponseWriter, r *http.Request) error {
	domain := r.PathValue("domain")
	name, version, hasVersion := strings.Cut(r.PathValue("name"), "@")
	for _, scheme := range schemes(r) {
		if hasVersion {
			// A full version is immutable content: serve the stored JSON as it is.
			if raw, ok, err := s.svc.GetRaw(r.Context(), scheme, domain, name, version); ok {
				if errors.Is(err, registry.ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				writeVersion(w, r, raw)
				return nil
			}
			// MAJOR or MAJOR.MINOR: the highest version of it, served as
			// a full version is.
			rec, err := s.svc.Get(r.Context(), scheme, domain, name, version)
			if err == nil {
				var raw *registry.CachedVersion
				raw, _, err = s.svc.GetRaw(r.Context(), scheme, domain, name, rec.Key.Version)
				if err == nil {
					writeVersion(w, r, raw)
					return nil
				}
			}
			if errors.Is(err, registry.ErrNotFound) {
				continue
			}
			return err
		}
		versions, err := s.svc.Versions(r.Context(), scheme, domain, name)
		if err != nil {
			return err
		}
		if len(versions) > 0 {
			return s.versionsPage(w, r, versions)
		}
	}
	what := domain + "/" + name
	if hasVersion {
		what += "@" + version
	}
	return fmt.Errorf("capability %s is not registered: %w", what, registry.ErrNotFound)
}

// readDefinitions decodes a request body in the OSSA file format (JSON, or
// YAML when the Content-Type says so).
func readDefinitions(r *http.Request) ([]capability.Definition, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBodySize))
	if err != nil {
		return nil, badRequest(fmt.Sprintf("cannot read the request body (at most %d bytes): %v", MaxBodySize, err))
	}
	return readDefinitionsFrom(r, body)
}

// readDefinitionsFrom decodes body, the whole body of r.
func readDefinitionsFrom(r *http.Request, body []byte) ([]capability.Definition, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	name := "request body"
	switch ct {
	case "", "application/json", "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
	default:
		return nil, badRequest(fmt.Sprintf("Content-Type %q: send application/json or application/yaml", ct))
	}
	if ct == "application/json" && !json.Valid(bytes.TrimSpace(body)) {
		var probe any
		err := json.Unmarshal(body, &probe)
		return nil, badRequest(fmt.Sprintf("the body is not valid JSON (%v): send a capability document, or set Content-Type: application/yaml for YAML", err))
	}
	f, err := ossa.Read(name, body)
	if err != nil {
		return nil, badRequest(err.Error())
	}
	if len(f.Issues) > 0 {
		return nil, &capability.ValidationError{Issues: f.Validate()}
	}
	if len(f.Entries) == 0 {
		return nil, badRequest("the body holds no capability definition (a registry index cannot be registered): send {\"capability\": {...}} or {\"capabilities\": [...]}")
	}
	return f.Definitions(), nil
}

// registerResponse is the answer to a registration of several definitions.
type registerResponse struct {
	Items []registry.RegisterResult `json:"items"`
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) error {
	head, isJob, err := s.registerLarge(w, r)
	if isJob || err != nil {
		return err
	}
	var defs []capability.Definition
	if head != nil {
		defs, err = readDefinitionsFrom(r, head)
	} else {
		defs, err = readDefinitions(r)
	}
	if err != nil {
		return err
	}
	if what := spawnsProgram(defs); what != "" {
		if err := requireAdmin(r, what); err != nil {
			return err
		}
	}
	results, err := s.svc.RegisterBatch(r.Context(), defs)
	if err != nil {
		var be *registry.BatchError
		if errors.As(err, &be) && len(defs) == 1 {
			return be.Failures[0].Err
		}
		return err
	}
	status := http.StatusOK
	for _, res := range results {
		if res.Created {
			status = http.StatusCreated
		}
	}
	if len(results) == 1 {
		w.Header().Set("Location", "/registry/capabilities/"+results[0].Record.Key.Domain+"/"+results[0].Record.Key.Name+"@"+results[0].Version)
		writeJSON(w, status, results[0], s.log)
		return nil
	}
	writeJSON(w, status, registerResponse{Items: results}, s.log)
	return nil
}

func (s *Server) deprecate(w http.ResponseWriter, r *http.Request) error {
	name, version, ok := strings.Cut(r.PathValue("name"), "@")
	if !ok {
		return badRequest("name the version to deprecate: /registry/capabilities/{domain}/{name}@{version}/deprecate")
	}
	var req registry.DeprecateRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	scheme := capability.SchemeOSSA
	if sc := r.URL.Query().Get("scheme"); sc != "" {
		scheme = sc
	}
	res, err := s.svc.Deprecate(r.Context(), scheme, r.PathValue("domain"), name, version, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res, s.log)
	return nil
}

func decodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, MaxBodySize))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest(fmt.Sprintf("the body is not the expected JSON object: %v", err))
	}
	return nil
}

func (s *Server) negotiate(w http.ResponseWriter, r *http.Request) error {
	var req capability.NegotiationRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	resp, err := s.svc.Negotiate(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp, s.log)
	return nil
}

// ResolveResponse is a resolution with the chosen definition.
type ResolveResponse struct {
	registry.Resolution
	Definition capability.Definition `json:"definition"`
}

func (s *Server) resolve(w http.ResponseWriter, r *http.Request) error {
	uri := r.URL.Query().Get("uri")
	if uri == "" {
		return badRequest("give the URI to resolve: /registry/resolve?uri=ossa:domain/name@1.0")
	}
	res, err := s.svc.Resolve(r.Context(), uri)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ResolveResponse{Resolution: res, Definition: res.Record.Definition}, s.log)
	return nil
}

// Views of a search answer (the view query parameter).
const (
	ViewCompact = "compact" // capability.Summary of each hit (the default)
	ViewFull    = "full"    // each hit's whole definition
)

var viewParam = param{name: "view", in: "query", desc: "compact (the default): a summary of each capability, at most 1 KB whatever its schemas; full: the whole definitions",
	schema: map[string]any{"type": "string", "enum": []any{ViewCompact, ViewFull}, "default": ViewCompact}}

// SummaryListResponse is a page of search hits in the compact view.
type SummaryListResponse struct {
	Items      []capability.Summary `json:"items"`
	Total      int                  `json:"total"`
	NextCursor string               `json:"next_cursor,omitempty"`
	registry.Ranking
}

var explainParam = param{name: "explain", in: "query", desc: "true: each hit's score and what it is made of (hits, in the order of items)",
	schema: map[string]any{"type": "boolean", "default": false}}

func (s *Server) search(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	view := q.Get("view")
	switch view {
	case "", ViewCompact, ViewFull:
	default:
		return badRequest(fmt.Sprintf("view=%q: use view=%s (a summary of each capability, the default) or view=%s (the whole definitions)", view, ViewCompact, ViewFull))
	}
	f, err := filterFrom(q)
	if err != nil {
		return err
	}
	explain := false
	if v := q.Get("explain"); v != "" {
		if explain, err = strconv.ParseBool(v); err != nil {
			return badRequest(fmt.Sprintf("explain=%q: use explain=true or explain=false", v))
		}
	}
	p, err := s.svc.Search(r.Context(), registry.SearchQuery{Text: q.Get("q"), Filter: f, Explain: explain})
	if err != nil {
		return err
	}
	setNextLink(w, r, p.NextCursor)
	if view == ViewFull {
		out := pageResponse(p)
		out.Ranking = rankingOf(p, explain)
		writeJSON(w, http.StatusOK, out, s.log)
		return nil
	}
	out := SummaryListResponse{Items: make([]capability.Summary, len(p.Items)), Total: p.Total, NextCursor: p.NextCursor, Ranking: rankingOf(p, explain)}
	for i := range p.Items {
		out.Items[i] = p.Items[i].Summary()
	}
	writeJSON(w, http.StatusOK, out, s.log)
	return nil
}

// index serves a page of the OSSA index: every version, DefaultPageSize at
// a time; the Link header and a closing YAML comment give the next page.
func (s *Server) index(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageQuery(r)
	if err != nil {
		return err
	}
	p, err := s.svc.List(r.Context(), registry.ListFilter{AllVersions: true, Limit: limit, Cursor: cursor})
	if err != nil {
		return err
	}
	idx := BuildIndex(p.Items, time.Now())
	setNextLink(w, r, p.NextCursor)
	w.Header().Set("Content-Type", "application/yaml")
	if err := ossa.WriteIndex(w, idx, ossa.YAML); err != nil {
		return err
	}
	if p.NextCursor != "" {
		_, err = fmt.Fprintf(w, "# %d versions on this page; next page: %s\n", len(p.Items), nextURL(r, p.NextCursor))
	}
	return err
}

// BuildIndex makes the OSSA §5.1 index of the given versions.
func BuildIndex(recs []registry.Record, now time.Time) *ossa.Index {
	idx := &ossa.Index{Version: "1.0", UpdatedAt: now.UTC().Format(time.RFC3339)}
	domains := map[string]bool{}
	for _, r := range recs {
		d := r.Definition
		if !domains[d.Domain] {
			domains[d.Domain] = true
			idx.Domains = append(idx.Domains, ossa.IndexDomain{Name: d.Domain})
		}
		v, _ := capability.ParseVersion(r.Key.Version)
		idx.Capabilities = append(idx.Capabilities, ossa.IndexEntry{
			URI: capability.NewURI(r.Key.Scheme, r.Key.Domain, r.Key.Name, v).String(), Stability: d.Stability,
			DeprecatedBy: d.DeprecatedBy, SunsetDate: d.SunsetDate, MigrationGuide: d.MigrationGuide,
		})
	}
	sort.Slice(idx.Domains, func(i, j int) bool { return idx.Domains[i].Name < idx.Domains[j].Name })
	return idx
}

// EverrunsCapability is the everruns public capability DTO.
type EverrunsCapability struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Status      string `json:"status"`
	Icon        string `json:"icon,omitempty"`
	Category    string `json:"category,omitempty"`
}

// everrunsStatus maps stability to the everruns status.
func everrunsStatus(stability string) string {
	switch stability {
	case capability.StabilityExperimental:
		return "coming_soon"
	case capability.StabilityDeprecated:
		return "deprecated"
	}
	return "available"
}

func toEverruns(r registry.Record) EverrunsCapability {
	d := r.Definition
	v, _ := capability.ParseVersion(r.Key.Version)
	c := EverrunsCapability{ID: capability.NewURI(r.Key.Scheme, r.Key.Domain, r.Key.Name, v).String(), Name: d.Title, Description: d.Description, Status: everrunsStatus(d.Stability)}
	if c.Name == "" {
		c.Name = d.Name
	}
	if d.Display != nil {
		c.Icon, c.Category = d.Display.Icon, d.Display.Category
	}
	return c
}

// EverrunsList is a page of capabilities in the everruns shape.
type EverrunsList struct {
	Items      []EverrunsCapability `json:"items"`
	Total      *int                 `json:"total,omitempty"` // with total=true
	NextCursor string               `json:"next_cursor,omitempty"`
}

func (s *Server) everrunsList(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageQuery(r)
	if err != nil {
		return err
	}
	count, err := wantTotal(r.URL.Query())
	if err != nil {
		return err
	}
	p, err := s.svc.List(r.Context(), registry.ListFilter{Limit: limit, Cursor: cursor, CountTotal: count})
	if err != nil {
		return err
	}
	items := make([]EverrunsCapability, len(p.Items))
	for i, rec := range p.Items {
		items[i] = toEverruns(rec)
	}
	setNextLink(w, r, p.NextCursor)
	writeJSON(w, http.StatusOK, EverrunsList{Items: items, Total: totalOf(p), NextCursor: p.NextCursor}, s.log)
	return nil
}

func (s *Server) everrunsGet(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if strings.Contains(id, ":") {
		res, err := s.svc.Resolve(r.Context(), id)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, toEverruns(res.Record), s.log)
		return nil
	}
	// A bare name: the capability of that name, if exactly one has it.
	p, err := s.svc.List(r.Context(), registry.ListFilter{Name: id})
	if err != nil {
		return err
	}
	switch len(p.Items) {
	case 0:
		return fmt.Errorf("no capability is named %q (use its URI, e.g. ossa:<domain>/%s@1.0): %w", id, id, registry.ErrNotFound)
	case 1:
		writeJSON(w, http.StatusOK, toEverruns(p.Items[0]), s.log)
		return nil
	}
	var uris []string
	for _, rec := range p.Items {
		uris = append(uris, toEverruns(rec).ID)
	}
	return badRequest(fmt.Sprintf("%d capabilities are named %q: use one of the URIs %s", len(uris), id, strings.Join(uris, ", ")))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.svc.List(r.Context(), registry.ListFilter{Limit: 1}); err != nil {
		s.log.Error("health check", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "detail": "the store does not answer"}, s.log)
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"}, s.log)
	return nil
}
