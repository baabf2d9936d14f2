package mcpregistry

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/caphub/caphub/mcpconn"
)

// Runtimes caphub starts a package with, by registry type.
var runtimes = map[string]string{TypeNPM: "npx", TypePyPI: "uvx", TypeOCI: "docker", TypeNuGet: "dnx"}

// Options steer how entries become connections.
type Options struct {
	// PreferRemote picks the first usable remote before the packages; by
	// default the first usable package is taken, then a remote.
	PreferRemote bool
	// Inputs give values to inputs that have none: keyed by a variable's
	// name, a positional argument's valueHint, a named argument's flag
	// (--port) or an environment variable's or header's name.
	Inputs map[string]string
}

// Need is a variable of caphub's environment a connection reads (as a
// ${VAR} reference): the operator must set it, and for a server bounded by
// the allow-lists, allow it (--allow-env).
type Need struct {
	Var         string `json:"var"`
	For         string `json:"for"` // "env GITHUB_TOKEN", "header Authorization"
	Secret      bool   `json:"secret,omitempty"`
	Required    bool   `json:"required,omitempty"`
	Description string `json:"description,omitempty"`
}

// Plan is how one entry is saved: the connection, or why it cannot be.
type Plan struct {
	Entry Entry `json:"-"`
	// Registry is the entry's name and Version its version.
	Registry string `json:"registry"`
	Version  string `json:"version"`
	// Name is the caphub name the connection is saved under.
	Name string `json:"name"`
	// Server is the connection; nil when Skipped says why there is none.
	Server *mcpconn.Server `json:"server,omitempty"`
	// From says which package or remote it was made of.
	From    string   `json:"from,omitempty"`
	Needs   []Need   `json:"needs,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	Skipped string   `json:"skipped,omitempty"`
}

// Connect maps an entry to a connection named name: the first usable
// package (or remote, with PreferRemote) becomes a stdio command or a URL.
// When none is usable the plan is Skipped, with each candidate's reason.
func Connect(e Entry, name string, opts Options) *Plan {
	plan := &Plan{Entry: e, Registry: e.Server.Name, Version: e.Server.Version, Name: name}
	type candidate struct {
		label string
		try   func(*builder) error
	}
	var cands []candidate
	for i := range e.Server.Packages {
		pkg := &e.Server.Packages[i]
		cands = append(cands, candidate{fmt.Sprintf("packages[%d] (%s %s)", i, pkg.RegistryType, pkg.Identifier), func(b *builder) error { return b.pkg(pkg) }})
	}
	remotes := make([]candidate, 0, len(e.Server.Remotes))
	for i := range e.Server.Remotes {
		r := &e.Server.Remotes[i]
		remotes = append(remotes, candidate{fmt.Sprintf("remotes[%d] (%s %s)", i, r.Type, r.URL), func(b *builder) error { return b.remote(r) }})
	}
	if opts.PreferRemote {
		cands = append(remotes, cands...)
	} else {
		cands = append(cands, remotes...)
	}
	if len(cands) == 0 {
		plan.Skipped = "it has neither packages nor remotes: there is nothing to run or reach"
		return plan
	}
	var reasons []string
	for _, c := range cands {
		b := &builder{opts: opts, srv: &mcpconn.Server{Name: name, Registry: e.Raw}}
		err := c.try(b)
		if err == nil {
			err = b.srv.Validate()
		}
		if err != nil {
			reasons = append(reasons, c.label+": "+err.Error())
			continue
		}
		plan.Server, plan.From, plan.Needs, plan.Notes = b.srv, c.label, b.needs, b.notes
		if len(reasons) > 0 {
			plan.Notes = append(plan.Notes, "not used: "+strings.Join(reasons, "; "))
		}
		return plan
	}
	plan.Skipped = strings.Join(reasons, "; ")
	return plan
}

// builder makes one connection.
type builder struct {
	opts  Options
	srv   *mcpconn.Server
	needs []Need
	notes []string
	omit  bool // an optional variable of the value being made has none
}

// pkg makes a stdio command of a package.
func (b *builder) pkg(p *Package) error {
	runtime, ok := runtimes[p.RegistryType]
	switch {
	case p.RegistryType == TypeMCPB:
		return fmt.Errorf("caphub does not download and unpack MCP bundles (mcpb): install it with a client that does, or use another package or remote")
	case !ok:
		return fmt.Errorf("registry type %q is not one caphub runs (npm, pypi, oci, nuget)", p.RegistryType)
	case p.Transport.Type != TransportStdio:
		return fmt.Errorf("the package serves %s once started, which caphub does not start for you: start it, then save its URL with caphub discover mcp NAME --url URL", p.Transport.Type)
	}
	if p.RuntimeHint != "" && p.RuntimeHint != runtime {
		if len(p.RuntimeArguments) > 0 {
			return fmt.Errorf("its runtimeArguments are for %s, but caphub runs %s packages with %s", p.RuntimeHint, p.RegistryType, runtime)
		}
		b.notes = append(b.notes, fmt.Sprintf("runtimeHint %s: caphub runs %s packages with %s", p.RuntimeHint, p.RegistryType, runtime))
	}
	env, err := b.env(p.EnvironmentVariables)
	if err != nil {
		return err
	}
	rtArgs, err := b.args("runtimeArguments", p.RuntimeArguments)
	if err != nil {
		return err
	}
	pkgArgs, err := b.args("packageArguments", p.PackageArguments)
	if err != nil {
		return err
	}
	argv := runtimeArgv(p, env, rtArgs, pkgArgs)
	b.srv.Transport, b.srv.Command, b.srv.Args, b.srv.Env = mcpconn.TransportStdio, runtime, argv, env
	return nil
}

// runtimeArgv is the arguments of the runtime that runs package p: its
// runtime arguments, the package (from a registry other than the default
// when p names one) and the package's arguments; for oci, each variable of
// env passed into the container.
func runtimeArgv(p *Package, env map[string]string, rtArgs, pkgArgs []string) []string {
	var argv []string
	switch p.RegistryType {
	case TypeNPM:
		argv = append([]string{"-y"}, rtArgs...)
		if p.RegistryBaseURL != "" && strings.TrimSuffix(p.RegistryBaseURL, "/") != "https://registry.npmjs.org" {
			argv = append(argv, "--registry", p.RegistryBaseURL)
		}
		argv = append(argv, p.Identifier+"@"+p.Version)
		argv = append(argv, pkgArgs...)
	case TypePyPI:
		argv = rtArgs
		if p.RegistryBaseURL != "" && strings.TrimSuffix(p.RegistryBaseURL, "/") != "https://pypi.org" {
			argv = append(argv, "--index-url", p.RegistryBaseURL)
		}
		argv = append(argv, p.Identifier+"=="+p.Version)
		argv = append(argv, pkgArgs...)
	case TypeNuGet:
		argv = append(rtArgs, p.Identifier+"@"+p.Version, "--yes")
		if p.RegistryBaseURL != "" && !strings.HasPrefix(p.RegistryBaseURL, "https://api.nuget.org") {
			argv = append(argv, "--source", p.RegistryBaseURL)
		}
		if len(pkgArgs) > 0 {
			argv = append(append(argv, "--"), pkgArgs...)
		}
	case TypeOCI:
		// docker passes the container no variable of its own environment
		// unless told to: -e NAME for each, valued from the process's.
		argv = []string{"run", "-i", "--rm"}
		for _, k := range slices.Sorted(maps.Keys(env)) {
			argv = append(argv, "-e", k)
		}
		argv = append(argv, rtArgs...)
		argv = append(argv, ociImage(p))
		argv = append(argv, pkgArgs...)
	}
	return argv
}

// ociImage is the image reference of an oci package: its identifier,
// with the version as the tag when the identifier has neither tag nor
// digest (the schema before 2025-10-11 kept them apart), and the
// registry's host when registryBaseUrl names one other than Docker Hub.
func ociImage(p *Package) string {
	img := p.Identifier
	last := img[strings.LastIndexByte(img, '/')+1:]
	if p.Version != "" && !strings.Contains(last, ":") && !strings.Contains(img, "@") {
		img += ":" + p.Version
	}
	if base := strings.TrimSuffix(p.RegistryBaseURL, "/"); base != "" {
		host := strings.TrimPrefix(strings.TrimPrefix(base, "https://"), "http://")
		first, _, _ := strings.Cut(img, "/")
		hasHost := strings.ContainsAny(first, ".:") || first == "localhost"
		if !hasHost && host != "docker.io" && host != "registry-1.docker.io" && host != "index.docker.io" {
			img = host + "/" + img
		}
	}
	return img
}

// remote makes a URL connection of a remote.
func (b *builder) remote(r *Transport) error {
	u, err := b.template("url", r.URL, r.Variables, false)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("url %q is not an http(s) URL once its variables are set", u)
	}
	headers := map[string]string{}
	for _, h := range r.Headers {
		v, ok, err := b.keyValue("header "+h.Name, h, envName(h.Name))
		if err != nil {
			return err
		}
		if ok {
			headers[h.Name] = v
		}
	}
	b.srv.URL = u
	b.srv.Transport = mcpconn.TransportHTTP
	if r.Type == TransportSSE {
		b.srv.Transport = mcpconn.TransportSSE
	}
	if len(headers) > 0 {
		b.srv.Headers = headers
	}
	return nil
}

// env maps environment variables: each one's value, or a reference to
// the operator's variable of the same name.
func (b *builder) env(kvs []KeyValueInput) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range kvs {
		v, ok, err := b.keyValue("env "+kv.Name, kv, kv.Name)
		if err != nil {
			return nil, err
		}
		if ok {
			env[kv.Name] = v
		}
	}
	if len(env) == 0 {
		return nil, nil
	}
	return env, nil
}

// keyValue is the value of an environment variable or header: the given
// input, its value (with its variables), its default, or, when it has
// none and is required, a ${VAR} reference to caphub's own variable ref:
// a secret is never stored, never invented. An optional one without a
// value is left out (ok false), with a note saying how to pass it.
func (b *builder) keyValue(what string, kv KeyValueInput, ref string) (string, bool, error) {
	if v, ok := b.opts.Inputs[kv.Name]; ok {
		return b.given(what, v, kv.IsSecret)
	}
	if kv.Value != "" {
		b.omit = false
		v, err := b.template(what, kv.Value, kv.Variables, true)
		if b.omit {
			return "", false, err
		}
		return v, err == nil, err
	}
	if kv.Default != "" && !kv.IsSecret {
		return kv.Default, true, nil
	}
	if kv.IsRequired {
		b.needs = append(b.needs, Need{Var: ref, For: what, Secret: kv.IsSecret, Required: true, Description: kv.Description})
		return "${" + ref + "}", true, nil
	}
	b.notes = append(b.notes, optionalNote(what, kv.Name, ref, kv.IsSecret))
	return "", false, nil
}

// optionalNote says an optional input was left unset, and how to pass it.
func optionalNote(what, key, ref string, secret bool) string {
	if secret {
		return fmt.Sprintf("%s: optional secret, left unset (to pass caphub's $%s, import with --set %s='${%s}')", what, ref, key, ref)
	}
	return fmt.Sprintf("%s: optional, left unset (--set %s=VALUE gives it)", what, key)
}

// given checks a value the operator gave: a secret only as a ${VAR}
// reference.
func (b *builder) given(what, v string, secret bool) (string, bool, error) {
	if secret && !envRefOnly(v) {
		return "", false, fmt.Errorf("%s is a secret: caphub stores none, so give it as a reference to a variable of its environment (--set NAME='${VAR}')", what)
	}
	for _, m := range envRefRE.FindAllString(v, -1) {
		b.needs = append(b.needs, Need{Var: m[2 : len(m)-1], For: what, Secret: secret, Required: true})
	}
	return v, true, nil
}

var (
	braceRE  = regexp.MustCompile(`\{([A-Za-z0-9_.-]+)\}`)
	envRefRE = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)
)

// envRefOnly reports whether v holds nothing but ${VAR} references (and
// white space, or a Bearer/Basic scheme).
func envRefOnly(v string) bool {
	rest := strings.TrimSpace(envRefRE.ReplaceAllString(v, ""))
	rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(rest, "Bearer"), "Basic"))
	return rest == "" && envRefRE.MatchString(v)
}

// template replaces the {name}s of value with their variables' values:
// the given input, the variable's value or default, or, where caphub
// expands references (env and headers: refs), a ${NAME} reference for a
// required or secret one. A {name} that is not a variable stays as it is
// (the schema says so).
func (b *builder) template(what, value string, vars map[string]Input, refs bool) (string, error) {
	var first error
	out := braceRE.ReplaceAllStringFunc(value, func(m string) string {
		name := m[1 : len(m)-1]
		v, declared := vars[name]
		given, isGiven := b.opts.Inputs[name]
		switch {
		case isGiven:
			if v.IsSecret && !envRefOnly(given) {
				if first == nil {
					first = fmt.Errorf("%s: {%s} is a secret: caphub stores none, so give it as a reference to a variable of its environment (--set %s='${VAR}')", what, name, name)
				}
			}
			if refs {
				for _, r := range envRefRE.FindAllString(given, -1) {
					b.needs = append(b.needs, Need{Var: r[2 : len(r)-1], For: what + " {" + name + "}", Secret: v.IsSecret, Required: true})
				}
			}
			return given
		case !declared:
			return m
		case v.Value != "":
			return v.Value
		case v.Default != "" && !v.IsSecret:
			return v.Default
		case refs && v.IsRequired:
			ref := envName(name)
			b.needs = append(b.needs, Need{Var: ref, For: what + " {" + name + "}", Secret: v.IsSecret, Required: true, Description: v.Description})
			return "${" + ref + "}"
		case refs:
			// An optional variable without a value leaves the whole
			// variable or header out, rather than half a value.
			b.omit = true
			b.notes = append(b.notes, optionalNote(what+" {"+name+"}", name, envName(name), v.IsSecret))
			return ""
		}
		if first == nil {
			first = fmt.Errorf("%s: {%s} has no value%s: set it with --set %s=VALUE", what, name, describe(v.Description), name)
		}
		return m
	})
	return out, first
}

// args maps arguments in order.
func (b *builder) args(list string, args []Argument) ([]string, error) {
	var argv []string
	for i, a := range args {
		what := fmt.Sprintf("%s[%d]", list, i)
		key := a.ValueHint
		if a.Type == ArgNamed {
			key = a.Name
			what += " " + a.Name
		} else if key != "" {
			what += " " + key
		}
		v, ok, err := b.argValue(what, key, a)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if a.Type == ArgNamed {
			argv = append(argv, a.Name)
			if v == "" {
				continue // a flag alone
			}
		}
		argv = append(argv, v)
	}
	return argv, nil
}

// argValue is an argument's value: given, its value, or its default. A
// required one without any must be given (--set); a secret one cannot be
// an argument, since caphub expands references only in the environment
// and headers.
func (b *builder) argValue(what, key string, a Argument) (string, bool, error) {
	if v, ok := b.opts.Inputs[key]; ok && key != "" {
		if a.IsSecret {
			return "", false, fmt.Errorf("%s is a secret passed as an argument: caphub keeps secrets only as references to its environment, which it expands in the environment and headers, not in arguments: save this server yourself", what)
		}
		return v, true, nil
	}
	if a.Value != "" {
		v, err := b.template(what, a.Value, a.Variables, false)
		return v, err == nil, err
	}
	if a.Default != "" {
		return a.Default, true, nil
	}
	if a.IsSecret && a.IsRequired {
		return "", false, fmt.Errorf("%s is a secret passed as an argument: caphub keeps secrets only as references to its environment, which it expands in the environment and headers, not in arguments: save this server yourself", what)
	}
	if a.IsRequired {
		hint := key
		if hint == "" {
			hint = "NAME"
		}
		return "", false, fmt.Errorf("%s has no value%s: set it with --set %s=VALUE", what, describe(a.Description), hint)
	}
	b.notes = append(b.notes, what+": optional, left out")
	return "", false, nil
}

func describe(d string) string {
	if d == "" {
		return ""
	}
	return " (" + truncate(d, 80) + ")"
}

// envName is the environment variable a header or variable name refers
// to: upper case, runs of other characters as _.
func envName(name string) string {
	var b strings.Builder
	gap := false
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z':
			r -= 'a' - 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		default:
			gap = true
			continue
		}
		if gap && b.Len() > 0 {
			b.WriteByte('_')
		}
		gap = false
		b.WriteRune(r)
	}
	s := b.String()
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "V_" + s
	}
	return s
}

// LocalName is the caphub name of a registry name (a saved server's name
// is [a-z][a-z0-9-]*): the part after the slash, or with full the whole
// name, lower case, with runs of other characters as '-'.
func LocalName(registryName string, full bool) string {
	n := registryName
	if !full {
		if _, after, ok := strings.Cut(n, "/"); ok {
			n = after
		}
	}
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(n) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if gap && b.Len() > 0 {
				b.WriteByte('-')
			}
			gap = false
			b.WriteRune(r)
			continue
		}
		gap = true
	}
	s := b.String()
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "mcp-" + s
	}
	return strings.TrimSuffix(s, "-")
}
