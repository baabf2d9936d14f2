// Package mcpconn connects caphub to upstream MCP servers with the official
// Go SDK: a saved server's connection (a command over stdio, or a URL over
// streamable HTTP with SSE as the fallback) becomes a client session.
//
// Saved connections never hold secrets: environment values and header
// values may reference caphub's own environment as ${VAR}, expanded only
// when connecting, and literal values for secret-looking names are refused.
package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/allowlist"
	"github.com/caphub/caphub/internal/permit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport kinds of a saved server.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http" // streamable HTTP, falling back to SSE
	TransportSSE   = "sse"  // the 2024-11-05 SSE transport only
)

// Session modes of a saved server: how the sessions of clients that caphub
// fronts (at /mcp/servers/{name}) map to sessions with the server.
const (
	// SessionsPerClient (the default, also written "") gives each client
	// session an upstream session of its own: for a stdio server, a process
	// of its own. Clients are isolated from each other.
	SessionsPerClient = "per-client"
	// SessionsShared serves every client session with one upstream session
	// (one process for a stdio server): cheap, but what the server keeps in
	// its session is shared between the clients.
	SessionsShared = "shared"
)

// Server is a saved MCP server connection.
type Server struct {
	Name      string            `json:"name" yaml:"name"`
	Transport string            `json:"transport" yaml:"transport"`
	Command   string            `json:"command,omitempty" yaml:"command,omitempty"` // split into argv, never run by a shell
	Args      []string          `json:"args,omitempty" yaml:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty" yaml:"env,omitempty"` // values may be ${VAR} references
	Dir       string            `json:"dir,omitempty" yaml:"dir,omitempty"`
	URL       string            `json:"url,omitempty" yaml:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"` // values may hold ${VAR} references
	// Sessions is how fronted client sessions map to upstream sessions:
	// SessionsPerClient (or "") or SessionsShared.
	Sessions string `json:"sessions,omitempty" yaml:"sessions,omitempty"`
	// Registry is the MCP Registry entry (its server.json) this connection
	// was imported from (caphub import mcp-registry), kept with it so that
	// caphub answers the registry API with what was published; nil for a
	// server saved otherwise. Saving the server again without it drops it.
	Registry json.RawMessage `json:"registry,omitempty" yaml:"-"`
	// Permits bound what connecting may do: the program started, the
	// variables ${VAR} reads, the host reached. A server saved over the API
	// gets the operator's lists (discover.Servers sets them); nil is the
	// operator's own configuration, which may do anything (permit.Operator).
	Permits *permit.Permits `json:"-" yaml:"-"`
}

var (
	serverNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	envRefRE     = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	secretNameRE = regexp.MustCompile(`(?i)(token|secret|password|passwd|api[-_]?key|auth|credential|cookie|private)`)
)

