package mcpgw_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/internal/testpeers"
)

// The gateway's own path for tools/call on an established session
// (fast.go): it is taken, it answers what the SDK answered, and it leaves
// everything else to the SDK.

// rawInit opens a 2025-11-25 session on url with plain HTTP (the headers
// hdr added, name value pairs) and returns its id.
func rawInit(t *testing.T, url string, hdr ...string) string {
	t.Helper()
	resp, body := rawPost(t, url, "", initializeBody, hdr...)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %s %s", resp.Status, body)
	}
	if resp, body := rawPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %s %s", resp.Status, body)
	}
	return sid
}

// rawPost posts body on session sid ("" none) with the headers a client
// sends (JSON, both answers accepted, protocol 2025-11-25), changed by
// hdr (name value pairs; an empty value removes the header).
func rawPost(t *testing.T, url, sid, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

// answerOf is the JSON-RPC answer of a response: its body, or the last
// event of its SSE stream.
func answerOf(resp *http.Response, body []byte) []byte {
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return lastEvent(body)
	}
	return bytes.TrimSpace(body)
}

var durations = regexp.MustCompile(`"duration_ms":[0-9.eE+-]+`)

// comparable is an answer with the durations of its attempts zeroed.
func comparable(answer []byte) string {
	return durations.ReplaceAllString(string(answer), `"duration_ms":0`)
}

// leftToSDK posts body through the SDK, then with the fast path on, and
// fails unless the fast path left it to the SDK, which answered the same.
func leftToSDK(t *testing.T, f *fixture, sid, body string, hdr ...string) {
	t.Helper()
	sresp, sdk := viaSDK(t, f, sid, body, hdr...)
	n := mcpgw.FastServed(f.gw)
	resp, data := rawPost(t, f.mcpURL, sid, body, hdr...)
	if mcpgw.FastServed(f.gw) != n {
		t.Errorf("%.200s %q: answered on the fast path", body, hdr)
	}
	if resp.StatusCode != sresp.StatusCode || comparable(answerOf(resp, data)) != comparable(answerOf(sresp, sdk)) {
		t.Errorf("%.200s %q: %s %s, the SDK answers %s %s", body, hdr, resp.Status, data, sresp.Status, sdk)
	}
}

// viaSDK and viaFast post body with the fast path off, then on, and
// return each answer; viaFast fails unless the fast path answered it.
func viaSDK(t *testing.T, f *fixture, sid, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	mcpgw.SetFast(f.gw, false)
	defer mcpgw.SetFast(f.gw, true)
	n := mcpgw.FastServed(f.gw)
	resp, data := rawPost(t, f.mcpURL, sid, body, hdr...)
	if got := mcpgw.FastServed(f.gw); got != n {
		t.Fatalf("the fast path answered with the fast path off")
	}
	return resp, data
}

func viaFast(t *testing.T, f *fixture, sid, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	n := mcpgw.FastServed(f.gw)
	resp, data := rawPost(t, f.mcpURL, sid, body, hdr...)
	if got := mcpgw.FastServed(f.gw); got != n+1 {
		t.Fatalf("%s (headers %q): not answered on the fast path: %s %.300s", body, hdr, resp.Status, data)
	}
	return resp, data
}

// TestFastPathAnswersAsTheSDK: calls that succeed, fail in the
// capability, fail the input check (with HTML characters the SDK does not
// escape) or carry a string id get, on the fast path, as application/json,
// the JSON-RPC answer the SDK sent on its SSE stream, byte for byte (the
// attempts' durations aside).
func TestFastPathAnswersAsTheSDK(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	sid := rawInit(t, f.mcpURL)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`,
		`{"jsonrpc":"2.0","id":"s-12","method":"tools/call","params":{"name":"everruns_divide","arguments":{"a":1,"b":0}}}`,
		`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"everruns_add","arguments":[1]}}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":"<&>","b":3}}}`,
		` {"id":15, "params":{"arguments":{"b":3,"a":2}, "name":"everruns_add", "_meta":{"x":1}},"method":"tools/call","jsonrpc":"2.0"}` + "\n",
	} {
		sresp, sdk := viaSDK(t, f, sid, body)
		fresp, fast := viaFast(t, f, sid, body)
		if sresp.StatusCode != http.StatusOK || fresp.StatusCode != http.StatusOK {
			t.Fatalf("%s: SDK %s, fast path %s", body, sresp.Status, fresp.Status)
		}
		if ct := fresp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: the fast path answered %q, want application/json", body, ct)
		}
		if a, b := comparable(answerOf(sresp, sdk)), comparable(answerOf(fresp, fast)); a != b {
			t.Errorf("%s:\nSDK:       %s\nfast path: %s", body, a, b)
		}
	}
}

