package rest

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/auth"
)

// newAgents returns the agents kept in the server's store.
func (s *Server) newAgents() *agent.Agents {
	return agent.NewAgents(s.svc.Store(), s.svc, agent.WithRecorder(s.svc.Recorder()))
}

// agentRoutes are the agent endpoints: agents applied from OSSA manifests,
// their capabilities in everruns' shape (GET/PUT /v1/agents/{id}/capabilities)
// and the AgentConfig they compose to. None when agents is nil.
func (s *Server) agentRoutes(agents *agent.Agents) []route {
	if agents == nil {
		return nil
	}
	h := agentHandlers{s: s, agents: agents}
	id := []param{{name: "id", in: "path", required: true, desc: "agent id (the manifest's metadata.name)"}}
	return []route{
		{method: "GET", path: "/v1/agents", scope: auth.ScopeRead, summary: "List agents by id, a page at a time", params: pageParams, handler: h.list, responses: map[int]string{200: "items, total and next_cursor", 400: pageRefused}},
		{method: "GET", path: "/v1/agents/{id}", scope: auth.ScopeRead, summary: "An agent: prompt, capabilities by position, applied manifest", params: id, handler: h.get, responses: map[int]string{200: "agent", 404: "no such agent"}},
		{method: "PUT", path: "/v1/agents/{id}", scope: auth.ScopePublish, summary: "Create or replace an agent from its OSSA v0.2.9 manifest (JSON, or YAML with Content-Type application/yaml)", params: id, body: "OSSA agent manifest (kind: Agent)", yaml: true, handler: h.put,
			responses: map[int]string{200: "agent applied", 400: "unreadable body, or metadata.name differs from the path", 422: "manifest issues: schema, unresolvable or unavailable capabilities, tool-name conflicts"}},
		{method: "DELETE", path: "/v1/agents/{id}", scope: auth.ScopePublish, summary: "Delete an agent", params: id, handler: h.delete, responses: map[int]string{204: "deleted", 404: "no such agent"}},
		{method: "GET", path: "/v1/agents/{id}/capabilities", scope: auth.ScopeRead, summary: "An agent's capabilities (everruns shape: capability_id and position)", params: id, handler: h.getCapabilities, responses: map[int]string{200: "items and total", 404: "no such agent"}},
		{method: "PUT", path: "/v1/agents/{id}/capabilities", scope: auth.ScopePublish, summary: "Set an agent's capabilities (everruns: {\"capabilities\": [...]}; array order is position)", params: id, body: "{\"capabilities\": [capability URI or everruns id, ...]}", handler: h.setCapabilities,
			responses: map[int]string{200: "items and total", 404: "no such agent", 422: "unknown or unavailable capabilities, tool-name conflicts"}},
		{method: "GET", path: "/v1/agents/{id}/config", scope: auth.ScopeRead, summary: "The AgentConfig: system prompt and tools composed from the capabilities in position order", params: id, handler: h.config,
			responses: map[int]string{200: "AgentConfig", 404: "no such agent", 422: "the capabilities cannot be applied"}},
	}
}

type agentHandlers struct {
	s      *Server
	agents *agent.Agents
}

