package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/caphub/caphub/capability"
)

// A peer is another MCP gateway measured beside caphub. The harness never
// builds, installs or ships one: the operator names its command line (and,
// when it reads one, a configuration file template) with -peer and
// -peer-opt, and the harness fills in the placeholders for each upstream.
type peer struct {
	name string
	// command is the command line template: split into words like a
	// shell's (quotes group, nothing else is special; see
	// capability.SplitCommand), then placeholders are expanded inside each
	// word, so `--stdio {upstream}` stays one argument.
	command string
	// url is the template of the MCP endpoint the peer serves.
	url string
	// config is the template of the configuration file written for {config};
	// "" when the peer reads none.
	config string
	// transports are the upstream transports the peer can front: stdio,
	// http. Inferred from the placeholders used, unless set with
	// -peer-opt NAME.transports=….
	transports []string
}

// Upstream transports.
const (
	overStdio = "stdio"
	overHTTP  = "http"
)

// placeholders are those a peer's command, URL and configuration may name:
//
//	{port}          the free loopback port the peer must listen on
//	{addr}          127.0.0.1:{port}
//	{name}          the upstream's server name (everything)
//	{config}        the path of the configuration file written from the template
//	{upstream}      the stdio upstream's command line, quoted for a shell (stdio only)
//	{upstream_url}  the streamable HTTP upstream's URL (http only)
//	{upstream_json} the upstream as an "mcpServers" entry, a JSON object (config only):
//	                {"command": …, "args": […]} or
//	                {"url": …, "type": "streamable-http", "transportType": "streamable-http"}
var placeholders = []string{"port", "addr", "name", "config", "upstream", "upstream_url", "upstream_json"}

// placeholderRE matches a placeholder; JSON's own braces ({"…", {}) never
// match it.
var placeholderRE = regexp.MustCompile(`\{[a-z_]+\}`)

// Budgets on what a peer spec may hold.
const (
	maxSpec   = 8 << 10  // a -peer or -peer-opt value
	maxConfig = 64 << 10 // a configuration template file
)

// tbxarkConfig is the configuration TBXark/mcp-proxy reads (its v2 JSON
// format): one upstream, served over streamable HTTP at /{name}/mcp.
const tbxarkConfig = `{
  "mcpProxy": {
    "baseURL": "http://{addr}",
    "addr": "{addr}",
    "name": "mcp-proxy",
    "version": "1.0.0",
    "type": "streamable-http",
    "options": {"panicIfInvalid": true, "logEnabled": false}
  },
  "mcpServers": {"{name}": {upstream_json}}
}
`

// profiles are the defaults of the peers the harness knows by name (a
// peer named tbxark or tbxark-…, supergateway or supergateway-…): where
// each serves and the configuration it reads. Any other peer serves at
// http://{addr}/mcp and reads no configuration unless -peer-opt says so.
var profiles = []struct{ prefix, url, config string }{
	{"tbxark", "http://{addr}/{name}/mcp", tbxarkConfig},
	{"supergateway", "http://{addr}/mcp", ""},
}

var peerNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// parsePeer reads a -peer value, NAME=COMMAND; finish completes it after
// its -peer-opt values.
func parsePeer(spec string) (*peer, error) {
	if len(spec) > maxSpec {
		return nil, fmt.Errorf("-peer: %d bytes, more than %d: shorten it", len(spec), maxSpec)
	}
	name, command, ok := strings.Cut(spec, "=")
	name = strings.TrimSpace(name)
	if !ok || strings.TrimSpace(command) == "" {
		return nil, fmt.Errorf("-peer %q: want NAME=COMMAND, e.g. -peer 'tbxark=/tmp/mcp-proxy --config {config}'", spec)
	}
	if !peerNameRE.MatchString(name) {
		return nil, fmt.Errorf("-peer %q: the name %q must be lower-case letters, digits and dashes, starting with a letter (at most 40)", spec, name)
	}
	if slices.Contains(ownTargets, name) {
		return nil, fmt.Errorf("-peer %q: %s is one of the harness's own targets: name the peer otherwise", spec, name)
	}
	p := &peer{name: name, command: command, url: "http://{addr}/mcp"}
	for _, pr := range profiles {
		if name == pr.prefix || strings.HasPrefix(name, pr.prefix+"-") {
			p.url, p.config = pr.url, pr.config
		}
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return p, nil
}

// setOption applies a -peer-opt value, NAME.KEY=VALUE, to the peer it
// names: url (the endpoint template), config (a file holding the
// configuration template; "" for none) or transports (stdio, http or
// both, comma-separated).
func setOption(peers []*peer, opt string) error {
	if len(opt) > maxSpec {
		return fmt.Errorf("-peer-opt: %d bytes, more than %d: shorten it", len(opt), maxSpec)
	}
	lhs, value, ok := strings.Cut(opt, "=")
	name, key, ok2 := strings.Cut(lhs, ".")
	if !ok || !ok2 {
		return fmt.Errorf("-peer-opt %q: want NAME.KEY=VALUE (KEY: url, config or transports)", opt)
	}
	i := slices.IndexFunc(peers, func(p *peer) bool { return p.name == name })
	if i < 0 {
		return fmt.Errorf("-peer-opt %q: no -peer named %q before it", opt, name)
	}
	p := peers[i]
	switch key {
	case "url":
		p.url = value
	case "config":
		p.config = ""
		if value != "" {
			b, err := readLimited(value, maxConfig)
			if err != nil {
				return fmt.Errorf("-peer-opt %q: %w", opt, err)
			}
			p.config = string(b)
		}
	case "transports":
		p.transports = nil
		for t := range strings.SplitSeq(value, ",") {
			t = strings.TrimSpace(t)
			if t != overStdio && t != overHTTP {
				return fmt.Errorf("-peer-opt %q: transport %q is neither stdio nor http", opt, t)
			}
			p.transports = append(p.transports, t)
		}
	default:
		return fmt.Errorf("-peer-opt %q: unknown key %q (url, config or transports)", opt, key)
	}
	return p.check()
}

// check validates the templates: known placeholders only, a command that
// splits, {upstream_json} in the configuration only.
func (p *peer) check() error {
	if _, err := capability.SplitCommand(p.command); err != nil {
		return fmt.Errorf("-peer %s: the command: %w", p.name, err)
	}
	for what, tmpl := range map[string]string{"command": p.command, "url": p.url, "config": p.config} {
		for _, ph := range placeholderRE.FindAllString(tmpl, -1) {
			if !slices.Contains(placeholders, ph[1:len(ph)-1]) {
				return fmt.Errorf("-peer %s: unknown placeholder %s in its %s (known: {%s})", p.name, ph, what, strings.Join(placeholders, "}, {"))
			}
		}
	}
	if strings.Contains(p.command, "{upstream_json}") || strings.Contains(p.url, "{upstream") {
		return fmt.Errorf("-peer %s: {upstream_json} goes in the configuration template, and the URL names no upstream", p.name)
	}
	return nil
}

// finish infers the transports the peer fronts, unless -peer-opt set
// them, once every option is applied: both when its configuration holds
// {upstream_json}, stdio when it names {upstream}, http when it names
// {upstream_url}.
func (p *peer) finish() error {
	if p.transports != nil {
		return nil
	}
	uses := func(ph string) bool {
		return strings.Contains(p.command, ph) || (p.config != "" && strings.Contains(p.command, "{config}") && strings.Contains(p.config, ph))
	}
	switch cmd, url, entry := uses("{upstream}"), uses("{upstream_url}"), uses("{upstream_json}"); {
	case entry:
		p.transports = []string{overStdio, overHTTP}
	case cmd && url:
		return fmt.Errorf("-peer %s: the command names both {upstream} and {upstream_url}: give one peer for each transport", p.name)
	case cmd:
		p.transports = []string{overStdio}
	case url:
		p.transports = []string{overHTTP}
	default:
		return fmt.Errorf("-peer %s: nothing names the upstream: use {upstream} (a stdio command line), {upstream_url}, or {config} with {upstream_json} in its template (-peer-opt %s.config=FILE)", p.name, p.name)
	}
	return nil
}

// vars are the placeholders' values for one start of a peer.
type vars struct {
	port, name, config string
	up                 *upstream
}

// expand replaces the placeholders of tmpl; quote escapes each value (for
// a JSON string, or nothing).
func (v vars) expand(tmpl string, quote func(string) string) (string, error) {
	var err error
	out := placeholderRE.ReplaceAllStringFunc(tmpl, func(ph string) string {
		var s string
		switch ph[1 : len(ph)-1] {
		case "port":
			s = v.port
		case "addr":
			s = "127.0.0.1:" + v.port
		case "name":
			s = v.name
		case "config":
			s = v.config
		case "upstream":
			if v.up.transport != overStdio {
				err = fmt.Errorf("{upstream} is a stdio command line: this peer cannot front the %s upstream", v.up.transport)
			}
			s = shellQuote(v.up.argv)
		case "upstream_url":
			if v.up.transport != overHTTP {
				err = fmt.Errorf("{upstream_url} is the HTTP upstream's: this peer cannot front the %s upstream", v.up.transport)
			}
			s = v.up.url
		case "upstream_json":
			return v.up.entryJSON() // JSON already
		}
		return quote(s)
	})
	return out, err
}

// argv is the peer's command line for v.
func (p *peer) argv(v vars) ([]string, error) {
	words, err := capability.SplitCommand(p.command)
	if err != nil {
		return nil, err
	}
	for i, w := range words {
		if words[i], err = v.expand(w, noQuote); err != nil {
			return nil, fmt.Errorf("peer %s: %w", p.name, err)
		}
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("peer %s: empty command", p.name)
	}
	return words, nil
}

// writeConfig writes the peer's configuration for v to v.config.
func (p *peer) writeConfig(v vars) error {
	if p.config == "" {
		return nil
	}
	s, err := v.expand(p.config, jsonQuote)
	if err != nil {
		return fmt.Errorf("peer %s: config: %w", p.name, err)
	}
	return os.WriteFile(v.config, []byte(s), 0o600)
}

func noQuote(s string) string { return s }

// jsonQuote escapes s for the inside of a JSON string.
func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

var shellSafeRE = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

// shellQuote joins argv into one command line a POSIX shell reads back as
// argv (supergateway runs --stdio through a shell).
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if shellSafeRE.MatchString(a) {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// readLimited reads the file at path, refusing one over max bytes.
func readLimited(path string, max int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, more than %d", path, st.Size(), max)
	}
	return os.ReadFile(path)
}
