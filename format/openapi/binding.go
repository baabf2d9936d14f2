package openapi

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/caphub/caphub/capability"
)

// base is an operation's API address. When url is "" the address cannot
// be known from the document: the operation still imports, with a binding
// that tells at invocation what to configure (see extraBaseUnknown).
type base struct {
	url string
	// server is the server URL as written (variables filled), path the
	// path the API's address should end with ("/api/v1"), why the reason
	// the address is unknown; all three only when url is "".
	server, path, why string
	// guess is set when url was guessed from a server URL that is not a
	// URL as written (a host without a scheme): the warning to give.
	guess string
}

// unknownOrigin stands for the API's scheme and host in the URL of a
// binding whose base is unknown: the .invalid top-level domain never
// resolves (RFC 6761), and httpbind refuses the binding before any request
// because of its extraBaseUnknown.
const unknownOrigin = "https://base-url-unknown.invalid"

// extraBaseUnknown, on an http binding, marks a URL whose scheme and host
// are unknownOrigin: {"server": the server URL as written, "path": the
// path the API's address ends with, "reason": why it is unknown}. httpbind
// (ExtraBaseUnknown) answers every call with an error saying what to
// configure.
const extraBaseUnknown = "x-base-url-unknown"

// fileHosts serve files, not APIs: a document fetched from one of them
// (a raw GitHub file, a package CDN) says nothing about where the API it
// describes is served, so relative server URLs are not resolved against it.
var fileHosts = []string{"raw.githubusercontent.com", "gist.githubusercontent.com", "github.com", "gitlab.com",
	"bitbucket.org", "unpkg.com", "cdn.jsdelivr.net", "*.github.io", "*.gitlab.io"}