// Validate checks a saved server: its name is a capability domain, it has
// exactly one way to connect, and no secret is written into it.
func (s *Server) Validate() error {
	var problems []string
	if !serverNameRE.MatchString(s.Name) {
		problems = append(problems, fmt.Sprintf("name %q must match [a-z][a-z0-9-]* (it becomes the domain of the server's capability URIs, mcp:<name>/<tool>)", s.Name))
	}
	switch {
	case s.Command != "" && s.URL != "":
		problems = append(problems, "give either a command (stdio) or a url (HTTP), not both")
	case s.Command != "":
		problems = append(problems, s.validateCommand()...)
	case s.URL != "":
		problems = append(problems, s.validateURL()...)
	default:
		problems = append(problems, "give a command (stdio) or a url (streamable HTTP or SSE)")
	}
	if s.Sessions != "" && s.Sessions != SessionsPerClient && s.Sessions != SessionsShared {
		problems = append(problems, fmt.Sprintf("sessions %q is not a session mode: use %s (each client its own upstream session; the default) or %s (one upstream session for every client)", s.Sessions, SessionsPerClient, SessionsShared))
	}
	problems = append(problems, secretProblems("env", s.Env)...)
	problems = append(problems, secretProblems("header", s.Headers)...)
	if p := registryProblem(s.Registry); p != "" {
		problems = append(problems, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("MCP server %q: %s", s.Name, strings.Join(problems, "; "))
	}
	return nil
}

// MaxRegistryBytes bounds the registry entry kept with a connection (a
// real server.json is a few kilobytes).
const MaxRegistryBytes = 256 << 10

// registryProblem checks the registry entry kept with a connection: a
// JSON object within MaxRegistryBytes ("" when it is, or when there is
// none).
func registryProblem(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if len(raw) > MaxRegistryBytes {
		return fmt.Sprintf("registry entry is %d bytes, more than the %d-byte limit of a server.json", len(raw), MaxRegistryBytes)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "registry entry must be a server.json object: " + err.Error()
	}
	return ""
}

// Shared reports whether the server's upstream session is shared between
// the client sessions caphub fronts (Sessions is SessionsShared).
func (s *Server) Shared() bool { return s.Sessions == SessionsShared }

// validateCommand checks a stdio server: its transport (stdio by default)
// and a command that splits into a program and its arguments.
func (s *Server) validateCommand() []string {
	var problems []string
	if s.Transport == "" {
		s.Transport = TransportStdio
	}
	if s.Transport != TransportStdio {
		problems = append(problems, fmt.Sprintf("transport %q does not run a command: use stdio", s.Transport))
	}
	if argv, err := capability.SplitCommand(s.Command); err != nil {
		problems = append(problems, "command: "+err.Error())
	} else if len(argv) == 0 {
		problems = append(problems, "command is empty")
	}
	return problems
}

// validateURL checks an HTTP server: its transport (streamable HTTP by
// default, or SSE) and an absolute http(s) URL.
func (s *Server) validateURL() []string {
	var problems []string
	if s.Transport == "" {
		s.Transport = TransportHTTP
	}
	if s.Transport != TransportHTTP && s.Transport != TransportSSE {
		problems = append(problems, fmt.Sprintf("transport %q does not use a url: use http or sse", s.Transport))
	}
	if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
		problems = append(problems, fmt.Sprintf("url %q must be an absolute http(s) URL", s.URL))
	}
	return problems
}

// secretProblems checks that no env variable or header (what) holds a
// secret, in name order.
func secretProblems(what string, values map[string]string) []string {
	var problems []string
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if err := checkNoSecret(what+" "+k, k, values[k]); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}

// checkNoSecret refuses a literal value under a secret-looking name: the
// value must come from the environment as ${VAR}.
func checkNoSecret(what, name, value string) error {
	if value == "" || !secretNameRE.MatchString(name) {
		return nil
	}
	rest := strings.TrimSpace(envRefRE.ReplaceAllString(value, ""))
	rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(rest, "Bearer"), "Basic"))
	if rest != "" {
		return fmt.Errorf("%s looks like a secret: caphub does not store secrets, so write it as a reference to an environment variable, e.g. %s=${%s}", what, name, envName(name))
	}
	return nil
}

func envName(name string) string {
	return strings.ToUpper(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(name, "_"))
}

// ParseEnvFlag reads a --env flag: K=V (V may hold ${VAR} references) or a
// bare K, which passes caphub's own $K through as ${K}.
func ParseEnvFlag(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if k == "" {
		return "", "", fmt.Errorf("--env %q: write NAME=VALUE or NAME", s)
	}
	if !ok {
		v = "${" + k + "}"
	}
	return k, v, nil
}

// ParseHeaderFlag reads a --header flag: "Name: value".
func ParseHeaderFlag(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return "", "", fmt.Errorf("--header %q: write Name:value (values may reference ${VAR})", s)
	}
	return strings.TrimSpace(k), strings.TrimSpace(v), nil
}

// permits are the server's Permits, permit.Operator when none are set.
func (s *Server) permits() *permit.Permits {
	if s.Permits == nil {
		return permit.Operator
	}
	return s.Permits
}

