package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/internal/fallback"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// settingKind is how a setting's value is written and checked.
type settingKind int

const (
	kindText     settingKind = iota
	kindList                 // several values: repeated flags, commas in the variable, a YAML list in the file
	kindPaths                // several paths: separated like PATH in the variable, a YAML list in the file
	kindBool                 // true or false
	kindInt                  // a whole number
	kindDuration             // a Go duration (90s, 10m)
	kindFloat                // a number
)

// setting is one of caphub's settings: its key in the configuration file
// (the name of its flag, where it has one), its CAPHUB_ variable (none for
// a flag-only setting), what it holds and what it is for.
type setting struct {
	key  string
	env  string
	flag bool // a flag --key exists (on the commands that use it)
	kind settingKind
	// secret: config show prints whether it is set, never its value; the
	// file may not hold it.
	secret bool
	doc    string
}

// settings lists every setting caphub reads. A command reads each one
// from its flag, else the variable, else the configuration file (--config,
// $CAPHUB_CONFIG), else the default; caphub config show prints them all
// with where each value came from. Library packages take options: only
// this command reads the environment.
var settings = []setting{
	{key: "db", env: "CAPHUB_DB", flag: true, doc: "database: a SQLite file path or a postgres:// URL"},
	{key: "server", env: "CAPHUB_SERVER", flag: true, doc: "a caphub server the CLI works on instead of a local database"},
	{key: "token-file", env: "CAPHUB_TOKEN_FILE", flag: true, doc: "file holding the API token sent to --server (owner-only)"},
	{key: "token", env: "CAPHUB_TOKEN", secret: true, doc: "the API token sent to --server (environment only; a file names token-file instead)"},
	{key: "timeout", flag: true, kind: kindDuration, doc: "with --server, how long to wait for each answer"},
	{key: "trusted-keys", env: envTrustedKeys, kind: kindPaths, doc: "public keys (files or directories) registrations are verified against"},
	{key: "addr", flag: true, doc: "serve: the address to listen on"},
	{key: "auth", flag: true, kind: kindBool, doc: "serve: require API tokens on loopback too"},
	{key: "request-timeout", flag: true, kind: kindDuration, doc: "serve: time budget of one REST request"},
	{key: "cache-mb", env: envCacheMB, flag: true, kind: kindInt, doc: "serve: MiB the registry's read cache holds at most"},
	{key: "allowed-host", env: "CAPHUB_ALLOWED_HOSTS", flag: true, kind: kindList, doc: "serve: Host header values served besides loopback names"},
	{key: "allowed-origin", env: "CAPHUB_ALLOWED_ORIGINS", flag: true, kind: kindList, doc: "serve: browser origins accepted besides loopback ones"},
	{key: "mcp-allow-host", env: "CAPHUB_MCP_ALLOW_HOSTS", flag: true, kind: kindList, doc: "serve: older name of allowed-host"},
	{key: "mcp-allow-origin", env: "CAPHUB_MCP_ALLOW_ORIGINS", flag: true, kind: kindList, doc: "serve: older name of allowed-origin"},
	{key: "cache-mb", env: "CAPHUB_CACHE_MB", flag: true, kind: kindInt, doc: "serve: MiB the registry's version cache may hold"},
	{key: "tool-mode", flag: true, doc: "serve, mcp: MCP tools: tools or search"},
	{key: "mcp-max-tools", env: envMCPMaxTools, flag: true, kind: kindInt, doc: "serve, mcp: most capability tools the tools mode lists"},
	{key: "mcp-large-catalog", env: envMCPLargeCatalog, flag: true, doc: "serve, mcp: past mcp-max-tools: search or refuse"},
	{key: "mcp-max-list-bytes", env: envMCPMaxListBytes, flag: true, kind: kindInt, doc: "serve, mcp: largest tools/list answer in bytes"},
	{key: "mcp-session-idle", env: "CAPHUB_MCP_SESSION_IDLE", flag: true, kind: kindDuration, doc: "serve: idle MCP sessions end after this"},
	{key: "mcp-max-sessions", env: "CAPHUB_MCP_MAX_SESSIONS", flag: true, kind: kindInt, doc: "serve: most /mcp sessions at once (0: no limit)"},
	{key: "front-max-sessions", env: "CAPHUB_FRONT_MAX_SESSIONS", flag: true, kind: kindInt, doc: "serve: most front sessions at once (0: no limit)"},
	{key: "front-max-sessions-per-server", env: "CAPHUB_FRONT_MAX_SESSIONS_PER_SERVER", flag: true, kind: kindInt, doc: "serve: most front sessions per saved server (0: no limit)"},
	{key: "front-start-concurrency", env: "CAPHUB_FRONT_START_CONCURRENCY", flag: true, kind: kindInt, doc: "serve: stdio servers started at once"},
	{key: "front-start-timeout", env: "CAPHUB_FRONT_START_TIMEOUT", flag: true, kind: kindDuration, doc: "serve: how long a stdio server may take to start"},
	{key: "rate-limit-token", env: "CAPHUB_RATE_LIMIT_TOKEN", flag: true, kind: kindFloat, doc: "serve: requests per second per API token (0: no limit)"},
	{key: "rate-limit-agent", env: "CAPHUB_RATE_LIMIT_AGENT", flag: true, kind: kindFloat, doc: "serve: requests per second per agent (0: no limit)"},
	{key: "rate-limit-burst", env: "CAPHUB_RATE_LIMIT_BURST", flag: true, kind: kindInt, doc: "serve: requests at once above the rate"},
	{key: "allow-host", env: "CAPHUB_ALLOW_HOSTS", flag: true, kind: kindList, doc: "hosts an http binding may reach"},
	{key: "allow-grpc-target", env: "CAPHUB_ALLOW_GRPC_TARGETS", flag: true, kind: kindList, doc: "host:port a grpc binding may reach"},
	{key: "allow-command", env: "CAPHUB_ALLOW_COMMANDS", flag: true, kind: kindList, doc: "programs a cli binding or an API-saved MCP server may run"},
	{key: "allow-env", env: "CAPHUB_ALLOW_ENV", flag: true, kind: kindList, doc: "environment variables definitions may read"},
	{key: "a2a-agent", flag: true, kind: kindList, doc: "NAME=URL of A2A agents delegation bindings may name"},
	{key: "audit-sync", env: envAuditSync, kind: kindBool, doc: "every invocation waits until its audit event is committed"},
	{key: "audit-max-events", env: envAuditMaxEvents, flag: true, kind: kindInt, doc: "serve: keep the newest N audit events"},
	{key: "audit-max-age", env: envAuditMaxAge, flag: true, doc: "serve: prune audit events older than this (90d, 720h)"},
	{key: "human-approval-required", env: policy.EnvHumanApproval, kind: kindBool, doc: "every call needs a human's approval"},
	{key: "missing-capability-enabled", env: fallback.EnvEnabled, kind: kindBool, doc: "resolve proposes providers for a missing capability"},
	{key: "auto-resolution-enabled", env: fallback.EnvAuto, kind: kindBool, doc: "resolve registers the best proposal by itself"},
	{key: "embed-url", env: "CAPHUB_EMBED_URL", flag: true, doc: "serve: OpenAI-compatible embedding provider for semantic search"},
	{key: "embed-model", env: "CAPHUB_EMBED_MODEL", flag: true, doc: "serve: embedding model"},
	{key: "embed-api-key-env", env: "CAPHUB_EMBED_API_KEY_ENV", flag: true, doc: "serve: variable holding the embedding provider's API key"},
	{key: "embed-dimensions", env: "CAPHUB_EMBED_DIMENSIONS", flag: true, kind: kindInt, doc: "serve: length of the embedding vectors"},
}

