package policy_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

func TestReadPolicyDocument(t *testing.T) {
	yamlDoc := "granted_permissions: [network.http, 'contacts.*']\nallowed_effects:\n  - network\nmin_trust_tier: community\nrequire_approval: ['ossa:github/*']\n"
	jsonDoc := `{"agent": "scanner", "granted_permissions": ["network.http", "contacts.*"], "allowed_effects": ["network"], "min_trust_tier": "community", "require_approval": ["ossa:github/*"]}`
	for name, doc := range map[string]string{"yaml": yamlDoc, "json": jsonDoc} {
		p, err := policy.Read(name, []byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(p.GrantedPermissions, []string{"network.http", "contacts.*"}) || !slices.Equal(p.AllowedEffects, []string{"network"}) ||
			p.MinTrustTier != "community" || !slices.Equal(p.RequireApproval, []string{"ossa:github/*"}) {
			t.Errorf("%s: read %+v", name, p)
		}
	}
	refused := []struct{ doc, want string }{
		{"", "empty"},
		{"[1, 2]", "a mapping"},
		{"granted_permissions: network", "granted_permissions: want a list of strings, not a string"},
		{"granted_permissions: [1]", "granted_permissions: [0]: want a string, not a number"},
		{"allowed_effects: ['']", "allowed_effects: [0] is empty"},
		{"grants: ['*']", "grants: unknown field: a policy has agent, granted_permissions"},
		{"{", "is not YAML or JSON"},
		{"min_trust_tier: " + strings.Repeat("x", policy.MaxEntryLength+1), "more than 512"},
		{"allowed_effects: [" + strings.Repeat("a,", policy.MaxListEntries) + "a]", "entries, more than 1000"},
		{strings.Repeat(" ", policy.MaxDocumentSize+1), "more than the"},
	}
	for _, tt := range refused {
		_, err := policy.Read("p.yaml", []byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, registry.ErrInvalid) || !strings.Contains(err.Error(), "p.yaml") {
			t.Errorf("Read(%.40q) = %v, want an invalid-input error naming p.yaml and saying %q", tt.doc, err, tt.want)
		}
	}
}

func FuzzReadPolicy(f *testing.F) {
	f.Add([]byte("granted_permissions: ['*']\nallowed_effects: [network]\n"))
	f.Add([]byte(`{"agent":"*","require_approval":["ossa:a/*@1"]}`))
	f.Add([]byte("a: &a [*a, *a]\nb: *a"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := policy.Read("fuzz", data)
		if err != nil {
			if !errors.Is(err, registry.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for _, l := range [][]string{p.GrantedPermissions, p.AllowedEffects, p.RequireApproval} {
			if len(l) > policy.MaxListEntries {
				t.Fatalf("a list of %d entries passed", len(l))
			}
		}
	})
}

func TestListPolicies(t *testing.T) {
	st, err := sqlite.Open(t.Context(), t.TempDir()+"/p.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ps := policy.NewPolicies(st, nil)
	for _, a := range []string{"zed", "*", "alpha"} {
		if err := ps.Put(t.Context(), policy.Policy{Agent: a, AllowedEffects: []string{"*"}}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := ps.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var agents []string
	for _, p := range all {
		agents = append(agents, p.Agent)
	}
	if !slices.Equal(agents, []string{"*", "alpha", "zed"}) {
		t.Errorf("List = %v, want *, alpha, zed", agents)
	}
}
