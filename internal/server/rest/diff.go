package rest

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// diffResponse is the diff of two versions of one capability: the same
// report `caphub capability diff --format json` prints for a capability.
type diffResponse struct {
	Capability string `json:"capability"`
	*capability.DiffReport
}

// diff compares two registered versions of a capability (from= and to=,
// each MAJOR, MAJOR.MINOR or full) with capability.Diff: every change
// classified major, minor or patch with its reason, the bump they need and
// the one the versions declare.
func (s *Server) diff(w http.ResponseWriter, r *http.Request) error {
	domain, name := r.PathValue("domain"), r.PathValue("name")
	if strings.Contains(name, "@") {
		return badRequest(fmt.Sprintf("%s/%s/diff: name the versions in from= and to=, not in the path (e.g. /registry/capabilities/%s/%s/diff?from=1.0.0&to=2.0.0)",
			domain, name, domain, strings.SplitN(name, "@", 2)[0]))
	}
	q := r.URL.Query()
	from, to := q.Get("from"), q.Get("to")
	if from == "" || to == "" {
		return badRequest(fmt.Sprintf("from=%q to=%q: give both versions to compare, each MAJOR, MAJOR.MINOR or full (e.g. ?from=1.0.0&to=2.0.0)", from, to))
	}
	for _, v := range []string{from, to} {
		if _, err := capability.ParseVersion(v); err != nil {
			return badRequest(fmt.Sprintf("version %q: %v (use MAJOR, MAJOR.MINOR or a full semantic version)", v, err))
		}
	}
	for _, scheme := range schemes(r) {
		old, err := s.svc.Get(r.Context(), scheme, domain, name, from)
		if errors.Is(err, registry.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		cur, err := s.svc.Get(r.Context(), scheme, domain, name, to)
		if err != nil {
			if errors.Is(err, registry.ErrNotFound) {
				return fmt.Errorf("capability %s/%s@%s is not registered (to=): %w", domain, name, to, registry.ErrNotFound)
			}
			return err
		}
		base := scheme + ":" + domain + "/" + name
		if u, err := capability.ParseURI(cur.Definition.URI); err == nil {
			base = u.Base()
		}
		writeJSON(w, http.StatusOK, diffResponse{Capability: base, DiffReport: capability.Diff(&old.Definition, &cur.Definition)}, s.log)
		return nil
	}
	return fmt.Errorf("capability %s/%s@%s is not registered (from=): %w", domain, name, from, registry.ErrNotFound)
}
