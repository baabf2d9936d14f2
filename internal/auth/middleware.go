package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/problem"
)

type tokenKey struct{}

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
// (FromContext) and the caller (identity.Caller) it authenticates: the
// agent it acts as (see callerOf), its actor ("token:NAME") as the actor of
// changes and the credential. Refusals are RFC 9457 problem documents.
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
		caller, err := callerOf(r, tok)
		if err != nil {
			writeProblem(w, r, http.StatusForbidden, "forbidden-agent", "The token may not act as this agent", err.Error(), "")
			return
		}
		if sid := sessionOf(r); sid != "" && !t.sessions.owner(sid, tok.ID) {
			writeProblem(w, r, http.StatusForbidden, "forbidden-session", "The MCP session belongs to another token",
				fmt.Sprintf("session %s was opened with another token: a session is used by the token that opened it only; open your own with initialize", sid), "")
			return
		}
		ctx := r.Context()
		if under(r.URL.Path, "/mcp") {
			// MCP requests may be streams that outlive the token: known by
			// token, so that Supervise can end them. REST requests end
			// within their time budget.
			var done func()
			ctx, done = t.sessions.track(ctx, tok.ID)
			defer done()
		}
		actor := Actor(tok)
		ctx = identity.With(context.WithValue(ctx, tokenKey{}, tok), identity.Caller{Agent: caller, Actor: actor, Credential: actor})
		r = r.WithContext(ctx)
		if under(r.URL.Path, "/mcp") && sessionOf(r) == "" {
			w = &sessionWriter{ResponseWriter: w, s: t.sessions, token: tok.ID, sse: r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/sse")}
		}
		next.ServeHTTP(w, r)
	})
}

// callerOf is the identity a request acts as: the agent its token is bound
// to, else the token itself ("token:NAME"). Acting as another agent (the
// X-Caphub-Agent header, or the agent endpoint /mcp/agents/{id}) needs a
// token bound to that agent, or the admin scope.
func callerOf(r *http.Request, tok *Token) (string, error) {
	admin := tok.Has(ScopeAdmin)
	if id, ok := agentOfPath(r.URL.Path); ok && !admin && id != tok.Agent {
		return "", fmt.Errorf("%s %s acts as agent %q, and token %s (%s) %s: use a token bound to that agent (`caphub token create NAME --scope invoke --agent %s`) or one with the admin scope", r.Method, r.URL.Path, id, tok.ID, tok.Name, boundTo(tok), id)
	}
	claimed := r.Header.Get(identity.Header)
	switch {
	case claimed == "" && tok.Agent != "":
		return tok.Agent, nil
	case claimed == "", claimed == Actor(tok):
		return Actor(tok), nil
	case claimed == tok.Agent, admin:
		return claimed, nil
	}
	return "", fmt.Errorf("the request claims agent %q (%s), and token %s (%s) %s: only a token bound to that agent (`caphub token create NAME --scope invoke --agent %s`) or one with the admin scope may act as it", claimed, identity.Header, tok.ID, tok.Name, boundTo(tok), claimed)
}

func boundTo(tok *Token) string {
	if tok.Agent == "" {
		return "is bound to no agent"
	}
	return fmt.Sprintf("is bound to agent %q", tok.Agent)
}

// agentOfPath returns the agent ID of an agent endpoint path
// (/mcp/agents/{id}).
func agentOfPath(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/mcp/agents/")
	if !ok {
		return "", false
	}
	id, _, _ := strings.Cut(rest, "/")
	return id, true
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

func writeProblem(w http.ResponseWriter, r *http.Request, status int, typ, title, detail, scope string) {
	_ = problem.Write(w, status, &problem.Document{Type: problem.Base + typ, Title: title, Status: status, Detail: detail, Instance: r.URL.Path, RequiredScope: scope})
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
