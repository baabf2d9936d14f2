// Command gateway measures MCP gateways side by side (issue #14): caphub's
// front (/mcp/servers/NAME), in its per-session and its shared-session
// modes, caphub's aggregated /mcp, and peers the operator names (such as
// TBXark/mcp-proxy and supergateway), against the upstream called
// directly, all in one run.
//
// Each target fronts the same upstream (the Go SDK's conformance
// everything-server, or npm server-everything with -upstream npm) over
// stdio and over streamable HTTP. In each round every target is loaded in
// turn, the order rotating between rounds, with 1 and 32 concurrent MCP
// sessions calling one cheap tool in a loop: calls/s, p50/p99 latency, the
// gateway's CPU per call and its memory. The figures are medians over the
// rounds; the ratios to each peer are medians of per-round ratios, each
// taken between measurements seconds apart, which is what survives a
// shared, noisy machine.
//
// Peers are never built or installed here: -peer gives each one's command
// line. See README.md.
//
// Run: go run ./bench/gateway [-rounds 3] [-duration 5s] [-sessions 1,32] -peer 'tbxark=…' -peer 'supergateway=…'
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/caphub/caphub/bench/internal/load"
	"golang.org/x/sync/errgroup"
)

// The harness's own targets, in the order they are listed.
const (
	tDirect            = "direct"
	tCaphubFront       = "caphub-front"
	tCaphubFrontShared = "caphub-front-shared"
	tCaphubMCP         = "caphub-mcp"
)

var ownTargets = []string{tDirect, tCaphubFront, tCaphubFrontShared, tCaphubMCP}

// caphubTargets are the targets run by a caphub binary: with -caphub-base
// each is measured a second time, as NAME@base, run by the base binary.
var caphubTargets = []string{tCaphubFront, tCaphubFrontShared, tCaphubMCP}

// baseSuffix ends the name of a target run by -caphub-base's binary.
const baseSuffix = "@base"

