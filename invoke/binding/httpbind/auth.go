package httpbind

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/permit"
)

// Auth types of an http binding.
const (
	AuthAPIKey = "api_key"
	AuthBearer = "bearer"
	AuthBasic  = "basic"
	AuthOAuth2 = "oauth2"
)

// auth adds the binding's credentials to r (a header) or to query (a
// parameter), reading the secret from the environment at call time.
func (b *Binding) auth(a *capability.HTTPAuth, r *request, query []string) ([]string, error) {
	if a == nil {
		return query, nil
	}
	typ := strings.ToLower(strings.TrimSpace(a.Type))
	if typ == "" || typ == "none" {
		return query, nil
	}
	switch typ {
	case AuthAPIKey, AuthBearer, AuthBasic, AuthOAuth2:
	default:
		return nil, fmt.Errorf("http binding: auth type %q is not supported: use api_key, bearer, basic or oauth2 in bindings.http.auth.type", a.Type)
	}
	if strings.TrimSpace(a.Env) == "" {
		return nil, fmt.Errorf("http binding: auth %s has no env: set bindings.http.auth.env to the name of the environment variable that holds the secret", typ)
	}
	secret, ok := b.getenv(a.Env)
	if !ok || secret == "" {
		e := noBinding(map[string]any{"env": a.Env},
			"environment variable %s (the secret of this capability's %s auth) is not available (unset, empty, or not allowed): %s", a.Env, typ, permit.EnvHint(a.Env))
		e.Cause = fmt.Errorf("%w: %s", ErrMissingSecret, a.Env)
		return nil, e
	}
	if strings.ContainsAny(secret, "\r\n\x00") {
		return nil, fmt.Errorf("http binding: the value of environment variable %s (%s auth) contains CR, LF or NUL: fix the secret", a.Env, typ)
	}
	loc := strings.ToLower(strings.TrimSpace(a.Location))
	switch typ {
	case AuthAPIKey:
		if a.ParamName == "" {
			return nil, fmt.Errorf("http binding: api_key auth has no param_name: set bindings.http.auth.param_name to the header or query parameter that carries the key")
		}
		switch loc {
		case "", "header":
			if !isToken(a.ParamName) {
				return nil, fmt.Errorf("http binding: api_key auth param_name %q is not a valid header name", a.ParamName)
			}
			r.header.Set(a.ParamName, secret)
			r.secretHeader = a.ParamName
		case "query":
			query = append(query, url.QueryEscape(a.ParamName)+"="+url.QueryEscape(secret))
		default:
			return nil, fmt.Errorf("http binding: api_key auth location %q is not supported: use header or query", a.Location)
		}
	case AuthBearer, AuthOAuth2:
		switch loc {
		case "", "header":
			name := a.ParamName
			if name == "" {
				name = "Authorization"
			}
			if !isToken(name) {
				return nil, fmt.Errorf("http binding: %s auth param_name %q is not a valid header name", typ, name)
			}
			r.header.Set(name, "Bearer "+secret)
			r.secretHeader = name
		case "query":
			name := a.ParamName
			if name == "" {
				name = "access_token"
			}
			query = append(query, url.QueryEscape(name)+"="+url.QueryEscape(secret))
		default:
			return nil, fmt.Errorf("http binding: %s auth location %q is not supported: use header or query", typ, a.Location)
		}
	case AuthBasic:
		if !strings.Contains(secret, ":") {
			return nil, &invoke.Error{Code: invoke.CodeNoBinding, Binding: Kind,
				Message: fmt.Sprintf("environment variable %s (basic auth) must hold user:password, and it has no ':': set it as user:password", a.Env)}
		}
		r.header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(secret)))
		r.secretHeader = "Authorization"
	}
	return query, nil
}
