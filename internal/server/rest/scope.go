package rest

import (
	"fmt"
	"net/http"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/auth"
)

// scopeError refuses a request whose token lacks a scope that its content,
// not its route, needs (a program to start needs admin).
type scopeError struct{ scope, detail string }

func (e *scopeError) Error() string { return e.detail }

// requireAdmin refuses, unless the caller holds the admin scope, a request
// that would let caphub start a program: what makes that happen is the
// operator's decision, which a publish token does not carry.
func requireAdmin(r *http.Request, what string) error {
	if auth.Grants(r.Context(), auth.ScopeAdmin) {
		return nil
	}
	return &scopeError{scope: string(auth.ScopeAdmin), detail: fmt.Sprintf("%s: saving what makes caphub start a program needs a token with the admin scope (`caphub token create NAME --scope admin`), and the program must be allowed by the operator (caphub serve --allow-command)", what)}
}

// spawnsProgram names the first binding of defs that would start a program
// (a cli binding), or "".
func spawnsProgram(defs []capability.Definition) string {
	for _, d := range defs {
		if d.Bindings.CLI != nil {
			return fmt.Sprintf("%s has a cli binding (%s)", d.URI, d.Bindings.CLI.Command)
		}
	}
	return ""
}
