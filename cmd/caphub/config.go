package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/embed"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/internal/envflag"
	"github.com/caphub/caphub/internal/fallback"
	"github.com/caphub/caphub/internal/server/mcpfront"
	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/mcpconn"
	"github.com/spf13/cobra"
)

// config is every setting the app and its commands take from the command
// line and the environment, read once by configFrom: a flag wins over its
// CAPHUB_* variable, which wins over the default. A command reads only the
// settings whose flags it has.
type config struct {
	// db is the database: --db, else $CAPHUB_DB, else defaultDBPath (a
	// SQLite file path or a postgres:// URL).
	db string
	// dbGiven reports whether --db or $CAPHUB_DB named the database (db is
	// not the default).
	dbGiven bool
	// server is the URL of a running caphub server used instead of db:
	// --server, else $CAPHUB_SERVER.
	server string
	// token is the API token sent to server: the file --token-file, else
	// the file $CAPHUB_TOKEN_FILE, else $CAPHUB_TOKEN. Never logged.
	token string
	// timeout is how long a command waits for each answer of server:
	// --timeout when given (0: no limit), else the command's default.
	timeout time.Duration
	// trustedKeys are the public keys registrations are verified against
	// and `capability verify` trusts by default: $CAPHUB_TRUSTED_KEYS,
	// files or directories separated like PATH.
	trustedKeys []string
	// log is where the app logs (stderr, at the command's level).
	log *slog.Logger
	// auditCommits observes the audit writer's commits (metrics); not a
	// setting.
	auditCommits func(events int, d time.Duration, err error)

	serve      serveConfig
	invocation invocationConfig
	embed      embedConfig
	// auditRetention is how much of the audit chain serve keeps:
	// --audit-max-events and --audit-max-age, else $CAPHUB_AUDIT_MAX_EVENTS
	// and $CAPHUB_AUDIT_MAX_AGE (zero: every event).
	auditRetention audit.Retention
}

// embedConfig is the embedding provider of semantic search, read by serve
// alone: off when url is empty. The provider is the operator's choice; no
// API caller can change it.
type embedConfig struct {
	// url is the provider's base URL (OpenAI-compatible /v1/embeddings):
	// --embed-url, else $CAPHUB_EMBED_URL.
	url string
	// model is the model asked for: --embed-model, else
	// $CAPHUB_EMBED_MODEL.
	model string
	// apiKeyEnv names the variable holding the API key:
	// --embed-api-key-env, else $CAPHUB_EMBED_API_KEY_ENV.
	apiKeyEnv string
	// apiKey is the value of apiKeyEnv, read here once; never logged.
	apiKey string
	// dimensions is the length of the vectors, asked of the model and
	// checked: --embed-dimensions, else $CAPHUB_EMBED_DIMENSIONS (0: the
	// model's own).
	dimensions int
}

// serveConfig holds the settings of serve (addr, auth, request timeout,
// guard) and of mcp (tool mode).
type serveConfig struct {
	// addr is where serve listens (host:port): --addr, default defaultAddr.
	addr string
	// loopback reports whether addr listens on loopback only.
	loopback bool
	// forceAuth requires API tokens on loopback too: --auth.
	forceAuth bool
	// toolMode is how MCP serves the capabilities: --tool-mode (tools or
	// search).
	toolMode string
	// mcp holds the gateway's large-catalog settings, read with
	// --tool-mode (serve and mcp).
	mcp mcpSettings
	// requestTimeout is the time budget of a REST request:
	// --request-timeout, default rest.DefaultRequestTimeout; 0 for none.
	requestTimeout time.Duration
	// cacheMB bounds the registry's read cache (registry.CacheLimits.Bytes)
	// in MiB: --cache-mb, else $CAPHUB_CACHE_MB, else the registry's default.
	cacheMB int
	// allowedHosts are the Host header values served besides loopback
	// names: --allowed-host, else $CAPHUB_ALLOWED_HOSTS; plus the older
	// --mcp-allow-host, else $CAPHUB_MCP_ALLOW_HOSTS.
	allowedHosts []string
	// allowedOrigins are the browser origins accepted besides loopback
	// ones: --allowed-origin, else $CAPHUB_ALLOWED_ORIGINS; plus the older
	// --mcp-allow-origin, else $CAPHUB_MCP_ALLOW_ORIGINS.
	allowedOrigins []string
	// sessions bounds the MCP sessions of serve's gateways.
	sessions sessionSettings
	// rateLimit bounds how fast each token and each agent may call.
	rateLimit rateLimitSettings
}