// expand replaces ${VAR} with caphub's environment; a variable that is
// missing, or that the server may not read, is an error naming it.
func (s *Server) expand(what, value string) (string, error) {
	var first error
	out := envRefRE.ReplaceAllStringFunc(value, func(m string) string {
		v, err := s.permits().Lookup(envRefRE.FindStringSubmatch(m)[1])
		if err != nil && first == nil {
			first = err
		}
		return v
	})
	if first != nil {
		return "", fmt.Errorf("%s: %w", what, first)
	}
	return out, nil
}

// CheckURL returns nil when the server's URL is one its Permits let caphub
// reach (an error naming the setting that would allow it otherwise).
func (s *Server) CheckURL() error {
	u, err := url.Parse(s.URL)
	if err != nil || u.Host == "" {
		return fmt.Errorf("MCP server %q: url %q is not an absolute http(s) URL", s.Name, s.URL)
	}
	if err := allowlist.CheckURL(s.permits().Hosts, u, permit.HostFlag); err != nil {
		return fmt.Errorf("MCP server %q: %w", s.Name, err)
	}
	return nil
}

// Source describes where the server is, for provenance: the command line or
// the URL.
func (s *Server) Source() string {
	if s.URL != "" {
		return s.URL
	}
	return strings.TrimSpace(s.Command + " " + strings.Join(s.Args, " "))
}

// DefaultStartTimeout bounds starting and initialising a session, unless
// ConnectOptions.StartTimeout says otherwise.
const DefaultStartTimeout = 60 * time.Second

// Spawner bounds how many stdio servers start at once: a start-up (a
// process launched and its initialize answered) holds one of its slots.
// Node servers spend a second or more of CPU starting; started all at
// once on a small machine, every one of them would be slow. The zero
// value is not usable: use NewSpawner.
type Spawner struct {
	slots           chan struct{}
	started, failed atomic.Int64
}

// Started records the outcome of starting a stdio server (err nil: it
// started and answered), for metrics.
func (sp *Spawner) Started(err error) {
	if sp == nil {
		return
	}
	if err != nil {
		sp.failed.Add(1)
		return
	}
	sp.started.Add(1)
}

// Counts are the stdio servers started and the starts that failed so far.
func (sp *Spawner) Counts() (started, failed int64) {
	if sp == nil {
		return 0, 0
	}
	return sp.started.Load(), sp.failed.Load()
}

// NewSpawner returns a Spawner of n slots (at least 1).
func NewSpawner(n int) *Spawner { return &Spawner{slots: make(chan struct{}, max(n, 1))} }

// Acquire waits for a slot until ctx ends, and returns its release: a
// caller that starts a stdio server itself (ExecCommand) holds a slot
// until the server has answered initialize. A nil Spawner has a slot for
// everyone.
func (sp *Spawner) Acquire(ctx context.Context) (func(), error) {
	if sp == nil {
		return func() {}, nil
	}
	select {
	case sp.slots <- struct{}{}:
		return func() { <-sp.slots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for one of the %d start-up slots of stdio MCP servers: %w", cap(sp.slots), context.Cause(ctx))
	}
}

// Connect starts (stdio) or reaches (HTTP) the server and initialises an MCP
// session. For transport http it tries streamable HTTP, then SSE.
func Connect(ctx context.Context, s *Server, clientVersion string) (*mcp.ClientSession, error) {
	cs, _, err := ConnectProcess(ctx, s, clientVersion, nil)
	return cs, err
}

// ConnectProcess is Connect that also returns the started process of a
// stdio server (nil for HTTP), so that a supervisor can kill its process
// group, and lets the caller set client options (handlers for
// server-to-client requests).
func ConnectProcess(ctx context.Context, s *Server, clientVersion string, opts *mcp.ClientOptions) (*mcp.ClientSession, *exec.Cmd, error) {
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "caphub", Version: clientVersion}, opts)
	return ConnectClient(ctx, s, client, nil)
}