// settingByEnv and settingByKey find a setting.
func settingByEnv(env string) (setting, bool) {
	i := slices.IndexFunc(settings, func(s setting) bool { return s.env == env })
	if i < 0 {
		return setting{}, false
	}
	return settings[i], true
}

func settingByKey(key string) (setting, bool) {
	i := slices.IndexFunc(settings, func(s setting) bool { return s.key == key })
	if i < 0 {
		return setting{}, false
	}
	return settings[i], true
}

// envConfigFile names the configuration file when --config does not.
const envConfigFile = "CAPHUB_CONFIG"

// maxConfigFile bounds the configuration file.
const maxConfigFile = 1 << 20

// fileValue is one setting the configuration file gives: as its variable
// would hold it, and where.
type fileValue struct {
	value string
	items []string // kindList, kindPaths: the items
	line  int
}

// configFile is the configuration file a command read (nil: none).
type configFile struct {
	path   string
	values map[string]fileValue // by key
}

type configFileKey struct{}

// fileConfigOf is the configuration file loadConfigFile gave cmd.
func fileConfigOf(cmd *cobra.Command) *configFile {
	if ctx := cmd.Context(); ctx != nil {
		fc, _ := ctx.Value(configFileKey{}).(*configFile)
		return fc
	}
	return nil
}