// rateLimitSettings are serve's rate limits: requests per second per API
// token (--rate-limit-token) and per agent (--rate-limit-agent), with
// bursts of --rate-limit-burst; 0 is no limit.
type rateLimitSettings struct {
	token, agent float64
	burst        int
}

// addRateLimitFlags adds serve's rate-limit flags.
func addRateLimitFlags(cmd *cobra.Command) {
	cmd.Flags().Float64("rate-limit-token", 0, "requests per second one API token may send (token bucket; over it: 429 with Retry-After); default $CAPHUB_RATE_LIMIT_TOKEN, else 0: no limit")
	cmd.Flags().Float64("rate-limit-agent", 0, "requests per second one agent may send, whatever its token (X-Caphub-Agent, /mcp/agents/{id} or the token's agent); default $CAPHUB_RATE_LIMIT_AGENT, else 0: no limit")
	cmd.Flags().Int("rate-limit-burst", 20, "requests a token or agent may send at once above its rate; default $CAPHUB_RATE_LIMIT_BURST, else")
}

// rateLimitFrom reads the rate limits of serve.
func rateLimitFrom(cmd *cobra.Command) (rateLimitSettings, error) {
	var r rateLimitSettings
	var err error
	for _, f := range []struct {
		dst       *float64
		name, env string
	}{{&r.token, "rate-limit-token", "CAPHUB_RATE_LIMIT_TOKEN"}, {&r.agent, "rate-limit-agent", "CAPHUB_RATE_LIMIT_AGENT"}} {
		*f.dst, _ = cmd.Flags().GetFloat64(f.name)
		if v, where := settingValue(cmd, f.env); strings.TrimSpace(v) != "" && !cmd.Flags().Changed(f.name) {
			if *f.dst, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
				return r, &usageError{fmt.Errorf("%s=%q is not a number of requests per second (it sets --%s)", where, v, f.name)}
			}
		}
		if *f.dst < 0 || math.IsNaN(*f.dst) || math.IsInf(*f.dst, 0) {
			return r, &usageError{fmt.Errorf("--%s %v: give requests per second, or 0 for no limit", f.name, *f.dst)}
		}
	}
	if r.burst, err = intSetting(cmd, "rate-limit-burst", "CAPHUB_RATE_LIMIT_BURST"); err != nil {
		return r, err
	}
	if r.burst < 1 {
		return r, &usageError{fmt.Errorf("--rate-limit-burst %d: at least 1 request", r.burst)}
	}
	return r, nil
}

// sessionSettings bound the MCP sessions of serve: /mcp's and the agents'
// (mcpgw) and the front's (mcpfront). Each is a flag, else its CAPHUB_
// variable, else the default; a limit of 0 means none.
type sessionSettings struct {
	idle              time.Duration // --mcp-session-idle: idle sessions end (0: never)
	mcpMax            int           // --mcp-max-sessions: on /mcp, and on each agent's endpoint
	frontMax          int           // --front-max-sessions: of all fronted servers together
	frontMaxPerServer int           // --front-max-sessions-per-server
	startConcurrency  int           // --front-start-concurrency: stdio servers starting at once
	startTimeout      time.Duration // --front-start-timeout: each session's start
}

