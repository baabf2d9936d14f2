// Package discover turns what upstream MCP servers offer into capability
// definitions: it lists a server's tools (mcpconn), maps each to a
// Definition (CCOS provenance, effects from the tool annotations, inferred
// domains and categories), and plans re-discovery against the registry:
// unchanged tools are left alone, changed ones get a new version under the
// versioning rules, and vanished ones are deprecated, never deleted.
package discover

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// introspectionMethod is the CCOS :discovery method of MCP tools.
const introspectionMethod = "mcp_introspection"

// Listing is what one server offered at one time.
type Listing struct {
	Server     string      `json:"server"`
	Source     string      `json:"source"`
	ServerInfo string      `json:"server_info,omitempty"` // name and version the server reported
	Protocol   string      `json:"protocol_version,omitempty"`
	Tools      []*mcp.Tool `json:"tools"`
	At         time.Time   `json:"at"`
}

// UpstreamError is a failure of the upstream server itself: it could not be
// started or reached, or it answered tools/list with an error.
type UpstreamError struct {
	Server string
	Err    error
}

func (e *UpstreamError) Error() string { return e.Err.Error() }
func (e *UpstreamError) Unwrap() error { return e.Err }

// introspect connects to a saved server and lists every tool.
func introspect(ctx context.Context, s *mcpconn.Server, clientVersion string) (*Listing, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", registry.ErrInvalid, err)
	}
	cs, err := mcpconn.Connect(ctx, s, clientVersion)
	if err != nil {
		return nil, &UpstreamError{Server: s.Name, Err: err}
	}
	defer cs.Close()
	tools, err := mcpconn.ListTools(ctx, cs)
	if err != nil {
		return nil, &UpstreamError{Server: s.Name, Err: fmt.Errorf("MCP server %q: %w", s.Name, err)}
	}
	l := &Listing{Server: s.Name, Source: s.Source(), Tools: tools, At: time.Now().UTC()}
	if ir := cs.InitializeResult(); ir != nil {
		l.Protocol = ir.ProtocolVersion
		if ir.ServerInfo != nil {
			l.ServerInfo = strings.TrimSpace(ir.ServerInfo.Name + " " + ir.ServerInfo.Version)
		}
	}
	return l, nil
}

var mcpNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// uriName returns the name part of the mcp: URI of an upstream tool (the
// other way round from capability.ToolName, which names the gateway tool of
// a URI): the tool's own name when it fits the mcp name grammar, else a
// sanitised form (the binding keeps the exact upstream name either way).
func uriName(tool string) string {
	if mcpNameRE.MatchString(tool) {
		return tool
	}
	var b strings.Builder
	for _, r := range tool {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name == "" || name[0] == '.' || name[0] == '-' {
		name = "_" + name
	}
	if len(name) > 128 {
		name = name[:128]
	}
	return name
}

// toolEffects maps a tool's annotations to effects, with the MCP defaults when
// a hint is absent (readOnly false, destructive true, idempotent false,
// openWorld true): every tool is an mcp_call; a tool that is not read-only
// writes, and is destructive unless it says it is not.
func toolEffects(a *mcp.ToolAnnotations) []string {
	effects := []string{"mcp_call"}
	readOnly, destructive, idempotent, openWorld := false, true, false, true
	if a != nil {
		readOnly, idempotent = a.ReadOnlyHint, a.IdempotentHint
		if a.DestructiveHint != nil {
			destructive = *a.DestructiveHint
		}
		if a.OpenWorldHint != nil {
			openWorld = *a.OpenWorldHint
		}
	}
	if readOnly {
		effects = append(effects, "read_only")
	} else {
		effects = append(effects, "writes")
		if destructive {
			effects = append(effects, "destructive")
		}
		if idempotent {
			effects = append(effects, "idempotent")
		}
	}
	if openWorld {
		effects = append(effects, "open_world")
	}
	return effects
}

// schemaOf converts a tool schema (whatever JSON the SDK decoded) to a
// capability schema.
func schemaOf(v any) (capability.Schema, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %s", truncate(string(b), 80))
	}
	return capability.Normalize(m).(map[string]any), nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Definitions maps a listing to definitions, one per tool, as version
// 1.0.0; tools that cannot be mapped are failures with the reason.
func Definitions(l *Listing, introspectorVersion string) ([]capability.Definition, []capability.ImportFailure) {
	var defs []capability.Definition
	var failures []capability.ImportFailure
	used := map[string]string{}
	for _, t := range l.Tools {
		name := uriName(t.Name)
		if other, dup := used[name]; dup {
			failures = append(failures, capability.ImportFailure{Item: t.Name, Reason: fmt.Sprintf("its URI name %q is already taken by the tool %q: rename one of them upstream", name, other)})
			continue
		}
		used[name] = t.Name
		d, err := definition(l, t, name, introspectorVersion)
		if err != nil {
			failures = append(failures, capability.ImportFailure{Item: t.Name, Reason: err.Error()})
			continue
		}
		defs = append(defs, d)
	}
	return defs, failures
}

func definition(l *Listing, t *mcp.Tool, name, introspectorVersion string) (capability.Definition, error) {
	input, err := schemaOf(t.InputSchema)
	if err != nil {
		return capability.Definition{}, fmt.Errorf("inputSchema: %v", err)
	}
	if input == nil {
		input = capability.Schema{"type": "object"}
	}
	output, err := schemaOf(t.OutputSchema)
	if err != nil {
		return capability.Definition{}, fmt.Errorf("outputSchema: %v", err)
	}
	if output == nil {
		output = capability.Schema{} // no outputSchema: the tool returns content blocks of any shape
	}
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	d := capability.Definition{
		URI:         fmt.Sprintf("%s:%s/%s@1.0", capability.SchemeMCP, l.Server, name),
		Name:        name,
		Domain:      l.Server,
		Version:     "1.0.0",
		Title:       title,
		Description: t.Description,
		Stability:   capability.StabilityStable,
		Input:       input,
		Output:      output,
		Bindings:    capability.Bindings{MCP: &capability.MCPBinding{Server: l.Server, Tool: t.Name}},
		Effects:     toolEffects(t.Annotations),
		Provenance: &capability.Provenance{
			Method: introspectionMethod, SourceURL: l.Source, CreatedAt: l.At.Format(time.RFC3339),
			CapabilityType: "mcp_tool", IntrospectorVersion: introspectorVersion,
		},
		Metadata: map[string]any{"mcp": map[string]any{
			"server_name": l.Server, "tool_name": t.Name, "server_url": l.Source,
		}},
	}
	if l.Protocol != "" {
		d.Metadata["mcp"].(map[string]any)["protocol_version"] = l.Protocol
	}
	d.ApplyInference(l.Server)
	d.Normalize()
	for _, iss := range capability.Validate(&d) {
		if iss.Severity == capability.SeverityError {
			return d, fmt.Errorf("%s: %s", iss.Path, iss.Message)
		}
	}
	return d, nil
}

// Plan is what re-discovering a server changes in the registry.
type Plan struct {
	Register  []capability.Definition    `json:"-"`         // new tools and new versions of changed tools
	New       []string                   `json:"new"`       // URIs of tools not registered before
	Changed   []Change                   `json:"changed"`   // tools whose contract changed, with the new version
	Unchanged []string                   `json:"unchanged"` // tools identical to their registered version
	Vanished  []string                   `json:"vanished"`  // registered tools the server no longer offers (to deprecate)
	Failures  []capability.ImportFailure `json:"failures,omitempty"`
}

// Change is a tool whose definition changed since it was registered.
type Change struct {
	URI     string `json:"uri"`
	From    string `json:"from"`
	To      string `json:"to"`
	Bump    string `json:"bump"`
	Summary string `json:"summary"`
}

// planRediscovery compares freshly discovered definitions with what the
// registry holds for the server. A definition equal to the latest
// registered version (ignoring when it was discovered) is unchanged; one
// that differs becomes the next version its changes need (a breaking change
// is a new major); a registered tool missing from defs has vanished.
func planRediscovery(ctx context.Context, reg registry.API, server string, defs []capability.Definition) (*Plan, error) {
	plan := &Plan{New: []string{}, Changed: []Change{}, Unchanged: []string{}, Vanished: []string{}}
	offered := map[string]bool{}
	for _, d := range defs {
		offered[d.Name] = true
		versions, err := reg.Versions(ctx, capability.SchemeMCP, server, d.Name)
		if err != nil {
			return nil, err
		}
		if len(versions) == 0 {
			plan.Register = append(plan.Register, d)
			plan.New = append(plan.New, d.URI)
			continue
		}
		latest := versions[len(versions)-1].Definition
		candidate := d
		candidate.Provenance = latest.Provenance // when it was discovered is not a change
		candidate.Version, candidate.URI = latest.Version, latest.URI
		candidate.Stability = latest.Stability
		candidate.DeprecatedBy, candidate.SunsetDate, candidate.MigrationGuide = latest.DeprecatedBy, latest.SunsetDate, latest.MigrationGuide
		same, err := sameContent(&candidate, &latest)
		if err != nil {
			return nil, err
		}
		if same {
			plan.Unchanged = append(plan.Unchanged, latest.URI)
			continue
		}
		report := capability.Diff(&latest, &candidate)
		bump := report.Required
		if bump < capability.BumpPatch {
			bump = capability.BumpPatch
		}
		prev, err := capability.ParseVersion(latest.Version)
		if err != nil {
			plan.Failures = append(plan.Failures, capability.ImportFailure{Item: d.Name, Reason: "registered version " + latest.Version + " does not parse: " + err.Error()})
			continue
		}
		next := nextVersion(prev, bump)
		d.Version = next.Full()
		d.URI = capability.NewURI(capability.SchemeMCP, server, d.Name, next).String()
		plan.Register = append(plan.Register, d)
		var kinds []string
		for _, c := range report.Changes {
			if c.Bump == report.Required {
				kinds = append(kinds, c.Path+": "+c.Kind)
			}
		}
		plan.Changed = append(plan.Changed, Change{URI: d.URI, From: latest.Version, To: d.Version, Bump: bump.String(), Summary: strings.Join(kinds, "; ")})
	}
	saved, err := registry.ListAll(ctx, reg, registry.ListFilter{Scheme: capability.SchemeMCP, Domain: server})
	if err != nil {
		return nil, err
	}
	for _, r := range saved {
		if r.Key.Domain == server && !offered[r.Key.Name] && r.Definition.Stability != capability.StabilityDeprecated {
			plan.Vanished = append(plan.Vanished, capability.NewURI(capability.SchemeMCP, server, r.Key.Name, capability.MustParseVersion(r.Key.Version)).String())
		}
	}
	sort.Strings(plan.Vanished)
	return plan, nil
}

func nextVersion(v capability.Version, b capability.Bump) capability.Version {
	switch b {
	case capability.BumpMajor:
		return capability.Version{Major: v.Major + 1, Parts: 3}
	case capability.BumpMinor:
		return capability.Version{Major: v.Major, Minor: v.Minor + 1, Parts: 3}
	}
	return capability.Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch + 1, Parts: 3}
}

func sameContent(a, b *capability.Definition) (bool, error) {
	da, err := registry.Digest(a)
	if err != nil {
		return false, err
	}
	db, err := registry.Digest(b)
	return da == db, err
}

// applyPlan registers what the plan registers and deprecates what vanished.
func applyPlan(ctx context.Context, reg registry.API, server string, plan *Plan) error {
	if len(plan.Register) > 0 {
		if _, err := reg.RegisterBatch(ctx, plan.Register); err != nil {
			return err
		}
	}
	for _, uri := range plan.Vanished {
		u := capability.MustParseURI(uri)
		_, err := reg.Deprecate(ctx, u.Scheme, u.Domain, u.Name, u.Version.String(), registry.DeprecateRequest{
			MigrationGuide: fmt.Sprintf("The MCP server %q no longer offers the tool %q (found missing on re-discovery).", server, u.Name),
		})
		if err != nil {
			return fmt.Errorf("deprecate vanished tool %s: %w", uri, err)
		}
	}
	return nil
}
