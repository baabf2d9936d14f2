package mcpgw_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast path's ping and tools/list (fastlist.go): taken, and answering
// what the SDK answers, byte for byte.

// sameAnswer posts body through the SDK, then on the fast path, and fails
// unless the fast path answered, as application/json, the JSON-RPC answer
// the SDK sent; it returns that answer.
func sameAnswer(t *testing.T, f *fixture, sid, body string, hdr ...string) []byte {
	t.Helper()
	sresp, sdk := viaSDK(t, f, sid, body, hdr...)
	fresp, fast := viaFast(t, f, sid, body, hdr...)
	if sresp.StatusCode != http.StatusOK || fresp.StatusCode != http.StatusOK {
		t.Fatalf("%s: SDK %s, fast path %s", body, sresp.Status, fresp.Status)
	}
	if ct := fresp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: the fast path answered %q, want application/json", body, ct)
	}
	a, b := answerOf(sresp, sdk), answerOf(fresp, fast)
	if string(a) != string(b) {
		t.Errorf("%.200s:\nSDK:       %.3000s\nfast path: %.3000s", body, a, b)
	}
	return b
}

// listBody is a tools/list with id and cursor ("" none).
func listBody(id int, cursor string) string {
	if cursor == "" {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"cursor":%q}}`, id, cursor)
}

// nextCursor reads a tools/list answer: its tools' names and nextCursor.
func nextCursor(t *testing.T, answer []byte) (names []string, next string) {
	t.Helper()
	var m struct {
		Result struct {
			NextCursor string `json:"nextCursor"`
			Tools      []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(answer, &m); err != nil {
		t.Fatalf("tools/list answer %.300s: %v", answer, err)
	}
	for _, tool := range m.Result.Tools {
		names = append(names, tool.Name)
	}
	return names, m.Result.NextCursor
}

// cursorAfter is a cursor of the gateway's that starts after the tool
// named after.
func cursorAfter(after string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("caphub-tools\x00" + after))
}

// TestFastPathToolsListAnswersAsTheSDK: in each tool mode the gateway has
// (one tool per capability, the search tools as configured or past
// MaxTools, tools/list refused past MaxTools), every page of tools/list
// (the first, each the cursors lead to, one from a cursor no page ended
// at, twice so that cached pages are checked too), a bad cursor's error
// (with characters JSON escapes or not) and the variants of params are
// answered on the fast path as the SDK answers them.
func TestFastPathToolsListAnswersAsTheSDK(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  mcpgw.Options
		pages bool // more than one page
	}{
		{"tools", mcpgw.Options{MaxListBytes: mcpgw.MinMaxListBytes}, true},
		{"search", mcpgw.Options{Mode: mcpgw.ModeSearch}, false},
		{"tools-past-max-search", mcpgw.Options{MaxTools: 5}, false},
		{"tools-past-max-refuse", mcpgw.Options{MaxTools: 5, LargeCatalog: mcpgw.LargeCatalogRefuse}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts)
			sid := rawInit(t, f.mcpURL)
			for round := range 2 {
				var all []string
				cursor := ""
				for page := 1; ; page++ {
					answer := sameAnswer(t, f, sid, listBody(page, cursor))
					if tc.name == "tools-past-max-refuse" {
						if !strings.Contains(string(answer), `"error":{"code":-32002,"message":"tools/list refused`) {
							t.Fatalf("the refusal: %.300s", answer)
						}
						break
					}
					names, next := nextCursor(t, answer)
					all = append(all, names...)
					if next == "" {
						break
					}
					if cursor = next; page > 100 {
						t.Fatal("the cursors do not end")
					}
				}
				if tc.name == "tools-past-max-refuse" {
					continue
				}
				if tc.pages && len(all) <= 20 || !slices.IsSorted(all) || len(all) == 0 {
					t.Fatalf("round %d: listed %v", round, all)
				}
				if tc.pages {
					// A later page from a cursor that is no page's end.
					sameAnswer(t, f, sid, listBody(200, cursorAfter(all[len(all)/2]+"0")))
				}
			}
			for _, body := range []string{
				listBody(1, "bad"),
				listBody(2, "<&>\u00e9\u2028\"\\"+strings.Repeat("x", 100)),
				listBody(3, base64.RawURLEncoding.EncodeToString([]byte("other\x00everruns_add"))),
				listBody(4, cursorAfter("zzzz")),
				`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":null}`,
				`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{}}`,
				`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":""}}`,
				`{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"progressToken":"p"},"Cursor":"bad","other":1}}`,
				` {"params":{}, "method":"tools/list", "id":"s-9","jsonrpc":"2.0"}` + "\n",
			} {
				sameAnswer(t, f, sid, body)
			}
		})
	}
}

// TestFastPathToolsListFollowsTheRegistry: a registration changes what
// tools/list answers on the fast path (no stale page is served), as it
// changes the SDK's.
func TestFastPathToolsListFollowsTheRegistry(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	sid := rawInit(t, f.mcpURL)
	before, _ := nextCursor(t, sameAnswer(t, f, sid, listBody(1, "")))
	registerSums(t, f, "sum", 2)
	eventually(t, func() bool { return len(f.gw.Tools()) == len(before)+2 }, func() { t.Fatal("the registrations never reached the gateway") })
	after, _ := nextCursor(t, sameAnswer(t, f, sid, listBody(2, "")))
	if len(after) != len(before)+2 {
		t.Errorf("after 2 registrations the fast path lists %d tools, before %d", len(after), len(before))
	}
}

