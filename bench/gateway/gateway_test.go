package main

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// parsed is a peer from a -peer value alone.
func parsed(spec string) (*peer, error) {
	p, err := parsePeer(spec)
	if err != nil {
		return nil, err
	}
	return p, p.finish()
}

func TestParsePeerProfiles(t *testing.T) {
	tb, err := parsed("tbxark=/opt/mcp-proxy --config {config}")
	if err != nil {
		t.Fatal(err)
	}
	if tb.url != "http://{addr}/{name}/mcp" || tb.config != tbxarkConfig || !slices.Equal(tb.transports, []string{overStdio, overHTTP}) {
		t.Errorf("tbxark: url %q, transports %v, config built in: %v", tb.url, tb.transports, tb.config == tbxarkConfig)
	}
	sg, err := parsed(`supergateway-stateless = npx -y supergateway --stdio {upstream} --outputTransport streamableHttp --port {port}`)
	if err != nil {
		t.Fatal(err)
	}
	if sg.name != "supergateway-stateless" || sg.url != "http://{addr}/mcp" || sg.config != "" || !slices.Equal(sg.transports, []string{overStdio}) {
		t.Errorf("supergateway: %+v", sg)
	}
	other, err := parsed("relay=relay --listen {addr} --to {upstream_url}")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(other.transports, []string{overHTTP}) {
		t.Errorf("a peer naming {upstream_url} fronts %v, want http only", other.transports)
	}
}

func TestParsePeerErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"tbxark":                                    "want NAME=COMMAND",
		"tbxark=  ":                                 "want NAME=COMMAND",
		"TBX=/x --config {config}":                  "lower-case",
		"direct=/x {upstream}":                      "harness's own targets",
		"p=/x --port {prot} {upstream}":             "unknown placeholder {prot}",
		"p=/x --stdio {upstream} {upstream_url}":    "both {upstream} and {upstream_url}",
		"p=/x --port {port}":                        "nothing names the upstream",
		"p=/x --config {config}":                    "nothing names the upstream", // no template: {config} alone names no upstream
		`p=/x --stdio "{upstream}`:                  "unterminated",
		"p=/x {upstream_json}":                      "configuration template",
		"p=" + strings.Repeat("x", maxSpec) + " {}": "more than",
	} {
		_, err := parsed(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parsePeer(%.40q): %v, want an error saying %q", spec, err, want)
		}
	}
}

