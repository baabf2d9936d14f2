package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// RuleConfig prefixes the rule of an issue that comes from composing an
// agent's capabilities (RuleConfig + Problem.Code, e.g. "agent-config:unknown").
const RuleConfig = "agent-config:"

// Codes of a Problem.
const (
	ProblemInvalid     = "invalid"       // not a capability URI nor a bare capability name
	ProblemUnknown     = "unknown"       // no registered capability (or no compatible version) answers to it
	ProblemAmbiguous   = "ambiguous"     // a bare name that several registered capabilities have
	ProblemUnavailable = "unavailable"   // past its sunset date, or an experimental ("coming soon") bundle
	ProblemDuplicate   = "duplicate"     // listed twice in one set of capabilities
	ProblemNested      = "nested_bundle" // a bundle lists another bundle among its tools
	ProblemConflict    = "tool_conflict" // two different capabilities give the same tool name
)

// AgentConfig is what an agent loop is handed: the agent's capabilities
// applied in position order (DESIGN §2, the everruns application flow).
//
// SystemPrompt is the system-prompt additions of the agent's capabilities,
// in position order, followed by the agent's own prompt, each trimmed of
// surrounding white space, the empty ones left out, joined by a blank line
// ("\n\n"). Tools is the union of the unit capabilities: a bundle contributes
// the capabilities its Tools list, in that order, and any other capability
// contributes itself; a capability reached twice is listed once, where it
// first appears. Capabilities says what each agent capability resolved to,
// and Warnings carries deprecation notices.
type AgentConfig struct {
	AgentID      string              `json:"agent_id"`
	SystemPrompt string              `json:"system_prompt"`
	Tools        []ConfigTool        `json:"tools"`
	Capabilities []AppliedCapability `json:"capabilities"`
	Warnings     []string            `json:"warnings,omitempty"`
}

// ConfigTool is one tool of an AgentConfig: a unit capability, as an LLM
// tool (name, description, input schema) with the capability it invokes.
type ConfigTool struct {
	Name         string            `json:"name"`    // capability.ToolName(URI)
	URI          string            `json:"uri"`     // the resolved version, scheme:domain/name@MAJOR.MINOR
	Version      string            `json:"version"` // its full version
	Description  string            `json:"description,omitempty"`
	InputSchema  capability.Schema `json:"input_schema"`
	OutputSchema capability.Schema `json:"output_schema,omitempty"`
	// Policy is everruns' tool policy: auto, or requires_approval when
	// every call waits for a human (see capability.ToolPolicy).
	Policy string `json:"policy"`
	// From is the CapabilityID of the agent capability that brought the
	// tool in (the bundle, or the capability itself).
	From string `json:"from"`
}

// AppliedCapability is one agent capability as Config resolved it.
type AppliedCapability struct {
	CapabilityID string `json:"capability_id"`
	Position     int    `json:"position"`
	URI          string `json:"uri"`     // the resolved version, @MAJOR.MINOR
	Version      string `json:"version"` // its full version
	Title        string `json:"title,omitempty"`
	Bundle       bool   `json:"bundle"`
	// SystemPromptAddition is the text the capability adds, "" for none.
	SystemPromptAddition string `json:"system_prompt_addition,omitempty"`
	// Tools are the names of the tools it contributes, in order (a tool
	// another capability contributed first is not repeated).
	Tools []string `json:"tools"`
}

// Problem is one reason an agent's capabilities cannot be composed.
// CapabilityID names the capability at fault: the agent capability as the
// agent lists it, or, for a tool a bundle lists, the tool's URI; Position is
// the position of the agent capability it comes from.
type Problem struct {
	CapabilityID string `json:"capability_id"`
	Position     int    `json:"position"`
	Code         string `json:"code"`   // one of the Problem* codes
	Reason       string `json:"reason"` // what is wrong and what to do
}

// ConfigError says why an agent's capabilities cannot be composed, one
// Problem per capability at fault. Unlike everruns, which skips unknown
// capabilities and lets later tools shadow earlier ones, caphub refuses:
// an agent must not silently run without a capability it was given, nor
// with two tools of one name.
//
// Partial is what could be composed, for displaying the agent (caphub agent
// show); it is never a configuration to hand to an agent loop.
type ConfigError struct {
	Agent    string
	Problems []Problem
	Partial  *AgentConfig
}

func (e *ConfigError) Error() string {
	var parts []string
	for _, p := range e.Problems {
		parts = append(parts, p.Reason)
	}
	what := "the capabilities"
	if e.Agent != "" {
		what = "the capabilities of agent " + e.Agent
	}
	if len(parts) == 1 {
		return what + " cannot be applied: " + parts[0]
	}
	return fmt.Sprintf("%s cannot be applied (%d problems):\n  %s", what, len(parts), strings.Join(parts, "\n  "))
}

