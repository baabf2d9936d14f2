package security

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Page sizes the REST API promises (server/rest: DefaultPageSize,
// MaxPageSize).
const (
	defaultPage = 100
	maxPage     = 1000
)

// bulkDefinitions is a batch registration body of n capabilities
// ossa:<domain>/cap_<i>.
func bulkDefinitions(domain string, n int) string {
	defs := make([]map[string]any, n)
	for i := range defs {
		name := fmt.Sprintf("cap_%05d", i)
		defs[i] = map[string]any{
			"uri": "ossa:" + domain + "/" + name + "@1.0", "name": name, "domain": domain, "version": "1.0.0",
			"description": "bulk capability " + name + " for paging",
			"input":       map[string]any{"type": "object"}, "output": map[string]any{"type": "object"},
			"bindings": map[string]any{"http": map[string]any{"method": "GET", "url": "http://127.0.0.1:9/" + name}},
		}
	}
	b, _ := json.Marshal(map[string]any{"capabilities": defs})
	return string(b)
}

// register posts a registration body and fails the test unless it is
// accepted.
func (s *site) register(body string) {
	s.t.Helper()
	if code, out, _ := s.do(req{method: "POST", path: "/registry/capabilities", body: body}); code != http.StatusCreated && code != http.StatusOK {
		s.t.Fatalf("register: %d %.500s", code, out)
	}
}

type listPage struct {
	Items      []json.RawMessage `json:"items"`
	Total      int               `json:"total"`
	NextCursor string            `json:"next_cursor"`
}

// Break 7: a list without a limit returned every capability at once (32 MB
// at 120k capabilities). Every list answers at most the default page, with
// a cursor that reaches everything.
func TestListWithoutLimitIsPaged(t *testing.T) {
	const n = 450
	s := newSite(t)
	s.serve()
	s.register(bulkDefinitions("bulk", n))

	for _, path := range []string{"/registry/capabilities", "/registry/capabilities/bulk", "/registry/search?q=bulk", "/registry/search", "/v1/capabilities"} {
		code, body, hdr := s.do(req{method: "GET", path: path})
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %.300s", path, code, body)
		}
		var p listPage
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if len(p.Items) > defaultPage || p.NextCursor == "" {
			t.Errorf("GET %s without limit: %d items, next_cursor %q; want at most %d and a cursor", path, len(p.Items), p.NextCursor, defaultPage)
			continue
		}
		if !strings.Contains(hdr.Get("Link"), `rel="next"`) {
			t.Errorf("GET %s: no Link rel=next header (%q)", path, hdr.Get("Link"))
		}
		// Following the cursors reaches every capability exactly once.
		seen := map[string]bool{}
		for pages := 0; ; pages++ {
			for _, it := range p.Items {
				var d struct{ URI, ID string }
				_ = json.Unmarshal(it, &d)
				if seen[d.URI+d.ID] {
					t.Fatalf("GET %s: %s twice", path, d.URI+d.ID)
				}
				seen[d.URI+d.ID] = true
			}
			if p.NextCursor == "" || pages > n {
				break
			}
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			code, body, _ = s.do(req{method: "GET", path: path + sep + "cursor=" + url.QueryEscape(p.NextCursor)})
			if code != http.StatusOK {
				t.Fatalf("GET %s next page: %d %.300s", path, code, body)
			}
			p = listPage{}
			if err := json.Unmarshal([]byte(body), &p); err != nil {
				t.Fatal(err)
			}
		}
		if len(seen) < n {
			t.Errorf("GET %s: the cursors reached %d items, want at least %d", path, len(seen), n)
		}
	}

	// The YAML index is paged the same way, continued by its Link header.
	code, body, hdr := s.do(req{method: "GET", path: "/registry/index.yaml"})
	if code != http.StatusOK {
		t.Fatalf("GET /registry/index.yaml: %d %.300s", code, body)
	}
	if entries := strings.Count(body, "uri: "); entries > defaultPage || !strings.Contains(hdr.Get("Link"), "cursor=") {
		t.Errorf("GET /registry/index.yaml: %d entries, Link %q; want at most %d and a next link", entries, hdr.Get("Link"), defaultPage)
	}

	// The CLI against the server still lists everything (it follows cursors).
	out, errOut, exit := s.caphub("capability", "list", "--domain", "bulk", "--server", s.url, "--format", "json")
	if exit != 0 {
		t.Fatalf("caphub capability list --server: exit %d\n%s", exit, errOut)
	}
	var all listPage
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all.Items) != n {
		t.Errorf("caphub capability list --server: %d items (%v), want %d", len(all.Items), err, n)
	}
}

