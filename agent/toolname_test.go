package agent_test

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/caphub/caphub/agent"
)

// strictToolNameRE is what OpenAI and Anthropic accept as a function name.
var strictToolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func hash8(base string) string {
	s := sha256.Sum256([]byte(base))
	return hex.EncodeToString(s[:])[:8]
}

// TestToolName uses the MCP gateway's test vectors (server/mcpgw
// toolname_test.go): an agent's tool names must be the gateway's.
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
		got := agent.ToolName(tc.uri)
		if got != tc.want {
			t.Errorf("ToolName(%q) = %q, want %q", tc.uri, got, tc.want)
		}
		if !strictToolNameRE.MatchString(got) {
			t.Errorf("ToolName(%q) = %q does not match %s", tc.uri, got, strictToolNameRE)
		}
	}
	if n := len(agent.ToolName(long)); n != agent.MaxToolNameLen {
		t.Errorf("a cut name has %d characters, want %d", n, agent.MaxToolNameLen)
	}
}

func FuzzToolName(f *testing.F) {
	for _, s := range []string{"ossa:everruns/add@1.0", "mcp:files/fs.read-File@1.0", "", "é/ü@", strings.Repeat("x", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		got := agent.ToolName(uri)
		if !strictToolNameRE.MatchString(got) {
			t.Fatalf("ToolName(%q) = %q does not match %s", uri, got, strictToolNameRE)
		}
		if again := agent.ToolName(uri); again != got {
			t.Fatalf("ToolName(%q) is not stable", uri)
		}
	})
}