// addSessionFlags adds the flags of sessionSettings.
func addSessionFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Duration("mcp-session-idle", mcpgw.DefaultIdleTimeout, "an MCP session (/mcp, agents', fronted servers') that receives no request for this long ends, and a fronted stdio server's process with it; 0: never; default $CAPHUB_MCP_SESSION_IDLE, else")
	f.Int("mcp-max-sessions", mcpgw.DefaultMaxSessions, "most MCP sessions open at once on /mcp (and on each agent's endpoint); more are refused with 503; 0: no limit; default $CAPHUB_MCP_MAX_SESSIONS, else")
	f.Int("front-max-sessions", mcpfront.DefaultMaxSessions, "most sessions relayed at once to all saved MCP servers together (/mcp/servers/…); 0: no limit; default $CAPHUB_FRONT_MAX_SESSIONS, else")
	f.Int("front-max-sessions-per-server", mcpfront.DefaultMaxSessionsPerServer, "most sessions relayed at once to one saved MCP server (with sessions: per-client, each holds a process for a stdio server); 0: no limit; default $CAPHUB_FRONT_MAX_SESSIONS_PER_SERVER, else")
	f.Int("front-start-concurrency", mcpfront.DefaultStartConcurrency, "most stdio MCP servers starting at once; more wait their turn; default $CAPHUB_FRONT_START_CONCURRENCY, else")
	f.Duration("front-start-timeout", mcpconn.DefaultStartTimeout, "how long one fronted server may take to start and answer initialize (its wait for a turn aside); default $CAPHUB_FRONT_START_TIMEOUT, else")
}

// sessionSettingsFrom reads sessionSettings, refusing negative values.
func sessionSettingsFrom(cmd *cobra.Command) (sessionSettings, error) {
	var c sessionSettings
	var err error
	for _, d := range []struct {
		dst       *time.Duration
		name, env string
	}{{&c.idle, "mcp-session-idle", "CAPHUB_MCP_SESSION_IDLE"}, {&c.startTimeout, "front-start-timeout", "CAPHUB_FRONT_START_TIMEOUT"}} {
		if *d.dst, err = durationSetting(cmd, d.name, d.env); err != nil {
			return c, err
		}
	}
	for _, n := range []struct {
		dst       *int
		name, env string
	}{
		{&c.mcpMax, "mcp-max-sessions", "CAPHUB_MCP_MAX_SESSIONS"},
		{&c.frontMax, "front-max-sessions", "CAPHUB_FRONT_MAX_SESSIONS"},
		{&c.frontMaxPerServer, "front-max-sessions-per-server", "CAPHUB_FRONT_MAX_SESSIONS_PER_SERVER"},
		{&c.startConcurrency, "front-start-concurrency", "CAPHUB_FRONT_START_CONCURRENCY"},
	} {
		if *n.dst, err = intSetting(cmd, n.name, n.env); err != nil {
			return c, err
		}
		if *n.dst < 0 {
			return c, &usageError{fmt.Errorf("--%s %d: give a number, or 0 for no limit", n.name, *n.dst)}
		}
	}
	if c.startConcurrency == 0 {
		return c, &usageError{errors.New("--front-start-concurrency 0: at least one server must be able to start")}
	}
	if c.idle < 0 || c.startTimeout <= 0 {
		return c, &usageError{fmt.Errorf("--mcp-session-idle %s, --front-start-timeout %s: give positive durations (0 for an idle limit of none)", c.idle, c.startTimeout)}
	}
	return c, nil
}