// Break 7: limit had no maximum. A limit above it is a 400 problem naming
// the parameter and the maximum, on every list.
func TestListLimitOverMaximumRefused(t *testing.T) {
	s := newSite(t)
	s.serve()
	over := fmt.Sprint(maxPage + 1)
	for _, path := range []string{
		"/registry/capabilities", "/registry/capabilities/everruns", "/registry/capabilities/everruns/get_current_time",
		"/registry/search", "/registry/index.yaml", "/v1/capabilities", "/v1/approvals", "/v1/servers", "/v1/agents",
	} {
		code, body, hdr := s.do(req{method: "GET", path: path + "?limit=" + over})
		if code != http.StatusBadRequest || hdr.Get("Content-Type") != "application/problem+json" ||
			!strings.Contains(body, "limit") || !strings.Contains(body, fmt.Sprint(maxPage)) {
			t.Errorf("GET %s?limit=%s: %d %s %.300s; want a 400 problem naming limit and %d", path, over, code, hdr.Get("Content-Type"), body, maxPage)
		}
		if code, body, _ := s.do(req{method: "GET", path: path + "?limit=" + fmt.Sprint(maxPage)}); code != http.StatusOK {
			t.Errorf("GET %s?limit=%d: %d %.300s", path, maxPage, code, body)
		}
	}
}

// Break 8: one caller created 24,407 pending approvals in 20 s. The same
// call again gives the same pending approval; past the per-caller cap a
// new one is refused, saying what to do.
func TestApprovalsDeduplicatedAndCapped(t *testing.T) {
	const limit = 100 // policy.DefaultMaxPendingApprovals
	s := newSite(t, "CAPHUB_HUMAN_APPROVAL_REQUIRED=true")
	s.serve()
	invoke := func(caller, tz string) (int, map[string]any) {
		t.Helper()
		code, body, _ := s.do(req{method: "POST", path: "/v1/invoke", header: map[string]string{"X-Caphub-Agent": caller},
			body: fmt.Sprintf(`{"uri": "ossa:everruns/get_current_time", "input": {"timezone": %q}}`, tz)})
		var p map[string]any
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatalf("invoke: %d %s", code, body)
		}
		return code, p
	}
	approvalID := func(p map[string]any) string {
		d, _ := p["details"].(map[string]any)
		id, _ := d["approval_id"].(string)
		return id
	}
	code, first := invoke("flooder", "UTC")
	if code != http.StatusAccepted || approvalID(first) == "" {
		t.Fatalf("first call: %d %v; want 202 APPROVAL_REQUIRED", code, first)
	}
	for range 5 {
		if code, p := invoke("flooder", "UTC"); code != http.StatusAccepted || approvalID(p) != approvalID(first) {
			t.Fatalf("the same call again: %d approval %q; want the pending %q", code, approvalID(p), approvalID(first))
		}
	}
	pending := func(caller string) int {
		t.Helper()
		_, body, _ := s.do(req{method: "GET", path: "/v1/approvals?status=pending&limit=1000"})
		var l struct {
			Items []struct{ Agent string } `json:"items"`
		}
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatalf("list approvals: %s", body)
		}
		n := 0
		for _, a := range l.Items {
			if a.Agent == caller {
				n++
			}
		}
		return n
	}
	if n := pending("flooder"); n != 1 {
		t.Fatalf("%d pending approvals after 6 identical calls, want 1", n)
	}
	for i := 1; i < limit; i++ {
		if code, p := invoke("flooder", fmt.Sprintf("Etc/GMT+%d/%d", i%12, i)); code != http.StatusAccepted {
			t.Fatalf("call %d of %d: %d %v", i+1, limit, code, p)
		}
	}
	code, p := invoke("flooder", "Europe/Paris")
	detail, _ := p["detail"].(string)
	if code != http.StatusTooManyRequests || !strings.Contains(detail, fmt.Sprint(limit)) || !strings.Contains(detail, "approve") {
		t.Fatalf("call past the cap: %d %v; want 429 naming the limit and what to do", code, p)
	}
	if n := pending("flooder"); n != limit {
		t.Errorf("%d pending approvals, want the cap %d", n, limit)
	}
	// Another caller is not blocked by the flooder; a decision frees room.
	if code, p := invoke("someone-else", "UTC"); code != http.StatusAccepted {
		t.Errorf("another caller: %d %v", code, p)
	}
	if code, body, _ := s.do(req{method: "POST", path: "/v1/approvals/" + approvalID(first) + "/deny"}); code != http.StatusOK {
		t.Fatalf("deny: %d %s", code, body)
	}
	if code, p := invoke("flooder", "Europe/Paris"); code != http.StatusAccepted {
		t.Errorf("after a decision: %d %v; want a new pending approval", code, p)
	}
}

