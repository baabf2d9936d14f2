package httpbind

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/permit"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/internal/bindutil"
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
	secret, err := b.authSecret(a, typ)
	if err != nil {
		return nil, err
	}
	loc := strings.ToLower(strings.TrimSpace(a.Location))
	switch typ {
	case AuthAPIKey:
		return apiKeyAuth(a, loc, secret, r, query)
	case AuthBasic:
		return query, basicAuth(a, secret, r)
	default:
		return bearerAuth(a, typ, loc, secret, r, query)
	}
}

// authSecret reads the secret of a's auth of type typ from the environment
// variable it names.
func (b *Binding) authSecret(a *capability.HTTPAuth, typ string) (string, error) {
	if strings.TrimSpace(a.Env) == "" {
		return "", fmt.Errorf("http binding: auth %s has no env: set bindings.http.auth.env to the name of the environment variable that holds the secret", typ)
	}
	secret, ok := b.getenv(a.Env)
	if !ok || secret == "" {
		e := bindutil.NoBinding(Kind, map[string]any{"env": a.Env},
			"environment variable %s (the secret of this capability's %s auth) is not available (unset, empty, or not allowed): %s", a.Env, typ, permit.EnvHint(a.Env))
		e.Cause = fmt.Errorf("%w: %s", ErrMissingSecret, a.Env)
		return "", e
	}
	if strings.ContainsAny(secret, "\r\n\x00") {
		return "", fmt.Errorf("http binding: the value of environment variable %s (%s auth) contains CR, LF or NUL: fix the secret", a.Env, typ)
	}
	return secret, nil
}

// apiKeyAuth puts the key in the header or query parameter param_name.
func apiKeyAuth(a *capability.HTTPAuth, loc, secret string, r *request, query []string) ([]string, error) {
	if a.ParamName == "" {
		return nil, fmt.Errorf("http binding: api_key auth has no param_name: set bindings.http.auth.param_name to the header or query parameter that carries the key")
	}
	switch loc {
	case "", "header":
		if !isToken(a.ParamName) {
			return nil, fmt.Errorf("http binding: api_key auth param_name %q is not a valid header name", a.ParamName)
		}
		r.setSecretHeader(a.ParamName, secret)
	case "query":
		query = append(query, url.QueryEscape(a.ParamName)+"="+url.QueryEscape(secret))
	default:
		return nil, fmt.Errorf("http binding: api_key auth location %q is not supported: use header or query", a.Location)
	}
	return query, nil
}

// bearerAuth sends the token (bearer and oauth2 auth) as "Bearer TOKEN" in
// the Authorization header or as the access_token query parameter, or
// under param_name.
func bearerAuth(a *capability.HTTPAuth, typ, loc, secret string, r *request, query []string) ([]string, error) {
	switch loc {
	case "", "header":
		name := cmp.Or(a.ParamName, "Authorization")
		if !isToken(name) {
			return nil, fmt.Errorf("http binding: %s auth param_name %q is not a valid header name", typ, name)
		}
		r.setSecretHeader(name, "Bearer "+secret)
	case "query":
		name := cmp.Or(a.ParamName, "access_token")
		query = append(query, url.QueryEscape(name)+"="+url.QueryEscape(secret))
	default:
		return nil, fmt.Errorf("http binding: %s auth location %q is not supported: use header or query", typ, a.Location)
	}
	return query, nil
}

// basicAuth sends user:password in the Authorization header.
func basicAuth(a *capability.HTTPAuth, secret string, r *request) error {
	if !strings.Contains(secret, ":") {
		return &invoke.Error{Code: invoke.CodeNoBinding, Binding: Kind,
			Message: fmt.Sprintf("environment variable %s (basic auth) must hold user:password, and it has no ':': set it as user:password", a.Env)}
	}
	r.setSecretHeader("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(secret)))
	return nil
}

// setSecretHeader sets a header that carries a secret, remembering it so
// that a redirect to another host drops it.
func (r *request) setSecretHeader(name, value string) {
	r.header.Set(name, value)
	r.secretHeader = name
}