// isFileHost reports whether host (without port) is one of fileHosts.
func isFileHost(host string) bool {
	host = strings.ToLower(host)
	for _, h := range fileHosts {
		if suffix, ok := strings.CutPrefix(h, "*"); ok {
			if strings.HasSuffix(host, suffix) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// documentLocation returns the URL the document was served from, against
// which OpenAPI resolves relative server URLs (and Swagger 2.0 takes a
// missing host and scheme): the source when it is an http(s) URL; for a
// document read from a file, the last http(s) entry of info.x-origin (the
// APIs.guru directory's record of where it fetched the spec) whose format
// is openapi or swagger (or not given), since a spec converted from
// another format (postman, google) was not served with these servers. It
// returns nil and the reason when there is none, or when the location is
// on a file host (see fileHosts).
func documentLocation(source string, root map[string]any) (*url.URL, string) {
	loc, from := (*url.URL)(nil), "the document was read from a file and its info.x-origin gives no web address"
	if isHTTPURL(source) {
		if u, err := url.Parse(source); err == nil && u.Host != "" {
			loc, from = u, ""
		}
	} else {
		info, _ := root["info"].(map[string]any)
		origins, _ := info["x-origin"].([]any)
		for _, o := range origins {
			m, _ := o.(map[string]any)
			switch f := str(m["format"]); f {
			case "", "openapi", "swagger":
			default:
				from = fmt.Sprintf("the document was read from a file whose info.x-origin is a %s document, converted, not this one as served", f)
				continue
			}
			if u, err := url.Parse(str(m["url"])); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
				loc = u
			}
		}
	}
	if loc != nil && isFileHost(loc.Hostname()) {
		return nil, fmt.Sprintf("the document comes from %s, a file host, not the API", loc.Host)
	}
	return loc, from
}

// baseURL returns the API's address for an operation, without a trailing
// "/": Options.BaseURL when set; else the document's (OpenAPI 3: see
// oas3Base; Swagger 2.0: see swaggerBase).
func (im *importer) baseURL(o *operation) base {
	if im.opts.BaseURL != "" {
		return base{url: strings.TrimRight(im.opts.BaseURL, "/")}
	}
	if im.version == swagger2 {
		return im.swaggerBase(o)
	}
	return im.oas3Base(o)
}

// oas3Base chooses among the servers of the operation, else of its path
// item, else of the document (the default being "/"): the first that
// resolves to an https URL, else the first that resolves to an http one,
// else the first (whose address is then unknown). Each server's variables
// take their defaults, and relative URLs resolve against the document's
// location (documentLocation).
func (im *importer) oas3Base(o *operation) base {
	list := serverList(o.op["servers"], o.item["servers"], im.root["servers"])
	var first, firstHTTP *base
	for _, raw := range list {
		server, _ := raw.(map[string]any)
		b := im.resolveServer(server)
		switch {
		case strings.HasPrefix(b.url, "https://"):
			return b
		case b.url != "" && firstHTTP == nil:
			firstHTTP = &b
		case first == nil:
			first = &b
		}
	}
	if firstHTTP != nil {
		return *firstHTTP
	}
	if first == nil {
		return im.resolveServer(nil)
	}
	return *first
}

// serverList returns the first non-empty servers list, nil when there is
// none.
func serverList(lists ...any) []any {
	for _, v := range lists {
		if list, ok := v.([]any); ok && len(list) > 0 {
			return list
		}
	}
	return nil
}

// resolveServer returns the address of one OpenAPI 3 server (nil: the
// default server "/"): its URL with the variables' defaults, resolved
// against the document's location when relative; scheme-relative URLs
// (//host/base) take https, and a URL that starts with a host name and no
// scheme (api.example.com/v1), which is relative as written, is read as
// https://api.example.com/v1 with a warning.
func (im *importer) resolveServer(server map[string]any) base {
	raw := "/"
	if s, ok := server["url"].(string); ok && strings.TrimSpace(s) != "" {
		raw = strings.TrimSpace(s)
	}
	vars, _ := server["variables"].(map[string]any)
	filled, missing := fillServerVariables(raw, vars)
	if missing != "" {
		return base{server: raw, why: fmt.Sprintf("its variable {%s} has no default", missing)}
	}
	u, err := url.Parse(filled)
	if err != nil || strings.ContainsAny(filled, " \t\n") {
		return base{server: filled, why: "it is not a URL"}
	}
	switch {
	case u.IsAbs():
		return checkedBase(filled, u.String())
	case u.Host != "": // //host/base
		return checkedBase(filled, "https:"+u.String())
	case hostLikeRE.MatchString(filled):
		b := checkedBase(filled, "https://"+filled)
		if b.url != "" {
			b.guess = fmt.Sprintf("server URL %q has no scheme and starts with a host name: read as %s; pass --base-url (Options.BaseURL) if that is wrong", filled, b.url)
		}
		return b
	case im.location == nil:
		b := base{server: filled, why: "it is relative and " + im.locationWhy}
		if strings.HasPrefix(filled, "/") {
			b.path = u.EscapedPath()
		}
		return b
	}
	return checkedBase(filled, im.location.ResolveReference(u).String())
}

// hostLikeRE matches a relative server URL that is a host name with a dot
// and a top-level domain of letters, maybe a port and a path: what was
// meant as https://<it>.
var hostLikeRE = regexp.MustCompile(`^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(:[0-9]+)?(/.*)?$`)

// checkedBase is the base at address (without a trailing "/") when it is
// an absolute http(s) URL without query or fragment, else an unknown one.
func checkedBase(server, address string) base {
	address = strings.TrimRight(address, "/")
	u, err := url.Parse(address)
	switch {
	case err != nil || u.Host == "":
		return base{server: server, why: "it is not an absolute URL"}
	case u.Scheme != "http" && u.Scheme != "https":
		return base{server: server, why: fmt.Sprintf("its scheme %s is not http or https", u.Scheme)}
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(address, "?"):
		return base{server: server, why: "it has a query or fragment"}
	}
	return base{url: address}
}

// swaggerBase is a Swagger 2.0 document's scheme://host basePath, where
// scheme is https when the operation (or the document) lists it, else
// http when listed, else the document location's (see documentLocation),
// else https; host defaults to the document location's. Without either
// host, the address is unknown.
func (im *importer) swaggerBase(o *operation) base {
	schemes := im.listOf(o, "schemes")
	scheme := "https"
	switch {
	case containsFold(schemes, "https"):
	case containsFold(schemes, "http"):
		scheme = "http"
	case im.location != nil:
		scheme = im.location.Scheme
	}
	basePath := "/" + strings.Trim(str(im.root["basePath"]), "/")
	host := str(im.root["host"])
	if host == "" && im.location != nil {
		host = im.location.Host
	}
	if host == "" {
		return base{server: basePath, path: strings.TrimRight(basePath, "/"), why: "the document has no host and " + im.locationWhy}
	}
	return checkedBase(scheme+"://"+host+basePath, scheme+"://"+host+basePath)
}

// containsFold reports whether list holds s, compared case-insensitively.
func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// fillServerVariables replaces a server URL's {variables} by their default
// (else the first value of their enum); it returns the name of a variable
// that has neither.
func fillServerVariables(raw string, vars map[string]any) (filled, missing string) {
	filled = pathParamRE.ReplaceAllStringFunc(raw, func(m string) string {
		name := m[1 : len(m)-1]
		if d := serverVariableDefault(vars[name]); d != "" {
			return d
		}
		missing = name
		return m
	})
	return filled, missing
}

// serverVariableDefault is a server variable's default, else the first
// value of its enum, else "".
func serverVariableDefault(v any) string {
	m, _ := v.(map[string]any)
	if d := scalarText(m["default"]); d != "" {
		return d
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return scalarText(e[0])
	}
	return ""
}

func checkBase(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("the API address %q is not an absolute http(s) URL: fix the servers (or host/schemes), or pass --base-url (Options.BaseURL)", s)
	}
	return s, nil
}

// securitySchemes reads the supported security schemes and names the
// environment variable of each: <DOMAIN>_API_KEY for an apiKey,
// <DOMAIN>_TOKEN for http bearer, oauth2 and openIdConnect (an access
// token), <DOMAIN>_CREDENTIALS for http basic ("user:password"), where
// <DOMAIN> is the domain in upper case with "-" → "_"; when two supported
// schemes would share a name, each is <DOMAIN>_<SCHEME>_<SUFFIX> with its
// scheme name. The others are kept in im.unsupported with what they are,
// for the warning about the operations that need them.
func (im *importer) securitySchemes() {
	var defs map[string]any
	if im.version == swagger2 {
		defs, _ = im.root["securityDefinitions"].(map[string]any)
	} else {
		comps, _ := im.root["components"].(map[string]any)
		defs, _ = comps["securitySchemes"].(map[string]any)
	}
	im.schemes = map[string]map[string]any{}
	im.envs = map[string]string{}
	im.unsupported = map[string]string{}
	suffixes := map[string]string{}
	count := map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		s, err := im.conv.resolve(defs[name], "security scheme "+name)
		if err != nil {
			im.warnf("security scheme %s ignored: %v", name, err)
			continue
		}
		kind := authKind(s)
		if kind == "" {
			im.unsupported[name] = describeScheme(s)
			continue
		}
		im.schemes[name] = s
		suffix := map[string]string{"api_key": "API_KEY", "bearer": "TOKEN", "oauth2": "TOKEN", "basic": "CREDENTIALS"}[kind]
		suffixes[name] = suffix
		count[suffix]++
	}
	prefix := envName(im.domain)
	for name, suffix := range suffixes {
		if count[suffix] > 1 {
			im.envs[name] = prefix + "_" + envName(name) + "_" + suffix
		} else {
			im.envs[name] = prefix + "_" + suffix
		}
	}
}

