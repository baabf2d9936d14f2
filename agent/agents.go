package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/registry"
)

// DocKind is the registry.DocStore kind under which agents are kept; the
// document key is the agent's ID.
const DocKind = "agent"

// idPattern is what an agent ID must match: lower-case letters, digits, '.',
// '_' and '-', starting with a letter or digit, at most 128 characters. Every
// OSSA metadata.name (DNS-1123, ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$) of up to 128
// characters is one.
const idPattern = `[a-z0-9][a-z0-9._-]{0,127}`

var idRE = regexp.MustCompile(`^` + idPattern + `$`)

// ErrInvalidID marks an agent ID that does not match [a-z0-9][a-z0-9._-]{0,127}.
// It wraps registry.ErrInvalid, so servers map it as an invalid request.
var ErrInvalidID = fmt.Errorf("%w: invalid agent id", registry.ErrInvalid)

// CheckID returns an error wrapping ErrInvalidID unless id is a valid agent
// ID.
func CheckID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("%w %q: use 1 to 128 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit (%s), e.g. security-scanner", ErrInvalidID, id, idPattern)
	}
	return nil
}

// Agent is an agent the registry keeps: who it is, its own system prompt and
// the capabilities it has enabled, in everruns' shape (capability id and
// position).
//
// Capabilities is authoritative: SetCapabilities replaces it without editing
// Manifest, which stays the document last applied (nil when the agent never
// had one). CapabilityBindings are the manifest's spec.capability_bindings
// (OSSA §10.1), capability URI → the bindings that replace the registered
// ones for this agent, kept so that an invoker acting for the agent can use
// them.
type Agent struct {
	ID                 string                         `json:"id"`
	Name               string                         `json:"name,omitempty"`
	Version            string                         `json:"version,omitempty"`
	Description        string                         `json:"description,omitempty"`
	SystemPrompt       string                         `json:"system_prompt,omitempty"`
	Capabilities       []AgentCapability              `json:"capabilities"`
	CapabilityBindings map[string]capability.Bindings `json:"capability_bindings,omitempty"`
	Manifest           json.RawMessage                `json:"manifest,omitempty"`
	UpdatedAt          time.Time                      `json:"updated_at"`
}

// AgentCapability is one capability an agent has enabled, as everruns lists
// it. CapabilityID is a capability URI (ossa:everruns/test_math@1.0, any
// version form Resolve accepts) or a bare everruns id such as "test_math",
// which names the one registered capability of that name (in any domain or
// scheme; when several have it, the id is ambiguous and Config says to use
// a URI). Capabilities apply in Position order, lower first.
type AgentCapability struct {
	CapabilityID string `json:"capability_id"`
	Position     int    `json:"position"`
}

// Agents keeps agents in a registry.DocStore and composes their
// AgentConfig from the capabilities of a registry.
//
// Its methods are safe for concurrent use. Writes that read first
// (SetCapabilities) are serialised within one Agents; between processes
// sharing a database the last write wins.
type Agents struct {
	docs     registry.DocStore
	reg      registry.API
	recorder registry.ChangeRecorder // nil: changes are not recorded
	now      func() time.Time
	mu       sync.Mutex

	overrides *BindingOverrides // see Overrides
}

// Option configures Agents.
type Option func(*Agents)

// WithRecorder records every change to an agent with an audit event that
// rec makes (audit.KindAgentApplied, KindAgentUpdated when its
// capabilities are set, KindAgentDeleted), naming the actor of the change
// (identity.Caller.Actor) and the agent, committed in the change's own
// transaction (registry.ApplyDocsRecorded, through the store's
// ApplyDocsAudited). A nil rec records nothing.
func WithRecorder(rec registry.ChangeRecorder) Option { return func(a *Agents) { a.recorder = rec } }

// NewAgents returns the agents kept in docs, whose capabilities reg resolves
// (a *registry.Service, or a client of a running caphub).
func NewAgents(docs registry.DocStore, reg registry.API, opts ...Option) *Agents {
	a := &Agents{docs: docs, reg: reg, now: time.Now}
	for _, o := range opts {
		o(a)
	}
	a.overrides = &BindingOverrides{agents: a, now: time.Now, cache: map[string]cachedBindings{}}
	return a
}

