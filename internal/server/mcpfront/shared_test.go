//lint:file-ignore SA1019 the front relays logging, sampling and roots (deprecated from protocol 2026-07-28) through the deprecation window: these tests exercise that relaying.

package mcpfront

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Shared upstream sessions (mcpconn.SessionsShared): one upstream session
// serves every client of a saved server, and the front routes what the
// upstream sends back to the client it belongs to.

// newSharedEnv is newEnv with the in-process upstream saved twice: "up"
// (per-client) and "shared" (shared).
func newSharedEnv(t *testing.T, opts Options) *env {
	t.Helper()
	e := &env{up: newUpstream(), hooks: &recorder{}}
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.up.server }, nil))
	t.Cleanup(upSrv.Close)
	e.upURL = upSrv.URL
	servers := savedServers{
		"up":     {Name: "up", Transport: mcpconn.TransportHTTP, URL: upSrv.URL},
		"shared": {Name: "shared", Transport: mcpconn.TransportHTTP, URL: upSrv.URL, Sessions: mcpconn.SessionsShared},
	}
	opts.Version, opts.Log = "test", testLog()
	e.front = New(servers, e.hooks, opts)
	e.frontURL = serveFront(t, e.front, nil)
	return e
}

// peer is a downstream Go SDK client named name, whose sampling and
// elicitation answers name it, and which records the progress and log
// messages that reach it. A peer with bare set declares no capability (no
// sampling, elicitation or roots).
type peer struct {
	name     string
	cs       *mcp.ClientSession
	progress chan *mcp.ProgressNotificationParams
	logs     chan *mcp.LoggingMessageParams
	updated  chan string
}

func connectPeer(t *testing.T, url, name string, bare bool) *peer {
	t.Helper()
	p := &peer{name: name, progress: make(chan *mcp.ProgressNotificationParams, 64), logs: make(chan *mcp.LoggingMessageParams, 64), updated: make(chan string, 16)}
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { p.progress <- req.Params },
		LoggingMessageHandler:       func(_ context.Context, req *mcp.LoggingMessageRequest) { p.logs <- req.Params },
		ResourceUpdatedHandler:      func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { p.updated <- req.Params.URI },
	}
	if bare {
		opts.Capabilities = &mcp.ClientCapabilities{}
	} else {
		opts.CreateMessageHandler = func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "model-" + name, Content: &mcp.TextContent{Text: "hi from " + name}}, nil
		}
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		}
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "peer-" + name, Version: "0.1"}, opts)
	if !bare {
		cl.AddRoots(&mcp.Root{URI: "file:///work/" + name, Name: name})
	}
	cs, err := cl.Connect(timeout(t), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("%s: connect to %s: %v", name, url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	p.cs = cs
	return p
}

// progressOf reads n progress notifications of a peer, or fails.
func (p *peer) progressOf(t *testing.T, n int) []*mcp.ProgressNotificationParams {
	t.Helper()
	var got []*mcp.ProgressNotificationParams
	for len(got) < n {
		select {
		case pr := <-p.progress:
			got = append(got, pr)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: %d of %d progress notifications arrived", p.name, len(got), n)
		}
	}
	return got
}

func TestSharedOneUpstreamSession(t *testing.T) {
	e := newSharedEnv(t, Options{})
	var peers []*peer
	for _, name := range []string{"a", "b", "c"} {
		peers = append(peers, connectPeer(t, e.frontURL+"/mcp/servers/shared", name, false))
	}
	// A client of the SSE endpoint shares it too.
	sse := e.connect(t, "/mcp/servers/shared/sse", true)
	if got, _ := callText(t, sse.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "sse"}}); got != "echo: sse" {
		t.Errorf("sse: echo = %q", got)
	}
	if n := e.up.sessions(); n != 1 {
		t.Errorf("%d upstream sessions for 4 clients of a shared server, want 1", n)
	}
	if e.front.Sessions() != 4 {
		t.Errorf("front sessions = %d, want 4", e.front.Sessions())
	}
	_ = sse.cs.Close()
	waitFor(t, "the SSE session to end", func() bool { return e.front.Sessions() == 3 })
	for _, p := range peers {
		init := p.cs.InitializeResult()
		if init.ServerInfo == nil || init.ServerInfo.Name != "test-upstream" || init.Instructions != "upstream instructions" || init.Capabilities.Tools == nil {
			t.Errorf("%s: initialize result %+v, want the upstream's", p.name, init)
		}
		if got, _ := callText(t, p.cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": p.name}}); got != "echo: "+p.name {
			t.Errorf("%s: echo = %q", p.name, got)
		}
	}
	if recs := e.hooks.records(); len(recs) != 4 || recs[0].URI != "mcp:shared/echo" {
		t.Errorf("records = %+v, want 4 calls of mcp:shared/echo", recs)
	}
	// A per-client saved server of the same upstream still gets a session
	// per client.
	connectPeer(t, e.frontURL+"/mcp/servers/up", "d", false)
	if n := e.up.sessions(); n != 2 {
		t.Errorf("%d upstream sessions after a per-client client joined, want 2", n)
	}
	// A client leaving leaves the upstream to the others.
	_ = peers[0].cs.Close()
	waitFor(t, "the front to end the session", func() bool { return e.front.Sessions() == 3 })
	if got, _ := callText(t, peers[1].cs, timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still"}}); got != "echo: still" {
		t.Errorf("after another client left: echo = %q", got)
	}
	if err := e.front.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every upstream session to end with the front", func() bool { return e.up.sessions() == 0 })
}