// applyConfigFile reads the configuration file of cmd (--config, else
// $CAPHUB_CONFIG; none is fine) and makes it the lowest layer under flags
// and variables: the settings with a variable read it through
// settingValue; a flag-only setting sets its flag when the command has
// that flag and the command line did not give it.
func applyConfigFile(cmd *cobra.Command) error {
	// The root's --config: a command with a --config of its own (discover
	// mcp --config servers.yaml) shadows it, and then $CAPHUB_CONFIG names
	// caphub's configuration file.
	var path string
	if f := cmd.Root().PersistentFlags().Lookup("config"); f != nil {
		path = f.Value.String()
	}
	if path == "" {
		path = os.Getenv(envConfigFile)
	}
	if path == "" {
		return nil
	}
	fc, err := readConfigFile(path)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	cmd.SetContext(context.WithValue(ctx, configFileKey{}, fc))
	for key, v := range fc.values {
		s, _ := settingByKey(key)
		f := cmd.Flags().Lookup(key)
		if s.env != "" || f == nil || f.Changed {
			continue
		}
		items := v.items
		if items == nil {
			items = []string{v.value}
		}
		for _, it := range items {
			if err := f.Value.Set(it); err != nil {
				return &usageError{fmt.Errorf("%s:%d: %s: %q: %v", fc.path, v.line, key, it, err)}
			}
		}
	}
	return nil
}

// readConfigFile parses a configuration file: a YAML mapping of setting
// keys (those of caphub config show) to values, every key known, every
// value of its setting's kind.
func readConfigFile(path string) (*configFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &usageError{fmt.Errorf("configuration file: %w (--config or $%s names it)", err, envConfigFile)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", path, err)
	}
	if len(data) > maxConfigFile {
		return nil, &usageError{fmt.Errorf("configuration file %s is larger than %d bytes: is it the right file?", path, maxConfigFile)}
	}
	fc := &configFile{path: path, values: map[string]fileValue{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &usageError{fmt.Errorf("configuration file %s: %v", path, err)}
	}
	if len(doc.Content) == 0 {
		return fc, nil // empty
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &usageError{fmt.Errorf("%s:%d: the configuration file must be a mapping of settings (key: value); caphub config show lists the keys", path, root.Line)}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		s, ok := settingByKey(k.Value)
		switch {
		case !ok:
			return nil, &usageError{fmt.Errorf("%s:%d: unknown setting %q%s: caphub config show lists the keys", path, k.Line, k.Value, closestKey(k.Value))}
		case s.secret:
			return nil, &usageError{fmt.Errorf("%s:%d: %s is a secret and stays out of files anyone may read: set $%s, or put it in a file of its own and name it with token-file", path, k.Line, k.Value, s.env)}
		}
		if _, dup := fc.values[k.Value]; dup {
			return nil, &usageError{fmt.Errorf("%s:%d: %s is set twice", path, k.Line, k.Value)}
		}
		fv, err := settingFromNode(s, v)
		if err != nil {
			return nil, &usageError{fmt.Errorf("%s:%d: %s: %v", path, v.Line, k.Value, err)}
		}
		fc.values[k.Value] = fv
	}
	return fc, nil
}

// settingFromNode checks a file's value of s and writes it as s's
// variable would hold it.
func settingFromNode(s setting, v *yaml.Node) (fileValue, error) {
	fv := fileValue{line: v.Line}
	if s.kind == kindList || s.kind == kindPaths {
		nodes := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			nodes = v.Content
		}
		for _, n := range nodes {
			if n.Kind != yaml.ScalarNode {
				return fv, errors.New("give a list of plain values")
			}
			fv.items = append(fv.items, n.Value)
		}
		if fv.items == nil {
			fv.items = []string{}
		}
		sep := ","
		if s.kind == kindPaths {
			sep = string(os.PathListSeparator)
		}
		fv.value = strings.Join(fv.items, sep)
		return fv, nil
	}
	if v.Kind != yaml.ScalarNode {
		return fv, errors.New("give one plain value")
	}
	fv.value = v.Value
	var err error
	switch s.kind {
	case kindBool:
		_, err = strconv.ParseBool(v.Value)
		if err != nil {
			err = errors.New("give true or false")
		}
	case kindInt:
		_, err = strconv.Atoi(v.Value)
		if err != nil {
			err = errors.New("give a whole number")
		}
	case kindFloat:
		_, err = strconv.ParseFloat(v.Value, 64)
		if err != nil {
			err = errors.New("give a number")
		}
	case kindDuration:
		_, err = time.ParseDuration(v.Value)
		if err != nil {
			err = errors.New("give a duration such as 90s or 10m")
		}
	}
	return fv, err
}