// ManifestError is a manifest Apply refuses: it breaks the OSSA v0.2.9
// schema, a capability it declares or requires does not resolve, or its
// capabilities cannot be composed (see Config). Issues lists every problem
// (and warning) with field path, file, line and column.
type ManifestError struct {
	File   string
	Agent  string // metadata.name, when there is one
	Issues []capability.Issue
}

func (e *ManifestError) Error() string {
	var errs []string
	for _, i := range e.Issues {
		if i.Severity == capability.SeverityError {
			errs = append(errs, i.String())
		}
	}
	what := "agent manifest " + e.File
	if e.Agent != "" {
		what = fmt.Sprintf("agent manifest %s (agent %s)", e.File, e.Agent)
	}
	switch len(errs) {
	case 0:
		return what + " cannot be applied"
	case 1:
		return what + " cannot be applied: " + errs[0]
	}
	return fmt.Sprintf("%s cannot be applied (%d errors):\n  %s", what, len(errs), strings.Join(errs, "\n  "))
}

// Apply stores the agent an OSSA v0.2.9 manifest describes, replacing any
// agent of the same ID:
//
//   - ID and Name: metadata.name; Version and Description: metadata.version
//     and metadata.description.
//   - SystemPrompt: spec.role, which the v0.2.9 schema describes as the
//     "agent role/system prompt" and requires (spec.prompts.system only
//     names a template file, which a registry cannot read).
//   - Capabilities: the URIs of spec.capabilities, in order, at positions
//     0..n-1. Inline capability objects are not registry capabilities: they
//     stay in the manifest and are skipped with a warning; a URI declared
//     twice is kept once.
//   - CapabilityBindings: spec.capability_bindings, as CheckCapabilities
//     decodes and checks them.
//
// The manifest must pass Validate and CheckCapabilities without errors, and
// its capabilities must compose (Config's rules); otherwise nothing is
// stored and the error is a *ManifestError listing every issue. Issues
// returns the warnings of a manifest that was applied.
func (a *Agents) Apply(ctx context.Context, m *Manifest) (*Agent, []capability.Issue, error) {
	if m == nil {
		return nil, nil, errors.New("apply agent: no manifest given")
	}
	issues := Validate(m)
	checks := CheckCapabilities(ctx, m, a.reg)
	issues = append(issues, CheckIssues(checks)...)
	id := m.Metadata.Name
	if id != "" && !capability.HasErrors(issues) {
		if err := CheckID(id); err != nil {
			issues = append(issues, m.issue(capability.SeverityError, RuleOSSA10, "metadata.name", true,
				"%q cannot be an agent id: the registry keeps agents under ids of at most 128 characters matching %s", id, idPattern))
		}
	}
	ag := &Agent{ID: id, Name: id, Version: m.Metadata.Version, Description: m.Metadata.Description, SystemPrompt: m.Spec.Role, Capabilities: []AgentCapability{}}
	paths, warnings := ag.addDeclared(m, checks)
	issues = append(issues, warnings...)
	if !capability.HasErrors(issues) {
		problems, err := a.composeIssues(ctx, m, ag, paths)
		if err != nil {
			return nil, nil, fmt.Errorf("apply agent %s: %w", id, err)
		}
		issues = append(issues, problems...)
	}
	sortIssues(issues)
	if capability.HasErrors(issues) {
		return nil, issues, &ManifestError{File: m.File, Agent: id, Issues: issues}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, nil, fmt.Errorf("apply agent %s: encode the manifest: %w", id, err)
	}
	ag.Manifest = raw
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.put(ctx, ag, audit.KindAgentApplied); err != nil {
		return nil, nil, err
	}
	return ag, issues, nil
}

