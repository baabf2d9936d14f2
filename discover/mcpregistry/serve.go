package mcpregistry

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/mcpconn"
)

// Namespace is the registry namespace of the saved servers that were not
// imported from a registry: caphub serves them as local.caphub/NAME (the
// .local domain is for local use, so the name claims nobody's namespace).
const Namespace = "local.caphub"

// CaphubMetaKey is the _meta key of what caphub adds to an entry it
// serves: the saved server's caphub name, transport and tools.
const CaphubMetaKey = Namespace + "/server"

// ServeOptions steer how saved servers are served as entries.
type ServeOptions struct {
	// FrontURL, when set, is the URL at which caphub fronts a saved server
	// (…/mcp/servers/NAME): every entry gets it as a streamable-http remote,
	// so a client can reach the server through caphub.
	FrontURL func(name string) string
	// TokenRequired makes that remote ask for caphub's bearer token.
	TokenRequired bool
}

// Served is a saved server as a registry entry.
type Served struct {
	Name        string // the registry name
	Version     string
	Description string
	SavedAt     time.Time
	Response    Response
}

// EntryOf is a saved server as the registry API answers it: the
// server.json it was imported with when it was (and that still follows
// the schema), else one made of its connection (a recognised npx, uvx or
// dnx command becomes a package, a URL a remote); with caphub's front as
// a remote when o.FrontURL is set, and the registry's metadata.
func EntryOf(saved *discover.SavedServer, o ServeOptions) (*Served, error) {
	srv := &saved.Server
	var obj map[string]json.RawMessage
	var s *Server
	if len(srv.Registry) > 0 {
		var parsed Server
		if json.Unmarshal(srv.Registry, &parsed) == nil && len(Validate(&parsed)) == 0 && json.Unmarshal(srv.Registry, &obj) == nil {
			s = &parsed
		}
	}
	if s == nil {
		s = synthesize(saved)
		b, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		obj = nil
		if err := json.Unmarshal(b, &obj); err != nil {
			return nil, err
		}
	}
	if o.FrontURL != nil {
		remotes := append([]Transport(nil), s.Remotes...)
		remotes = append(remotes, frontRemote(o.FrontURL(srv.Name), o.TokenRequired))
		b, err := json.Marshal(remotes)
		if err != nil {
			return nil, err
		}
		obj["remotes"] = b
	}
	server, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	at := saved.SavedAt.UTC().Format(time.RFC3339)
	caphub := map[string]any{"name": srv.Name, "transport": srv.Transport}
	if saved.Listing != nil {
		caphub["tools"] = len(saved.Listing.Tools)
		caphub["listedAt"] = saved.Listing.At.UTC().Format(time.RFC3339)
	}
	return &Served{
		Name: s.Name, Version: s.Version, Description: s.Description, SavedAt: saved.SavedAt,
		Response: Response{Server: server, Meta: map[string]any{
			OfficialMetaKey: Official{Status: "active", PublishedAt: at, UpdatedAt: at, IsLatest: true},
			CaphubMetaKey:   caphub,
		}},
	}, nil
}

// frontRemote is caphub's front of a saved server as a remote.
func frontRemote(url string, token bool) Transport {
	t := Transport{Type: TransportStreamableHTTP, URL: url}
	if token {
		t.Headers = []KeyValueInput{{Name: "Authorization", InputWithVariables: InputWithVariables{
			Input:     Input{Value: "Bearer {token}", IsRequired: true, IsSecret: true, Description: "caphub API token with the invoke scope"},
			Variables: map[string]Input{"token": {IsRequired: true, IsSecret: true, Description: "caphub API token (caphub token create NAME --scope invoke)"}},
		}}}
	}
	return t
}

// synthesize makes a server.json of a saved connection.
func synthesize(saved *discover.SavedServer) *Server {
	srv := &saved.Server
	s := &Server{Name: Namespace + "/" + srv.Name, Version: "0.0.0"}
	desc := "MCP server saved in caphub as " + srv.Name
	if l := saved.Listing; l != nil && l.ServerInfo != "" {
		desc = l.ServerInfo + ", saved in caphub as " + srv.Name
		if f := strings.Fields(l.ServerInfo); len(f) > 1 && f[len(f)-1][0] >= '0' && f[len(f)-1][0] <= '9' && len(Validate(&Server{Name: "a/b", Description: "d", Version: f[len(f)-1]})) == 0 {
			s.Version = f[len(f)-1]
		}
	}
	s.Description = cutRunes(desc, 100)
	if srv.URL != "" {
		t := Transport{Type: TransportStreamableHTTP, URL: srv.URL}
		if srv.Transport == mcpconn.TransportSSE {
			t.Type = TransportSSE
		}
		for _, k := range slices.Sorted(maps.Keys(srv.Headers)) {
			t.Headers = append(t.Headers, keyValueOf(k, srv.Headers[k]))
		}
		s.Remotes = []Transport{t}
		return s
	}
	if pkg := packageOf(srv); pkg != nil {
		s.Packages = []Package{*pkg}
	}
	return s
}

