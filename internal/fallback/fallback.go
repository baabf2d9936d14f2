// Package fallback finds what to use when a capability URI does not resolve
// (CCOS missing-capability resolution). It looks, in order, at the registry
// itself (an exact hit), configured aliases and deprecated_by chains, names
// in the same domain that share a prefix with the wanted one, and the
// configured discovery sources: the cached listings of saved MCP servers and
// OpenAPI specs. What it finds is proposed; only with Auto does it register
// the best proposal that is not registered yet, and it never registers over
// an existing capability, so what an existing URI resolves to never changes
// behind the caller's back.
package fallback

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/format/openapi"
	"github.com/caphub/caphub/registry"
)

// Environment variables of the feature flags (CCOS
// CCOS_MISSING_CAPABILITY_ENABLED and CCOS_AUTO_RESOLUTION_ENABLED).
const (
	// EnvEnabled is the master switch: unset or false, a missing capability
	// is only reported missing.
	EnvEnabled = "CAPHUB_MISSING_CAPABILITY_ENABLED"
	// EnvAuto lets resolution register the best proposal; unset or false,
	// resolution only proposes.
	EnvAuto = "CAPHUB_AUTO_RESOLUTION_ENABLED"
)

// Sources of proposals. Discovery sources are SourceMCP+server and
// SourceOpenAPI+spec.
const (
	SourceExact   = "exact"
	SourceAlias   = "alias"
	SourcePartial = "partial"
	SourceMCP     = "mcp:"
	SourceOpenAPI = "openapi:"
)

// minPrefix is the shortest common name prefix that makes a partial match:
// shorter ones ("li", "ge") match too much to mean anything.
const minPrefix = 3

// maxChain bounds alias and deprecated_by chains, which may loop.
const maxChain = 16

// defaultIntrospectorVersion is recorded in the provenance of definitions
// built from cached MCP listings when Resolver.IntrospectorVersion is empty.
const defaultIntrospectorVersion = "caphub-resolve/1"

// Resolver finds proposals for a missing capability.
type Resolver struct {
	// Reg is the registry asked first and registered into with Auto.
	Reg registry.API
	// Servers holds the saved MCP servers whose cached listings are
	// searched (no network); nil skips them.
	Servers discover.ServerAPI
	// OpenAPISpecs are files or URLs configured as discovery sources.
	OpenAPISpecs []string
	// Aliases maps a URI base (scheme:domain/name) to the base to use
	// instead.
	Aliases map[string]string
	// Auto registers the best proposal that is not registered yet.
	Auto bool
	// IntrospectorVersion is recorded in the provenance of definitions
	// built from MCP listings (defaultIntrospectorVersion when empty).
	IntrospectorVersion string
}

// Result is what Find found.
type Result struct {
	URI string `json:"uri"`
	// Found says the URI resolves as it is; Proposals then holds the exact
	// hit (and the replacement, when the hit is deprecated).
	Found bool `json:"found"`
	// Proposals are best first.
	Proposals []Proposal `json:"proposals"`
	// Registered are the URIs Auto registered (at most one).
	Registered []string `json:"registered"`
	// Errors are discovery sources that could not be read; the others were
	// still searched.
	Errors []string `json:"errors,omitempty"`
}

// Proposal is one capability that could stand in for the wanted one.
type Proposal struct {
	URI        string                 `json:"uri"`
	Source     string                 `json:"source"`
	Reason     string                 `json:"reason"`
	Registered bool                   `json:"registered"` // the capability already exists in the registry
	Definition *capability.Definition `json:"definition,omitempty"`
}

// Find resolves uri or proposes what to use instead. An invalid URI and a
// failing registry are errors; an unreadable discovery source is only
// recorded in Result.Errors. With Auto, the first proposal whose capability
// does not exist in the registry at all is registered: registering a new
// version of an existing capability could change what its URIs resolve to,
// so that is left to the user.
func (r *Resolver) Find(ctx context.Context, uri string) (*Result, error) {
	return r.find(ctx, uri, false)
}

// Exact is what is reported when resolution is off (EnvEnabled false): only
// whether uri resolves as it is, with the exact hit as the one proposal; a
// missing capability is just missing. Nothing else is searched and nothing
// is registered, whatever Auto says.
func (r *Resolver) Exact(ctx context.Context, uri string) (*Result, error) {
	return r.find(ctx, uri, true)
}