func TestSharedProgressTokens(t *testing.T) {
	e := newSharedEnv(t, Options{})
	url := e.frontURL + "/mcp/servers/shared"
	a, b, c := connectPeer(t, url, "a", false), connectPeer(t, url, "b", false), connectPeer(t, url, "c", false)
	// The same token from two clients, and the same number as a string: each
	// client gets its own three notifications, with its token as it sent it.
	tokens := map[*peer]any{a: "tok", b: "tok", c: 7}
	var wg sync.WaitGroup
	for p, tok := range tokens {
		wg.Go(func() {
			params := &mcp.CallToolParams{Name: "progress"}
			params.SetProgressToken(tok)
			if _, err := p.cs.CallTool(timeout(t), params); err != nil {
				t.Errorf("%s: progress: %v", p.name, err)
			}
		})
	}
	wg.Wait()
	for p, tok := range tokens {
		want := tok
		if n, ok := tok.(int); ok {
			want = float64(n) // a JSON number
		}
		for i, pr := range p.progressOf(t, 3) {
			if pr.ProgressToken != want || pr.Progress != float64(i+1) {
				t.Errorf("%s: progress %d = %+v (token %#v), want token %#v", p.name, i, pr, pr.ProgressToken, want)
			}
		}
		select {
		case pr := <-p.progress:
			t.Errorf("%s: a fourth progress notification: %+v", p.name, pr)
		default:
		}
	}
}

func TestSharedCancellation(t *testing.T) {
	e := newSharedEnv(t, Options{})
	url := e.frontURL + "/mcp/servers/shared"
	a, b := connectPeer(t, url, "a", false), connectPeer(t, url, "b", false)
	slept := make(chan string, 1)
	go func() {
		got, _ := callText(t, b.cs, timeout(t), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1500}})
		slept <- got
	}()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
		errc <- err
	}()
	select {
	case <-e.up.started:
	case <-time.After(5 * time.Second):
		t.Fatal("a's slow call did not start upstream")
	}
	cancel()
	select {
	case <-e.up.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("a's cancellation did not reach the upstream")
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("a's cancelled call: err = %v", err)
	}
	if got := <-slept; got != "awake" {
		t.Errorf("b's call while a cancelled its own = %q, want it to run to its end (awake)", got)
	}
}

