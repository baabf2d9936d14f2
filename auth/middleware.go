package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
)

// AgentHeader is the header caphub's REST server reads the acting agent
// from. The middleware overwrites it with the token's actor, so a client
// cannot claim another identity and the audit chain names the token.
const AgentHeader = invoke.CallerHeader

type tokenKey struct{}

// WithToken returns a context carrying an authenticated token.
func WithToken(ctx context.Context, t *Token) context.Context {
	return context.WithValue(ctx, tokenKey{}, t)
}

// FromContext returns the token that authenticated the request, if any.
func FromContext(ctx context.Context) (*Token, bool) {
	t, ok := ctx.Value(tokenKey{}).(*Token)
	return t, ok && t != nil
}

// Actor is the actor name recorded for changes made with a token.
func Actor(t *Token) string { return "token:" + t.Name }

// Middleware authenticates every request that required does not call
// public: it reads Authorization: Bearer <token>, answers 401 when the
// token is missing or invalid and 403 when it lacks the scope required
// names, and otherwise calls next with the token in the context
// (FromContext) and its actor ("token:NAME") set with registry.WithActor
// and in the X-Caphub-Agent header. Refusals are RFC 9457 problem documents.
func (t *Tokens) Middleware(required func(r *http.Request) (scope string, public bool), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scope, public := required(r)
		if public {
			next.ServeHTTP(w, r)
			return
		}
		bearer, err := bearerOf(r)
		if err != nil {
			unauthorized(w, r, err)
			return
		}
		tok, err := t.Authenticate(r.Context(), bearer)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				writeProblem(w, r, http.StatusInternalServerError, "internal", "Internal error", "caphub could not check the token: the store failed; retry, and see the server log if it persists", "")
				return
			}
			unauthorized(w, r, err)
			return
		}
		if !tok.Has(Scope(scope)) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="caphub", error="insufficient_scope", scope=%q`, scope))
			writeProblem(w, r, http.StatusForbidden, "insufficient-scope", "The token lacks the scope this endpoint needs",
				fmt.Sprintf("%s %s needs scope %q; token %s (%s) has %s: create a token with `caphub token create NAME --scope %s`", r.Method, r.URL.Path, scope, tok.ID, tok.Name, scopeList(tok.Scopes), scope), scope)
			return
		}
		actor := Actor(tok)
		ctx := registry.WithActor(WithToken(r.Context(), tok), actor)
		r = r.WithContext(ctx)
		r.Header = r.Header.Clone() // the caller's request stays as it was
		r.Header.Set(AgentHeader, actor)
		next.ServeHTTP(w, r)
	})
}

func bearerOf(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", ErrMissing
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("the Authorization header must be `Bearer <token>`: %w", ErrMissing)
	}
	return strings.TrimSpace(tok), nil
}

func unauthorized(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ErrMissing) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="caphub"`)
	} else {
		w.Header().Set("WWW-Authenticate", `Bearer realm="caphub", error="invalid_token"`)
	}
	writeProblem(w, r, http.StatusUnauthorized, "unauthenticated", "Authentication required",
		err.Error()+"; create a token with `caphub token create NAME --scope read` on the server's machine", "")
}

// problem is an RFC 9457 problem document, shaped like the REST server's.
type problem struct {
	Type          string `json:"type"`
	Title         string `json:"title"`
	Status        int    `json:"status"`
	Detail        string `json:"detail,omitempty"`
	Instance      string `json:"instance,omitempty"`
	RequiredScope string `json:"required_scope,omitempty"`
}

func writeProblem(w http.ResponseWriter, r *http.Request, status int, typ, title, detail, scope string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(problem{Type: "https://caphub.dev/problems/" + typ, Title: title, Status: status, Detail: detail, Instance: r.URL.Path, RequiredScope: scope})
}

func scopeList(s []Scope) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = string(x)
	}
	return strings.Join(parts, ", ")
}

// Grants reports whether the request's caller holds scope: true when no
// token authenticated the request (caphub serves openly on loopback, with
// no token configured), else whether the token has the scope.
func Grants(ctx context.Context, scope Scope) bool {
	t, ok := FromContext(ctx)
	return !ok || t.Has(scope)
}