// AgentList is the answer of GET /v1/agents: a page of agents.
type AgentList struct {
	Items      []*agent.Agent `json:"items"`
	Total      int            `json:"total"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// AgentCapabilities is everruns' list of an agent's capabilities, the answer
// of GET and PUT /v1/agents/{id}/capabilities.
type AgentCapabilities struct {
	Items []agent.AgentCapability `json:"items"`
	Total int                     `json:"total"`
}

// SetAgentCapabilities is everruns' body of PUT /v1/agents/{id}/capabilities.
type SetAgentCapabilities struct {
	Capabilities []string `json:"capabilities"`
}

func (h agentHandlers) list(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageQuery(r)
	if err != nil {
		return err
	}
	all, err := h.agents.List(r.Context()) // by id
	if err != nil {
		return err
	}
	page, next, err := pageOf(all, func(ag *agent.Agent) string { return ag.ID }, "agents", limit, cursor)
	if err != nil {
		return err
	}
	setNextLink(w, r, next)
	writeJSON(w, http.StatusOK, AgentList{Items: page, Total: len(all), NextCursor: next}, h.s.log)
	return nil
}

func (h agentHandlers) get(w http.ResponseWriter, r *http.Request) error {
	ag, err := h.agents.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ag, h.s.log)
	return nil
}

func (h agentHandlers) put(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := agent.CheckID(id); err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBodySize))
	if err != nil {
		return badRequest(fmt.Sprintf("cannot read the request body (at most %d bytes): %v", MaxBodySize, err))
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "", "application/json", "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
	default:
		return badRequest(fmt.Sprintf("Content-Type %q: send the OSSA agent manifest as application/json or application/yaml", ct))
	}
	m, readIssues, err := agent.ReadManifest("request body", body)
	if err != nil {
		var ae *agent.Error
		if errors.As(err, &ae) {
			return &requestError{msg: "the body is not an OSSA agent manifest: " + err.Error(), issues: []capability.Issue{ae.Issue()}}
		}
		return badRequest(err.Error())
	}
	if capability.HasErrors(readIssues) {
		return agentIssues("the agent manifest in the request body cannot be read as JSON", readIssues)
	}
	if name := m.Metadata.Name; name != "" && name != id {
		return badRequest(fmt.Sprintf("the manifest's metadata.name is %q but the path names agent %q: PUT it to /v1/agents/%s, or change metadata.name", name, id, name))
	}
	for uri, b := range m.Spec.CapabilityBindings {
		if bm, ok := b.(map[string]any); ok && bm[capability.BindingCLI] != nil {
			if err := requireAdmin(r, fmt.Sprintf("the agent's capability_bindings give %s a cli binding", uri)); err != nil {
				return err
			}
		}
	}
	ag, _, err := h.agents.Apply(r.Context(), m)
	var me *agent.ManifestError
	if errors.As(err, &me) {
		return agentIssues(fmt.Sprintf("agent manifest for %s cannot be applied: %d issue(s), listed in issues", id, len(me.Issues)), me.Issues)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ag, h.s.log)
	return nil
}

func (h agentHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	if err := h.agents.Delete(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h agentHandlers) getCapabilities(w http.ResponseWriter, r *http.Request) error {
	caps, err := h.agents.GetCapabilities(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, AgentCapabilities{Items: caps, Total: len(caps)}, h.s.log)
	return nil
}

func (h agentHandlers) setCapabilities(w http.ResponseWriter, r *http.Request) error {
	var body SetAgentCapabilities
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if body.Capabilities == nil {
		return badRequest(`the body has no "capabilities" list: send {"capabilities": ["current_time", "test_math"]} (array order is position; [] removes them all)`)
	}
	caps, err := h.agents.SetCapabilities(r.Context(), r.PathValue("id"), body.Capabilities)
	if err != nil {
		return configProblem(err)
	}
	writeJSON(w, http.StatusOK, AgentCapabilities{Items: caps, Total: len(caps)}, h.s.log)
	return nil
}

func (h agentHandlers) config(w http.ResponseWriter, r *http.Request) error {
	cfg, err := h.agents.Config(r.Context(), r.PathValue("id"))
	if err != nil {
		return configProblem(err)
	}
	writeJSON(w, http.StatusOK, cfg, h.s.log)
	return nil
}

// agentIssueError carries an agent's issues to problemFor as a
// *capability.ValidationError (422 with the issues), while its message
// (the problem's detail) speaks of the agent rather than of a capability
// definition.
type agentIssueError struct {
	msg     string
	ve      *capability.ValidationError
	partial *agent.AgentConfig // what could be composed, for GET config's 422
}

func (e *agentIssueError) Error() string { return e.msg }
func (e *agentIssueError) Unwrap() error { return e.ve }

func agentIssues(msg string, issues []capability.Issue) error {
	return &agentIssueError{msg: msg, ve: &capability.ValidationError{Issues: issues}}
}

// configProblem turns a *agent.ConfigError into a 422 whose issues name
// each capability at fault (Path: the capability id; Rule:
// "agent-config:<code>") and whose partial member is what could be composed
// (the web UI shows it beside the issues); other errors pass through.
func configProblem(err error) error {
	var ce *agent.ConfigError
	if errors.As(err, &ce) {
		return &agentIssueError{msg: ce.Error(), ve: &capability.ValidationError{Issues: ce.Issues()}, partial: ce.Partial}
	}
	return err
}