func TestSharedServerToClientRequests(t *testing.T) {
	e := newSharedEnv(t, Options{})
	url := e.frontURL + "/mcp/servers/shared"
	a, b := connectPeer(t, url, "a", false), connectPeer(t, url, "b", false)
	bare := connectPeer(t, url, "bare", true)
	// b's call came last: the upstream's requests during a's call go to a.
	for _, p := range []*peer{a, b} {
		got, isErr := callText(t, p.cs, timeout(t), &mcp.CallToolParams{Name: "ask"})
		want := fmt.Sprintf("sampled=hi from %[1]s model=model-%[1]s elicited=accept:%[1]s roots=file:///work/%[1]s", p.name)
		if isErr || got != want {
			t.Errorf("%s: ask = %q (isError %v), want %q", p.name, got, isErr, want)
		}
	}
	// A call in flight of a client that cannot answer (it declared no
	// capability) does not catch them: they go to a's later call.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = bare.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"}) }()
	<-e.up.started
	if got, _ := callText(t, a.cs, timeout(t), &mcp.CallToolParams{Name: "ask"}); !strings.HasPrefix(got, "sampled=hi from a ") || !strings.HasSuffix(got, "roots=file:///work/a") {
		t.Errorf("a: ask while a client without the capabilities has a call in flight = %q", got)
	}
	cancel()
	<-e.up.cancelled
	// A client that cannot answer gets its own call's requests refused:
	// the upstream sees an error.
	got, isErr := callText(t, bare.cs, timeout(t), &mcp.CallToolParams{Name: "ask"})
	if !isErr || !strings.Contains(got, "sampling") || !strings.Contains(got, "declared") {
		t.Errorf("bare: ask = %q (isError %v), want the tool's error saying no client could answer sampling", got, isErr)
	}
}

func TestSharedResourceSubscriptions(t *testing.T) {
	e := newSharedEnv(t, Options{})
	url := e.frontURL + "/mcp/servers/shared"
	a, b, c := connectPeer(t, url, "a", false), connectPeer(t, url, "b", false), connectPeer(t, url, "c", false)
	ctx := timeout(t)
	for _, p := range []*peer{a, b} {
		if err := p.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched"}); err != nil {
			t.Fatalf("%s: subscribe: %v", p.name, err)
		}
	}
	// The standalone streams may open a moment after initialisation: notify
	// until an update reaches each subscriber.
	notifyUntil := func(who ...*peer) {
		t.Helper()
		for _, p := range who {
			deadline := time.After(5 * time.Second)
		wait:
			for {
				if err := e.up.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://watched"}); err != nil {
					t.Fatal(err)
				}
				select {
				case <-p.updated:
					break wait
				case <-time.After(100 * time.Millisecond):
				case <-deadline:
					t.Fatalf("%s: no notifications/resources/updated arrived", p.name)
				}
			}
		}
	}
	notifyUntil(a, b)
	// a unsubscribing leaves b's subscription upstream (the SDK's server
	// notifies subscribed sessions only).
	if err := a.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched"}); err != nil {
		t.Fatal(err)
	}
	for len(b.updated) > 0 {
		<-b.updated
	}
	notifyUntil(b)
	// list_changed goes to every client.
	changed := connectListener(t, url)
	waitFor(t, "the listener's session", func() bool { return e.front.Sessions() == 4 })
	deadline := time.After(5 * time.Second)
	for i := 0; ; i++ {
		e.up.server.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("extra-%d", i)}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		select {
		case <-changed:
		case <-time.After(100 * time.Millisecond):
			continue
		case <-deadline:
			t.Fatal("no notifications/prompts/list_changed arrived")
		}
		break
	}
	if len(c.updated) > 0 {
		t.Errorf("%d updates reached a client that never subscribed", len(c.updated))
	}
}

// connectListener connects a client that reports prompts/list_changed.
func connectListener(t *testing.T, url string) chan struct{} {
	t.Helper()
	changed := make(chan struct{}, 64)
	cl := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "0.1"}, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := cl.Connect(timeout(t), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return changed
}