// TestFastPathHeaders: the legal spellings of the headers a client may
// send (Accept in any order, with parameters or wildcards, a charset on
// Content-Type, no Mcp-Protocol-Version) are answered on the fast path;
// headers the SDK refuses or checks itself are left to it, which answers
// as it did.
func TestFastPathHeaders(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	sid := rawInit(t, f.mcpURL)
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`
	const want = `"structuredContent":{"result":5}`
	for _, hdr := range [][]string{
		{"Accept", "text/event-stream, application/json"},
		{"Accept", "application/json;q=0.9, text/event-stream;q=1.0"},
		{"Accept", "*/*"},
		{"Accept", "application/*, text/*"},
		{"Accept", "APPLICATION/JSON , Text/Event-Stream"},
		{"Content-Type", "application/json; charset=utf-8"},
		{"Content-Type", "Application/JSON;charset=UTF-8"},
		{"Mcp-Protocol-Version", ""},
		{"X-Custom", "any"},
	} {
		resp, data := viaFast(t, f, sid, body, hdr...)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(data, []byte(want)) {
			t.Errorf("%q: %s %s", hdr, resp.Status, data)
		}
	}
	for _, hdr := range [][]string{
		{"Accept", "application/json"},
		{"Accept", "text/event-stream"},
		{"Accept", ""},
		{"Content-Type", "text/plain"},
		{"Content-Type", "application/json-seq"},
		{"Mcp-Protocol-Version", "2025-06-18"},
		{"Mcp-Protocol-Version", "1999-01-01"},
		{"Mcp-Method", "tools/call"},
		{"Mcp-Name", "everruns_add"},
		{"Last-Event-ID", "x_1"},
	} {
		leftToSDK(t, f, sid, body, hdr...)
	}
}

// TestFastPathLeavesTheRestToTheSDK: what is not one plainly well-formed
// tools/call of a capability tool, tools/list or ping goes to the SDK,
// which answers as without the fast path: batches, ids it would re-encode,
// notifications, other methods, unknown tools, invalid params and
// messages, the newer protocol's per-request _meta.
func TestFastPathLeavesTheRestToTheSDK(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	sid := rawInit(t, f.mcpURL)
	for _, body := range []string{
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}]`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`,
		`{"jsonrpc":"2.0","id":"\u0041","method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`,
		`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`,
		`{"jsonrpc":"2.0","id":12345678901234567,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[]}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":5}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":"x"}`,
		`{"jsonrpc":"2.0","id":2.5,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":7}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping","params":[1]}`,
		`{"jsonrpc":"2.0","id":"\u0033","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"Name":"everruns_add","arguments":{"a":2,"b":3}}}`,
		`{"jsonrpc":"2.0","id":8,"Method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`,
		`{"jsonrpc":"1.0","id":9,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}} x`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3},"requestState":"s"}}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`,
		``,
	} {
		leftToSDK(t, f, sid, body)
	}
}

// TestFastPathKeepsTheSessionsCaller: a session's calls run as the caller
// that opened it (its X-Caphub-Agent), whatever a later request claims,
// on the fast path as through the SDK.
func TestFastPathKeepsTheSessionsCaller(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	sid := rawInit(t, f.mcpURL, "X-Caphub-Agent", "agent-a")
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`
	viaSDK(t, f, sid, body, "X-Caphub-Agent", "agent-b")
	if got := f.inv.lastCaller(); got != "agent-a" {
		t.Fatalf("through the SDK the call ran as %q, want agent-a", got)
	}
	viaFast(t, f, sid, body, "X-Caphub-Agent", "agent-b")
	if got := f.inv.lastCaller(); got != "agent-a" {
		t.Errorf("on the fast path the call ran as %q, want agent-a (the session's)", got)
	}
}