// TestFastPathPing: ping, with or without params, is answered on the fast
// path as the SDK answers it.
func TestFastPathPing(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	sid := rawInit(t, f.mcpURL)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"p-2","method":"ping","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{"progressToken":1},"cursor":5}}`,
	} {
		if got := sameAnswer(t, f, sid, body); !strings.HasSuffix(string(got), `,"result":{}}`) {
			t.Errorf("%s: %s", body, got)
		}
	}
}

// TestFastPathListAndPingHeaders: tools/list and ping with the legal
// spellings of a client's headers take the fast path; with headers the SDK
// refuses or checks itself, they go to it, which answers as it did.
func TestFastPathListAndPingHeaders(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	sid := rawInit(t, f.mcpURL)
	for _, body := range []string{listBody(1, ""), `{"jsonrpc":"2.0","id":2,"method":"ping"}`} {
		for _, hdr := range [][]string{
			{"Accept", "text/event-stream, application/json"},
			{"Accept", "application/json;q=0.9, text/event-stream;q=1.0"},
			{"Accept", "*/*"},
			{"Accept", "application/*, text/*"},
			{"Accept", "APPLICATION/JSON , Text/Event-Stream"},
			{"Content-Type", "application/json; charset=utf-8"},
			{"Mcp-Protocol-Version", ""},
		} {
			sameAnswer(t, f, sid, body, hdr...)
		}
		for _, hdr := range [][]string{
			{"Accept", "application/json"},
			{"Accept", "text/event-stream"},
			{"Content-Type", "text/plain"},
			{"Mcp-Protocol-Version", "2025-06-18"},
			{"Mcp-Method", "tools/list"},
		} {
			leftToSDK(t, f, sid, body, hdr...)
		}
	}
}

// TestFastPathTypeScriptClientLists: the official TypeScript SDK client
// pages through the tools on the fast path and sees what it sees through
// the SDK: the same tools in the same pages.
func TestFastPathTypeScriptClientLists(t *testing.T) {
	testpeers.Node22(t)
	f := newFixture(t, mcpgw.Options{MaxListBytes: mcpgw.MinMaxListBytes})
	mcpgw.SetFast(f.gw, false)
	sdk := runTSClient(t, f.mcpURL)
	mcpgw.SetFast(f.gw, true)
	n := mcpgw.FastServed(f.gw)
	fast := runTSClient(t, f.mcpURL)
	if served := mcpgw.FastServed(f.gw) - n; served < int64(len(fast.Pages)) {
		t.Errorf("the fast path answered %d requests, fewer than the client's %d tools/list pages", served, len(fast.Pages))
	}
	if len(sdk.Pages) < 2 || !slices.Equal(fast.Tools, sdk.Tools) || !slices.Equal(fast.Pages, sdk.Pages) {
		t.Errorf("the TypeScript client lists %d tools in pages of %v bytes on the fast path, %d in %v through the SDK", len(fast.Tools), fast.Pages, len(sdk.Tools), sdk.Pages)
	}
}

// TestFastPathListAndPingEachProtocol: on sessions of each protocol
// version before 2026-07-28, tools/list and ping are answered on the fast
// path as the SDK answers them at that version.
func TestFastPathListAndPingEachProtocol(t *testing.T) {
	f := newFixture(t, mcpgw.Options{MaxListBytes: mcpgw.MinMaxListBytes})
	for _, version := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		resp, body := rawPost(t, f.mcpURL, "", strings.Replace(initializeBody, "2025-11-25", version, 1))
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || sid == "" || !strings.Contains(string(body), `"protocolVersion":"`+version+`"`) {
			t.Fatalf("initialize %s: %s %s", version, resp.Status, body)
		}
		hdr := []string{"Mcp-Protocol-Version", version}
		rawPost(t, f.mcpURL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...)
		_, next := nextCursor(t, sameAnswer(t, f, sid, listBody(1, ""), hdr...))
		sameAnswer(t, f, sid, listBody(2, next), hdr...)
		sameAnswer(t, f, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, hdr...)
	}
}

// TestFastPathGoClient: the Go SDK's client (protocol 2025-11-25) pings
// and pages through the tools on the fast path, and lists what it lists
// through the SDK.
func TestFastPathGoClient(t *testing.T) {
	f := newFixture(t, mcpgw.Options{MaxListBytes: mcpgw.MinMaxListBytes})
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: f.mcpURL, DisableStandaloneSSE: true}, "2025-11-25", nil)
	list := func() (names []string, pages int) {
		cursor := ""
		for {
			res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			pages++
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			if cursor = res.NextCursor; cursor == "" || pages > 100 {
				return names, pages
			}
		}
	}
	mcpgw.SetFast(f.gw, false)
	sdk, _ := list()
	mcpgw.SetFast(f.gw, true)
	n := mcpgw.FastServed(f.gw)
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatalf("ping: %v", err)
	}
	fast, pages := list()
	if served := mcpgw.FastServed(f.gw) - n; served != int64(pages)+1 || pages < 2 {
		t.Errorf("the fast path answered %d requests, want the ping and the %d pages", served, pages)
	}
	if !slices.Equal(fast, sdk) {
		t.Errorf("the Go client lists %v on the fast path, %v through the SDK", fast, sdk)
	}
}