// authKind maps a security scheme to an HTTPAuth type, "" when caphub
// cannot apply it: an apiKey in a cookie, an http scheme other than bearer
// and basic, mutualTLS, and the AWS signatures an API Gateway export marks
// with x-amazon-apigateway-authtype (awsSigv4, …), which are computed per
// request from the request itself and so are not a key (their
// "Authorization" apiKey is only how the export writes them).
func authKind(s map[string]any) string {
	if strings.HasPrefix(strings.ToLower(str(s["x-amazon-apigateway-authtype"])), "aws") {
		return ""
	}
	switch str(s["type"]) {
	case "apiKey":
		in, name := str(s["in"]), str(s["name"])
		if (in == "header" && httpToken(name)) || (in == "query" && name != "") {
			return "api_key"
		}
	case "http":
		switch strings.ToLower(str(s["scheme"])) {
		case "bearer":
			return "bearer"
		case "basic":
			return "basic"
		}
	case "basic":
		return "basic"
	case "oauth2", "openIdConnect":
		return "oauth2"
	}
	return ""
}

// describeScheme says what an unsupported security scheme is, for a
// warning.
func describeScheme(s map[string]any) string {
	typ := orDefault(str(s["type"]), "no type")
	switch {
	case str(s["x-amazon-apigateway-authtype"]) != "":
		return "AWS request signing, x-amazon-apigateway-authtype " + str(s["x-amazon-apigateway-authtype"])
	case typ == "http":
		return "http " + orDefault(str(s["scheme"]), "without a scheme")
	case typ == "apiKey":
		return fmt.Sprintf("apiKey in %s %q", orDefault(str(s["in"]), "no location"), str(s["name"]))
	}
	return typ
}