// TestFastPathLogMessage: after logging/setLevel, a failed call's warning
// goes ahead of its result on the answer, which is then an SSE stream.
func TestFastPathLogMessage(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	sid := rawInit(t, f.mcpURL)
	const divide = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"everruns_divide","arguments":{"a":1,"b":0}}}`
	if _, data := viaFast(t, f, sid, divide); bytes.Contains(data, []byte("notifications/message")) {
		t.Fatalf("a log message before the client set a level: %s", data)
	}
	if resp, data := rawPost(t, f.mcpURL, sid, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"warning"}}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("logging/setLevel: %s %s", resp.Status, data)
	}
	resp, data := viaFast(t, f, sid, divide)
	events := sseEvents(data)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || len(events) != 2 ||
		!strings.Contains(events[0], `"method":"notifications/message","params":{"data":{"code":"DIVISION_BY_ZERO"`) || !strings.Contains(events[0], `"level":"warning","logger":"caphub"`) ||
		!strings.HasPrefix(events[1], `{"jsonrpc":"2.0","id":2,"result":{`) {
		t.Errorf("%s, want an SSE stream of the warning, then the result: %s", ct, data)
	}
	if resp, data := rawPost(t, f.mcpURL, sid, `{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"error"}}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("logging/setLevel: %s %s", resp.Status, data)
	}
	if _, data := viaFast(t, f, sid, divide); bytes.Contains(data, []byte("notifications/message")) {
		t.Errorf("a warning sent at level error: %s", data)
	}
}

// sseEvents are the data of each event of an SSE stream, each expected
// on one "event: message" and one "data:" line, as the SDK writes them.
func sseEvents(stream []byte) []string {
	var out []string
	for ev := range strings.SplitSeq(strings.TrimSpace(string(stream)), "\n\n") {
		name, data, ok := strings.Cut(ev, "\n")
		if !ok || name != "event: message" || !strings.HasPrefix(data, "data: ") || strings.Contains(data, "\n") {
			return append(out, "malformed event: "+ev)
		}
		out = append(out, strings.TrimPrefix(data, "data: "))
	}
	return out
}

// TestFastPathIdleAndDelete: calls on the fast path keep a session alive
// past IdleTimeout (they count as activity), an idle session then expires
// (404), and a deleted one answers 404 at once.
func TestFastPathIdleAndDelete(t *testing.T) {
	f := newFixture(t, mcpgw.Options{IdleTimeout: 300 * time.Millisecond, MaxSessions: 1})
	sid := rawInit(t, f.mcpURL)
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if resp, data := viaFast(t, f, sid, body); resp.StatusCode != http.StatusOK {
			t.Fatalf("a session in use expired: %s %s", resp.Status, data)
		}
	}
	// At the limit of one session, a new one is refused until the idle
	// one expires (polling it would keep it alive).
	eventually(t, func() bool { s, _ := testpeers.PostInitialize(t, f.mcpURL); return s == http.StatusOK }, func() {
		t.Fatal("the idle session never expired")
	})
	if resp, data := rawPost(t, f.mcpURL, sid, body); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a call on the expired session: %s %s, want 404", resp.Status, data)
	}

	f = newFixture(t, mcpgw.Options{})
	sid = rawInit(t, f.mcpURL)
	viaFast(t, f, sid, body)
	req, _ := http.NewRequest(http.MethodDelete, f.mcpURL, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", err, resp)
	}
	resp.Body.Close()
	if resp, data := rawPost(t, f.mcpURL, sid, body); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a call on a deleted session: %s %s, want 404", resp.Status, data)
	}
}