// everythingServer is the Go SDK's conformance server, the default
// upstream (see internal/server/mcpfront/conformance_test.go).
const everythingServer = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// serverName is the name the upstream is saved and fronted under.
const serverName = "everything"

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// options are the harness's settings, from its flags.
type options struct {
	rounds       int
	duration     time.Duration
	warmup       time.Duration
	sessions     []int
	transports   []string
	targets      []string // "" = all
	caphub       string
	caphubBase   string // -caphub-base: another caphub measured beside it ("" = none)
	upstreamKind string
	npm          string
	tool         string
	args         json.RawMessage
	startTimeout time.Duration
	keep         bool
	peers        []*peer
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("bench/gateway: ")
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		log.Fatal(err)
	}
	if err := run(o, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	o := &options{}
	var peerSpecs, peerOpts listFlag
	fs.IntVar(&o.rounds, "rounds", 3, "rounds: each measures every target once per (transport, sessions)")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "load time of one measurement")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "untimed load on each target before the first round")
	sessions := fs.String("sessions", "1,32", "concurrent MCP sessions, comma-separated")
	transports := fs.String("transports", "stdio,http", "upstream transports: stdio, http or both")
	targets := fs.String("targets", "", "targets to measure, comma-separated (default: all: "+strings.Join(ownTargets, ", ")+" and every -peer)")
	fs.StringVar(&o.caphub, "caphub", "", "caphub binary (default: built from this module into a temporary directory)")
	fs.StringVar(&o.caphubBase, "caphub-base", "", "a second caphub binary (say, main's) whose targets are measured in the same rounds as NAME"+baseSuffix+", with a vs-base ratio")
	fs.StringVar(&o.upstreamKind, "upstream", "go", "upstream server: go (the Go SDK's conformance everything-server, built here) or npm (@modelcontextprotocol/server-everything from -npm)")
	fs.StringVar(&o.npm, "npm", ".cache/npm/node_modules", "node_modules holding @modelcontextprotocol/server-everything (for -upstream npm)")
	fs.StringVar(&o.tool, "tool", "", "the upstream's tool to call (default: test_simple_text for go, echo for npm)")
	toolArgs := fs.String("args", "", "the tool's arguments, a JSON object (default: {} for go, {\"message\":\"hi\"} for npm)")
	fs.DurationVar(&o.startTimeout, "start-timeout", 90*time.Second, "how long a target may take to answer initialize after its start (npx may download first)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (databases, configurations, each process's log)")
	fs.Var(&peerSpecs, "peer", "a peer gateway, NAME=COMMAND with placeholders {port} {addr} {name} {config} {upstream} {upstream_url} (repeatable; see README.md)")
	fs.Var(&peerOpts, "peer-opt", "NAME.KEY=VALUE for a -peer: url (endpoint template), config (configuration template file) or transports (stdio,http) (repeatable)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: every setting is a flag", fs.Arg(0))
	}
	if o.rounds < 1 || o.rounds > 100 {
		return nil, fmt.Errorf("-rounds %d: want 1 to 100", o.rounds)
	}
	if o.duration < 100*time.Millisecond || o.duration > time.Hour {
		return nil, fmt.Errorf("-duration %s: want 100ms to 1h", o.duration)
	}
	var err error
	if o.sessions, err = parseSessions(*sessions); err != nil {
		return nil, err
	}
	for t := range strings.SplitSeq(*transports, ",") {
		if t = strings.TrimSpace(t); t != overStdio && t != overHTTP {
			return nil, fmt.Errorf("-transports: %q is neither stdio nor http", t)
		}
		if !slices.Contains(o.transports, t) {
			o.transports = append(o.transports, t)
		}
	}
	for _, s := range peerSpecs {
		p, err := parsePeer(s)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(o.peers, func(q *peer) bool { return q.name == p.name }) {
			return nil, fmt.Errorf("-peer %s given twice", p.name)
		}
		o.peers = append(o.peers, p)
	}
	for _, s := range peerOpts {
		if err := setOption(o.peers, s); err != nil {
			return nil, err
		}
	}
	for _, p := range o.peers {
		if err := p.finish(); err != nil {
			return nil, err
		}
	}
	if *targets != "" {
		for t := range strings.SplitSeq(*targets, ",") {
			t = strings.TrimSpace(t)
			if !slices.Contains(ownTargets, t) && !slices.ContainsFunc(o.peers, func(p *peer) bool { return p.name == t }) {
				return nil, fmt.Errorf("-targets: no target %q (%s, or a -peer's name)", t, strings.Join(ownTargets, ", "))
			}
			o.targets = append(o.targets, t)
		}
	}
	switch o.upstreamKind {
	case "go":
		o.tool, o.args = cmpOr(o.tool, "test_simple_text"), json.RawMessage(cmpOr(*toolArgs, "{}"))
	case "npm":
		o.tool, o.args = cmpOr(o.tool, "echo"), json.RawMessage(cmpOr(*toolArgs, `{"message":"hi"}`))
	default:
		return nil, fmt.Errorf("-upstream %q: go or npm", o.upstreamKind)
	}
	var obj map[string]any
	if err := json.Unmarshal(o.args, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("-args %s: want a JSON object", o.args)
	}
	return o, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// parseSessions reads -sessions: distinct counts from 1 to 1024.