// noneIsNegative maps a setting's "0: none" to the libraries' "negative:
// none" (their 0 means the default).
func noneIsNegative[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// frontOptions are the front's session options of c.
func (c sessionSettings) frontOptions() mcpfront.Options {
	return mcpfront.Options{
		IdleTimeout:          noneIsNegative(c.idle),
		MaxSessions:          noneIsNegative(c.frontMax),
		MaxSessionsPerServer: noneIsNegative(c.frontMaxPerServer),
		StartConcurrency:     c.startConcurrency,
		StartTimeout:         c.startTimeout,
	}
}

// mcpSettings holds how the MCP gateway copes with large catalogs.
type mcpSettings struct {
	// maxTools is how many capability tools the tools mode lists at most:
	// --mcp-max-tools, else $CAPHUB_MCP_MAX_TOOLS, else
	// mcpgw.DefaultMaxTools; 0 for no limit.
	maxTools int
	// largeCatalog is what happens past maxTools: --mcp-large-catalog,
	// else $CAPHUB_MCP_LARGE_CATALOG, else search (serve the search
	// tools) or refuse (tools/list answers an error).
	largeCatalog string
	// maxListBytes bounds one tools/list answer: --mcp-max-list-bytes,
	// else $CAPHUB_MCP_MAX_LIST_BYTES, else mcpgw.DefaultMaxListBytes.
	maxListBytes int
}

// options are the gateway options of c.
func (c mcpSettings) options() mcpgw.Options {
	o := mcpgw.Options{MaxTools: c.maxTools, LargeCatalog: c.largeCatalog, MaxListBytes: c.maxListBytes}
	if c.maxTools == 0 {
		o.MaxTools = -1 // no limit
	}
	return o
}

// invocationConfig holds what the bindings and the invocation pipeline
// may do, read by the commands that invoke in this process (serve, mcp,
// and invoke without --server).
type invocationConfig struct {
	// allowHosts are the hosts http bindings may reach: --allow-host, else
	// $CAPHUB_ALLOW_HOSTS (empty: loopback only).
	allowHosts []string
	// allowTargets are the host:port gRPC bindings may reach:
	// --allow-grpc-target, else $CAPHUB_ALLOW_GRPC_TARGETS (empty: loopback
	// only).
	allowTargets []string
	// allowCmds are the programs cli bindings and API-saved servers may
	// run: --allow-command, else $CAPHUB_ALLOW_COMMANDS (empty: none).
	allowCmds []string
	// allowEnv are the variables definitions and API-saved servers may
	// read: --allow-env, else $CAPHUB_ALLOW_ENV (empty: none).
	allowEnv []string
	// a2aAgents are the A2A agents delegation bindings may name, by name:
	// --a2a-agent NAME=URL (repeatable).
	a2aAgents map[string]string
	// auditSync makes every invocation wait for its audit event to be
	// committed: $CAPHUB_AUDIT_SYNC (no flag).
	auditSync bool
	// humanApproval makes every call need a human's approval:
	// $CAPHUB_HUMAN_APPROVAL_REQUIRED (no flag).
	humanApproval bool
}

// Environment variables without a flag.
const (
	envAuditSync   = "CAPHUB_AUDIT_SYNC"
	envTrustedKeys = "CAPHUB_TRUSTED_KEYS"
)

// Environment variables of the MCP gateway's large-catalog flags.
const (
	envMCPMaxTools     = "CAPHUB_MCP_MAX_TOOLS"
	envMCPLargeCatalog = "CAPHUB_MCP_LARGE_CATALOG"
	envMCPMaxListBytes = "CAPHUB_MCP_MAX_LIST_BYTES"
)

// addInvokeFlags adds the flags that configure the bindings.
func addInvokeFlags(cmd *cobra.Command) {
	cmd.Flags().StringArray("allow-host", nil, "host an http binding may reach (host, host:port, *.domain, loopback or *); repeatable; default $CAPHUB_ALLOW_HOSTS, else loopback only")
	cmd.Flags().StringArray("allow-grpc-target", nil, "host:port a grpc binding may reach; repeatable; default $CAPHUB_ALLOW_GRPC_TARGETS, else loopback only")
	cmd.Flags().StringArray("allow-command", nil, "program a cli binding, or an MCP server saved over the API, may run (name or path, * for any); repeatable; default $CAPHUB_ALLOW_COMMANDS, else none")
	cmd.Flags().StringArray("allow-env", nil, "environment variable a definition (http auth env, cli env ${VAR}, delegation token_env) or an MCP server saved over the API may read (* for any); repeatable; default $CAPHUB_ALLOW_ENV, else none")
	cmd.Flags().StringArray("a2a-agent", nil, "NAME=URL of an A2A agent that delegation bindings may name; repeatable")
}

// configFrom reads the settings of cmd from its flags, then the CAPHUB_*
// variables; the app logs to cmd's stderr at level.
func configFrom(cmd *cobra.Command, level slog.Level) (config, error) {
	c := config{
		server:  stringSetting(cmd, "server", "CAPHUB_SERVER"),
		timeout: serverTimeout(cmd),
		log:     slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})),
	}
	var err error
	if c.token, err = tokenSetting(cmd); err != nil {
		return c, err
	}
	c.db = stringSetting(cmd, "db", "CAPHUB_DB")
	c.dbGiven = c.db != ""
	if !c.dbGiven {
		if c.db, err = defaultDBPath(); err != nil {
			return c, err
		}
		if st, err := os.Stat(defaultDBName); err == nil && st.Mode().IsRegular() {
			fmt.Fprintf(cmd.ErrOrStderr(), "caphub: ./%s here is not the default database any more (that is %s): pass --db ./%s to use it\n", defaultDBName, c.db, defaultDBName)
		}
	}
	if v, _ := settingValue(cmd, envTrustedKeys); v != "" {
		c.trustedKeys = filepath.SplitList(v)
	}
	if c.serve, err = serveConfigFrom(cmd); err != nil {
		return c, err
	}
	if hasFlag(cmd, "audit-max-events") {
		if c.auditRetention, err = auditRetentionFrom(cmd, "audit-max-events", "audit-max-age"); err != nil {
			return c, err
		}
	}
	if hasFlag(cmd, "embed-url") {
		if c.embed, err = embedConfigFrom(cmd); err != nil {
			return c, err
		}
	}
	if hasFlag(cmd, "a2a-agent") && (c.server == "" || hasFlag(cmd, "tool-mode")) {
		// serve and mcp invoke here whatever --server says; invoke does
		// only without it.
		c.invocation, err = invocationConfigFrom(cmd)
	}
	return c, err
}

