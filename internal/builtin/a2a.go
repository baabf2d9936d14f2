package builtin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
)

// The OSSA a2a domain, answered from caphub's registry (Env.Registry):
// ossa:a2a/discover@1.0 finds capabilities by text and filters, and
// ossa:a2a/negotiate@1.0 answers an OSSA §7.1 capability_request with the
// registry's capability_response.

// Limits of discover.
const (
	discoverDefaultLimit = 10
	discoverMaxLimit     = 100
	discoverMaxQuery     = 500
)

func a2aEntries() []entry {
	registryErr := errDef("REGISTRY_UNAVAILABLE", true, "The registry failed to answer; try again.")
	discover := capability.Definition{
		Domain:      "a2a",
		Name:        "discover",
		Title:       "Discover capabilities",
		Description: "Find the capabilities this caphub offers: a ranked full-text search when query is given (name and title matches first), otherwise a list in URI order; domain, category, intent, stability and scheme narrow either. Only the highest version of each capability is considered.",
		Keywords:    []string{"discover", "search", "find", "capabilities", "registry", "a2a"},
		Input: object(true, map[string]any{
			"query":     prop("string", "Free text matched against names, titles, descriptions, keywords, intents, domains and categories.", "maxLength", int64(discoverMaxQuery)),
			"domain":    prop("string", "Only capabilities of this domain (or hierarchical domain: \"github\" also matches \"github.issues\")."),
			"category":  prop("string", "Only capabilities of this category (e.g. crud.read, search)."),
			"intent":    prop("string", "Only capabilities that declare this exact intent (e.g. messaging.send_text)."),
			"stability": prop("string", "Only capabilities of this stability.", "enum", anyStrings(capability.Stabilities...)),
			"scheme":    prop("string", "Only ossa: or only mcp: capabilities.", "enum", anyStrings(capability.SchemeOSSA, capability.SchemeMCP)),
			"limit":     prop("integer", fmt.Sprintf("At most this many results, 1 to %d; defaults to %d.", discoverMaxLimit, discoverDefaultLimit), "minimum", int64(1), "maximum", int64(discoverMaxLimit), "default", int64(discoverDefaultLimit)),
		}),
		Output: object(false, map[string]any{
			"capabilities": prop("array", "The matches, best first (query) or in URI order.", "items", object(false, map[string]any{
				"uri":         prop("string", "The capability URI, @MAJOR.MINOR."),
				"version":     prop("string", "Its full version."),
				"title":       prop("string", "Its display name, when it has one."),
				"description": prop("string", "What it does."),
				"stability":   prop("string", "experimental, beta, stable or deprecated."),
				"tools":       prop("array", "For a bundle, the URIs of the capabilities it provides.", "items", map[string]any{"type": "string"}),
			}, "uri", "version", "description")),
			"total": prop("integer", "How many capabilities match in all (more than returned when limit cut the list)."),
		}, "capabilities", "total"),
		Errors:   []capability.ErrorDef{registryErr},
		Effects:  []string{"read_only", "idempotent"},
		Examples: []capability.Example{{Description: "weather tools", Input: map[string]any{"query": "weather", "limit": int64(3)}}},
	}
	negotiate := capability.Definition{
		Domain:      "a2a",
		Name:        "negotiate",
		Title:       "Negotiate capability version",
		Description: "Answer an OSSA capability_request (§7.1) from the registry: the chosen URI with status available, or status unavailable with the reason and the versions on offer. Compatibility follows OSSA §7.2 (same major, minor at least the requested one); versions past their sunset are not offered.",
		Keywords:    []string{"negotiate", "version", "compatibility", "a2a"},
		Input: object(true, map[string]any{
			"type":               prop("string", "The message type; capability_request when given.", "const", capability.NegotiationRequestType),
			"capability":         prop("string", "The capability URI, with or without a version (a version counts as the first preferred one).", "minLength", int64(1)),
			"preferred_versions": prop("array", "Acceptable versions, MAJOR or MAJOR.MINOR, most preferred first.", "items", map[string]any{"type": "string"}),
			"minimum_version":    prop("string", "The lowest acceptable version, MAJOR or MAJOR.MINOR."),
		}, "capability"),
		Output: object(false, map[string]any{
			"type":               prop("string", "capability_response.", "const", capability.NegotiationResponseType),
			"capability":         prop("string", "The chosen URI with @MAJOR.MINOR when available, the versionless URI otherwise."),
			"status":             prop("string", "available or unavailable.", "enum", anyStrings(capability.StatusAvailable, capability.StatusUnavailable)),
			"reason":             prop("string", "Why it is unavailable."),
			"available_versions": prop("array", "When unavailable: MAJOR.MINOR of every version on offer, highest first.", "items", map[string]any{"type": "string"}),
		}, "type", "capability", "status"),
		Errors:  []capability.ErrorDef{registryErr},
		Effects: []string{"read_only", "idempotent"},
		Examples: []capability.Example{{
			Input:  map[string]any{"type": capability.NegotiationRequestType, "capability": "ossa:everruns/add", "preferred_versions": anyStrings("1.0"), "minimum_version": "1.0"},
			Output: map[string]any{"type": capability.NegotiationResponseType, "capability": "ossa:everruns/add@1.0", "status": capability.StatusAvailable},
		}},
	}
	return []entry{
		{def: define(discover), handler: discoverHandler},
		{def: define(negotiate), handler: negotiateHandler},
	}
}