// auth returns the http binding's auth for an operation and its
// metadata.openapi fields. The operation's security (or the document's when
// the operation has none; an empty list means no auth) is a list of
// alternatives: the first whose schemes caphub can all apply is used, else
// the first with one it can apply; within it, the first such scheme by
// name. An operation left with a scheme caphub cannot apply is noted for
// the warning about it (see warnUnsupported), and its metadata field
// auth_unsupported names the schemes. The secret is never read:
// the binding names the environment variable that holds it.
func (im *importer) auth(o *operation) (*capability.HTTPAuth, map[string]any) {
	sec, ok := o.op["security"]
	if !ok {
		sec = im.root["security"]
	}
	reqs, _ := sec.([]any)
	chosen, full := map[string]any(nil), false
	for _, r := range reqs {
		m, _ := r.(map[string]any)
		supported, unsupported := im.splitRequirement(m)
		if supported == 0 {
			continue
		}
		if unsupported == 0 {
			chosen, full = m, true
			break
		}
		if chosen == nil {
			chosen = m
		}
	}
	var meta map[string]any
	if !full {
		if names := im.noteUnsupported(o, reqs, chosen); len(names) > 0 {
			meta = map[string]any{"auth_unsupported": strings.Join(names, ", ")}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(chosen)) {
		if s, ok := im.schemes[name]; ok {
			a, m := im.schemeAuth(name, s, chosen[name])
			maps.Copy(m, meta)
			return a, m
		}
	}
	return nil, meta
}

// splitRequirement counts the schemes of a security requirement caphub
// can and cannot apply (a name no scheme defines counts as neither).
func (im *importer) splitRequirement(m map[string]any) (supported, unsupported int) {
	for name := range m {
		if _, ok := im.schemes[name]; ok {
			supported++
		} else if _, ok := im.unsupported[name]; ok {
			unsupported++
		}
	}
	return supported, unsupported
}

// noteUnsupported records the operation under the unsupported schemes it
// is left needing, and returns their names: those of the chosen
// requirement, else of the first requirement, when no requirement is empty
// (an empty one makes auth optional).
func (im *importer) noteUnsupported(o *operation, reqs []any, chosen map[string]any) []string {
	need := chosen
	for _, r := range reqs {
		m, _ := r.(map[string]any)
		if len(m) == 0 {
			return nil
		}
		if need == nil {
			need = m
		}
	}
	var names []string
	for _, name := range slices.Sorted(maps.Keys(need)) {
		if _, ok := im.unsupported[name]; ok {
			if im.needs == nil {
				im.needs = map[string][]string{}
			}
			im.needs[name] = append(im.needs[name], o.name)
			names = append(names, name)
		}
	}
	return names
}

// schemeAuth is the HTTPAuth of a supported scheme and its metadata.
func (im *importer) schemeAuth(name string, s map[string]any, scopes any) (*capability.HTTPAuth, map[string]any) {
	a := &capability.HTTPAuth{Type: authKind(s), Env: im.envs[name], Extra: map[string]any{"x-scheme": name}}
	if a.Type == "api_key" {
		a.Location, a.ParamName = str(s["in"]), str(s["name"])
	} else {
		a.Location, a.ParamName = "header", "Authorization"
	}
	if list := stringList(scopes); len(list) > 0 {
		sc := make([]any, len(list))
		for i, x := range list {
			sc[i] = x
		}
		a.Extra["x-scopes"] = sc
	}
	return a, map[string]any{"auth_type": a.Type, "auth_location": a.Location, "auth_param_name": a.ParamName}
}

// warnUnsupported gives one warning per security scheme caphub cannot
// apply that operations need: the scheme, what it is, and the operations
// (the first five by name, and how many more).
func (im *importer) warnUnsupported() {
	for _, name := range slices.Sorted(maps.Keys(im.needs)) {
		ops := im.needs[name]
		list := strings.Join(ops[:min(len(ops), 5)], ", ")
		if len(ops) > 5 {
			list += fmt.Sprintf(" and %d more", len(ops)-5)
		}
		n := "1 operation needs it and was"
		if len(ops) != 1 {
			n = fmt.Sprintf("%d operations need it and were", len(ops))
		}
		im.warnf("security scheme %s (%s) cannot be applied by caphub: %s imported without auth (metadata.openapi.auth_unsupported names it), so the API may refuse their calls: %s",
			name, im.unsupported[name], n, list)
	}
}