var secretNameRE = regexp.MustCompile(`(?i)(token|secret|password|passwd|api[-_]?key|auth|credential|cookie|private)`)

// keyValueOf is a saved env variable or header as an input: its ${VAR}
// references become {VAR} variables the user must give (secret when the
// name looks like one), so that the entry carries no value of caphub's
// environment; a value that is one reference to its own name is simply
// required.
func keyValueOf(name, value string) KeyValueInput {
	kv := KeyValueInput{Name: name}
	secret := secretNameRE.MatchString(name)
	if value == "${"+name+"}" {
		kv.IsRequired, kv.IsSecret = true, secret
		return kv
	}
	refs := envRefRE.FindAllString(value, -1)
	if len(refs) == 0 {
		kv.Value = value
		return kv
	}
	kv.Variables = map[string]Input{}
	kv.Value = envRefRE.ReplaceAllStringFunc(value, func(m string) string {
		v := m[2 : len(m)-1]
		kv.Variables[v] = Input{IsRequired: true, IsSecret: secret || secretNameRE.MatchString(v)}
		return "{" + v + "}"
	})
	kv.IsRequired, kv.IsSecret = true, secret
	return kv
}

// packageOf recognises the package a saved command runs: npx -y ID@VERSION,
// uvx ID==VERSION or dnx ID@VERSION --yes, followed by its arguments; nil
// for any other command.
func packageOf(srv *mcpconn.Server) *Package {
	argv, err := capability.SplitCommand(srv.Command)
	if err != nil || len(argv) == 0 {
		return nil
	}
	argv = append(argv, srv.Args...)
	runtime := argv[0]
	parse, ok := runtimeParsers[runtime]
	if !ok {
		return nil
	}
	pkg, rest := parse(argv[1:])
	if pkg == nil || pkg.Version == "" || isRange(pkg.Version) || pkg.Version == "latest" {
		return nil
	}
	pkg.RuntimeHint = runtime
	pkg.Transport = Transport{Type: TransportStdio}
	for _, a := range rest {
		pkg.PackageArguments = append(pkg.PackageArguments, Argument{Type: ArgPositional, InputWithVariables: InputWithVariables{Input: Input{Value: a}}})
	}
	for _, k := range slices.Sorted(maps.Keys(srv.Env)) {
		pkg.EnvironmentVariables = append(pkg.EnvironmentVariables, keyValueOf(k, srv.Env[k]))
	}
	return pkg
}

// runtimeParsers read, per package runner, the package a command's
// arguments name (nil when they name none) and the arguments after it.
var runtimeParsers = map[string]func(args []string) (*Package, []string){
	"npx": npxPackage,
	"uvx": uvxPackage,
	"dnx": dnxPackage,
}

// npxPackage reads npx [-y|--yes]… ID@VERSION.
func npxPackage(rest []string) (*Package, []string) {
	for len(rest) > 0 && (rest[0] == "-y" || rest[0] == "--yes") {
		rest = rest[1:]
	}
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		return nil, nil
	}
	id, ver, ok := cutVersionAt(rest[0])
	if !ok {
		return nil, nil
	}
	return &Package{RegistryType: TypeNPM, Identifier: id, Version: ver}, rest[1:]
}

// uvxPackage reads uvx ID==VERSION.
func uvxPackage(rest []string) (*Package, []string) {
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		return nil, nil
	}
	id, ver, ok := strings.Cut(rest[0], "==")
	if !ok || id == "" {
		return nil, nil
	}
	return &Package{RegistryType: TypePyPI, Identifier: id, Version: ver}, rest[1:]
}

// dnxPackage reads dnx ID@VERSION --yes [--].
func dnxPackage(rest []string) (*Package, []string) {
	if len(rest) < 2 || rest[1] != "--yes" {
		return nil, nil
	}
	id, ver, ok := cutVersionAt(rest[0])
	if !ok {
		return nil, nil
	}
	rest = rest[2:]
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	return &Package{RegistryType: TypeNuGet, Identifier: id, Version: ver}, rest
}

// cutVersionAt splits ID@VERSION at its last @ (a scoped npm name starts
// with one).
func cutVersionAt(s string) (id, version string, ok bool) {
	at := strings.LastIndexByte(s, '@')
	if at <= 0 {
		return "", "", false
	}
	return s[:at], s[at+1:], true
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