// Issues returns the problems as validation issues whose Path is the
// capability at fault and whose Rule is RuleConfig + the problem's code, for
// reports that list issues (REST problem documents, the CLI).
func (e *ConfigError) Issues() []capability.Issue {
	out := make([]capability.Issue, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = capability.Issue{Severity: capability.SeverityError, Path: p.CapabilityID, Rule: RuleConfig + p.Code, Message: p.Reason}
	}
	return out
}

// Config composes the AgentConfig of the agent with the given ID (see
// AgentConfig and Compose). The error is a *ConfigError when its
// capabilities cannot be applied, and wraps registry.ErrNotFound when there
// is no such agent.
func (a *Agents) Config(ctx context.Context, id string) (*AgentConfig, error) {
	ag, err := a.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return a.Compose(ctx, ag)
}

// Compose builds the AgentConfig of ag, stored or not, from the capabilities
// the registry has now.
//
// Each capability is resolved: a URI as registry Resolve does (OSSA §7.2,
// sunset, deprecation warnings), a bare id as the one capability of that
// name. It is a bundle when it lists tools or carries everruns display
// metadata (isBundle). These are problems, all reported together in a
// *ConfigError: an invalid, unknown or ambiguous id; a capability past its
// sunset date; an experimental bundle (everruns "coming soon"); a bundle
// tool that does not resolve or is itself a bundle; two different
// capabilities (different names, or different versions of one) that give the
// same ToolName. Any other error is the registry failing to answer.
func (a *Agents) Compose(ctx context.Context, ag *Agent) (*AgentConfig, error) {
	caps := append([]AgentCapability(nil), ag.Capabilities...)
	sortCapabilities(caps)
	c := &composer{ctx: ctx, a: a, cfg: &AgentConfig{AgentID: ag.ID, Tools: []ConfigTool{}, Capabilities: []AppliedCapability{}}, byName: map[string]int{}}
	var prompts []string
	for _, ac := range caps {
		applied, err := c.apply(ac)
		if err != nil {
			return nil, err
		}
		if applied == nil {
			continue
		}
		if applied.SystemPromptAddition != "" {
			prompts = append(prompts, applied.SystemPromptAddition)
		}
		c.cfg.Capabilities = append(c.cfg.Capabilities, *applied)
	}
	if own := strings.TrimSpace(ag.SystemPrompt); own != "" {
		prompts = append(prompts, own)
	}
	c.cfg.SystemPrompt = strings.Join(prompts, "\n\n")
	if len(c.problems) > 0 {
		return nil, &ConfigError{Agent: ag.ID, Problems: c.problems, Partial: c.cfg}
	}
	return c.cfg, nil
}

// apply resolves one of the agent's capabilities and adds its tools: the
// capability itself, or a bundle's tools. It returns nil when the
// capability is not applied (a problem says why).
func (c *composer) apply(ac AgentCapability) (*AppliedCapability, error) {
	res, err := c.lookup(ac.CapabilityID, ac.Position, "")
	if err != nil || res == nil {
		return nil, err
	}
	d := res.Record.Definition
	applied := &AppliedCapability{CapabilityID: ac.CapabilityID, Position: ac.Position, URI: res.URI, Version: res.Version, Title: d.Title,
		Bundle: d.IsBundle(), SystemPromptAddition: strings.TrimSpace(d.SystemPromptAddition), Tools: []string{}}
	if d.ComingSoon() {
		c.problem(ac.CapabilityID, ac.Position, ProblemUnavailable,
			"%s (%s %s, position %d) is an experimental bundle, \"coming soon\" in everruns terms: it is not ready to give an agent tools; remove it from the agent's capabilities",
			ac.CapabilityID, res.URI, res.Version, ac.Position)
		return nil, nil
	}
	if !applied.Bundle {
		if name, ok := c.addTool(res, ac); ok {
			applied.Tools = append(applied.Tools, name)
		}
		return applied, nil
	}
	for _, toolURI := range d.Tools {
		name, err := c.addBundleTool(toolURI, ac)
		if err != nil {
			return nil, err
		}
		if name != "" {
			applied.Tools = append(applied.Tools, name)
		}
	}
	return applied, nil
}

// addBundleTool adds one tool of the bundle ac and returns its name, ""
// when it is not added (a bundle in a bundle is a problem).
func (c *composer) addBundleTool(toolURI string, ac AgentCapability) (string, error) {
	tres, err := c.lookup(toolURI, ac.Position, ac.CapabilityID)
	if err != nil || tres == nil {
		return "", err
	}
	td := tres.Record.Definition
	if td.IsBundle() {
		c.problem(toolURI, ac.Position, ProblemNested,
			"bundle %s (position %d) lists %s among its tools, which is itself a bundle: bundles of bundles are not applied; enable %s on the agent directly",
			ac.CapabilityID, ac.Position, tres.URI, tres.URI)
		return "", nil
	}
	if name, ok := c.addTool(tres, ac); ok {
		return name, nil
	}
	return "", nil
}

// composer holds the state of one Compose.
type composer struct {
	ctx      context.Context
	a        *Agents
	cfg      *AgentConfig
	byName   map[string]int // tool name → index in cfg.Tools
	problems []Problem
	warned   map[string]bool
}