// TestFastPathProgressAndCancellation, with plain HTTP on a discovered
// upstream tool that reports progress and then waits: the progress comes
// under the client's token on the call's SSE stream ahead of its result; a
// second call with the same id while it runs is refused as the SDK
// refuses it; notifications/cancelled ends it upstream, and the call is
// answered.
func TestFastPathProgressAndCancellation(t *testing.T) {
	u := newWaitUpstream(t, "waiter")
	d := newDiscovered(t, u.server)
	f := &fixture{gw: d.gw, mcpURL: d.mcpURL}
	sid := rawInit(t, d.mcpURL)
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":"c-7","method":"tools/call","params":{"name":%q,"arguments":{},"_meta":{"progressToken":"tok-1"}}}`, d.tool(t, "waiter", "wait"))

	req, _ := http.NewRequest(http.MethodPost, d.mcpURL, strings.NewReader(call))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	n := mcpgw.FastServed(d.gw)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("the call: %s %s, want an SSE stream", resp.Status, ct)
	}
	rd := bufio.NewReader(resp.Body)
	first := readEvent(t, rd)
	if !strings.HasPrefix(first, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-1","message":"waiting","progress":1}}`) {
		t.Errorf("the first event: %s, want the progress under the client's token", first)
	}
	await(t, u.started, "the call")

	dup, data := rawPost(t, d.mcpURL, sid, call)
	if dup.StatusCode != http.StatusBadRequest || !strings.Contains(string(data), `"id":"c-7","error":{"code":-32600,"message":"duplicate in-flight request ID c-7"}`) {
		t.Errorf("the same id again: %s %s, want 400 duplicate in-flight request ID", dup.Status, data)
	}
	cancel, data := rawPost(t, d.mcpURL, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-7","reason":"enough"}}`)
	if cancel.StatusCode != http.StatusAccepted {
		t.Errorf("notifications/cancelled: %s %s, want 202", cancel.Status, data)
	}
	await(t, u.cancelled, "the cancellation")
	last := readEvent(t, rd)
	if !strings.HasPrefix(last, `{"jsonrpc":"2.0","id":"c-7","result":{`) || !strings.Contains(last, `"isError":true`) {
		t.Errorf("the answer of the cancelled call: %s", last)
	}
	// A request is counted once its handler returned, after its answer.
	eventually(t, func() bool { return mcpgw.FastServed(f.gw)-n == 3 }, func() {
		t.Errorf("the fast path answered %d requests, want 3 (the call, the duplicate, the cancellation)", mcpgw.FastServed(f.gw)-n)
	})
}

// readEvent reads the data of the next SSE event.
func readEvent(t *testing.T, rd *bufio.Reader) string {
	t.Helper()
	var data string
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v (so far %q)", err, data)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" && data != "" {
			return data
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data += d
		}
	}
}

// TestFastPathOlderProtocolBatch: on a session of protocol 2025-03-26,
// which allows JSON-RPC batches, a batch goes to the SDK and is answered
// as without the fast path, while a single call (with that version's
// header) takes the fast path.
func TestFastPathOlderProtocolBatch(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	init := strings.Replace(initializeBody, "2025-11-25", "2025-03-26", 1)
	resp, body := rawPost(t, f.mcpURL, "", init)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" || !strings.Contains(string(body), `"protocolVersion":"2025-03-26"`) {
		t.Fatalf("initialize 2025-03-26: %s %s", resp.Status, body)
	}
	rawPost(t, f.mcpURL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Protocol-Version", "2025-03-26")
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`
	batch := `[` + call + `,{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":1,"b":1}}}]`
	sresp, sdk := viaSDK(t, f, sid, batch, "Mcp-Protocol-Version", "2025-03-26")
	n := mcpgw.FastServed(f.gw)
	bresp, data := rawPost(t, f.mcpURL, sid, batch, "Mcp-Protocol-Version", "2025-03-26")
	if mcpgw.FastServed(f.gw) != n {
		t.Error("a batch was answered on the fast path")
	}
	// The batch's two answers may come in either order.
	answers := func(stream []byte) string {
		evs := sseEvents([]byte(comparable(stream)))
		slices.Sort(evs)
		return strings.Join(evs, "\n")
	}
	if sresp.StatusCode != http.StatusOK || bresp.StatusCode != sresp.StatusCode || answers(data) != answers(sdk) || len(sseEvents(data)) != 2 {
		t.Errorf("the batch: %s %s, the SDK answers %s %s", bresp.Status, data, sresp.Status, sdk)
	}
	if resp, data := viaFast(t, f, sid, call, "Mcp-Protocol-Version", "2025-03-26"); resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"structuredContent":{"result":5}`) {
		t.Errorf("a single call: %s %s", resp.Status, data)
	}
}

// TestFastPathSweep: a session the SDK ended without the gateway's table
// knowing (no such path today) is swept from it, and its calls are then
// answered 404 by the SDK, not on the fast path.
func TestFastPathSweep(t *testing.T) {
	f := newFixture(t, mcpgw.Options{})
	sid := rawInit(t, f.mcpURL)
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"everruns_add","arguments":{"a":2,"b":3}}}`
	viaFast(t, f, sid, body)
	mcpgw.EndSessionsBehindTheTable(f.gw)
	n := mcpgw.FastServed(f.gw)
	if resp, data := rawPost(t, f.mcpURL, sid, body); resp.StatusCode != http.StatusNotFound || mcpgw.FastServed(f.gw) != n {
		t.Errorf("a call on a session the SDK ended: %s %s, want 404 from the SDK", resp.Status, data)
	}
}