// registryAPI returns the registry, or says that caphub runs without one.
func (e *env) registryAPI(uri string) (registry.API, error) {
	if e.Registry == nil {
		return nil, fmt.Errorf("%s is not available: caphub was started without a registry (builtin.Env.Registry is nil)", uri)
	}
	return e.Registry, nil
}

// registryFailure classifies a registry error: a refused request is the
// caller's to fix, anything else may pass.
func registryFailure(what string, err error) error {
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, registry.ErrInvalid) || errors.Is(err, registry.ErrInvalidCursor):
		return invalidInput("%s: %v", what, err)
	}
	return &invoke.Error{Code: "REGISTRY_UNAVAILABLE", Retryable: true, Message: fmt.Sprintf("%s: %v", what, err), Cause: err}
}

func discoverHandler(e *env) Handler {
	return func(ctx context.Context, call *invoke.Call) (any, error) {
		reg, err := e.registryAPI(uriOf("a2a", "discover"))
		if err != nil {
			return nil, err
		}
		in := inputOf(call)
		var f registry.ListFilter
		for _, field := range []struct {
			name string
			dst  *string
		}{{"domain", &f.Domain}, {"category", &f.Category}, {"intent", &f.Intent}, {"stability", &f.Stability}, {"scheme", &f.Scheme}} {
			s, _, err := stringField(in, field.name)
			if err != nil {
				return nil, err
			}
			*field.dst = strings.TrimSpace(s)
		}
		limit, err := integerField(in, "limit", discoverDefaultLimit)
		if err != nil {
			return nil, err
		}
		if limit < 1 || limit > discoverMaxLimit {
			return nil, invalidInput("limit %d is out of range: give 1 to %d", limit, discoverMaxLimit)
		}
		f.Limit = int(limit)
		f.CountTotal = true // the output's total counts every match
		query, _, err := stringField(in, "query")
		if err != nil {
			return nil, err
		}
		if len(query) > discoverMaxQuery {
			return nil, invalidInput("the query is %d bytes long: give at most %d", len(query), discoverMaxQuery)
		}
		var page registry.Page
		if query = strings.TrimSpace(query); query != "" {
			page, err = reg.Search(ctx, registry.SearchQuery{Text: query, Filter: f})
		} else {
			page, err = reg.List(ctx, f)
		}
		if err != nil {
			return nil, registryFailure("discover capabilities", err)
		}
		caps := make([]any, len(page.Items))
		for i, r := range page.Items {
			d := &r.Definition
			c := map[string]any{"uri": d.URI, "version": r.Key.Version, "description": d.Description}
			if d.Title != "" {
				c["title"] = d.Title
			}
			if d.Stability != "" {
				c["stability"] = d.Stability
			}
			if len(d.Tools) > 0 {
				c["tools"] = anyStrings(d.Tools...)
			}
			caps[i] = c
		}
		return map[string]any{"capabilities": caps, "total": int64(page.Total)}, nil
	}
}

func negotiateHandler(e *env) Handler {
	return func(ctx context.Context, call *invoke.Call) (any, error) {
		reg, err := e.registryAPI(uriOf("a2a", "negotiate"))
		if err != nil {
			return nil, err
		}
		in := inputOf(call)
		var req capability.NegotiationRequest
		for _, field := range []struct {
			name string
			dst  *string
		}{{"type", &req.Type}, {"capability", &req.Capability}, {"minimum_version", &req.MinimumVersion}} {
			if *field.dst, _, err = stringField(in, field.name); err != nil {
				return nil, err
			}
		}
		if req.Capability == "" {
			return nil, invalidInput("field \"capability\" is missing: give the capability URI, e.g. ossa:security/scan_vulnerabilities")
		}
		if v, present := in["preferred_versions"]; present && v != nil {
			list, ok := v.([]any)
			if !ok {
				return nil, invalidInput("field \"preferred_versions\" must be an array of versions, not %s", jsonType(v))
			}
			for i, x := range list {
				s, ok := x.(string)
				if !ok {
					return nil, invalidInput("preferred_versions[%d] must be a version string such as \"1.0\", not %s", i, jsonType(x))
				}
				req.PreferredVersions = append(req.PreferredVersions, s)
			}
		}
		resp, err := reg.Negotiate(ctx, req)
		if err != nil {
			return nil, registryFailure("negotiate "+req.Capability, err)
		}
		out := map[string]any{"type": resp.Type, "capability": resp.Capability, "status": resp.Status}
		if resp.Reason != "" {
			out["reason"] = resp.Reason
		}
		if len(resp.AvailableVersions) > 0 {
			out["available_versions"] = anyStrings(resp.AvailableVersions...)
		}
		return out, nil
	}
}