func (c *composer) problem(id string, pos int, code, format string, args ...any) {
	c.problems = append(c.problems, Problem{CapabilityID: id, Position: pos, Code: code, Reason: fmt.Sprintf(format, args...)})
}

func (c *composer) warn(msg string) {
	if c.warned == nil {
		c.warned = map[string]bool{}
	}
	if !c.warned[msg] {
		c.warned[msg] = true
		c.cfg.Warnings = append(c.cfg.Warnings, msg)
	}
}

// lookup resolves one capability id at position pos (a tool of bundle when
// bundle is set). It returns nil after recording a problem, and an error
// only when the registry fails to answer.
func (c *composer) lookup(id string, pos int, bundle string) (*registry.Resolution, error) {
	where := fmt.Sprintf("position %d", pos)
	if bundle != "" {
		where = fmt.Sprintf("a tool of %s at position %d", bundle, pos)
	}
	res, code, reason, err := resolveID(c.ctx, c.a.reg, id)
	if err != nil {
		return nil, fmt.Errorf("resolve capability %s (%s): %w", id, where, err)
	}
	if code != "" {
		c.problem(id, pos, code, "%s (%s) %s", id, where, reason)
		return nil, nil
	}
	for _, w := range res.Warnings {
		c.warn(fmt.Sprintf("%s (%s): %s", id, where, w.Message))
	}
	return res, nil
}

// addTool adds the unit capability res as a tool; false when it is already
// there (from an earlier capability) or its name is taken by another
// capability, which is a problem.
func (c *composer) addTool(res *registry.Resolution, from AgentCapability) (string, bool) {
	name := capability.ToolName(res.URI)
	if i, taken := c.byName[name]; taken {
		prev := c.cfg.Tools[i]
		if prev.URI == res.URI && prev.Version == res.Version {
			return name, false
		}
		c.problem(from.CapabilityID, from.Position, ProblemConflict,
			"tool name %q is given both by %s %s (from %s) and by %s %s (from %s at position %d): an agent cannot tell two tools of one name apart; remove one of the two capabilities",
			name, prev.URI, prev.Version, prev.From, res.URI, res.Version, from.CapabilityID, from.Position)
		return name, false
	}
	d := res.Record.Definition
	desc := strings.TrimSpace(d.Description)
	if desc == "" {
		desc = d.Title
	}
	in := d.Input
	if len(in) == 0 {
		in = capability.Schema{"type": "object"}
	}
	var out capability.Schema
	if len(d.Output) > 0 {
		out = d.Output
	}
	c.byName[name] = len(c.cfg.Tools)
	c.cfg.Tools = append(c.cfg.Tools, ConfigTool{Name: name, URI: res.URI, Version: res.Version, Description: desc, InputSchema: in, OutputSchema: out, Policy: capability.ToolPolicy(&d), From: from.CapabilityID})
	return name, true
}

// resolveID resolves a capability id: a URI (it holds ':') through Resolve,
// a bare name as the one registered capability of that name. code and
// reason describe a problem; err is the registry failing to answer.
func resolveID(ctx context.Context, reg registry.API, id string) (res *registry.Resolution, code, reason string, err error) {
	id = strings.TrimSpace(id)
	if strings.Contains(id, ":") {
		return resolveURI(ctx, reg, id)
	}
	if id == "" || strings.ContainsAny(id, "/@ \t\n") {
		return nil, ProblemInvalid, "is neither a capability URI (ossa:<domain>/<name>@MAJOR.MINOR) nor a bare capability name such as test_math: write one of those", nil
	}
	ctx2, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	p, err := reg.List(ctx2, registry.ListFilter{Name: id})
	if err != nil {
		return nil, "", "", err
	}
	var bases []string
	for _, r := range p.Items {
		bases = append(bases, r.Key.Scheme+":"+r.Key.Domain+"/"+r.Key.Name)
	}
	sort.Strings(bases)
	switch len(bases) {
	case 0:
		return nil, ProblemUnknown, "is not the name of any registered capability: register it, or list what is (GET /v1/capabilities)", nil
	case 1:
		return resolveURI(ctx, reg, bases[0])
	}
	return nil, ProblemAmbiguous, fmt.Sprintf("is the name of %d registered capabilities (%s): use the URI of the one you mean", len(bases), strings.Join(bases, ", ")), nil
}

func resolveURI(ctx context.Context, reg registry.API, uri string) (*registry.Resolution, string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	res, err := reg.Resolve(ctx, uri)
	var sunset *registry.SunsetError
	switch {
	case err == nil:
		return &res, "", "", nil
	case errors.As(err, &sunset):
		return nil, ProblemUnavailable, "is no longer available: " + sunset.Error(), nil
	case errors.Is(err, registry.ErrInvalid):
		return nil, ProblemInvalid, "is not a valid capability URI: " + err.Error(), nil
	case errors.Is(err, registry.ErrNotFound):
		return nil, ProblemUnknown, "does not resolve: " + err.Error(), nil
	}
	return nil, "", "", err
}