// addDeclared adds the declared capability URIs of checks to ag, once each
// and in order, with the bindings the manifest gives them. It returns the
// spec.capabilities path of each, and a warning for each inline capability.
func (ag *Agent) addDeclared(m *Manifest, checks []CapabilityCheck) (paths map[string]string, warnings []capability.Issue) {
	paths = map[string]string{} // capability id → its spec.capabilities path
	for _, ch := range checks {
		if ch.Kind != CheckDeclared || ch.Status == StatusInvalid {
			continue
		}
		if ch.Status == StatusInline {
			name := ch.Name
			if name == "" {
				name = "without a name"
			}
			warnings = append(warnings, m.issue(capability.SeverityWarning, RuleOSSA10, ch.Path, true,
				"inline capability %s is not a registry capability: it stays in the manifest but gives the agent no tools or prompt (list a capability URI to apply one)", name))
			continue
		}
		uri := strings.TrimSpace(ch.URI)
		if _, dup := paths[uri]; dup || uri == "" {
			continue
		}
		paths[uri] = ch.Path
		ag.Capabilities = append(ag.Capabilities, AgentCapability{CapabilityID: uri, Position: len(ag.Capabilities)})
		if ch.BindingSource == BindingsFromAgent && ch.Bindings != nil {
			if ag.CapabilityBindings == nil {
				ag.CapabilityBindings = map[string]capability.Bindings{}
			}
			ag.CapabilityBindings[uri] = *ch.Bindings
		}
	}
	return paths, warnings
}

// composeIssues composes ag and returns its composition problems as issues
// at the manifest paths of the capabilities concerned; err is a failure
// other than a *ConfigError.
func (a *Agents) composeIssues(ctx context.Context, m *Manifest, ag *Agent, paths map[string]string) ([]capability.Issue, error) {
	_, err := a.Compose(ctx, ag)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return nil, err
	}
	var issues []capability.Issue
	for _, p := range ce.Problems {
		path := paths[p.CapabilityID]
		if path == "" && p.Position >= 0 && p.Position < len(ag.Capabilities) {
			path = paths[ag.Capabilities[p.Position].CapabilityID]
		}
		if path == "" {
			path = "spec.capabilities"
		}
		issues = append(issues, m.issue(capability.SeverityError, RuleConfig+p.Code, path, true, "%s", p.Reason))
	}
	return issues, nil
}

// Get returns the agent with the given ID; the error wraps
// registry.ErrNotFound when there is none.
func (a *Agents) Get(ctx context.Context, id string) (*Agent, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	doc, err := a.docs.GetDoc(ctx, DocKind, id)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, &registry.NotFoundError{Kind: DocKind, Name: id, Message: fmt.Sprintf("agent %s does not exist (create it by applying its OSSA manifest: PUT /v1/agents/%s)", id, id)}
	}
	if err != nil {
		return nil, fmt.Errorf("read agent %s: %w", id, err)
	}
	return decodeAgent(doc)
}

// List returns every agent, ordered by ID.
func (a *Agents) List(ctx context.Context) ([]*Agent, error) {
	docs, err := a.docs.ListDocs(ctx, DocKind, "")
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	out := make([]*Agent, 0, len(docs))
	for _, d := range docs {
		ag, err := decodeAgent(d)
		if err != nil {
			return nil, err
		}
		out = append(out, ag)
	}
	return out, nil
}

