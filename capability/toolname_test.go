package capability_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
)

var strictNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func hash8(base string) string {
	s := sha256.Sum256([]byte(base))
	return hex.EncodeToString(s[:])[:8]
}

func TestToolName(t *testing.T) {
	long := "mcp:some-long-server-name/" + strings.Repeat("very_long_tool_name_", 5) + "end@1.0"
	cases := []struct{ uri, want string }{
		{"ossa:everruns/add@1.0", "everruns_add"},
		{"ossa:everruns/add", "everruns_add"},
		{"ossa:everruns/add@2", "everruns_add"},
		{"ossa:security/scan_vulnerabilities@1.0", "security_scan_vulnerabilities"},
		{"ossa:github-issues/create@1.0", "github-issues_create"},
		{"mcp:github/create_issue@1.0", "mcp_github_create_issue"},
		{"mcp:files/fs.read-File@1.0", "mcp_files_fs_read-File"},
		{long, "mcp_some-long-server-name_very_long_tool_name_very_long_" + hash8("mcp:some-long-server-name/"+strings.Repeat("very_long_tool_name_", 5)+"end")},
		{"not a uri", "not_a_uri"},
		{"", "cap_" + hash8("")},
	}
	for _, tc := range cases {
		t.Run(tc.uri, func(t *testing.T) {
			got := capability.ToolName(tc.uri)
			if got != tc.want {
				t.Errorf("ToolName(%q) = %q, want %q", tc.uri, got, tc.want)
			}
			if !strictNameRE.MatchString(got) {
				t.Errorf("ToolName(%q) = %q does not match %s", tc.uri, got, strictNameRE)
			}
			if again := capability.ToolName(tc.uri); again != got {
				t.Errorf("ToolName(%q) is not stable: %q then %q", tc.uri, got, again)
			}
		})
	}
	if n := len(capability.ToolName(long)); n != capability.MaxToolNameLen {
		t.Errorf("long name has %d characters, want %d", n, capability.MaxToolNameLen)
	}
}

func TestToolNames(t *testing.T) {
	// ossa:mcp/x_y and mcp:x/y both map to mcp_x_y; mcp:a_b/c and
	// mcp:a/b_c both to mcp_a_b_c.
	uris := []string{"ossa:mcp/x_y@1.0", "mcp:x/y@1.0", "ossa:everruns/add@1.0", "mcp:a_b/c@1.0", "mcp:a/b_c@1.0", "ossa:mcp/x_y@1.1"}
	got := capability.ToolNames(uris)
	if got["ossa:everruns/add@1.0"] != "everruns_add" {
		t.Errorf("a name without collision changed: %q", got["ossa:everruns/add@1.0"])
	}
	want := map[string]string{
		"ossa:mcp/x_y@1.0": "mcp_x_y_" + hash8("ossa:mcp/x_y"),
		"ossa:mcp/x_y@1.1": "mcp_x_y_" + hash8("ossa:mcp/x_y"),
		"mcp:x/y@1.0":      "mcp_x_y_" + hash8("mcp:x/y"),
		"mcp:a_b/c@1.0":    "mcp_a_b_c_" + hash8("mcp:a_b/c"),
		"mcp:a/b_c@1.0":    "mcp_a_b_c_" + hash8("mcp:a/b_c"),
	}
	for uri, w := range want {
		if got[uri] != w {
			t.Errorf("ToolNames: %s → %q, want %q", uri, got[uri], w)
		}
	}
	// Order does not matter.
	rev := make([]string, len(uris))
	for i, u := range uris {
		rev[len(uris)-1-i] = u
	}
	for uri, name := range capability.ToolNames(rev) {
		if got[uri] != name {
			t.Errorf("ToolNames depends on order: %s → %q, then %q", uri, got[uri], name)
		}
	}
	// Distinct capabilities, distinct names.
	seen := map[string]string{}
	for uri, name := range got {
		base, _, _ := strings.Cut(uri, "@")
		if other, ok := seen[name]; ok && other != base {
			t.Errorf("%s and %s share the name %q", other, base, name)
		}
		seen[name] = base
	}
}

// TestToolNamesManyLong checks uniqueness when many long names share their
// first 55 characters (all hashed).
func TestToolNamesManyLong(t *testing.T) {
	var uris []string
	for i := range 2000 {
		uris = append(uris, fmt.Sprintf("mcp:server/%s_%d@1.0", strings.Repeat("x", 80), i))
	}
	names := capability.ToolNames(uris)
	seen := map[string]bool{}
	for _, u := range uris {
		n := names[u]
		if seen[n] {
			t.Fatalf("duplicate name %q", n)
		}
		seen[n] = true
		if !strictNameRE.MatchString(n) {
			t.Fatalf("name %q does not match %s", n, strictNameRE)
		}
		if n != capability.ToolName(u) {
			t.Fatalf("%s: ToolNames %q, ToolName %q (no collision, so they must agree)", u, n, capability.ToolName(u))
		}
	}
}

func FuzzToolName(f *testing.F) {
	for _, s := range []string{"ossa:everruns/add@1.0", "mcp:a/b.c", "", "x:y/z", "mcp:" + strings.Repeat("é", 100) + "/t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		n := capability.ToolName(uri)
		if !strictNameRE.MatchString(n) {
			t.Fatalf("ToolName(%q) = %q does not match %s", uri, n, strictNameRE)
		}
	})
}
