package registry_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// toolDef is a registrable definition of uri (scheme:domain/name@1.0 or
// @1.1): an mcp: one bound to its server's tool, an ossa: one native.
func toolDef(uri string) capability.Definition {
	u := capability.MustParseURI(uri)
	d := capability.Definition{URI: uri, Name: u.Name, Domain: u.Domain, Version: u.Version.String() + ".0", Description: "tool " + u.Name,
		Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"}}
	if u.Scheme == capability.SchemeMCP {
		d.Bindings.MCP = &capability.MCPBinding{Server: u.Domain, Tool: u.Name}
	} else {
		d.Bindings.Native = &capability.NativeBinding{Handler: u.Name}
	}
	return d
}

// newSQLiteService is a Service over a new SQLite file, closed with the
// test.
func newSQLiteService(t *testing.T) (*registry.Service, registry.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	svc := registry.NewService(st)
	t.Cleanup(func() { svc.Close() })
	return svc, st
}

// wantTaken checks that registering uris is refused for taking name from
// existing (or for the reserved domain when existing is "").
func wantTaken(t *testing.T, svc *registry.Service, name, existing string, uris ...string) {
	t.Helper()
	defs := make([]capability.Definition, len(uris))
	for i, u := range uris {
		defs[i] = toolDef(u)
	}
	_, err := svc.RegisterBatch(context.Background(), defs)
	var te *registry.ToolNameConflictError
	if !errors.As(err, &te) {
		t.Fatalf("register %v: %v; want a tool-name conflict", uris, err)
	}
	if te.ToolName != name || te.Existing != existing || !strings.Contains(err.Error(), name) || existing != "" && !strings.Contains(err.Error(), existing) {
		t.Errorf("register %v: %+v (%v); want %q taken from %q", uris, te, err, name, existing)
	}
}

func register(t *testing.T, svc *registry.Service, uris ...string) {
	t.Helper()
	defs := make([]capability.Definition, len(uris))
	for i, u := range uris {
		defs[i] = toolDef(u)
	}
	if _, err := svc.RegisterBatch(context.Background(), defs); err != nil {
		t.Fatalf("register %v: %v", uris, err)
	}
}

func TestToolNamesCannotBeTaken(t *testing.T) {
	svc, st := newSQLiteService(t)
	register(t, svc, "mcp:srv/tool_a@1.0")
	// Across schemes, and within mcp: by "." for "_".
	wantTaken(t, svc, "mcp_srv_tool_a", "mcp:srv/tool_a", "ossa:mcp/srv_tool_a@1.0")
	wantTaken(t, svc, "mcp_srv_tool_a", "mcp:srv/tool_a", "mcp:srv/tool.a@1.0")
	// The capability itself: a new version, the same again.
	register(t, svc, "mcp:srv/tool_a@1.1")
	register(t, svc, "mcp:srv/tool_a@1.1")
	// Other names are free, in the same server too.
	register(t, svc, "mcp:srv/tool.b@1.0", "mcp:srv/Tool_A@1.0", "ossa:srv/tool_a@1.0")
	// Within one batch.
	wantTaken(t, svc, "mcp_other_a_b", "mcp:other/a.b", "mcp:other/a.b@1.0", "mcp:other/a_b@1.0")
	// The domain "mcp" is reserved in ossa:, even for a free name.
	wantTaken(t, svc, "mcp_free", "", "ossa:mcp/free@1.0")
	// A capability stored before the rule keeps its name against
	// the mcp: tool that would take it.
	legacy := toolDef("ossa:mcp/x_y@1.0")
	legacy.Stability = capability.StabilityStable
	digest, _ := registry.Digest(&legacy)
	if _, err := st.Put(context.Background(), []registry.Record{{Key: registry.Key{Scheme: "ossa", Domain: "mcp", Name: "x_y", Version: "1.0.0"}, Definition: legacy, Digest: digest}}); err != nil {
		t.Fatal(err)
	}
	wantTaken(t, svc, "mcp_x_y", "ossa:mcp/x_y", "mcp:x/y@1.0")
	// A plain name equal to a long name's hashed one, either way.
	long := "ossa:longnames/" + strings.Repeat("very_long_name_", 5) + "end@1.0"
	hashed := capability.ToolName(strings.TrimSuffix(long, "@1.0"))
	if len(hashed) != capability.MaxToolNameLen {
		t.Fatalf("the test needs a hashed name: %s", hashed)
	}
	plain := "ossa:longnames/" + strings.TrimPrefix(hashed, "longnames_") + "@1.0"
	register(t, svc, long)
	wantTaken(t, svc, hashed, strings.TrimSuffix(long, "@1.0"), plain)
	svc2, _ := newSQLiteService(t)
	register(t, svc2, plain)
	wantTaken(t, svc2, hashed, strings.TrimSuffix(plain, "@1.0"), long)
}

// A domain longer than what a hashed name keeps is found by its start.
func TestToolNameLongDomain(t *testing.T) {
	svc, _ := newSQLiteService(t)
	domain := strings.Repeat("d", 60)
	register(t, svc, "ossa:"+domain+"/x@1.0", "ossa:"+domain+"a/x@1.0", "mcp:"+domain+"/x@1.0")
	// Every registered name is distinct, and a second registration of the
	// same capabilities passes.
	register(t, svc, "ossa:"+domain+"/x@1.0", "mcp:"+domain+"/x@1.0")
}
