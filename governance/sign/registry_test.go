package sign_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/governance/sign"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// What the registry stores of a signed definition still verifies: after it
// completed the definition (stability, inferred domains and categories),
// after the store's JSON round trip, and after Deprecate. This guards the
// payload rules against changes in the registry.
func TestStoredRecordVerifies(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	svc := registry.NewService(st, registry.WithLogger(slog.New(slog.DiscardHandler)))
	defer svc.Close()
	s := newSigner(t)

	d := readOne(t, "scan.yaml", scanYAML)
	d.Stability = "" // the registry sets it
	// A definition signed elsewhere, without the domains and categories
	// caphub's Sign writes: the registry infers them.
	d.Domains, d.Categories = nil, nil
	payload, _ := sign.Payload(&d)
	d.Attestation = &capability.Attestation{KeyID: s.id, Algorithm: sign.Algorithm, Signature: encodeSig(signBytes(s, payload))}
	d.Domains, d.Categories = nil, nil
	if err := sign.Verify(&d, s.ring); err != nil {
		t.Fatal(err)
	}

	// An mcp: capability, whose inferred domains come from its server.
	m := capability.Definition{URI: "mcp:github/list_issues@1.0", Name: "list_issues", Domain: "github", Version: "1.0.0",
		Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
		Bindings:   capability.Bindings{MCP: &capability.MCPBinding{Server: "modelcontextprotocol/github", Tool: "list_issues"}},
		Provenance: &capability.Provenance{Method: "mcp_introspection", CreatedAt: "2025-01-01T00:00:00Z"}}
	if err := sign.Sign(&m, s.priv, ""); err != nil {
		t.Fatal(err)
	}
	mBare := m
	mBare.Domains, mBare.Categories = nil, nil

	replacement := readOne(t, "scan.yaml", scanYAML)
	replacement.URI, replacement.Version = "ossa:security/scan_vulnerabilities@2.0", "2.0.0"
	for _, def := range []capability.Definition{d, mBare, replacement} {
		if _, err := svc.Register(ctx, def); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Deprecate(ctx, "ossa", "security", "scan_vulnerabilities", "1.0.3",
		registry.DeprecateRequest{DeprecatedBy: "ossa:security/scan_vulnerabilities@2.0", SunsetDate: time.Now().AddDate(1, 0, 0).Format("2006-01-02"), MigrationGuide: "use 2.0"}); err != nil {
		t.Fatal(err)
	}

	for _, k := range []registry.Key{{Scheme: "ossa", Domain: "security", Name: "scan_vulnerabilities", Version: "1.0.3"}, {Scheme: "mcp", Domain: "github", Name: "list_issues", Version: "1.0.0"}} {
		rec, err := svc.Get(ctx, k.Scheme, k.Domain, k.Name, k.Version)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Definition.Domains) == 0 {
			t.Errorf("%s: the registry did not infer domains; the test no longer checks inference", k)
		}
		if err := sign.Verify(&rec.Definition, s.ring); err != nil {
			t.Errorf("stored %s (stability %s): %v", k, rec.Definition.Stability, err)
		}
		if tier, err := (&sign.Verifier{Keys: s.ring}).Check(t.Context(), &rec.Definition); err != nil || tier != sign.TierVerified {
			t.Errorf("stored %s: tier %q, %v", k, tier, err)
		}
	}
	rec, _ := svc.Get(ctx, "ossa", "security", "scan_vulnerabilities", "1.0.3")
	if rec.Definition.Stability != capability.StabilityDeprecated {
		t.Errorf("stability %q: the deprecation did not happen", rec.Definition.Stability)
	}
}