func TestSetOption(t *testing.T) {
	peers := []*peer{must(parsePeer("relay=relay --config {config}"))}
	tmpl := filepath.Join(t.TempDir(), "relay.json")
	if err := os.WriteFile(tmpl, []byte(`{"listen": "{addr}", "servers": {"{name}": {upstream_json}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, opt := range []string{"relay.config=" + tmpl, "relay.url=http://{addr}/{name}", "relay.transports=http"} {
		if err := setOption(peers, opt); err != nil {
			t.Fatalf("%s: %v", opt, err)
		}
	}
	p := peers[0]
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	if p.url != "http://{addr}/{name}" || !strings.Contains(p.config, `"listen"`) || !slices.Equal(p.transports, []string{overHTTP}) {
		t.Errorf("after the options: %+v", p)
	}
	for opt, want := range map[string]string{
		"relay.port=1":              "unknown key",
		"other.url=x":               `no -peer named "other"`,
		"relay.transports=sse":      "neither stdio nor http",
		"relay-url=x":               "NAME.KEY=VALUE",
		"relay.url=http://{x}/mcp":  "unknown placeholder {x}",
		"relay.config=/nonexistent": "no such file",
	} {
		if err := setOption(peers, opt); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("setOption(%q): %v, want an error saying %q", opt, err, want)
		}
	}
}

// The templates expand per upstream: the stdio command line as one
// shell-quoted word, the configuration as valid JSON with the upstream's
// entry.
func TestPeerExpand(t *testing.T) {
	stdioUp := &upstream{transport: overStdio, argv: []string{"/tmp/my dir/everything-server", "--x=it's"}}
	httpUp := &upstream{transport: overHTTP, url: "http://127.0.0.1:9/mcp"}

	sg := must(parsed(`supergateway=node sg.js --stdio {upstream} --port {port}`))
	argv, err := sg.argv(vars{port: "8123", name: "everything", up: stdioUp})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"node", "sg.js", "--stdio", `'/tmp/my dir/everything-server' '--x=it'\''s'`, "--port", "8123"}
	if !slices.Equal(argv, want) {
		t.Errorf("argv %q, want %q", argv, want)
	}
	if out, err := exec.Command("sh", "-c", "printf '%s|' "+argv[3]).Output(); err != nil || string(out) != "/tmp/my dir/everything-server|--x=it's|" {
		t.Errorf("a shell reads {upstream} back as %q (%v)", out, err)
	}
	if _, err := sg.argv(vars{port: "8123", up: httpUp}); err == nil || !strings.Contains(err.Error(), "cannot front the http upstream") {
		t.Errorf("{upstream} with an HTTP upstream: %v", err)
	}

	tb := must(parsed("tbxark=mcp-proxy --config {config}"))
	for _, up := range []*upstream{stdioUp, httpUp} {
		v := vars{port: "8124", name: "everything", config: filepath.Join(t.TempDir(), "c.json"), up: up}
		if err := tb.writeConfig(v); err != nil {
			t.Fatal(err)
		}
		var c struct {
			McpProxy   struct{ Addr, Type string }
			McpServers map[string]struct {
				Command, URL, TransportType string
				Args                        []string
			}
		}
		b, _ := os.ReadFile(v.config)
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s config: %v\n%s", up.transport, err, b)
		}
		e := c.McpServers["everything"]
		if c.McpProxy.Addr != "127.0.0.1:8124" || c.McpProxy.Type != "streamable-http" {
			t.Errorf("%s config: mcpProxy %+v", up.transport, c.McpProxy)
		}
		if up == stdioUp && (e.Command != stdioUp.argv[0] || !slices.Equal(e.Args, stdioUp.argv[1:])) ||
			up == httpUp && (e.URL != httpUp.url || e.TransportType != "streamable-http") {
			t.Errorf("%s config: the upstream entry %+v", up.transport, e)
		}
		if u, _ := v.expand(tb.url, noQuote); u != "http://127.0.0.1:8124/everything/mcp" {
			t.Errorf("tbxark's endpoint: %s", u)
		}
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-sessions", "1, 32,1", "-transports", "http", "-peer", "tbxark=/x --config {config}", "-targets", "direct,tbxark"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.sessions, []int{1, 32}) || !slices.Equal(o.transports, []string{overHTTP}) || o.tool != "test_simple_text" || string(o.args) != "{}" {
		t.Errorf("options %+v", o)
	}
	if !o.wants(tDirect) || o.wants(tCaphubFront, tCaphubMCP) || !o.wants("tbxark") {
		t.Errorf("-targets direct,tbxark: wants %v", o.targets)
	}
	for _, args := range [][]string{
		{"-sessions", "0"}, {"-sessions", "a"}, {"-rounds", "0"}, {"-transports", "sse"},
		{"-targets", "nginx"}, {"-upstream", "py"}, {"-args", "[1]"},
		{"-peer", "p=/x {upstream}", "-peer", "p=/y {upstream}"}, {"stray"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) succeeded", args)
		}
	}
}