// ConnectOptions tune ConnectClient.
type ConnectOptions struct {
	// Session configures the session: the protocol version to offer, for
	// one (nil offers the SDK's latest).
	Session *mcp.ClientSessionOptions
	// WrapTransport, when set, wraps the transport before the session
	// connects over it, to observe or order the session's messages.
	WrapTransport func(mcp.Transport) mcp.Transport
	// StartTimeout bounds this session's start: the process launched (or
	// the server reached) and initialised. 0 means DefaultStartTimeout.
	// Waiting for a Spawner slot does not count.
	StartTimeout time.Duration
	// Spawner, when set, bounds the stdio servers starting at once.
	Spawner *Spawner
	// Wait bounds the wait for a Spawner slot (a request's context, say);
	// nil waits as long as ctx lives.
	Wait context.Context
}

// ConnectClient is ConnectProcess for a client the caller built, so that it
// may carry middleware (a relay that forwards every server-to-client
// message, for one), with options for the session and its transport.
func ConnectClient(ctx context.Context, s *Server, client *mcp.Client, opts *ConnectOptions) (*mcp.ClientSession, *exec.Cmd, error) {
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	if opts == nil {
		opts = &ConnectOptions{}
	}
	if s.Transport == TransportStdio {
		wait := opts.Wait
		if wait == nil {
			wait = ctx
		}
		release, err := opts.Spawner.Acquire(wait)
		if err != nil {
			return nil, nil, fmt.Errorf("start MCP server %q: %w", s.Name, err)
		}
		defer release()
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	// The session lives as long as the context it was connected with (the SSE
	// transport's stream is bound to it), so the timeout cancels only a
	// connection that has not finished in time.
	ctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(timeout, cancel)
	cs, cmd, err := connect(ctx, s, client, opts)
	if !timer.Stop() && err != nil {
		err = fmt.Errorf("%w (no answer within %s: raise the start timeout if the server is slow to start)", err, timeout)
	}
	if s.Transport == TransportStdio {
		opts.Spawner.Started(err)
	}
	if err != nil {
		cancel()
	}
	return cs, cmd, err
}

func connect(ctx context.Context, s *Server, client *mcp.Client, opts *ConnectOptions) (*mcp.ClientSession, *exec.Cmd, error) {
	dial := func(t mcp.Transport) (*mcp.ClientSession, error) {
		if opts.WrapTransport != nil {
			t = opts.WrapTransport(t)
		}
		return client.Connect(ctx, t, opts.Session)
	}
	switch s.Transport {
	case TransportStdio:
		cmd, err := s.command()
		if err != nil {
			return nil, nil, err
		}
		cs, err := dial(&mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second})
		if err != nil {
			_ = KillGroup(cmd)
			return nil, nil, fmt.Errorf("start MCP server %q (%s): %w (check the command runs and speaks MCP on stdio)", s.Name, s.Source(), err)
		}
		return cs, cmd, nil
	case TransportHTTP, TransportSSE:
		hc, err := s.httpClient()
		if err != nil {
			return nil, nil, err
		}
		if s.Transport == TransportHTTP {
			cs, err := dial(&mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, MaxRetries: 1})
			if err == nil {
				// An SSE-only server can let the initialisation through and fail
				// the next request: a ping tells.
				if err = cs.Ping(ctx, nil); err == nil {
					return cs, nil, nil
				}
				cs.Close()
			}
			streamErr := err
			cs, err = dial(&mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: hc})
			if err == nil {
				return cs, nil, nil
			}
			return nil, nil, fmt.Errorf("connect to MCP server %q at %s: streamable HTTP failed (%v), and so did SSE (%v)", s.Name, s.URL, streamErr, err)
		}
		cs, err := dial(&mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: hc})
		if err != nil {
			return nil, nil, fmt.Errorf("connect to MCP server %q at %s over SSE: %w", s.Name, s.URL, err)
		}
		return cs, nil, nil
	}
	return nil, nil, fmt.Errorf("MCP server %q: unknown transport %q", s.Name, s.Transport)
}

