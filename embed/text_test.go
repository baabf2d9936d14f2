package embed_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/embed"
)

func TestText(t *testing.T) {
	def := &capability.Definition{
		URI: "ossa:security/scan_vulnerabilities@1.0", Name: "scan_vulnerabilities", Domain: "security", Version: "1.0.0",
		Title:       "Scan vulnerabilities",
		Description: "Scans a repository\nfor known\tvulnerabilities.",
		Keywords:    []string{"cve", "audit", "cve"},
		Intents:     []string{"security.scan_repo"},
		Categories:  []string{"crud.read"},
		Display:     &capability.Display{Category: "Security"},
		Input: capability.Schema{"type": "object", "required": []any{"repoURL"}, "properties": map[string]any{
			"severity": map[string]any{"type": "string"}, "repoURL": map[string]any{"type": "string"}, "max_results": map[string]any{"type": "integer"},
		}},
	}
	want := "scan vulnerabilities (security). Scan vulnerabilities. Scans a repository for known vulnerabilities. " +
		"Keywords: cve, audit. Intents: security scan repo. Categories: security, crud read. Parameters: repo url, max results, severity"
	if got := embed.Text(def); got != want {
		t.Errorf("Text =\n%q\nwant\n%q", got, want)
	}
}

func TestTextBounded(t *testing.T) {
	def := &capability.Definition{
		Name: "getHTTPServerStatus2xx", Domain: "net-ops", Title: strings.Repeat("title ", 100),
		Description: strings.Repeat("déjà vu ", 2000),
	}
	for i := range 100 {
		def.Keywords = append(def.Keywords, strings.Repeat("k", i+1))
	}
	got := embed.Text(def)
	if len(got) > embed.MaxTextBytes || !utf8.ValidString(got) {
		t.Fatalf("Text is %d bytes (limit %d), valid UTF-8 %v", len(got), embed.MaxTextBytes, utf8.ValidString(got))
	}
	if !strings.HasPrefix(got, "get http server status2xx (net ops). title title") {
		t.Errorf("Text starts %.60q; want the name split into words, then the domain and the title", got)
	}
	if !strings.Contains(got, "déjà vu") || !strings.Contains(got, "Keywords: k, kk, kkk") || strings.Count(got, ", k") != 31 {
		t.Errorf("Text %q…: want the description cut to make room for the first 32 keywords", got[len(got)-200:])
	}
}