func TestRatio(t *testing.T) {
	s := func(cps float64) *sample { return &sample{callsPerSec: cps, gwCPUPerCall: math.NaN()} }
	target := rounds{s(200), s(90), nil, s(300)}
	peer := rounds{s(100), s(100), s(100), s(0)}
	// Rounds 1 and 2 pair up (2, 0.9); round 3 lacks the target, round 4
	// a positive peer figure. The median of 2 and 0.9 is 1.45.
	if got := ratio(target, peer, mCallsPerSec); math.Abs(got-1.45) > 1e-9 {
		t.Errorf("ratio %v, want 1.45", got)
	}
	if got := ratio(target, peer, mGwCPU); !math.IsNaN(got) {
		t.Errorf("ratio of NaN figures %v, want NaN", got)
	}
	if got := target.median(mCallsPerSec); got != 200 {
		t.Errorf("median %v, want 200", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median %v, want 2.5", got)
	}
	if times(math.NaN()) != "—" || times(0.5) != "0.50×" {
		t.Errorf("times: %q %q", times(math.NaN()), times(0.5))
	}
}

func TestParseAnswer(t *testing.T) {
	sse := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n" +
		"id: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\ndata: \"result\":{\"ok\":true}}\n\n"
	for _, c := range []struct {
		ct, body string
		want     string // the result, or the error's text after "!"
	}{
		{"application/json", `{"jsonrpc":"2.0","id":3,"result":{"ok":true}}`, `{"ok":true}`},
		{"text/event-stream; charset=utf-8", sse, "{\"ok\":true}"},
		{"text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", "{}"}, // no blank line at the end
		{"application/json", `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"unknown tool"}}`, "!unknown tool"},
		{"application/json", `{"jsonrpc":"2.0","id":4,"result":{}}`, "!no answer"},
		{"text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n\n", "!no answer"},
		{"application/json", `<html>`, "!not a JSON-RPC message"},
		{"application/json", `{"jsonrpc":"2.0","id":3}`, "!neither result nor error"},
	} {
		res, err := parseAnswer(c.ct, []byte(c.body), 3)
		got := strings.ReplaceAll(string(res), "\n", "")
		if err != nil {
			got = "!" + err.Error()
		}
		if !strings.HasPrefix(got, c.want) && !(strings.HasPrefix(c.want, "!") && strings.Contains(got, c.want[1:])) {
			t.Errorf("parseAnswer(%q, %.60q): %s, want %s", c.ct, c.body, got, c.want)
		}
	}
}

// The harness's client against a real MCP server (the Go SDK's streamable
// HTTP handler): a session opens, finds a prefixed tool by its upstream
// name, calls it, and sees a tool error as an error.
func TestSessionAgainstSDKServer(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "gw", Version: "1"}, nil)
	type in struct {
		Fail bool `json:"fail,omitempty"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "mcp_everything_echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: a.Fail, Content: []mcp.Content{&mcp.TextContent{Text: "failed on purpose"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "other"}, func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	ctx := context.Background()
	hc := hs.Client()
	s, err := openSession(ctx, hc, hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close(hc)
	if s.id == "" || s.version != protocolVersion {
		t.Errorf("session id %q, version %q", s.id, s.version)
	}
	name, err := resolveTool(ctx, hc, s, "echo")
	if err != nil || name != "mcp_everything_echo" {
		t.Fatalf("resolveTool(echo): %q, %v", name, err)
	}
	if _, err := resolveTool(ctx, hc, s, "add"); err == nil {
		t.Error("resolveTool found a tool that is not there")
	}
	if err := s.callTool(ctx, hc, name, json.RawMessage(`{}`)); err != nil {
		t.Errorf("callTool: %v", err)
	}
	if err := s.callTool(ctx, hc, name, json.RawMessage(`{"fail":true}`)); err == nil || !strings.Contains(err.Error(), "failed on purpose") {
		t.Errorf("a tool error: %v", err)
	}
}

// measure counts a tree's processes from /proc: this test process as the
// gateway, a child running the "upstream" program apart from it.
func TestMeasureTree(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep program")
	}
	child := exec.Command(sleep, "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	before := measure(os.Getpid(), sleep, 0)
	// Spend CPU time until /proc counts some (its ticks are 10 ms): a
	// fixed spin of wall time may get no tick on a loaded machine.
	u := measure(os.Getpid(), sleep, 0).sub(before)
	for end := time.Now().Add(10 * time.Second); u.gwCPU <= 0 && time.Now().Before(end); u = measure(os.Getpid(), sleep, 0).sub(before) {
		for spin := time.Now().Add(20 * time.Millisecond); time.Now().Before(spin); {
		}
	}
	if u.gwProcs < 1 || u.upProcs != 1 || u.gwRSS <= 0 || u.upRSS <= 0 {
		t.Errorf("processes counted %d+%d, RSS %d+%d", u.gwProcs, u.upProcs, u.gwRSS, u.upRSS)
	}
	if u.gwCPU <= 0 || u.upCPU != 0 {
		t.Errorf("CPU: gateway %s (want > 0), upstream %s (sleep: want 0)", u.gwCPU, u.upCPU)
	}
	if up := measure(0, sleep, child.Process.Pid); up.upProcs != 1 || up.gwProcs != 0 {
		t.Errorf("a separate upstream process: %+v", up)
	}
}

func FuzzParsePeer(f *testing.F) {
	f.Add("tbxark=/x --config {config}")
	f.Add(`supergateway=npx -y supergateway --stdio "{upstream}" --port {port}`)
	f.Add("p=relay {upstream_url} {addr}")
	up := &upstream{transport: overStdio, argv: []string{"/bin/up"}}
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := parsed(spec)
		if err != nil {
			return
		}
		if len(p.transports) == 0 {
			t.Fatalf("%q parsed with no transport", spec)
		}
		_, _ = p.argv(vars{port: "1", name: "n", config: "/c", up: up})
	})
}

func FuzzParseAnswer(f *testing.F) {
	f.Add("application/json", []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	f.Add("text/event-stream", []byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		res, err := parseAnswer(ct, body, 1)
		if err == nil && res == nil {
			t.Fatal("no error and no result")
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestCaphubBase(t *testing.T) {
	o, err := parseFlags([]string{"-caphub-base", "/old/caphub", "-targets", "caphub-front,tbxark", "-peer", "tbxark=/x --config {config}"})
	if err != nil {
		t.Fatal(err)
	}
	all := o.allTargets()
	if !slices.Contains(all, tCaphubFront+baseSuffix) || !slices.Contains(all, tCaphubMCP+baseSuffix) || slices.Contains(all, tDirect+baseSuffix) {
		t.Errorf("allTargets %v: want NAME@base for each caphub target", all)
	}
	if !o.wants(tCaphubFront+baseSuffix) || o.wants(tCaphubMCP+baseSuffix) {
		t.Errorf("-targets caphub-front: wants caphub-front@base %v, caphub-mcp@base %v", o.wants(tCaphubFront+baseSuffix), o.wants(tCaphubMCP+baseSuffix))
	}
	if o, _ := parseFlags(nil); slices.ContainsFunc(o.allTargets(), func(n string) bool { return strings.HasSuffix(n, baseSuffix) }) {
		t.Errorf("no -caphub-base: allTargets %v", o.allTargets())
	}

	s := func(cps float64) *sample {
		return &sample{callsPerSec: cps, gwCPUPerCall: cps / 10, gwRSSMiB: math.NaN()}
	}
	tb := &table{transport: overHTTP, sessions: 1,
		targets: []string{tCaphubFront, tCaphubMCP, tCaphubFront + baseSuffix, "tbxark"},
		results: map[string]rounds{
			tCaphubFront:              {s(300)},
			tCaphubMCP:                {s(100)},
			tCaphubFront + baseSuffix: {s(200)},
			"tbxark":                  {s(100)},
		}}
	var out strings.Builder
	tb.print(&out, []string{"tbxark"})
	for _, want := range []string{
		"vs NAME@base (calls/s, p50, CPU/call, RSS) |",
		"| caphub-front | 300 |",
		" 3.00×, —, 3.00×, — | 1.50×, —, 1.50×, — |", // caphub-front: vs tbxark, vs its base
		" 1.00×, —, 1.00×, — | — |",                  // caphub-mcp: no base measured
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
