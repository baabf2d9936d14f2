package sign

import (
	"context"
	"slices"

	"github.com/caphub/caphub/capability"
)

// Trust tiers, the values of registry.Record.TrustTier, from the most
// trusted to the least.
const (
	// TierVerified: signed, and the signature verifies with a trusted key.
	TierVerified = "verified"
	// TierTrusted: registered by an administrator (an admin token).
	TierTrusted = "trusted"
	// TierCommunity: registered by hand, by anyone; the default.
	TierCommunity = "community"
	// TierUntrusted: found by a discovery method (MCP or API introspection,
	// an OpenAPI import, a generator) and not reviewed by anyone.
	TierUntrusted = "untrusted"
)

// Tiers lists the trust tiers from the most trusted to the least.
var Tiers = []string{TierVerified, TierTrusted, TierCommunity, TierUntrusted}

// AtLeast reports whether tier is as trusted as min or more. An unknown
// tier (or "", a definition registered before tiers existed) is below every
// known one.
func AtLeast(tier, min string) bool {
	t, m := slices.Index(Tiers, tier), slices.Index(Tiers, min)
	return t >= 0 && m >= 0 && t <= m
}

// authoredMethods are the provenance methods of definitions a person wrote:
// none, "manual", and an Agent OS manifest (which declares its capabilities
// itself; caphub only converts them). Every other method — mcp_introspection,
// api_introspection, openapi, graphql_introspection, a generator, or one
// caphub does not know — means a program derived the definition and nobody
// reviewed it.
var authoredMethods = map[string]bool{"": true, "manual": true, "agentos_manifest": true}

// Discovered reports whether d was derived by a program rather than written
// by a person, from its provenance method (see TierUntrusted).
func Discovered(d *capability.Definition) bool {
	return d.Provenance != nil && !authoredMethods[d.Provenance.Method]
}

// Tier decides the trust tier of d when it is registered:
//
//   - a definition with an attestation is TierVerified when the signature
//     verifies with a key of keys; when it does not (bad signature, unknown
//     key, malformed, other algorithm), Tier returns Verify's error and no
//     tier: a claim of a signature that does not hold is refused, never
//     silently downgraded to an unsigned tier;
//   - otherwise TierTrusted when byAdmin (registered with an admin token);
//   - otherwise TierUntrusted when it was discovered (see Discovered);
//   - otherwise TierCommunity.
func Tier(d *capability.Definition, keys KeyRing, byAdmin bool) (string, error) {
	if d.Attestation != nil {
		if err := Verify(d, keys); err != nil {
			return "", err
		}
		return TierVerified, nil
	}
	switch {
	case byAdmin:
		return TierTrusted, nil
	case Discovered(d):
		return TierUntrusted, nil
	}
	return TierCommunity, nil
}

// Verifier is the registry's trust check: Check, passed to
// registry.WithVerifier, gives each definition registered its tier and
// refuses those whose attestation does not verify.
type Verifier struct {
	// Keys are the trusted public keys. Nil trusts none: every signed
	// definition is then refused with an *UnknownKeyError.
	Keys KeyRing
	// Admin reports whether the registration ctx belongs to is made by an
	// administrator (caphub serve: a request with an admin token). Nil:
	// nobody is, and no registration is TierTrusted.
	Admin func(ctx context.Context) bool
}

// Check returns the tier d is registered with (see Tier), or the reason to
// refuse it.
func (v *Verifier) Check(ctx context.Context, d *capability.Definition) (tier string, err error) {
	var keys KeyRing
	byAdmin := false
	if v != nil {
		keys = v.Keys
		byAdmin = v.Admin != nil && v.Admin(ctx)
	}
	return Tier(d, keys, byAdmin)
}