// ExecCommand builds, without starting it, the process of a stdio server
// whose saved connection is valid: as caphub starts it itself (see command),
// for a caller that speaks MCP over its stdin and stdout itself (the
// front's stdio relay). The caller sets its pipes, starts it, and kills its
// group with KillGroup.
func (s *Server) ExecCommand() (*exec.Cmd, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Transport != TransportStdio {
		return nil, fmt.Errorf("MCP server %q: transport %q starts no process: only stdio servers do", s.Name, s.Transport)
	}
	return s.command()
}

// command builds the child process: argv from the command template and
// args, no shell, the environment with ${VAR}s expanded, in its own process
// group so that it can be killed with its children.
func (s *Server) command() (*exec.Cmd, error) {
	argv, err := capability.SplitCommand(s.Command)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q command: %w", s.Name, err)
	}
	argv = append(argv, s.Args...)
	path, err := exec.LookPath(argv[0])
	if perr := s.permits().Command(argv[0], path, exec.LookPath); perr != nil {
		return nil, fmt.Errorf("MCP server %q: %w", s.Name, perr)
	}
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: program %q not found: install it or give its full path", s.Name, argv[0])
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Dir = s.Dir
	env := baseEnv()
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		v, err := s.expand("env "+k, s.Env[k])
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: %w", s.Name, err)
		}
		env = append(env, k+"="+v)
	}
	cmd.Env = env
	setProcessGroup(cmd)
	return cmd, nil
}

// baseEnv is what a server inherits from caphub: permit.BaseEnv, enough to
// run a program, nothing that could carry caphub's own secrets. Everything
// else a server needs is configured in its Env, as ${VAR} references.
func baseEnv() []string {
	var env []string
	for _, k := range permit.BaseEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// HTTPHeaders returns the saved headers with their ${VAR} references
// expanded from caphub's environment, as they are sent to the server (an
// error names a missing variable).
func (s *Server) HTTPHeaders() (http.Header, error) {
	headers := http.Header{}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		v, err := s.expand("header "+k, s.Headers[k])
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: %w", s.Name, err)
		}
		headers.Set(k, v)
	}
	return headers, nil
}

// httpClient returns a client that adds the saved headers, expanded, and
// reaches only hosts the server's Permits allow, redirects included (the
// saved headers are dropped when a redirect leaves the server's host).
func (s *Server) httpClient() (*http.Client, error) {
	if err := s.CheckURL(); err != nil {
		return nil, err
	}
	headers, err := s.HTTPHeaders()
	if err != nil {
		return nil, err
	}
	hosts := s.permits().Hosts
	return &http.Client{
		Transport:     &headerTransport{base: upstreamTransport, headers: headers, host: hostOf(s.URL)},
		CheckRedirect: allowlist.CheckRedirect(hosts, permit.HostFlag, ""),
	}, nil
}

// upstreamTransport carries the requests of every HTTP session:
// http.DefaultTransport keeping more idle connections per host, since a
// pooled session makes concurrent calls (each a POST) while its standalone
// stream holds a connection of its own; with the default two, concurrent
// calls kept dialling new connections.
var upstreamTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}()

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return strings.ToLower(u.Host)
	}
	return ""
}

type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	host    string // the saved server's host:port: headers go there only
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && strings.EqualFold(r.URL.Host, t.host) {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header[k] = v
		}
	}
	return t.base.RoundTrip(r)
}

// ListTools lists every tool of a session, following pagination.
func ListTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	seen := map[string]bool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if seen[t.Name] {
			return nil, errors.New("tools/list returned the tool " + t.Name + " twice: the server's pagination is inconsistent")
		}
		seen[t.Name] = true
		tools = append(tools, t)
	}
	return tools, nil
}
