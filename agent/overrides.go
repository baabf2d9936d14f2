package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
)

// overridesTTL is how long BindingOverrides trusts what it read of an
// agent: changes made through the same Agents apply at once, changes made
// by another process (another replica, the CLI on the same database)
// within this time.
const overridesTTL = time.Second

var _ invoke.BindingOverrides = (*BindingOverrides)(nil)

// BindingOverrides applies agents' capability_bindings at invocation: when
// the caller of an invocation is an agent the registry keeps, and its
// manifest bound the invoked capability (OSSA §10.1), those bindings run
// instead of the registered ones. Install it with
// invoke.Options.Overrides. It reads each agent through a short
// cache, so that a call costs no database read.
type BindingOverrides struct {
	agents *Agents
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]cachedBindings // by caller
}

// cachedBindings is what BindingOverrides knows of one caller: its bindings
// by capability (nil when the caller is no agent or binds nothing).
type cachedBindings struct {
	read     time.Time
	bindings []boundCapability
}

// boundCapability is one capability_bindings entry with its key parsed.
type boundCapability struct {
	uri      capability.URI
	bindings capability.Bindings
}

// Overrides returns the BindingOverrides of these agents (one per Agents,
// so that Apply and SetCapabilities refresh it).
func (a *Agents) Overrides() *BindingOverrides { return a.overrides }

// forget drops what the cache holds of an agent that changed.
func (o *BindingOverrides) forget(id string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	delete(o.cache, id)
	o.mu.Unlock()
}

// BindingsFor returns the bindings agent caller's manifest gave the
// capability uri resolved to (at version, its full version), and
// "agent:<caller>"; nil when the caller is not an agent or did not bind
// it. A capability_bindings key names a capability as spec.capabilities
// does: it applies to the versions that URI resolves to, those of the same
// major version at or above the key's MAJOR.MINOR (any version when the
// key has none). When several keys apply, the most specific one (highest
// version) wins.
func (o *BindingOverrides) BindingsFor(ctx context.Context, caller, uri, version string) (*capability.Bindings, string, error) {
	if CheckID(caller) != nil {
		return nil, "", nil // not an agent id (a token's name, say)
	}
	bound, err := o.lookup(ctx, caller)
	if err != nil || len(bound) == 0 {
		return nil, "", err
	}
	u, err := capability.ParseURI(uri)
	if err != nil {
		return nil, "", nil
	}
	v, err := capability.ParseVersion(version)
	if err != nil {
		return nil, "", nil
	}
	var best *boundCapability
	for i := range bound {
		b := &bound[i]
		if b.appliesTo(u, v) && b.moreSpecific(best) {
			best = b
		}
	}
	if best == nil {
		return nil, "", nil
	}
	bindings := best.bindings
	return &bindings, "agent:" + caller, nil
}

// appliesTo reports whether the key of b names capability u at version v:
// the same capability, and with a version on the key, the same major
// version at or above its minor.
func (b *boundCapability) appliesTo(u capability.URI, v capability.Version) bool {
	if !b.uri.SameCapability(u) {
		return false
	}
	return !b.uri.HasVersion || (b.uri.Version.Major == v.Major && v.Minor >= b.uri.Version.Minor)
}

// moreSpecific reports whether b's key is more specific than than's (nil
// when there is none yet): a version beats none, a higher version a lower.
func (b *boundCapability) moreSpecific(than *boundCapability) bool {
	return than == nil || !than.uri.HasVersion || (b.uri.HasVersion && than.uri.Version.Less(b.uri.Version))
}

// lookup returns an agent's parsed capability_bindings, from the cache
// while it is fresh.
func (o *BindingOverrides) lookup(ctx context.Context, id string) ([]boundCapability, error) {
	now := o.now()
	o.mu.Lock()
	c, ok := o.cache[id]
	o.mu.Unlock()
	if ok && now.Sub(c.read) < overridesTTL {
		return c.bindings, nil
	}
	ag, err := o.agents.Get(ctx, id)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		ag = nil // no such agent: nothing to override, and remembered as such
	case err != nil:
		return nil, err
	}
	var bound []boundCapability
	if ag != nil {
		for key, b := range ag.CapabilityBindings {
			u, err := capability.ParseURI(key)
			if err != nil {
				continue // Apply checked the keys; an unparsable one binds nothing
			}
			bound = append(bound, boundCapability{uri: u, bindings: b})
		}
	}
	o.mu.Lock()
	if len(o.cache) > 10000 {
		clear(o.cache) // many distinct callers: start over rather than grow
	}
	o.cache[id] = cachedBindings{read: now, bindings: bound}
	o.mu.Unlock()
	return bound, nil
}