func TestSharedLogLevels(t *testing.T) {
	e := newSharedEnv(t, Options{})
	url := e.frontURL + "/mcp/servers/shared"
	a, b := connectPeer(t, url, "a", false), connectPeer(t, url, "b", false)
	ctx := timeout(t)
	// b asks for errors only, a for everything: the upstream logs info for
	// a, and a's info messages reach a.
	if err := b.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	if err := a.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := callText(t, a.cs, ctx, &mcp.CallToolParams{Name: "log"}); got != "logged" {
		t.Fatalf("log = %q", got)
	}
	for _, want := range []string{"first", "second"} {
		select {
		case m := <-a.logs:
			if m.Data != want {
				t.Errorf("a: log message %+v, want %q", m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("a: log message %q did not arrive", want)
		}
	}
	// b's own call logs at info, below its level: nothing reaches it.
	if got, _ := callText(t, b.cs, ctx, &mcp.CallToolParams{Name: "log"}); got != "logged" {
		t.Fatalf("log = %q", got)
	}
	if got, _ := callText(t, a.cs, ctx, &mcp.CallToolParams{Name: "log"}); got != "logged" {
		t.Fatalf("log = %q", got)
	}
	for range 2 {
		<-a.logs
	}
	if len(b.logs) > 0 {
		t.Errorf("b (level error) got %d info messages", len(b.logs))
	}
}

// stdioShared saves the test binary's stdio upstream (see TestMain) as a
// shared server and fronts it.
func stdioShared(t *testing.T, opts Options) (*Front, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	servers := savedServers{"stdio": {Name: "stdio", Command: exe, Env: map[string]string{upstreamEnv: "1"}, Sessions: mcpconn.SessionsShared}}
	opts.Log = testLog()
	front := New(servers, nil, opts)
	// These tests are of the SDK relay's shared upstream (which serves
	// shared HTTP servers); the stdio relay's own are in stdio_test.go.
	front.sdkStdio = true
	return front, serveFront(t, front, nil) + "/mcp/servers/stdio"
}

// upstreamPID asks the stdio upstream of a session for its process id.
func upstreamPID(t *testing.T, cs *mcp.ClientSession) int {
	t.Helper()
	got, _ := callText(t, cs, timeout(t), &mcp.CallToolParams{Name: "pid"})
	var pid int
	if _, err := fmt.Sscan(got, &pid); err != nil || pid == os.Getpid() {
		t.Fatalf("pid = %q: want the stdio server's process id", got)
	}
	return pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestSharedStdioRestart(t *testing.T) {
	front, url := stdioShared(t, Options{})
	a, b := connectPeer(t, url, "a", false), connectPeer(t, url, "b", false)
	pid := upstreamPID(t, a.cs)
	if got := upstreamPID(t, b.cs); got != pid {
		t.Fatalf("two clients of a shared stdio server run two processes (%d, %d)", pid, got)
	}
	// The upstream dying ends its sessions; the next client starts another.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sessions of the dead upstream to end", func() bool { return front.Sessions() == 0 })
	if _, err := a.cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "pid"}); err == nil {
		t.Error("a session of the dead upstream still answers")
	}
	c := connectPeer(t, url, "c", false)
	if restarted := upstreamPID(t, c.cs); restarted == pid {
		t.Fatal("the same process after it died")
	}
	// Close ends the running one.
	last := upstreamPID(t, c.cs)
	if err := front.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shared process to end with Close", func() bool { return !alive(last) })
}

func TestSharedStdioGrace(t *testing.T) {
	// The grace is the idle timeout when that is shorter than a minute.
	front, url := stdioShared(t, Options{IdleTimeout: 5 * time.Second})
	a := connectPeer(t, url, "a", false)
	pid := upstreamPID(t, a.cs)
	_ = a.cs.Close()
	waitFor(t, "the session to end", func() bool { return front.Sessions() == 0 })
	// A client within the grace finds the process running.
	b := connectPeer(t, url, "b", false)
	if got := upstreamPID(t, b.cs); got != pid {
		t.Errorf("a client during the grace got process %d, want the running %d", got, pid)
	}
	_ = b.cs.Close()
	waitFor(t, "the shared process to end a grace after its last client", func() bool { return !alive(pid) })
}

func TestSharedConcurrentJoin(t *testing.T) {
	_, url := stdioShared(t, Options{})
	// Clients that initialise while the process starts all wait for it.
	var wg sync.WaitGroup
	pids := make([]int, 4)
	for i := range pids {
		wg.Go(func() {
			p := connectPeer(t, url, fmt.Sprint("p", i), false)
			pids[i] = upstreamPID(t, p.cs)
		})
	}
	wg.Wait()
	for _, pid := range pids[1:] {
		if pid != pids[0] {
			t.Fatalf("clients that joined at once run several processes: %v", pids)
		}
	}
}