func parseSessions(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("-sessions %q: want counts from 1 to 1024, comma-separated", s)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// upstream is the server every target fronts, over one transport.
type upstream struct {
	transport string
	argv      []string // stdio: its command line
	url       string   // http: its endpoint
	pid       int      // http: its process
	marker    string   // the program's path, found in its processes' command lines
}

// entryJSON is the upstream as an "mcpServers" entry of a gateway's
// configuration.
func (u *upstream) entryJSON() string {
	var e map[string]any
	if u.transport == overStdio {
		e = map[string]any{"command": u.argv[0], "args": u.argv[1:]}
	} else {
		e = map[string]any{"url": u.url, "type": "streamable-http", "transportType": "streamable-http"}
	}
	b, _ := json.Marshal(e)
	return string(b)
}

// target is one gateway (or the upstream itself) serving MCP over
// streamable HTTP, ready to measure.
type target struct {
	name string
	up   *upstream
	url  string
	tool string // the name it offers the upstream's tool under
	root int    // the gateway's process; 0 for direct
	note string // printed under the tables
}

// errSkip marks a target that cannot run here, with why.
type errSkip struct{ why string }

func (e errSkip) Error() string { return e.why }

// env is what the run holds: its directory and the processes it started.
type env struct {
	dir   string
	o     *options
	mu    sync.Mutex
	stops []func()
}

func run(o *options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "caphub-bench-gateway")
	if err != nil {
		return err
	}
	e := &env{dir: dir, o: o}
	// The processes started run in process groups of their own, out of
	// reach of the terminal's ^C: stop them on a signal.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		<-sig
		log.Printf("interrupted: stopping the processes started")
		e.stopAll()
		if !o.keep {
			os.RemoveAll(dir)
		}
		os.Exit(1)
	}()
	defer func() {
		e.stopAll()
		if o.keep {
			log.Printf("kept %s", dir)
		} else {
			os.RemoveAll(dir)
		}
	}()
	if o.caphub == "" && o.wants(tCaphubFront, tCaphubFrontShared, tCaphubMCP) {
		o.caphub = filepath.Join(dir, "caphub")
		log.Printf("building caphub into %s", o.caphub)
		if b, err := exec.Command("go", "build", "-o", o.caphub, "./cmd/caphub").CombinedOutput(); err != nil {
			return fmt.Errorf("build caphub (run from the repository's root): %v\n%s", err, b)
		}
	}
	ups, err := e.upstreams()
	if err != nil {
		return err
	}

	// Start every target.
	byTransport := map[string][]*target{}
	var skipped []string
	for _, tr := range o.transports {
		up := ups[tr]
		for _, name := range o.allTargets() {
			if !o.wants(name) || name == tDirect && tr != overHTTP { // direct is the upstream over HTTP
				continue
			}
			log.Printf("starting %s (%s upstream)", name, tr)
			t, err := e.start(name, up)
			if err != nil {
				var skip errSkip
				if !errors.As(err, &skip) {
					err = fmt.Errorf("failed: %w", err)
				}
				msg := fmt.Sprintf("%s (%s upstream): %v", name, tr, err)
				log.Printf("skipped %s", msg)
				skipped = append(skipped, msg)
				continue
			}
			byTransport[tr] = append(byTransport[tr], t)
		}
	}

	// Warm up, then the rounds.
	maxSessions := slices.Max(o.sessions)
	if o.warmup > 0 {
		for _, tr := range o.transports {
			for _, t := range byTransport[tr] {
				log.Printf("warming up %s (%s upstream, %d sessions, %s)", t.name, tr, maxSessions, o.warmup)
				if _, err := e.measureOnce(t, maxSessions, o.warmup); err != nil {
					log.Printf("warm-up of %s (%s): %v", t.name, tr, err)
				}
			}
		}
	}
	tables := map[string]*table{}
	key := func(tr string, n int) string { return tr + "/" + strconv.Itoa(n) }
	for _, tr := range o.transports {
		for _, n := range o.sessions {
			tb := &table{transport: tr, sessions: n, results: map[string]rounds{}}
			for _, t := range byTransport[tr] {
				tb.targets = append(tb.targets, t.name)
				tb.results[t.name] = make(rounds, o.rounds)
			}
			tables[key(tr, n)] = tb
		}
	}
	for r := range o.rounds {
		for _, tr := range o.transports {
			for _, n := range o.sessions {
				ts := byTransport[tr]
				for i := range ts {
					t := ts[(i+r)%len(ts)] // rotate the order between rounds
					s, err := e.measureOnce(t, n, o.duration)
					if err != nil {
						log.Printf("round %d, %s upstream, %d sessions, %s: %v", r+1, tr, n, t.name, err)
						continue
					}
					log.Printf("round %d, %s upstream, %d sessions, %-20s %7.0f calls/s  p50 %-9s p99 %-9s gateway CPU %s µs/call  failed %d",
						r+1, tr, n, t.name, s.callsPerSec, s.p50, s.p99, num(s.gwCPUPerCall, 0), s.failed)
					tables[key(tr, n)].results[t.name][r] = s
				}
			}
		}
	}

	// Report.
	fmt.Fprintf(out, "## MCP gateways side by side: tools/call %s, %d rounds × %s per measurement\n\n", o.tool, o.rounds, o.duration)
	fmt.Fprintf(out, "Upstream: %s. Machine: %d CPUs, %s/%s, %s. Client: this harness's thin streamable HTTP client (one POST per call), in the same machine.\n\n",
		e.upstreamDesc(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintln(out, "Figures are medians over rounds; a ratio is the median over rounds of (target ÷ peer) measured in the same round (calls/s: higher is better; p50, CPU and RSS: lower is better).")
	fmt.Fprintln(out, "Gateway CPU: utime+stime from /proc/PID/stat of the gateway process and its descendants, less the upstream's processes, over the timed load (sessions are opened before and closed after it), per call. Upstream CPU: the same for the upstream's processes (its children under the gateway for stdio; the upstream server for http), per call.")
	fmt.Fprintln(out, "Gateway RSS: VmRSS summed over the same gateway processes (the upstream's excluded) at the end of the load, sessions still open; for direct there is no gateway (—). Open sessions: the time to initialize all the sessions. Procs: the processes counted, gateway+upstream, at the end of the last round's load.")
	for _, tr := range o.transports {
		for _, n := range o.sessions {
			tables[key(tr, n)].print(out, o.peerNames())
		}
	}
	fmt.Fprintln(out)
	for _, tr := range o.transports {
		for _, t := range byTransport[tr] {
			if t.note != "" {
				fmt.Fprintf(out, "- %s (%s): %s\n", t.name, tr, t.note)
			}
		}
	}
	for _, s := range skipped {
		fmt.Fprintf(out, "- skipped: %s\n", s)
	}
	return nil
}

// allTargets is every target's name: the harness's, -caphub-base's, then
// the peers'.
func (o *options) allTargets() []string {
	all := slices.Clone(ownTargets)
	if o.caphubBase != "" {
		for _, t := range caphubTargets {
			all = append(all, t+baseSuffix)
		}
	}
	return append(all, o.peerNames()...)
}

func (o *options) peerNames() []string {
	var names []string
	for _, p := range o.peers {
		names = append(names, p.name)
	}
	return names
}

// wants reports whether any of names is to be measured (NAME@base when
// NAME is).
func (o *options) wants(names ...string) bool {
	if o.targets == nil {
		return true
	}
	for _, n := range names {
		if slices.Contains(o.targets, strings.TrimSuffix(n, baseSuffix)) {
			return true
		}
	}
	return false
}

// upstreams prepares the upstream for each transport: the stdio command
// line, and a running streamable HTTP server (stateful, as the SDK's
// conformance test runs it).
func (e *env) upstreams() (map[string]*upstream, error) {
	var stdioArgv, httpArgv []string
	var httpEnv []string
	var marker string
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	url := "http://127.0.0.1:" + port + "/mcp"
	switch e.o.upstreamKind {
	case "go":
		bin := filepath.Join(e.dir, "everything-server")
		log.Printf("building %s", everythingServer)
		if b, err := exec.Command("go", "build", "-o", bin, everythingServer).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s (run from the repository's root; if go.sum lacks it: GOFLAGS=-mod=mod go get %s@v1.8.0): %v\n%s", everythingServer, everythingServer, err, b)
		}
		marker, stdioArgv = bin, []string{bin}
		httpArgv = []string{bin, "-http", "127.0.0.1:" + port, "-stateless=false"}
	case "npm":
		script, err := filepath.Abs(filepath.Join(e.o.npm, "@modelcontextprotocol", "server-everything", "dist", "index.js"))
		if err == nil {
			_, err = os.Stat(script)
		}
		if err != nil {
			return nil, fmt.Errorf("-upstream npm: %v (install the test peers: bash .ci/run, or set -npm)", err)
		}
		node := filepath.Join(e.o.npm, ".bin", "node")
		if _, err := os.Stat(node); err != nil {
			if node, err = exec.LookPath("node"); err != nil {
				return nil, fmt.Errorf("-upstream npm: node not found in %s/.bin nor on PATH", e.o.npm)
			}
		}
		node, _ = filepath.Abs(node)
		marker, stdioArgv = script, []string{node, script, "stdio"}
		httpArgv, httpEnv = []string{node, script, "streamableHttp"}, []string{"PORT=" + port}
	}
	ups := map[string]*upstream{}
	for _, tr := range e.o.transports {
		switch tr {
		case overStdio:
			ups[tr] = &upstream{transport: overStdio, argv: stdioArgv, marker: marker}
		case overHTTP:
			cmd, logPath, err := e.startProcess("upstream-http", httpArgv, httpEnv)
			if err != nil {
				return nil, err
			}
			up := &upstream{transport: overHTTP, url: url, pid: cmd.Process.Pid, marker: marker}
			if err := e.waitReady(context.Background(), cmd, logPath, url); err != nil {
				return nil, fmt.Errorf("the HTTP upstream: %w", err)
			}
			ups[tr] = up
		}
	}
	return ups, nil
}

func (e *env) upstreamDesc() string {
	if e.o.upstreamKind == "npm" {
		return "npm @modelcontextprotocol/server-everything (node)"
	}
	return "the Go SDK's conformance everything-server (" + everythingServer + ", stateful streamable HTTP for http)"
}

// start starts target name in front of up.
func (e *env) start(name string, up *upstream) (*target, error) {
	ctx := context.Background()
	t := &target{name: name, up: up}
	var cmd *exec.Cmd
	var logPath string
	switch name {
	case tDirect:
		t.url = up.url
	case tCaphubFront, tCaphubFrontShared, tCaphubMCP:
		var err error
		if cmd, logPath, t.url, err = e.startCaphub(name, e.o.caphub, up); err != nil {
			return nil, err
		}
	case tCaphubFront + baseSuffix, tCaphubFrontShared + baseSuffix, tCaphubMCP + baseSuffix:
		var err error
		if cmd, logPath, t.url, err = e.startCaphub(name, e.o.caphubBase, up); err != nil {
			return nil, err
		}
		t.note = "caphub: " + e.o.caphubBase
	default:
		i := slices.IndexFunc(e.o.peers, func(p *peer) bool { return p.name == name })
		p := e.o.peers[i]
		if !slices.Contains(p.transports, up.transport) {
			return nil, errSkip{fmt.Sprintf("its command fronts %s upstreams only (-peer-opt %s.transports=… to change)", strings.Join(p.transports, ", "), name)}
		}
		var err error
		if cmd, logPath, t.url, err = e.startPeer(p, up); err != nil {
			return nil, err
		}
		t.note = "command: " + strings.Join(cmd.Args, " ")
	}
	if cmd != nil {
		t.root = cmd.Process.Pid
		if err := e.waitReady(ctx, cmd, logPath, t.url); err != nil {
			return nil, err
		}
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	s, err := openSession(ctx, hc, t.url)
	if err != nil {
		return nil, err
	}
	defer s.close(hc)
	if t.tool, err = resolveTool(ctx, hc, s, e.o.tool); err != nil {
		return nil, fmt.Errorf("%s: %w", t.url, err)
	}
	if err := s.callTool(ctx, hc, t.tool, e.o.args); err != nil {
		return nil, fmt.Errorf("%s: %w", t.url, err)
	}
	return t, nil
}

// startCaphub saves the upstream in a database of its own with `caphub
// discover mcp` (with --sessions shared for caphub-front-shared) and starts
// `caphub serve` on it, both with the binary bin.
func (e *env) startCaphub(name, bin string, up *upstream) (*exec.Cmd, string, string, error) {
	db := filepath.Join(e.dir, name+"-"+up.transport+".db")
	kind := strings.TrimSuffix(name, baseSuffix)
	args := []string{"discover", "mcp", serverName, "--db", db}
	if up.transport == overStdio {
		args = append(args, "--command", up.argv[0])
		for _, a := range up.argv[1:] {
			args = append(args, "--arg", a)
		}
	} else {
		args = append(args, "--url", up.url)
	}
	if kind == tCaphubFrontShared {
		args = append(args, "--sessions", "shared")
	}
	if b, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		if kind == tCaphubFrontShared && strings.Contains(string(b), "unknown flag: --sessions") {
			return nil, "", "", errSkip{fmt.Sprintf("%s has no `discover mcp --sessions shared` (the shared-session mode is not in this build)", bin)}
		}
		return nil, "", "", fmt.Errorf("caphub %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	port, err := freePort()
	if err != nil {
		return nil, "", "", err
	}
	cmd, logPath, err := e.startProcess(name+"-"+up.transport, []string{bin, "serve", "--addr", "127.0.0.1:" + port, "--db", db}, nil)
	if err != nil {
		return nil, "", "", err
	}
	url := "http://127.0.0.1:" + port + "/mcp"
	if kind != tCaphubMCP {
		url += "/servers/" + serverName
	}
	return cmd, logPath, url, nil
}

// startPeer writes the peer's configuration, if it reads one, and starts
// it.
func (e *env) startPeer(p *peer, up *upstream) (*exec.Cmd, string, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", "", err
	}
	v := vars{port: port, name: serverName, config: filepath.Join(e.dir, p.name+"-"+up.transport+".json"), up: up}
	if err := p.writeConfig(v); err != nil {
		return nil, "", "", err
	}
	argv, err := p.argv(v)
	if err != nil {
		return nil, "", "", err
	}
	url, err := v.expand(p.url, noQuote)
	if err != nil {
		return nil, "", "", err
	}
	cmd, logPath, err := e.startProcess(p.name+"-"+up.transport, argv, nil)
	if err != nil {
		return nil, "", "", err
	}
	return cmd, logPath, url, nil
}

// startProcess starts argv in a process group of its own, its output in a
// log file; the run's end stops the group.
func (e *env) startProcess(name string, argv, extraEnv []string) (*exec.Cmd, string, error) {
	logPath := filepath.Join(e.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, "", fmt.Errorf("start %s: %w", argv[0], err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	pid := cmd.Process.Pid
	e.mu.Lock()
	e.stops = append(e.stops, func() {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-done
		}
	})
	e.mu.Unlock()
	return cmd, logPath, nil
}

func (e *env) stopAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.stops) - 1; i >= 0; i-- {
		e.stops[i]()
	}
	e.stops = nil
}

// waitReady waits until url answers initialize, the process ends, or
// -start-timeout passes.
func (e *env) waitReady(ctx context.Context, cmd *exec.Cmd, logPath, url string) error {
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(e.o.startTimeout)
	var last error
	for time.Now().Before(deadline) {
		if s, err := openSession(ctx, hc, url); err == nil {
			s.close(hc)
			return nil
		} else {
			last = err
		}
		if cmd.Process.Signal(syscall.Signal(0)) != nil {
			return fmt.Errorf("%s ended before it served %s; its log %s ends:\n%s", cmd.Args[0], url, logPath, tail(logPath))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer initialize at %s within %s (%v); its log %s ends:\n%s", cmd.Args[0], url, e.o.startTimeout, last, logPath, tail(logPath))
}

// tail is the end of a log file.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// measureOnce opens n sessions on t, loads them for d, and closes them.
func (e *env) measureOnce(t *target, n int, d time.Duration) (*sample, error) {
	ctx := context.Background()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	defer hc.CloseIdleConnections()
	sessions := make([]*session, n)
	t0 := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range sessions {
		g.Go(func() error {
			s, err := openSession(gctx, hc, t.url)
			sessions[i] = s
			return err
		})
	}
	err := g.Wait()
	open := time.Since(t0)
	defer func() {
		var wg sync.WaitGroup
		for _, s := range sessions {
			if s != nil {
				wg.Go(func() { s.close(hc) })
			}
		}
		wg.Wait()
	}()
	if err != nil {
		return nil, fmt.Errorf("open %d sessions: %w", n, err)
	}
	upPID := t.up.pid // the HTTP upstream; 0 for stdio, whose processes are under the gateway
	before := measure(t.root, t.up.marker, upPID)
	var firstErr error
	var once sync.Once
	res := load.Run(n, d, func(lc *http.Client, c int) (*http.Response, error) {
		if err := sessions[c].callTool(ctx, lc, t.tool, e.o.args); err != nil {
			once.Do(func() { firstErr = err })
			return nil, err
		}
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	u := measure(t.root, t.up.marker, upPID).sub(before)
	if firstErr != nil {
		log.Printf("%s (%s upstream, %d sessions): %d of %d calls failed, the first: %v", t.name, t.up.transport, n, res.Failed, res.Total, firstErr)
	}
	ok := res.Total - res.Failed
	s := &sample{
		calls: res.Total, failed: res.Failed,
		callsPerSec:  float64(ok) / d.Seconds(),
		p50:          load.Pct(res.Latencies, 50),
		p99:          load.Pct(res.Latencies, 99),
		gwCPUPerCall: math.NaN(),
		upCPUPerCall: perCall(u.upCPU, res.Total),
		gwRSSMiB:     math.NaN(),
		open:         open,
		procs:        fmt.Sprintf("%d+%d", u.gwProcs, u.upProcs),
	}
	if t.root != 0 {
		s.gwCPUPerCall = perCall(u.gwCPU, res.Total)
		s.gwRSSMiB = float64(u.gwRSS) / (1 << 20)
	}
	return s, nil
}

// perCall is cpu per call in µs.
func perCall(cpu time.Duration, calls int64) float64 {
	if calls == 0 {
		return math.NaN()
	}
	return float64(max(cpu, 0).Microseconds()) / float64(calls)
}

// freePort is a free loopback port.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, nil
}
