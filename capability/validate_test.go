package capability

import (
	"strings"
	"testing"
)

// TestValidateDelegation checks the delegation binding's rules, each
// reported at its field path.
func TestValidateDelegation(t *testing.T) {
	for _, c := range []struct {
		name string
		b    DelegationBinding
		path string // "" when valid
		says string
	}{
		{"url", DelegationBinding{URL: "http://127.0.0.1:8750"}, "", ""},
		{"agent with a token", DelegationBinding{Agent: "ops", TokenEnv: "OPS_TOKEN"}, "", ""},
		{"nowhere", DelegationBinding{Capability: "ossa:math/add@1.0"}, "bindings.delegation", "name the agent or the url"},
		{"relative url", DelegationBinding{URL: "/v1"}, "bindings.delegation.url", ""},
		{"bad capability", DelegationBinding{URL: "http://127.0.0.1", Capability: "add"}, "bindings.delegation.capability", ""},
		{"token_env not a name", DelegationBinding{URL: "http://127.0.0.1", TokenEnv: "MY-TOKEN"}, "bindings.delegation.token_env", "not an environment variable name"},
		{"token_env a value", DelegationBinding{URL: "http://127.0.0.1", TokenEnv: "Bearer abc"}, "bindings.delegation.token_env", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.b
			d := Definition{URI: "ossa:math/add@1.0", Name: "add", Domain: "math", Version: "1.0.0", Description: "Adds.",
				Input: Schema{"type": "object"}, Output: Schema{"type": "object"}, Bindings: Bindings{Delegation: &b}}
			var errs []Issue
			for _, i := range Validate(&d) {
				if i.Severity == SeverityError {
					errs = append(errs, i)
				}
			}
			if c.path == "" {
				if len(errs) > 0 {
					t.Fatalf("valid binding refused: %+v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Path != c.path || !strings.Contains(errs[0].Message, c.says) {
				t.Errorf("issues %+v, want one error at %s saying %q", errs, c.path, c.says)
			}
		})
	}
}