// closestKey suggests the known key nearest to a misspelt one.
func closestKey(key string) string {
	best, bestD := "", 4
	for _, s := range settings {
		if d := editDistance(key, s.key); d < bestD {
			best, bestD = s.key, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// settingValue is the value of the variable env for cmd: the environment's
// when set, else the configuration file's; where names its origin for
// errors ("CAPHUB_DB", "caphub.yaml:3: db").
func settingValue(cmd *cobra.Command, env string) (value, where string) {
	if v := os.Getenv(env); v != "" {
		return v, env
	}
	if fc := fileConfigOf(cmd); fc != nil {
		if s, ok := settingByEnv(env); ok {
			if v, ok := fc.values[s.key]; ok {
				return v.value, fmt.Sprintf("%s:%d: %s", fc.path, v.line, s.key)
			}
		}
	}
	return "", env
}

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "config",
		Short:   "Show caphub's effective configuration",
		Example: "  caphub config show\n  CAPHUB_CONFIG=/etc/caphub/caphub.yaml caphub config show",
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Print every setting, its value and where it came from",
		Long: `config show prints every setting caphub reads, with its value and where the value came
from: a CAPHUB_ variable, the configuration file (--config FILE or $CAPHUB_CONFIG, a YAML mapping
of these keys), or the default. A flag on a command line wins over all three; the variable wins
over the file. Secrets are never printed, and a database URL's password is masked.`,
		Example: "  caphub config show\n  caphub config show --config /etc/caphub/caphub.yaml --format json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			rows := effectiveSettings(cmd)
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "KEY\tVALUE\tSOURCE\tVARIABLE")
			for _, r := range rows {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Key, orDash(r.Value), r.Source, orDash(r.Env))
			}
			return w.Flush()
		},
	}
	addFormatFlag(show)
	cmd.AddCommand(show)
	return cmd
}

// effectiveSetting is one row of caphub config show.
type effectiveSetting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"` // env, file PATH:LINE, default
	Env    string `json:"env,omitempty"`
	Doc    string `json:"doc"`
}

// effectiveSettings is every setting as a command without flags would
// read it.
func effectiveSettings(cmd *cobra.Command) []effectiveSetting {
	fc := fileConfigOf(cmd)
	var rows []effectiveSetting
	for _, s := range settings {
		r := effectiveSetting{Key: s.key, Env: s.env, Doc: s.doc, Source: "default"}
		if v := os.Getenv(s.env); s.env != "" && v != "" {
			r.Value, r.Source = v, "env"
		} else if v, ok := fc.lookup(s.key); ok {
			r.Value, r.Source = v.value, fmt.Sprintf("file %s:%d", fc.path, v.line)
		} else {
			r.Value = settingDefault(cmd.Root(), s)
		}
		switch {
		case s.secret && r.Value != "":
			r.Value = "(set; not shown)"
		case s.key == "db":
			r.Value = redactURL(r.Value)
		}
		rows = append(rows, r)
	}
	return rows
}

func (fc *configFile) lookup(key string) (fileValue, bool) {
	if fc == nil {
		return fileValue{}, false
	}
	v, ok := fc.values[key]
	return v, ok
}

// settingDefault is s's default: the database's is the user's data
// directory's; a flag's is its default on the first command that has it.
func settingDefault(root *cobra.Command, s setting) string {
	if s.key == "db" {
		p, err := defaultDBPath()
		if err != nil {
			return ""
		}
		return p
	}
	if !s.flag {
		if s.kind == kindBool {
			return "false"
		}
		return ""
	}
	var def string
	var walk func(c *cobra.Command) bool
	walk = func(c *cobra.Command) bool {
		if f := c.Flags().Lookup(s.key); f != nil {
			def = f.DefValue
			if def == "[]" {
				def = ""
			}
			return true
		}
		return slices.ContainsFunc(c.Commands(), walk)
	}
	walk(root)
	return def
}

// redactURL masks the password of a URL (postgres://user:secret@host/db).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// configFlagHelp is --config's help.
var configFlagHelp = "configuration file: a YAML mapping of setting keys (caphub config show lists them) to values, under flags and CAPHUB_ variables; default $" + envConfigFile + ", else none"