func (r *Resolver) find(ctx context.Context, uri string, exactOnly bool) (*Result, error) {
	want, err := capability.ParseURI(uri)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", registry.ErrInvalid, err)
	}
	res := &Result{URI: uri, Proposals: []Proposal{}, Registered: []string{}}
	c := &collector{res: res, seen: map[string]bool{}}

	// 1. Exact.
	hit, err := r.Reg.Resolve(ctx, uri)
	var sunset *registry.SunsetError
	switch {
	case err == nil:
		res.Found = true
		d := hit.Record.Definition
		c.add(Proposal{URI: hit.URI, Source: SourceExact, Reason: "registered as version " + hit.Version, Registered: true, Definition: &d})
		if d.Stability == capability.StabilityDeprecated && d.DeprecatedBy != "" {
			r.follow(ctx, c, d.DeprecatedBy, fmt.Sprintf("%s is deprecated in favour of %s", hit.URI, d.DeprecatedBy))
		}
		return res, nil
	case errors.As(err, &sunset):
		if sunset.DeprecatedBy != "" {
			r.follow(ctx, c, sunset.DeprecatedBy, fmt.Sprintf("%s was sunset on %s; its replacement is %s", uri, sunset.SunsetDate, sunset.DeprecatedBy))
		}
	case errors.Is(err, registry.ErrNotFound):
	default:
		return nil, err
	}
	if exactOnly {
		res.Proposals = []Proposal{}
		return res, nil
	}

	// 2. Aliases.
	if to, ok := r.Aliases[want.Base()]; ok {
		r.follow(ctx, c, to, fmt.Sprintf("%s is configured as an alias of %s", want.Base(), to))
	}

	// 3. Partial matches in the registry.
	if err := r.partial(ctx, c, want); err != nil {
		return nil, err
	}

	// 4. Discovery sources.
	r.fromServers(ctx, c, want)
	r.fromSpecs(ctx, c, want)

	if r.Auto {
		if err := r.register(ctx, res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// collector gathers proposals once each.
type collector struct {
	res  *Result
	seen map[string]bool
}

func (c *collector) add(p Proposal) {
	if c.seen[p.URI] {
		return
	}
	c.seen[p.URI] = true
	c.res.Proposals = append(c.res.Proposals, p)
}

// follow walks an alias or deprecated_by chain from target and proposes the
// first capability on it that resolves. reason explains the first step;
// every later step is appended to it.
func (r *Resolver) follow(ctx context.Context, c *collector, target, reason string) {
	visited := map[string]bool{}
	for i := 0; i < maxChain && target != ""; i++ {
		u, err := capability.ParseURI(target)
		if err != nil || visited[target] {
			return
		}
		visited[target] = true
		hit, err := r.Reg.Resolve(ctx, target)
		var sunset *registry.SunsetError
		switch {
		case err == nil:
			d := hit.Record.Definition
			c.add(Proposal{URI: hit.URI, Source: SourceAlias, Reason: reason, Registered: true, Definition: &d})
			return
		case errors.As(err, &sunset) && sunset.DeprecatedBy != "":
			reason += fmt.Sprintf(", which was sunset in favour of %s", sunset.DeprecatedBy)
			target = sunset.DeprecatedBy
		default:
			next, ok := r.Aliases[u.Base()]
			if !ok {
				return
			}
			reason += fmt.Sprintf(", which is not registered but is an alias of %s", next)
			target = next
		}
	}
}

// partial proposes registered capabilities of the wanted domain whose names
// share at least minPrefix leading characters with the wanted name, longer
// prefixes first.
func (r *Resolver) partial(ctx context.Context, c *collector, want capability.URI) error {
	type cand struct {
		p      Proposal
		n      int
		scheme bool
	}
	var cands []cand
	f := registry.ListFilter{Domain: want.Domain}
	for {
		page, err := r.Reg.List(ctx, f)
		if err != nil {
			return err
		}
		for _, rec := range page.Items {
			k := rec.Key
			if k.Scheme == want.Scheme && k.Domain == want.Domain && k.Name == want.Name {
				continue // the wanted capability itself (e.g. sunset): handled above
			}
			n := commonPrefix(k.Name, want.Name)
			if n < minPrefix {
				continue
			}
			v, err := capability.ParseVersion(k.Version)
			if err != nil {
				continue
			}
			d := rec.Definition
			u := capability.NewURI(k.Scheme, k.Domain, k.Name, v).String()
			cands = append(cands, cand{
				p: Proposal{URI: u, Source: SourcePartial, Registered: true, Definition: &d,
					Reason: fmt.Sprintf("registered in domain %s; its name shares the prefix %q with %s", k.Domain, k.Name[:n], want.Name)},
				n: n, scheme: k.Scheme == want.Scheme,
			})
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.n != b.n {
			return a.n > b.n
		}
		if a.scheme != b.scheme {
			return a.scheme
		}
		return a.p.URI < b.p.URI
	})
	for _, x := range cands {
		c.add(x.p)
	}
	return nil
}

// match ranks a discovered definition against the wanted URI: 0 no match;
// otherwise higher is better. An equal name (exactly, or once both are
// normalised) matches in any domain; a shared prefix of at least minPrefix
// characters only within the wanted domain, as registry partial matches do.
func match(want capability.URI, names []string, domain string) (score int, why string) {
	for _, n := range names {
		if n == want.Name {
			return 1000, fmt.Sprintf("offers %q, the wanted name", n)
		}
	}
	for _, n := range names {
		if normalise(n) == normalise(want.Name) {
			return 999, fmt.Sprintf("offers %q, the wanted name written differently", n)
		}
	}
	if !capability.DomainMatches(want.Domain, domain) {
		return 0, ""
	}
	best := 0
	for _, n := range names {
		if p := commonPrefix(normalise(n), normalise(want.Name)); p > best {
			best, why = p, fmt.Sprintf("offers %q in domain %s, sharing a prefix of %d characters with %s", n, domain, p, want.Name)
		}
	}
	if best < minPrefix {
		return 0, ""
	}
	return best, why
}

// discovered is a definition found in a discovery source.
type discovered struct {
	def    capability.Definition
	source string
	reason string
	score  int
}

// addDiscovered proposes found definitions, best match first, marking
// those whose capability the registry already holds.
func (r *Resolver) addDiscovered(ctx context.Context, c *collector, found []discovered) {
	sort.SliceStable(found, func(i, j int) bool { return found[i].score > found[j].score })
	for _, f := range found {
		d := f.def
		exists, err := r.exists(ctx, d.URI)
		if err != nil {
			c.res.Errors = append(c.res.Errors, fmt.Sprintf("%s: %v", d.URI, err))
			continue
		}
		c.add(Proposal{URI: d.URI, Source: f.source, Reason: f.reason, Registered: exists, Definition: &d})
	}
}

// fromServers searches the cached listings of saved MCP servers.
func (r *Resolver) fromServers(ctx context.Context, c *collector, want capability.URI) {
	if r.Servers == nil {
		return
	}
	saved, err := r.Servers.ListServers(ctx)
	if err != nil {
		c.res.Errors = append(c.res.Errors, fmt.Sprintf("saved MCP servers: %v", err))
		return
	}
	iv := r.IntrospectorVersion
	if iv == "" {
		iv = defaultIntrospectorVersion
	}
	var found []discovered
	for _, s := range saved {
		if s.Listing == nil {
			continue // never listed: nothing cached, and Find does not go to the network
		}
		defs, _ := discover.Definitions(s.Listing, iv)
		for _, d := range defs {
			names := []string{d.Name}
			if d.Bindings.MCP != nil && d.Bindings.MCP.Tool != d.Name {
				names = append(names, d.Bindings.MCP.Tool)
			}
			score, why := match(want, names, s.Server.Name)
			if score == 0 {
				continue
			}
			found = append(found, discovered{def: d, source: SourceMCP + s.Server.Name, score: score,
				reason: fmt.Sprintf("the saved MCP server %s %s (cached listing of %s)", s.Server.Name, why, s.Listing.At.Format("2006-01-02 15:04"))})
		}
	}
	r.addDiscovered(ctx, c, found)
}

// fromSpecs imports each configured OpenAPI spec and matches its operations.
func (r *Resolver) fromSpecs(ctx context.Context, c *collector, want capability.URI) {
	var found []discovered
	for _, spec := range r.OpenAPISpecs {
		data, err := openapi.Fetch(ctx, spec)
		if err != nil {
			c.res.Errors = append(c.res.Errors, fmt.Sprintf("OpenAPI spec %s: %v", spec, err))
			continue
		}
		imp, err := openapi.Import(ctx, spec, data, openapi.Options{})
		if err != nil {
			c.res.Errors = append(c.res.Errors, fmt.Sprintf("OpenAPI spec %s: %v", spec, err))
			continue
		}
		for _, d := range imp.Definitions {
			score, why := match(want, []string{d.Name}, d.Domain)
			if score == 0 {
				continue
			}
			found = append(found, discovered{def: d, source: SourceOpenAPI + spec, score: score,
				reason: fmt.Sprintf("the OpenAPI spec %s %s", spec, strings.Replace(why, "offers", "has the operation", 1))})
		}
	}
	r.addDiscovered(ctx, c, found)
}

// exists reports whether any version of the capability uri names is
// registered.
func (r *Resolver) exists(ctx context.Context, uri string) (bool, error) {
	u, err := capability.ParseURI(uri)
	if err != nil {
		return false, err
	}
	vs, err := r.Reg.Versions(ctx, u.Scheme, u.Domain, u.Name)
	if err != nil && !errors.Is(err, registry.ErrNotFound) {
		return false, err
	}
	return len(vs) > 0, nil
}

// register registers the first proposal whose capability does not exist.
func (r *Resolver) register(ctx context.Context, res *Result) error {
	for i := range res.Proposals {
		p := &res.Proposals[i]
		if p.Registered || p.Definition == nil {
			continue
		}
		// Check again: the registry may have changed since the proposal.
		exists, err := r.exists(ctx, p.URI)
		if err != nil {
			return err
		}
		if exists {
			p.Registered = true
			continue
		}
		out, err := r.Reg.RegisterBatch(ctx, []capability.Definition{*p.Definition})
		if err != nil {
			return fmt.Errorf("register %s: %w", p.URI, err)
		}
		p.Registered = true
		for _, o := range out {
			res.Registered = append(res.Registered, o.URI)
		}
		return nil
	}
	return nil
}

// commonPrefix is the length in bytes of the longest common prefix.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// normalise lower-cases a name and writes every separator as "_", so that
// list-issues, List.Issues and list_issues compare equal.
func normalise(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '_'
	}, s)
}