// Delete removes an agent; the error wraps registry.ErrNotFound when there
// is none.
func (a *Agents) Delete(ctx context.Context, id string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	var err error
	if a.recorder == nil {
		err = a.docs.DeleteDoc(ctx, DocKind, id)
	} else {
		// The delete and its event commit together; ApplyDocs deletes a
		// missing document silently, so existence is checked first (under
		// the lock, against this process's writers).
		a.mu.Lock()
		defer a.mu.Unlock()
		if _, err = a.docs.GetDoc(ctx, DocKind, id); err == nil {
			err = registry.ApplyDocsRecorded(ctx, a.docs, a.recorder, []registry.DocOp{{Kind: DocKind, Key: id, Delete: true}},
				audit.KindAgentDeleted, identity.From(ctx).Actor, "", map[string]any{"agent": id})
		}
	}
	a.overrides.forget(id)
	if errors.Is(err, registry.ErrNotFound) {
		return fmt.Errorf("agent %s does not exist, so there is nothing to delete: %w", id, registry.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete agent %s: %w", id, err)
	}
	return nil
}

// GetCapabilities returns an agent's capabilities in position order (the
// everruns GET /v1/agents/{agent_id}/capabilities items).
func (a *Agents) GetCapabilities(ctx context.Context, id string) ([]AgentCapability, error) {
	ag, err := a.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return ag.Capabilities, nil
}

// SetCapabilities replaces an agent's capabilities, as everruns' PUT
// /v1/agents/{agent_id}/capabilities does: the array order gives the
// positions 0..n-1. Each id is a capability URI or a bare everruns id (see
// AgentCapability). Unlike everruns, the new set must compose: an empty or
// repeated id, an unknown or unavailable capability or a tool-name conflict
// refuses the whole set with a *ConfigError naming each one, and the agent
// keeps its capabilities. The agent must exist (registry.ErrNotFound).
func (a *Agents) SetCapabilities(ctx context.Context, id string, capabilityIDs []string) ([]AgentCapability, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ag, err := a.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	caps := make([]AgentCapability, 0, len(capabilityIDs))
	var problems []Problem
	seen := map[string]int{}
	for i, raw := range capabilityIDs {
		cid := strings.TrimSpace(raw)
		switch first, dup := seen[cid]; {
		case cid == "":
			problems = append(problems, Problem{CapabilityID: raw, Position: i, Code: ProblemInvalid,
				Reason: fmt.Sprintf("capabilities[%d] is empty: give a capability URI (ossa:everruns/test_math@1.0) or an everruns id (test_math)", i)})
			continue
		case dup:
			problems = append(problems, Problem{CapabilityID: cid, Position: i, Code: ProblemDuplicate,
				Reason: fmt.Sprintf("%s is listed twice (positions %d and %d): an agent enables a capability once; remove one", cid, first, i)})
			continue
		}
		seen[cid] = i
		caps = append(caps, AgentCapability{CapabilityID: cid, Position: i})
	}
	if len(problems) > 0 {
		return nil, &ConfigError{Agent: id, Problems: problems}
	}
	next := *ag
	next.Capabilities = caps
	if _, err := a.Compose(ctx, &next); err != nil {
		return nil, err
	}
	if err := a.put(ctx, &next, audit.KindAgentUpdated); err != nil {
		return nil, err
	}
	return next.Capabilities, nil
}

// put stores ag with UpdatedAt set to now, recorded (with a recorder) by an
// event of kind committed with it. The event names the agent, its version
// and its capabilities in order.
func (a *Agents) put(ctx context.Context, ag *Agent, kind string) error {
	ag.UpdatedAt = a.now().UTC().Truncate(time.Millisecond)
	sortCapabilities(ag.Capabilities)
	data, err := json.Marshal(ag)
	if err != nil {
		return fmt.Errorf("store agent %s: encode: %w", ag.ID, err)
	}
	caps := make([]string, len(ag.Capabilities))
	for i, c := range ag.Capabilities {
		caps[i] = c.CapabilityID
	}
	ops := []registry.DocOp{{Kind: DocKind, Key: ag.ID, Value: data}}
	event := map[string]any{"agent": ag.ID, "version": ag.Version, "capabilities": caps}
	if err := registry.ApplyDocsRecorded(ctx, a.docs, a.recorder, ops, kind, identity.From(ctx).Actor, "", event); err != nil {
		return fmt.Errorf("store agent %s: %w", ag.ID, err)
	}
	a.overrides.forget(ag.ID)
	return nil
}

func decodeAgent(d registry.Doc) (*Agent, error) {
	var ag Agent
	if err := json.Unmarshal(d.Value, &ag); err != nil {
		return nil, fmt.Errorf("agent %s is stored as unreadable JSON (%v): apply its manifest again", d.Key, err)
	}
	if ag.ID == "" {
		ag.ID = d.Key
	}
	if ag.UpdatedAt.IsZero() {
		ag.UpdatedAt = d.UpdatedAt
	}
	if ag.Capabilities == nil {
		ag.Capabilities = []AgentCapability{}
	}
	sortCapabilities(ag.Capabilities)
	return &ag, nil
}

// sortCapabilities orders capabilities by position, keeping the order of
// equal positions.
func sortCapabilities(caps []AgentCapability) {
	sort.SliceStable(caps, func(i, j int) bool { return caps[i].Position < caps[j].Position })
}