// maxTokenFile bounds a token file: a caphub token is under 100 bytes.
const maxTokenFile = 4 << 10

// tokenSetting is the API token for --server: the content of --token-file
// (else $CAPHUB_TOKEN_FILE), else $CAPHUB_TOKEN. A token file must be a
// small regular file that neither its group nor others can read, as ssh asks
// of a key, since MCP clients start caphub with a config that names it.
func tokenSetting(cmd *cobra.Command) (string, error) {
	path := stringSetting(cmd, "token-file", "CAPHUB_TOKEN_FILE")
	if path == "" {
		return strings.TrimSpace(os.Getenv("CAPHUB_TOKEN")), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", &usageError{fmt.Errorf("token file: %w (write a token there with: caphub token create NAME --scope invoke > %s; chmod 600 %s)", err, path, path)}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	switch {
	case !st.Mode().IsRegular():
		return "", &usageError{fmt.Errorf("token file %s is not a regular file", path)}
	case st.Mode().Perm()&0o077 != 0:
		return "", &usageError{fmt.Errorf("token file %s can be read by others (mode %04o): chmod 600 %s", path, st.Mode().Perm(), path)}
	case st.Size() > maxTokenFile:
		return "", &usageError{fmt.Errorf("token file %s holds %d bytes, more than a token (%d at most): name the file of one token", path, st.Size(), maxTokenFile)}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", &usageError{fmt.Errorf("token file %s must hold one token on one line", path)}
	}
	return tok, nil
}

