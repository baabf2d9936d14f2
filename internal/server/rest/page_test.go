package rest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/caphub/caphub/format/ossa"
)

// registerMany registers n capabilities ossa:many/c_<i> in one batch, and
// versions 1.0.0 … 1.0.<v-1> of ossa:many/versioned.
func registerMany(t *testing.T, call func(method, path string, body []byte) answer, n, v int) {
	t.Helper()
	def := func(name, version string) map[string]any {
		return map[string]any{"uri": "ossa:many/" + name + "@1.0", "name": name, "domain": "many", "version": version, "description": "paged " + name,
			"input": map[string]any{"type": "object"}, "output": map[string]any{"type": "object"},
			"bindings": map[string]any{"http": map[string]any{"method": "GET", "url": "http://127.0.0.1:9/" + name}}}
	}
	var defs []map[string]any
	for i := range n {
		defs = append(defs, def(fmt.Sprintf("c_%04d", i), "1.0.0"))
	}
	for i := range v {
		defs = append(defs, def("versioned", fmt.Sprintf("1.0.%d", i)))
	}
	body, _ := json.Marshal(map[string]any{"capabilities": defs})
	if a := call("POST", "/registry/capabilities", body); a.status != 201 {
		t.Fatalf("register: %d %s", a.status, a.body)
	}
}

type pageAnswer struct {
	Items []struct {
		URI     string `json:"uri"`
		ID      string `json:"id"`
		Version string `json:"version"`
	} `json:"items"`
	Total      int    `json:"total"`
	NextCursor string `json:"next_cursor"`
}

func TestListsArePaged(t *testing.T) {
	srv, _ := newTestServer(t)
	get := func(method, path string, body []byte) answer {
		return call(t, srv, method, path, "application/json", body)
	}
	registerMany(t, get, 250, 130)

	for _, tc := range []struct {
		path  string
		total int
	}{
		{"/registry/capabilities?total=true", 251}, {"/registry/capabilities/many?total=true", 251}, {"/registry/capabilities?all_versions=true&total=true", 380},
		{"/registry/search?q=paged", 251}, {"/v1/capabilities?total=true", 251}, {"/registry/capabilities/many/versioned", 130},
	} {
		a := get("GET", tc.path, nil)
		expect(t, a, 200, tc.path)
		var p pageAnswer
		if err := json.Unmarshal(a.body, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Items) != DefaultPageSize || p.Total != tc.total || p.NextCursor == "" {
			t.Fatalf("%s: %d items, total %d, cursor %q; want %d of %d and a cursor", tc.path, len(p.Items), p.Total, p.NextCursor, DefaultPageSize, tc.total)
		}
		link := a.header.Get("Link")
		if !strings.HasSuffix(link, `>; rel="next"`) || !strings.Contains(link, "cursor="+url.QueryEscape(p.NextCursor)) {
			t.Errorf("%s: Link %q does not continue at next_cursor", tc.path, link)
		}
		// The Link and the cursors reach every item once, in order.
		seen := map[string]bool{}
		last := ""
		for {
			for _, it := range p.Items {
				k := it.URI + it.ID + "@" + it.Version
				if seen[k] {
					t.Fatalf("%s: %s twice", tc.path, k)
				}
				seen[k] = true
				last = k
			}
			if p.NextCursor == "" {
				break
			}
			sep := "?"
			if strings.Contains(tc.path, "?") {
				sep = "&"
			}
			a = get("GET", tc.path+sep+"limit=70&cursor="+url.QueryEscape(p.NextCursor), nil)
			expect(t, a, 200, tc.path+" next page")
			p = pageAnswer{}
			if err := json.Unmarshal(a.body, &p); err != nil {
				t.Fatal(err)
			}
			if len(p.Items) > 70 {
				t.Fatalf("%s: %d items with limit=70", tc.path, len(p.Items))
			}
		}
		if len(seen) != tc.total {
			t.Errorf("%s: the cursors reached %d of %d items (last %s)", tc.path, len(seen), tc.total, last)
		}
	}

	// Without total=true a list does not count.
	for _, path := range []string{"/registry/capabilities", "/registry/capabilities/many", "/v1/capabilities"} {
		a := get("GET", path, nil)
		expect(t, a, 200, path)
		if _, counted := a.json(t)["total"]; counted {
			t.Errorf("%s without total=true answered a total", path)
		}
	}
	expect(t, get("GET", "/registry/capabilities?total=maybe", nil), 400, "total=maybe")

	// The index pages too, continued by its Link header and closing comment.
	a := get("GET", "/registry/index.yaml?limit=300", nil)
	expect(t, a, 200, "index page")
	f, err := ossa.Read("index.yaml", a.body)
	if err != nil || len(f.Index.Capabilities) != 300 {
		t.Fatalf("index page: %v, %d entries", err, len(f.Index.Capabilities))
	}
	link := a.header.Get("Link")
	next := strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
	if !strings.HasPrefix(next, "/registry/index.yaml?") || !strings.Contains(string(a.body), "# 300 versions on this page; next page: "+next) {
		t.Fatalf("index continuation: Link %q\n%s", link, a.body[len(a.body)-200:])
	}
	a = get("GET", next, nil)
	expect(t, a, 200, "index next page")
	if f, err = ossa.Read("index.yaml", a.body); err != nil || len(f.Index.Capabilities) != 80 || a.header.Get("Link") != "" {
		t.Fatalf("index last page: %v, %d entries, Link %q", err, len(f.Index.Capabilities), a.header.Get("Link"))
	}

	// Limits outside 1..MaxPageSize and foreign cursors are 400 problems.
	for _, path := range []string{"/registry/capabilities", "/registry/search", "/registry/index.yaml", "/v1/capabilities", "/registry/capabilities/many/versioned"} {
		a := get("GET", path+"?limit=1001", nil)
		expect(t, a, 400, path+" limit over the maximum")
		if d := a.json(t)["detail"].(string); !strings.Contains(d, "limit=1001") || !strings.Contains(d, "maximum page size of 1000") {
			t.Errorf("%s: detail %q does not name the parameter and the maximum", path, d)
		}
		expect(t, get("GET", path+"?limit=0", nil), 400, path+" limit=0")
		expect(t, get("GET", path+"?limit=1000", nil), 200, path+" limit at the maximum")
	}
	a = get("GET", "/registry/capabilities/many/versioned?cursor="+url.QueryEscape(p0(t, get("GET", "/v1/capabilities", nil))), nil)
	expect(t, a, 400, "a cursor of another list")
}