// Break 8: registering ossa:mcp/srv_tool_a renamed the MCP tool
// mcp_srv_tool_a of mcp:srv/tool_a (both got hashed names). A registration
// that would take another capability's tool name is refused, and the
// existing tool keeps its name.
func TestToolNameCannotBeHijacked(t *testing.T) {
	s := newSite(t)
	s.serve()
	mcpTool := func(name string) string {
		return fmt.Sprintf(`{"capability": {"uri": "mcp:srv/%s@1.0", "name": %q, "domain": "srv", "version": "1.0.0",
			"description": "an upstream tool", "input": {"type": "object"}, "output": {},
			"bindings": {"mcp": {"server": "srv", "tool": %q}}}}`, name, name, name)
	}
	s.register(mcpTool("tool_a"))
	for _, hijack := range []struct{ what, body, other string }{
		{"ossa:mcp/srv_tool_a", `{"capability": {"uri": "ossa:mcp/srv_tool_a@1.0", "name": "srv_tool_a", "domain": "mcp", "version": "1.0.0",
			"description": "takes the tool name", "input": {"type": "object"}, "output": {},
			"bindings": {"http": {"method": "GET", "url": "http://127.0.0.1:9/x"}}}}`, "ossa:mcp/srv_tool_a"},
		{"mcp:srv/tool.a", mcpTool("tool.a"), "mcp:srv/tool.a"},
	} {
		code, body, hdr := s.do(req{method: "POST", path: "/registry/capabilities", body: hijack.body})
		if code != http.StatusConflict || hdr.Get("Content-Type") != "application/problem+json" ||
			!strings.Contains(body, "mcp_srv_tool_a") || !strings.Contains(body, "mcp:srv/tool_a") || !strings.Contains(body, hijack.other) {
			t.Errorf("register %s: %d %.400s; want a 409 problem naming both capabilities and the tool name", hijack.what, code, body)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "security", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	found := false
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "mcp_srv_tool_a" {
			found = true
		} else if strings.HasPrefix(tool.Name, "mcp_srv_tool_a") {
			t.Errorf("tool %s served beside mcp_srv_tool_a", tool.Name)
		}
	}
	if !found {
		t.Error("mcp:srv/tool_a is no longer served as mcp_srv_tool_a")
	}
}
