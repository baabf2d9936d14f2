package openapi

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/caphub/caphub/capability"
)

// baseURL returns the API's address for an operation, without a trailing
// "/": Options.BaseURL when set; else, in OpenAPI 3, the first server of the
// operation, else of its path item, else of the document (the document's
// default being "/"), with server variables replaced by their defaults and
// a relative URL resolved against the document's URL; in Swagger 2.0,
// scheme://host basePath, where scheme is https when the operation (or the
// document) lists it, else the first listed, else the document URL's, else
// https, and host defaults to the document URL's.
func (im *importer) baseURL(o *operation) (string, error) {
	if im.opts.BaseURL != "" {
		return strings.TrimRight(im.opts.BaseURL, "/"), nil
	}
	if im.version == swagger2 {
		return im.swaggerBaseURL(o)
	}
	server := firstServer(o.op["servers"], o.item["servers"], im.root["servers"])
	raw := "/"
	if s, ok := server["url"].(string); ok {
		raw = s
	}
	vars, _ := server["variables"].(map[string]any)
	filled, err := fillServerVariables(raw, vars)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(filled)
	if err != nil {
		return "", fmt.Errorf("server URL %q is not a URL (%v): fix it, or pass --base-url (Options.BaseURL)", filled, err)
	}
	if !u.IsAbs() || u.Host == "" {
		if im.sourceURL == nil {
			return "", fmt.Errorf("the server URL %q is relative and the document was read from a file: pass --base-url (Options.BaseURL) with the API's address, e.g. https://api.example.com%s", raw, strings.TrimRight(filled, "/"))
		}
		u = im.sourceURL.ResolveReference(u)
	}
	return checkBase(strings.TrimRight(u.String(), "/"))
}

// swaggerBaseURL is a Swagger 2.0 document's scheme://host basePath (see
// baseURL).
func (im *importer) swaggerBaseURL(o *operation) (string, error) {
	schemes := im.listOf(o, "schemes")
	scheme := "https"
	switch {
	case contains(schemes, "https"):
	case len(schemes) > 0:
		scheme = strings.ToLower(schemes[0])
	case im.sourceURL != nil:
		scheme = im.sourceURL.Scheme
	}
	host := str(im.root["host"])
	if host == "" && im.sourceURL != nil {
		host = im.sourceURL.Host
	}
	if host == "" {
		return "", errors.New(`the document has no host and was not fetched from a URL: pass --base-url (Options.BaseURL) with the API's address, e.g. https://api.example.com/v1`)
	}
	u := scheme + "://" + host + "/" + strings.Trim(str(im.root["basePath"]), "/")
	return checkBase(strings.TrimRight(u, "/"))
}

// firstServer returns the first server of the first non-empty servers
// list, nil when there is none.
func firstServer(lists ...any) map[string]any {
	for _, v := range lists {
		if list, ok := v.([]any); ok && len(list) > 0 {
			server, _ := list[0].(map[string]any)
			return server
		}
	}
	return nil
}

// fillServerVariables replaces a server URL's {variables} by their default
// (else the first value of their enum).
func fillServerVariables(raw string, vars map[string]any) (string, error) {
	var missing string
	filled := pathParamRE.ReplaceAllStringFunc(raw, func(m string) string {
		name := m[1 : len(m)-1]
		if d := serverVariableDefault(vars[name]); d != "" {
			return d
		}
		missing = name
		return m
	})
	if missing != "" {
		return "", fmt.Errorf("server URL %q: variable {%s} has no default: give it one, or pass --base-url (Options.BaseURL)", raw, missing)
	}
	return filled, nil
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
// schemes would share a name, each gets <DOMAIN>_<SCHEME>_<SUFFIX> with its
// scheme name.
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
			im.warnf("security scheme %s (type %s) is not supported (caphub supports apiKey in a header or the query, http bearer and basic, oauth2 and openIdConnect): operations that need it get no auth", name, orDefault(str(s["type"]), "missing"))
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

// authKind maps a security scheme to an HTTPAuth type, "" when unsupported.
func authKind(s map[string]any) string {
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

// auth returns the http binding's auth for an operation and its
// metadata.openapi fields: the operation's security (or the document's when
// the operation has none; an empty list means no auth) is a list of
// alternatives; the first alternative with a supported scheme is used, and
// within it the first supported scheme by name. The secret is never read:
// the binding names the environment variable that holds it.
func (im *importer) auth(o *operation) (*capability.HTTPAuth, map[string]any) {
	sec, ok := o.op["security"]
	if !ok {
		sec = im.root["security"]
	}
	reqs, _ := sec.([]any)
	for _, r := range reqs {
		m, _ := r.(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(m)) {
			s, ok := im.schemes[name]
			if !ok {
				continue
			}
			a := &capability.HTTPAuth{Type: authKind(s), Env: im.envs[name], Extra: map[string]any{"x-scheme": name}}
			if a.Type == "api_key" {
				a.Location, a.ParamName = str(s["in"]), str(s["name"])
			} else {
				a.Location, a.ParamName = "header", "Authorization"
			}
			if scopes := stringList(m[name]); len(scopes) > 0 {
				sc := make([]any, len(scopes))
				for i, x := range scopes {
					sc[i] = x
				}
				a.Extra["x-scopes"] = sc
			}
			return a, map[string]any{"auth_type": a.Type, "auth_location": a.Location, "auth_param_name": a.ParamName}
		}
	}
	return nil, nil
}
