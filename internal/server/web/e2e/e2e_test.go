// Package e2e drives caphub's web UI in headless Chromium (Debian's
// chromium, through npm playwright-core) against a real `caphub serve` on a
// temporary SQLite database: the scenarios are in browser.mjs, the
// screenshots go to .cache/screenshots/ (git-ignored). The tests skip, saying
// what to install, where Chromium, playwright-core or Node 22 is missing.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/testpeers"
)

// chromiumPath is Debian's chromium, or CAPHUB_CHROMIUM.
func chromiumPath(t testing.TB) string {
	t.Helper()
	p := os.Getenv("CAPHUB_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("the web UI's browser tests need Chromium at %s (Debian: apt-get install -y chromium, as .ci/run does; or set CAPHUB_CHROMIUM)", p)
	}
	return p
}

// caphubBinary builds caphub once per test run (removed by TestMain).
func caphubBinary(t testing.TB) string { return testpeers.Caphub(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	testpeers.RemoveBuilt()
	os.Exit(code)
}

// site is one caphub installation: a database and a running serve.
type site struct {
	tb   testing.TB
	dir  string
	db   string
	url  string
	logs *bytes.Buffer
	mu   sync.Mutex
	env  []string // NAME=value added to the environment of serve and the CLI
}

func newSite(t testing.TB) *site {
	t.Helper()
	dir := t.TempDir()
	return &site{tb: t, dir: dir, db: filepath.Join(dir, "caphub.db"), logs: &bytes.Buffer{}}
}

// caphub runs a CLI command on the site's database and returns its output.
func (s *site) caphub(args ...string) string {
	s.tb.Helper()
	cmd := exec.Command(caphubBinary(s.tb), args...)
	cmd.Dir = s.dir
	cmd.Env = append(append(os.Environ(), "CAPHUB_DB="+s.db), s.env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		s.tb.Fatalf("caphub %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

func (s *site) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.logs.Write(p) }

// serve starts caphub serve on a free loopback port until the test ends.
func (s *site) serve(flags ...string) {
	s.tb.Helper()
	s.url = testpeers.StartServe(s.tb, testpeers.ServeOptions{Dir: s.dir, Env: append([]string{"CAPHUB_DB=" + s.db}, s.env...), Flags: flags, Logs: s, LogText: s.logged}).URL
}

// logged is what serve has written so far.
func (s *site) logged() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// report is what browser.mjs prints.
type report struct {
	Scenario string         `json:"scenario"`
	Console  []string       `json:"console"`
	Checks   map[string]any `json:"checks"`
}

// screenshots is the git-ignored folder the scenarios write to.
func screenshots(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(testpeers.RepoRoot(t), ".cache", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browse runs one scenario of browser.mjs against the site; it skips the
// test when a peer is missing.
func (s *site) browse(scenario string, params map[string]any) report {
	return s.run("browser.mjs", scenario, params)
}

// run runs one scenario of a browser script (browser.mjs, ops.mjs) and
// returns its report; it fails the test if the script fails, if a page is
// wider than the screen where the script checked (fits:NAME), or if the
// console shows a CSP violation or an uncaught error.
func (s *site) run(file, scenario string, params map[string]any) report {
	t := s.tb
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["chromium"] = chromiumPath(t)
	testpeers.NPMPackage(t, "playwright-core")
	script, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := json.Marshal(params)
	out, errOut, err := testpeers.RunNode(t, 3*time.Minute, script, testpeers.NPMDir(t), s.url, scenario, screenshots(t), string(p))
	if err != nil {
		t.Fatalf("%s scenario %s: %v\n%s\n%s", file, scenario, err, tail(errOut, 6000), tail(out, 2000))
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%s scenario %s printed no report: %v\n%s\n%s", file, scenario, err, out, errOut)
	}
	for k, v := range r.Checks {
		if strings.HasPrefix(k, "fits:") && v != true {
			t.Errorf("%s at width %v: the page %s is wider than the screen", scenario, params["width"], strings.TrimPrefix(k, "fits:"))
		}
	}
	// The pages keep to the CSP: a violation, or an uncaught error, shows in the console.
	for _, line := range r.Console {
		if strings.Contains(line, "Content Security Policy") || strings.HasPrefix(line, "pageerror") {
			t.Errorf("%s: the browser console says %s", scenario, line)
		}
	}
	return r
}

// approveWhenAsked approves, through the API, the approval whose id the
// browser script writes to handoff/approval, then writes handoff/approved.
func approveWhenAsked(base, handoff string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		id, err := os.ReadFile(filepath.Join(handoff, "approval"))
		if err != nil || len(id) == 0 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		resp, err := http.Post(base+"/v1/approvals/"+string(id)+"/approve", "application/json", strings.NewReader("{}"))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("approve %s: %s", id, resp.Status)
		}
		return os.WriteFile(filepath.Join(handoff, "approved"), nil, 0o644)
	}
	return fmt.Errorf("the browser never asked for an approval")
}

func str(r report, key string) string {
	v, _ := r.Checks[key].(string)
	return v
}

// register loads the fixtures: two versions of demo/lint (2.0.0 adds a
// required input), and two more capabilities; the built-ins (everruns/add,
// a native binding) come with serve.
func (s *site) register() {
	for _, f := range []string{"lint-1.0.0.json", "lint-2.0.0.json", "more.json"} {
		p, err := filepath.Abs(filepath.Join("testdata", f))
		if err != nil {
			s.tb.Fatal(err)
		}
		s.caphub("capability", "register", p)
	}
}

// TestBrowser: with tokens, the UI asks for one; then search → open a
// capability → read its schema → try it (inline validation, then the
// output); compare two versions and see the breaking change; a token
// without the read scope sees the refusal's detail; a wrong token brings
// the login back; nothing is kept in a cookie.
func TestBrowser(t *testing.T) {
	chromiumPath(t)
	testpeers.NPMPackage(t, "playwright-core")
	testpeers.Node22(t)
	s := newSite(t)
	s.register()
	user := s.caphub("token", "create", "ui-user", "--scope", "read", "--scope", "invoke")
	invokeOnly := s.caphub("token", "create", "ui-invoker", "--scope", "invoke")
	s.serve()

	t.Run("browse", func(t *testing.T) {
		s.tb = t
		r := s.browse("browse", map[string]any{"token": user})
		if got := str(r, "defaultRoute"); got != "#/catalog" {
			t.Errorf("the default route is %q, want #/catalog", got)
		}
		if got := str(r, "catalogHash"); got != "#/catalog?q=add+two+numbers" {
			t.Errorf("the search is not in the address: %q", got)
		}
		if got := str(r, "title"); !strings.HasPrefix(got, "Add") {
			t.Errorf("capability page title %q", got)
		}
		schema := str(r, "inputSchema")
		for _, want := range []string{"a", "b", "number", "required"} {
			if !strings.Contains(schema, want) {
				t.Errorf("the input schema tree lacks %q:\n%s", want, schema)
			}
		}
		if got := str(r, "toolName"); got != "everruns_add" {
			t.Errorf("MCP tool name %q, want everruns_add", got)
		}
		if v := str(r, "validation"); !strings.Contains(v, "a is required") || !strings.Contains(v, "b is required") {
			t.Errorf("invoking with empty fields: %q, want both fields required", v)
		}
		if fe, _ := r.Checks["fieldErrors"].([]any); len(fe) != 2 {
			t.Errorf("inline field messages: %v, want 2", fe)
		}
		if str(r, "outcome") != "ok" || !strings.Contains(str(r, "result"), "5.5") || !strings.Contains(str(r, "result"), "native") || !strings.Contains(str(r, "result"), "Attempts") {
			t.Errorf("Try it: outcome %q:\n%s", str(r, "outcome"), str(r, "result"))
		}
		if got := str(r, "focusAfterRoute"); got != "page" {
			t.Errorf("after a route change the focus is on %q, want main#page", got)
		}
		if got := str(r, "firstTab"); got != "← Catalog" {
			t.Errorf("the first Tab stop in the page is %q, want the link back to the catalog", got)
		}
		if got := str(r, "focusAfterInvoke"); got != "try-run" {
			t.Errorf("after invoking, the focus is on %q, want the Invoke button still", got)
		}
	})

	t.Run("diff", func(t *testing.T) {
		s.tb = t
		r := s.browse("diff", map[string]any{"token": user})
		d := str(r, "diff")
		for _, want := range []string{"breaking change", "from v1.0.0 to v2.0.0", "input.properties.config", "major", "the version bump is large enough"} {
			if !strings.Contains(d, want) {
				t.Errorf("the diff lacks %q:\n%s", want, d)
			}
		}
		if !strings.Contains(str(r, "versions"), "v2.0.0") || !strings.Contains(str(r, "versions"), "v1.0.0") {
			t.Errorf("timeline: %s", str(r, "versions"))
		}
		if o := str(r, "outputSchema"); !strings.Contains(o, "finding") || !strings.Contains(o, "line") || !strings.Contains(o, "≥ 1") {
			t.Errorf("the output schema does not follow its $ref: %s", o)
		}
		if n, _ := r.Checks["phoneOverflow"].(float64); n > 0 {
			t.Errorf("at a phone's width the capability page is %v px wider than the screen", n)
		}
		if b := str(r, "backwards"); !strings.Contains(b, "not satisfied") {
			t.Errorf("2.0.0 → 1.0.0 is not flagged: %s", b)
		}
	})

	t.Run("forbidden", func(t *testing.T) {
		s.tb = t
		r := s.browse("forbidden", map[string]any{"token": invokeOnly})
		if p := str(r, "problem"); !strings.Contains(p, "403") || !strings.Contains(p, `needs scope "read"`) || !strings.Contains(p, "Needed scope: read") {
			t.Errorf("the refusal shown: %q", p)
		}
	})

	t.Run("unauthorized", func(t *testing.T) {
		s.tb = t
		r := s.browse("unauthorized", nil)
		if str(r, "reason") == "" {
			t.Error("the login form came back without the reason")
		}
		if stored, _ := r.Checks["stored"].([]any); len(stored) != 0 {
			t.Errorf("a refused token stays in session storage: %v", stored)
		}
		if n, _ := r.Checks["cookies"].(float64); n != 0 {
			t.Errorf("%v cookies set, want none", n)
		}
	})

	t.Run("helpers", func(t *testing.T) {
		s.tb = t
		r := s.browse("helpers", map[string]any{"token": user})
		u, _ := r.Checks["units"].(map[string]any)
		for key, want := range map[string]any{
			"route": "capability|a.b|x y@1.2|mcp", "routeDefault": "catalog",
			"hash": "#/capability/fs.local/read_file@1.0.3?scheme=mcp",
			"deep": true, "text": `<img src=x onerror="window.pwned=9">3ab|0`, "style": "refused",
			"value": `{"name":"abc","n":3,"kind":"x","tags":["t"]}`, "labels": true,
		} {
			if fmt.Sprint(u[key]) != fmt.Sprint(want) {
				t.Errorf("%s = %v, want %v", key, u[key], want)
			}
		}
		if c := fmt.Sprint(u["cycle"]); !strings.Contains(c, "child") || !strings.Contains(c, "recursive") {
			t.Errorf("a recursive schema: %q", c)
		}
		if n, _ := u["deepItems"].(float64); n < 8 || n > 10 {
			t.Errorf("a 21-level schema drew %v levels, want the bound (8) and a note", n)
		}
		if c := fmt.Sprint(u["unresolved"]); !strings.Contains(c, "unresolved #/$defs/none") {
			t.Errorf("an unresolved $ref: %q", c)
		}
		msgs := func(k string) string { return fmt.Sprint(u[k]) }
		for _, want := range []string{"name is required", "n is required", "kind is required"} {
			if !strings.Contains(msgs("empty"), want) {
				t.Errorf("validating an empty form: %s, want %q", msgs("empty"), want)
			}
		}
		for _, want := range []string{"name must be at least 2 characters", "n must be a whole number", "tags is not valid JSON"} {
			if !strings.Contains(msgs("bad"), want) {
				t.Errorf("validating wrong values: %s, want %q", msgs("bad"), want)
			}
		}
		if msgs("good") != "[]" {
			t.Errorf("validating right values: %s, want none", msgs("good"))
		}
		if str(r, "pwned") != "no" {
			t.Errorf("markup from the API ran: window.pwned = %s", str(r, "pwned"))
		}
		if n, _ := r.Checks["injected"].(float64); n != 0 {
			t.Errorf("%v elements from the API's markup in the page", n)
		}
		if p := str(r, "hostilePage"); !strings.Contains(p, "<script>window.pwned = 1</script>Hostile <b>title</b>") || !strings.Contains(p, `<svg onload="window.pwned=4">`) {
			t.Errorf("the hostile text is not shown as text:\n%s", p)
		}
	})

	t.Run("pending", func(t *testing.T) {
		held := newSite(t)
		held.env = []string{"CAPHUB_HUMAN_APPROVAL_REQUIRED=1"}
		held.serve()
		handoff := t.TempDir()
		approved := make(chan error, 1)
		go func() { approved <- approveWhenAsked(held.url, handoff) }()
		r := held.browse("pending", map[string]any{"handoff": handoff})
		if err := <-approved; err != nil {
			t.Fatal(err)
		}
		if str(r, "beforeApproval") != "pending" || !strings.Contains(str(r, "afterApproval"), `"result": 3`) {
			t.Errorf("held, then approved: before %q, after:\n%s", str(r, "beforeApproval"), str(r, "afterApproval"))
		}
		if str(r, "outcome") != "pending" || !strings.HasPrefix(str(r, "approval"), "apr") && str(r, "approval") == "" {
			t.Errorf("a held call: outcome %q approval %q:\n%s", str(r, "outcome"), str(r, "approval"), str(r, "result"))
		}
		if n, _ := r.Checks["link"].(float64); n != 1 {
			t.Errorf("no link to the Approvals page:\n%s", str(r, "result"))
		}
	})

	t.Run("pages", func(t *testing.T) {
		s.tb = t
		s.browse("pages", map[string]any{"token": user, "pages": []string{"catalog", "overview", "servers", "agents", "approvals", "audit"}})
	})
}