// serveConfigFrom reads the settings of serve and mcp, checking --addr
// and --tool-mode.
func serveConfigFrom(cmd *cobra.Command) (serveConfig, error) {
	var s serveConfig
	if hasFlag(cmd, "addr") {
		s.addr = flagString(cmd, "addr")
		loopback, err := isLoopback(s.addr)
		if err != nil {
			return s, &usageError{err}
		}
		s.loopback = loopback
		s.forceAuth, _ = cmd.Flags().GetBool("auth")
	}
	if hasFlag(cmd, "tool-mode") {
		s.toolMode = flagString(cmd, "tool-mode")
		if err := mcpgw.CheckMode(s.toolMode); err != nil {
			return s, &usageError{fmt.Errorf("--tool-mode: %w", err)}
		}
		var err error
		if s.mcp, err = mcpSettingsFrom(cmd); err != nil {
			return s, err
		}
	}
	s.requestTimeout, _ = cmd.Flags().GetDuration("request-timeout")
	if hasFlag(cmd, "cache-mb") {
		n, err := intSetting(cmd, "cache-mb", envCacheMB)
		if err != nil {
			return s, err
		}
		if n < 1 {
			return s, &usageError{fmt.Errorf("--cache-mb %d: give at least 1 (MiB the registry's read cache may hold)", n)}
		}
		s.cacheMB = n
	}
	if hasFlag(cmd, "rate-limit-token") {
		var err error
		if s.rateLimit, err = rateLimitFrom(cmd); err != nil {
			return s, err
		}
	}
	if hasFlag(cmd, "mcp-session-idle") {
		var err error
		if s.sessions, err = sessionSettingsFrom(cmd); err != nil {
			return s, err
		}
	}
	if hasFlag(cmd, "allowed-host") {
		s.allowedHosts = append(listSetting(cmd, "allowed-host", "CAPHUB_ALLOWED_HOSTS"), listSetting(cmd, "mcp-allow-host", "CAPHUB_MCP_ALLOW_HOSTS")...)
		s.allowedOrigins = append(listSetting(cmd, "allowed-origin", "CAPHUB_ALLOWED_ORIGINS"), listSetting(cmd, "mcp-allow-origin", "CAPHUB_MCP_ALLOW_ORIGINS")...)
	}
	return s, nil
}

// mcpSettingsFrom reads and checks the large-catalog settings.
func mcpSettingsFrom(cmd *cobra.Command) (mcpSettings, error) {
	var c mcpSettings
	var err error
	if c.maxTools, err = intSetting(cmd, "mcp-max-tools", envMCPMaxTools); err != nil {
		return c, err
	}
	if c.maxTools < 0 {
		return c, &usageError{fmt.Errorf("--mcp-max-tools %d: give a number of tools, or 0 for no limit", c.maxTools)}
	}
	c.largeCatalog = flagString(cmd, "mcp-large-catalog")
	if v, _ := settingValue(cmd, envMCPLargeCatalog); v != "" && !cmd.Flags().Changed("mcp-large-catalog") {
		c.largeCatalog = v
	}
	if err := mcpgw.CheckLargeCatalog(c.largeCatalog); err != nil {
		return c, &usageError{fmt.Errorf("--mcp-large-catalog (or $%s): %w", envMCPLargeCatalog, err)}
	}
	if c.maxListBytes, err = intSetting(cmd, "mcp-max-list-bytes", envMCPMaxListBytes); err != nil {
		return c, err
	}
	if c.maxListBytes < mcpgw.MinMaxListBytes {
		return c, &usageError{fmt.Errorf("--mcp-max-list-bytes %d: a tools/list page needs at least %d bytes", c.maxListBytes, mcpgw.MinMaxListBytes)}
	}
	return c, nil
}

