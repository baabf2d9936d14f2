package sign_test

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/governance/sign"
)

func decodeSig(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }

func TestTier(t *testing.T) {
	s := newSigner(t)
	stranger := newSigner(t)
	signed := s.signed(t)
	tampered := s.signed(t)
	tampered.Description = "changed"
	unsigned := readOne(t, "scan.yaml", scanYAML)
	discovered := func(method string) capability.Definition {
		d := readOne(t, "scan.yaml", scanYAML)
		d.Provenance.Method = method
		return d
	}
	noProvenance := readOne(t, "scan.yaml", scanYAML)
	noProvenance.Provenance = nil

	cases := []struct {
		name    string
		d       capability.Definition
		keys    sign.KeyRing
		byAdmin bool
		want    string
		wantErr any
	}{
		{"signed by a trusted key", signed, s.ring, false, sign.TierVerified, nil},
		{"signed, registered by an admin", signed, s.ring, true, sign.TierVerified, nil},
		{"signed by an unknown key", signed, stranger.ring, false, "", new(*sign.UnknownKeyError)},
		{"signed by an unknown key, by an admin", signed, stranger.ring, true, "", new(*sign.UnknownKeyError)},
		{"signed, changed since", tampered, s.ring, true, "", new(*sign.BadSignatureError)},
		{"malformed attestation", func() capability.Definition {
			d := unsigned
			d.Attestation = &capability.Attestation{}
			return d
		}(), s.ring, false, "", new(*sign.MalformedAttestationError)},
		{"unsigned, by an admin", unsigned, s.ring, true, sign.TierTrusted, nil},
		{"unsigned, manual provenance", unsigned, s.ring, false, sign.TierCommunity, nil},
		{"unsigned, no provenance", noProvenance, nil, false, sign.TierCommunity, nil},
		{"unsigned, Agent OS manifest", discovered("agentos_manifest"), nil, false, sign.TierCommunity, nil},
		{"mcp_introspection", discovered("mcp_introspection"), nil, false, sign.TierUntrusted, nil},
		{"api_introspection", discovered("api_introspection"), nil, false, sign.TierUntrusted, nil},
		{"openapi", discovered("openapi"), nil, false, sign.TierUntrusted, nil},
		{"an unknown method", discovered("llm_synthesis"), nil, false, sign.TierUntrusted, nil},
		{"discovered, by an admin", discovered("mcp_introspection"), nil, true, sign.TierTrusted, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := sign.Tier(&c.d, c.keys, c.byAdmin)
			if c.wantErr != nil {
				if err == nil || !errors.As(err, c.wantErr) || got != "" {
					t.Fatalf("Tier = %q, %v; want no tier and %T", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Tier = %q, %v; want %q", got, err, c.want)
			}
		})
	}

	// A discovered definition signed by a trusted key is verified.
	d := discovered("mcp_introspection")
	if err := sign.Sign(&d, s.priv, ""); err != nil {
		t.Fatal(err)
	}
	v := &sign.Verifier{Keys: s.ring}
	if tier, err := v.Check(t.Context(), &d); err != nil || tier != sign.TierVerified {
		t.Errorf("Verifier.Check(signed discovered) = %q, %v", tier, err)
	}
	if tier, err := v.Check(t.Context(), &unsigned); err != nil || tier != sign.TierCommunity {
		t.Errorf("Verifier.Check(unsigned) = %q, %v", tier, err)
	}
	var none *sign.Verifier
	if _, err := none.Check(t.Context(), &d); !errors.As(err, new(*sign.UnknownKeyError)) {
		t.Errorf("a nil Verifier trusts no key, got %v", err)
	}

	// Admin decides from the registration's context: an unsigned definition
	// registered by an administrator is trusted, by anyone else community.
	type adminKey struct{}
	admin := &sign.Verifier{Keys: s.ring, Admin: func(ctx context.Context) bool { return ctx.Value(adminKey{}) != nil }}
	if tier, err := admin.Check(context.WithValue(t.Context(), adminKey{}, true), &unsigned); err != nil || tier != sign.TierTrusted {
		t.Errorf("Verifier.Check(unsigned, by an admin) = %q, %v; want trusted", tier, err)
	}
	if tier, err := admin.Check(t.Context(), &unsigned); err != nil || tier != sign.TierCommunity {
		t.Errorf("Verifier.Check(unsigned, not by an admin) = %q, %v; want community", tier, err)
	}
}

func TestAtLeast(t *testing.T) {
	for _, c := range []struct {
		tier, min string
		want      bool
	}{
		{sign.TierVerified, sign.TierTrusted, true},
		{sign.TierTrusted, sign.TierTrusted, true},
		{sign.TierCommunity, sign.TierTrusted, false},
		{sign.TierUntrusted, sign.TierCommunity, false},
		{sign.TierCommunity, sign.TierUntrusted, true},
		{"", sign.TierUntrusted, false},
		{sign.TierVerified, "bogus", false},
	} {
		t.Run(c.tier+">="+c.min, func(t *testing.T) {
			if got := sign.AtLeast(c.tier, c.min); got != c.want {
				t.Errorf("AtLeast(%q, %q) = %v", c.tier, c.min, got)
			}
		})
	}
}