// p0 is the next_cursor of an answer.
func p0(t *testing.T, a answer) string {
	t.Helper()
	var p pageAnswer
	if err := json.Unmarshal(a.body, &p); err != nil || p.NextCursor == "" {
		t.Fatalf("no next_cursor: %s", a.body)
	}
	return p.NextCursor
}

func TestPageOf(t *testing.T) {
	items := []string{"a", "b", "c", "d", "e"}
	id := func(s string) string { return s }
	page, next, err := pageOf(items, id, "letters", 2, "")
	if err != nil || strings.Join(page, "") != "ab" || next == "" {
		t.Fatalf("first page %v %q %v", page, next, err)
	}
	// An item added before the cursor and one removed after it do not
	// shift the pages.
	page, next, err = pageOf([]string{"0", "a", "b", "d", "e"}, id, "letters", 2, next)
	if err != nil || strings.Join(page, "") != "de" || next != "" {
		t.Fatalf("second page %v %q %v", page, next, err)
	}
	if _, _, err := pageOf(items, id, "numbers", 2, "bm90IGEgY3Vyc29y"); err == nil {
		t.Error("a foreign cursor was accepted")
	}
	if p := problemFor(func() error { _, _, err := pageOf(items, id, "x", 1, "!"); return err }()); p.Status != 400 {
		t.Errorf("a bad cursor is %d, want 400", p.Status)
	}
}

func TestOpenAPIDocumentsPaging(t *testing.T) {
	srv, _ := newTestServer(t)
	doc := call(t, srv, "GET", "/openapi.json", "", nil).json(t)
	paths := doc["paths"].(map[string]any)
	for _, p := range []string{"/registry/capabilities", "/registry/search", "/registry/index.yaml", "/v1/capabilities", "/registry/capabilities/{domain}/{name}"} {
		op := paths[p].(map[string]any)["get"].(map[string]any)
		found := false
		for _, prm := range op["parameters"].([]any) {
			m := prm.(map[string]any)
			if m["name"] == "limit" {
				s := m["schema"].(map[string]any)
				found = s["maximum"] == float64(MaxPageSize) && s["default"] == float64(DefaultPageSize)
			}
		}
		if !found {
			t.Errorf("%s: limit not documented with maximum %d and default %d", p, MaxPageSize, DefaultPageSize)
		}
	}
}