// addEmbedFlags adds the flags of the embedding provider.
func addEmbedFlags(cmd *cobra.Command) {
	cmd.Flags().String("embed-url", "", "base URL of an OpenAI-compatible embedding provider (POST URL/v1/embeddings) for semantic search, e.g. https://api.openai.com or http://127.0.0.1:11434; default $CAPHUB_EMBED_URL, else off")
	cmd.Flags().String("embed-model", "", "embedding model, e.g. text-embedding-3-small; needed with --embed-url; default $CAPHUB_EMBED_MODEL")
	cmd.Flags().String("embed-api-key-env", "", "name of the environment variable holding the provider's API key (sent as a Bearer token, never logged); default $CAPHUB_EMBED_API_KEY_ENV, else no key")
	cmd.Flags().Int("embed-dimensions", 0, "length of the vectors: asked of the model (OpenAI's text-embedding-3 models shorten theirs) and checked; default $CAPHUB_EMBED_DIMENSIONS, else the model's own")
}

// embedConfigFrom reads the embedding provider's settings: none, or a URL
// with a model; the API key from the variable they name.
func embedConfigFrom(cmd *cobra.Command) (embedConfig, error) {
	c := embedConfig{
		url:       stringSetting(cmd, "embed-url", "CAPHUB_EMBED_URL"),
		model:     stringSetting(cmd, "embed-model", "CAPHUB_EMBED_MODEL"),
		apiKeyEnv: stringSetting(cmd, "embed-api-key-env", "CAPHUB_EMBED_API_KEY_ENV"),
	}
	switch {
	case c.url == "" && (c.model != "" || c.apiKeyEnv != ""):
		return c, &usageError{errors.New("--embed-model and --embed-api-key-env need --embed-url (or $CAPHUB_EMBED_URL), the embedding provider")}
	case c.url == "":
		return c, nil
	case c.model == "":
		return c, &usageError{errors.New("--embed-url needs --embed-model (or $CAPHUB_EMBED_MODEL), e.g. text-embedding-3-small")}
	}
	c.dimensions, _ = cmd.Flags().GetInt("embed-dimensions")
	if c.dimensions == 0 {
		if v, where := settingValue(cmd, "CAPHUB_EMBED_DIMENSIONS"); strings.TrimSpace(v) != "" {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return c, &usageError{fmt.Errorf("%s=%q: give a whole number of dimensions", where, v)}
			}
			c.dimensions = n
		}
	}
	if c.dimensions < 0 || c.dimensions > embed.MaxDimensions {
		return c, &usageError{fmt.Errorf("--embed-dimensions %d: give 1 to %d, or 0 for the model's own", c.dimensions, embed.MaxDimensions)}
	}
	if _, err := embed.NewClient(c.clientOptions()); err != nil {
		return c, &usageError{fmt.Errorf("--embed-url, --embed-model: %w", err)}
	}
	if c.apiKeyEnv != "" {
		c.apiKey = os.Getenv(c.apiKeyEnv)
		if c.apiKey == "" {
			return c, &usageError{fmt.Errorf("--embed-api-key-env names %s, which is not set or empty: export the API key in it", c.apiKeyEnv)}
		}
	}
	return c, nil
}

// clientOptions are the options of the embedding provider's client.
func (c embedConfig) clientOptions() embed.ClientOptions {
	return embed.ClientOptions{URL: c.url, Model: c.model, APIKey: c.apiKey, Dimensions: c.dimensions, SendDimensions: c.dimensions > 0}
}

// invocationConfigFrom reads the allow-lists, the A2A agents and the
// audit and approval switches.
func invocationConfigFrom(cmd *cobra.Command) (invocationConfig, error) {
	c := invocationConfig{
		allowHosts:   listSetting(cmd, "allow-host", "CAPHUB_ALLOW_HOSTS"),
		allowTargets: listSetting(cmd, "allow-grpc-target", "CAPHUB_ALLOW_GRPC_TARGETS"),
		allowCmds:    listSetting(cmd, "allow-command", "CAPHUB_ALLOW_COMMANDS"),
		allowEnv:     listSetting(cmd, "allow-env", "CAPHUB_ALLOW_ENV"),
		a2aAgents:    map[string]string{},
	}
	agents, _ := cmd.Flags().GetStringArray("a2a-agent")
	for _, a := range agents {
		name, url, ok := strings.Cut(a, "=")
		if !ok || name == "" || !strings.HasPrefix(url, "http") {
			return c, &usageError{fmt.Errorf("--a2a-agent %q: write NAME=URL", a)}
		}
		c.a2aAgents[name] = url
	}
	var err error
	if c.auditSync, err = boolSetting(cmd, envAuditSync); err != nil {
		return c, err
	}
	c.humanApproval, err = boolSetting(cmd, policy.EnvHumanApproval)
	return c, err
}

