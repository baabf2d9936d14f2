package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/builtin"
)

// The registry commands work the same on a local database and through a
// server (--server, the client package).
func TestRegistryCommands(t *testing.T) {
	needCorpus(t)
	modes := map[string]func(t *testing.T) []string{
		"local": func(t *testing.T) []string { return []string{"--db", filepath.Join(t.TempDir(), "caphub.db")} },
		"server": func(t *testing.T) []string {
			if testing.Short() {
				t.Skip("starts the caphub binary")
			}
			p := startServe(t, filepath.Join(t.TempDir(), "caphub.db"))
			return []string{"--server", p.url}
		},
	}
	for mode, setup := range modes {
		t.Run(mode, func(t *testing.T) {
			where := setup(t)
			cli := func(args ...string) (int, string, string) {
				return caphub(t, append(append([]string{}, args...), where...)...)
			}
			code, out, errOut := cli("capability", "register", memoryYAML)
			if code != 0 || strings.Count(out, "registered ") != 4 || !strings.Contains(out, "registered ossa:memory/kg_query@1.0 (1.0.0)") {
				t.Fatalf("register: exit %d\n%s%s", code, out, errOut)
			}
			code, out, _ = cli("capability", "register", memoryYAML)
			if code != 0 || strings.Count(out, "unchanged ") != 4 {
				t.Errorf("re-register: exit %d\n%s", code, out)
			}

			// A server also lists its built-in capabilities.
			all := 4
			if mode == "server" {
				all += len(builtin.Definitions())
			}
			code, out, _ = cli("capability", "list")
			if code != 0 || !strings.Contains(out, "ossa:ml/predict@1.0") || !strings.Contains(out, fmt.Sprintf("%d of %d", all, all)) {
				t.Errorf("list: exit %d\n%s", code, out)
			}
			code, out, _ = cli("capability", "list", "--domain", "memory", "--format", "json")
			var page struct {
				Items []map[string]any
				Total int
			}
			if err := json.Unmarshal([]byte(out), &page); err != nil || code != 0 || page.Total != 3 || len(page.Items) != 3 || page.Items[0]["input"] == nil {
				t.Errorf("list --format json: exit %d %v\n%s", code, err, out)
			}
			code, out, _ = cli("capability", "list", "--limit", "2")
			if code != 0 || !strings.Contains(out, fmt.Sprintf("2 of %d", all)) {
				t.Errorf("list --limit: exit %d\n%s", code, out)
			}

			code, out, _ = cli("capability", "show", "ossa:memory/context_fusion")
			if code != 0 || !strings.Contains(out, "resolves to: ossa:memory/context_fusion@1.0 (1.0.0)") || !strings.Contains(out, "mcp agent-brain/fuse_context; grpc AgentBrainService/FuseContext") {
				t.Errorf("show: exit %d\n%s", code, out)
			}
			code, _, _ = cli("capability", "show", "ossa:memory/nope")
			if code != 1 {
				t.Errorf("show missing: exit %d", code)
			}

			code, out, _ = cli("capability", "search", "semantic search")
			if code != 0 || !strings.Contains(strings.SplitN(out, "\n", 3)[1], "ossa:memory/semantic_search@1.0") {
				t.Errorf("search: exit %d\n%s", code, out)
			}
			// The compact form by default (a table, or summaries in JSON);
			// --view full gives the whole definitions.
			if !strings.Contains(strings.SplitN(out, "\n", 2)[0], "PARAMS") {
				t.Errorf("search table has no PARAMS column:\n%s", out)
			}
			code, out, _ = cli("capability", "search", "semantic search", "--format", "json")
			var sums struct {
				Items []capability.Summary
				Total int
			}
			if err := json.Unmarshal([]byte(out), &sums); err != nil || code != 0 || len(sums.Items) == 0 ||
				sums.Items[0].URI != "ossa:memory/semantic_search@1.0" || sums.Items[0].Params == "" || strings.Contains(out, `"input"`) {
				t.Errorf("search --format json: exit %d %v\n%s", code, err, out)
			}
			code, out, _ = cli("capability", "search", "semantic search", "--view", "full")
			var defs struct{ Items []map[string]any }
			if err := json.Unmarshal([]byte(out), &defs); err != nil || code != 0 || len(defs.Items) == 0 || defs.Items[0]["input"] == nil || defs.Items[0]["bindings"] == nil {
				t.Errorf("search --view full: exit %d %v\n%s", code, err, out)
			}
			code, _, errOut = cli("capability", "search", "x", "--view", "wide")
			if code != 2 || !strings.Contains(errOut, "use compact") {
				t.Errorf("search --view wide: exit %d, want 2 naming the views\n%s", code, errOut)
			}

			code, out, _ = cli("capability", "deprecate", "ossa:memory/kg_query@1.0", "--guide", "use context_fusion", "--sunset", "2020-01-01")
			if code != 1 {
				t.Errorf("deprecate with a sunset in the past: exit %d\n%s", code, out)
			}
			code, out, errOut = cli("capability", "deprecate", "ossa:memory/kg_query@1.0", "--by", "ossa:memory/context_fusion@1.0", "--guide", "use context_fusion")
			if code != 0 || !strings.Contains(out, "deprecated ossa:memory/kg_query@1.0.0") {
				t.Errorf("deprecate: exit %d\n%s%s", code, out, errOut)
			}
			code, out, _ = cli("capability", "show", "ossa:memory/kg_query@1")
			if code != 0 || !strings.Contains(out, "warning: ossa:memory/kg_query@1.0 is deprecated; use ossa:memory/context_fusion@1.0") {
				t.Errorf("show deprecated: exit %d\n%s", code, out)
			}
			code, out, _ = cli("capability", "list", "--stability", "deprecated")
			if code != 0 || !strings.Contains(out, "1 of 1") {
				t.Errorf("list deprecated: exit %d\n%s", code, out)
			}
		})
	}
}

// capability search ranks with the search index: a phrase whose words are
// not all in any capability still finds it, an unknown word is said on
// stderr with the nearest known one, and --explain says why each ranked.
func TestSearchCommandRanksAndExplains(t *testing.T) {
	needCorpus(t)
	t.Setenv("CAPHUB_SERVER", "")
	db := filepath.Join(t.TempDir(), "caphub.db")
	if code, out, errOut := caphub(t, "capability", "register", "--db", db, memoryYAML); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	code, out, errOut := caphub(t, "capability", "search", "find documents by meaning in the vector memory", "--db", db, "--limit", "1", "--explain")
	if code != 0 || !strings.Contains(out, "ossa:memory/semantic_search@1.0") || !strings.Contains(out, "1. ossa:memory/semantic_search@1.0.0  score ") || !strings.Contains(out, `in name`) {
		t.Errorf("search --explain: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = caphub(t, "capability", "search", "semantik search", "--db", db)
	if code != 0 || !strings.Contains(errOut, `no capability has the word "semantik" (did you mean semant`) || !strings.Contains(out, "ossa:memory/semantic_search@1.0") {
		t.Errorf("a misspelt word: %d\n%s\n%s", code, out, errOut)
	}
}