// hasFlag reports whether cmd has the flag name (its own or inherited).
func hasFlag(cmd *cobra.Command, name string) bool { return cmd.Flags().Lookup(name) != nil }

// flagString is the value of the string flag name ("" when cmd has none).
func flagString(cmd *cobra.Command, name string) string {
	v, _ := cmd.Flags().GetString(name)
	return v
}

// stringSetting is the string flag name, else the variable env, else the
// configuration file's (settingValue).
func stringSetting(cmd *cobra.Command, name, env string) string {
	if v := flagString(cmd, name); v != "" {
		return v
	}
	v, _ := settingValue(cmd, env)
	return v
}

// intSetting is the int flag name when given, else the variable env when
// set, else the flag's default.
func intSetting(cmd *cobra.Command, name, env string) (int, error) {
	n, err := cmd.Flags().GetInt(name)
	if err != nil {
		return 0, err
	}
	if v, where := settingValue(cmd, env); strings.TrimSpace(v) != "" && !cmd.Flags().Changed(name) {
		if n, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
			return 0, &usageError{fmt.Errorf("%s=%q is not a whole number (it sets --%s)", where, v, name)}
		}
	}
	return n, nil
}

// durationSetting is the duration flag name when given, else the variable
// env when set, else the flag's default.
func durationSetting(cmd *cobra.Command, name, env string) (time.Duration, error) {
	d, err := cmd.Flags().GetDuration(name)
	if err != nil {
		return 0, err
	}
	if v, where := settingValue(cmd, env); strings.TrimSpace(v) != "" && !cmd.Flags().Changed(name) {
		if d, err = time.ParseDuration(strings.TrimSpace(v)); err != nil {
			return 0, &usageError{fmt.Errorf("%s=%q is not a duration such as 90s or 10m (it sets --%s)", where, v, name)}
		}
	}
	return d, nil
}

// boolSetting reads the switch env (envflag's rules), from the
// environment or the configuration file.
func boolSetting(cmd *cobra.Command, env string) (bool, error) {
	v, where := settingValue(cmd, env)
	b, err := envflag.Parse(where, v)
	if err != nil {
		return false, &usageError{err}
	}
	return b, nil
}

// listSetting is the repeatable flag name, else the comma-separated
// variable env (blank items dropped).
func listSetting(cmd *cobra.Command, name, env string) []string {
	v, _ := cmd.Flags().GetStringArray(name)
	if ev, _ := settingValue(cmd, env); len(v) == 0 && ev != "" {
		for _, s := range strings.Split(ev, ",") {
			if s = strings.TrimSpace(s); s != "" {
				v = append(v, s)
			}
		}
	}
	return v
}

// missingCapabilityFlags reads the switches of missing-capability
// resolution ($CAPHUB_MISSING_CAPABILITY_ENABLED and _AUTO); both default to
// false, and a value that is not a boolean is an error naming the variable,
// so that a typo does not silently turn resolution off.
func missingCapabilityFlags(cmd *cobra.Command) (enabled, auto bool, err error) {
	if enabled, err = boolSetting(cmd, fallback.EnvEnabled); err != nil {
		return false, false, err
	}
	if auto, err = boolSetting(cmd, fallback.EnvAuto); err != nil {
		return false, false, err
	}
	return enabled, auto, nil
}
