package rest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/ossa"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/registry/jobs"
)

// MaxJobBodySize bounds the document of a registration job: it is spooled
// to a temporary file and read a chunk at a time, so it may be much larger
// than MaxBodySize.
const MaxJobBodySize = 1 << 30

// SyncBodySize is the largest body POST /registry/capabilities registers
// while the client waits: a larger one is registered as a job (202 with
// the job's URL), as POST /registry/jobs does.
const SyncBodySize = 4 << 20

func (s *Server) jobRoutes() []route {
	id := []param{{name: "id", in: "path", required: true, desc: "job id"}}
	return []route{
		{method: "POST", path: "/registry/jobs", scope: auth.ScopePublish, summary: "Register many definitions as a background job: answers 202 at once with the job's URL (Location); each definition is registered on its own in effect (the refused ones are listed, the others registered), " + fmt.Sprint(registry.ImportChunk) + " a transaction. A JSON {\"capabilities\": [...]} document is read a chunk at a time (up to 1 GiB); other documents whole (as POST /registry/capabilities)", body: "OSSA capability document", yaml: true, handler: s.postJob,
			responses: map[int]string{202: "the job's status; Location is its URL", 400: "unreadable document", 413: "too large"}},
		{method: "GET", path: "/registry/jobs/{id}", scope: auth.ScopeRead, summary: "A registration job's status: running, done, failed or cancelled; total, done, registered, unchanged, failed, rate (per second), eta_seconds, the first failures", params: id, handler: s.getJob,
			responses: map[int]string{200: "status", 404: "no such job"}},
		{method: "GET", path: "/registry/jobs/{id}/results", scope: auth.ScopeRead, summary: "A registration job's results so far: one per registered definition, and every failure (kept for an hour by the server that ran it)", params: id, handler: s.getJobResults,
			responses: map[int]string{200: "status, results and failures", 404: "no such job", 410: "the results are no longer held"}},
		{method: "DELETE", path: "/registry/jobs/{id}", scope: auth.ScopePublish, summary: "Cancel a running registration job after its current chunk (what it registered stays registered)", params: id, handler: s.cancelJob,
			responses: map[int]string{200: "the job's status once stopped", 404: "no such job", 409: "the job runs on another replica"}},
	}
}

// jobAnswer is the body of a job's results.
type jobAnswer struct {
	jobs.Status
	Items    []jobs.Outcome             `json:"items"`
	Failures []capability.ImportFailure `json:"failures,omitempty"`
}

func (s *Server) postJob(w http.ResponseWriter, r *http.Request) error {
	return s.startJob(w, r, r.Body)
}

// startJob spools body (the request's, or what of it was read already
// followed by the rest) to a temporary file and starts the job that
// registers it, answering 202 with its status.
func (s *Server) startJob(w http.ResponseWriter, r *http.Request, body io.Reader) error {
	f, err := os.CreateTemp("", "caphub-job-*.json")
	if err != nil {
		return fmt.Errorf("spool the registration job's document: %w", err)
	}
	cleanup := func() { f.Close(); os.Remove(f.Name()) }
	n, err := io.Copy(f, http.MaxBytesReader(nil, io.NopCloser(body), MaxJobBodySize))
	if err != nil {
		cleanup()
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &statusError{title: "Document too large", status: http.StatusRequestEntityTooLarge,
				detail: fmt.Sprintf("a registration job's document may have at most %d bytes: split it into several jobs", MaxJobBodySize)}
		}
		return badRequest(fmt.Sprintf("cannot read the request body: %v", err))
	}
	src, total, err := s.jobSource(r, f, n)
	if err != nil {
		cleanup()
		return err
	}
	actor := identity.From(r.Context()).Actor
	st, err := s.jobs.Start(r.Context(), total, actor, src, cleanup)
	if err != nil {
		cleanup()
		return err
	}
	w.Header().Set("Location", "/registry/jobs/"+st.ID)
	writeJSON(w, http.StatusAccepted, st, s.log)
	return nil
}

// jobSource reads the spooled document f of size bytes: a JSON
// capabilities list is streamed a chunk at a time; another document is
// read whole, when it is no larger than MaxBodySize.
func (s *Server) jobSource(r *http.Request, f *os.File, size int64) (jobs.Source, int, error) {
	admin := auth.Grants(r.Context(), auth.ScopeAdmin)
	rewind := func() error { _, err := f.Seek(0, io.SeekStart); return err }
	if err := rewind(); err != nil {
		return nil, 0, err
	}
	total, err := ossa.Count(f)
	if err == nil {
		src := func(fn func([]capability.Definition, []capability.ImportFailure) error) error {
			if err := rewind(); err != nil {
				return err
			}
			return ossa.Stream("request body", f, registry.ImportChunk, func(defs []capability.Definition, failed []capability.ImportFailure, _ int) error {
				defs, refused := allowedDefinitions(defs, admin)
				return fn(defs, append(failed, refused...))
			})
		}
		return src, total, nil
	}
	if !errors.Is(err, ossa.ErrNotStreamable) {
		return nil, 0, badRequest(err.Error())
	}
	if size > MaxBodySize {
		return nil, 0, &statusError{title: "Document too large to read whole", status: http.StatusRequestEntityTooLarge,
			detail: fmt.Sprintf("the document has %d bytes; one that is not a JSON {\"capabilities\": [...]} document (YAML, or with file-level definitions) is read whole and may have at most %d: send it as JSON with the capabilities list as its only member, or split it", size, MaxBodySize)}
	}
	if err := rewind(); err != nil {
		return nil, 0, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, err
	}
	file, err := ossa.Read("request body", data)
	if err != nil {
		return nil, 0, badRequest(err.Error())
	}
	if len(file.Issues) > 0 {
		return nil, 0, &capability.ValidationError{Issues: file.Validate()}
	}
	defs := file.Definitions()
	src := func(fn func([]capability.Definition, []capability.ImportFailure) error) error {
		for len(defs) > 0 {
			n := min(len(defs), registry.ImportChunk)
			chunk, refused := allowedDefinitions(defs[:n], admin)
			if err := fn(chunk, refused); err != nil {
				return err
			}
			defs = defs[n:]
		}
		return nil
	}
	return src, len(defs), nil
}

// allowedDefinitions leaves out, as failures, the definitions whose
// bindings would start a program unless the caller is an admin (as
// POST /registry/capabilities refuses them).
func allowedDefinitions(defs []capability.Definition, admin bool) ([]capability.Definition, []capability.ImportFailure) {
	if admin {
		return defs, nil
	}
	var out []capability.Definition
	var refused []capability.ImportFailure
	for _, d := range defs {
		if what := spawnsProgram([]capability.Definition{d}); what != "" {
			refused = append(refused, capability.ImportFailure{Item: d.URI, Reason: what + ": saving what makes caphub start a program needs a token with the admin scope"})
			continue
		}
		out = append(out, d)
	}
	return out, refused
}

// registerLarge turns a POST /registry/capabilities whose body is larger
// than SyncBodySize into a job; ok is false when the body is small enough
// to register while the client waits (then body is all of it).
func (s *Server) registerLarge(w http.ResponseWriter, r *http.Request) (body []byte, ok bool, err error) {
	if r.ContentLength >= 0 && r.ContentLength <= SyncBodySize {
		return nil, false, nil
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, SyncBodySize+1))
	if err != nil {
		return nil, false, badRequest(fmt.Sprintf("cannot read the request body: %v", err))
	}
	if len(head) <= SyncBodySize {
		return head, false, nil
	}
	return nil, true, s.startJob(w, r, io.MultiReader(bytes.NewReader(head), r.Body))
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) error {
	st, err := s.jobs.Status(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st, s.log)
	return nil
}

func (s *Server) getJobResults(w http.ResponseWriter, r *http.Request) error {
	items, failures, st, err := s.jobs.Results(r.Context(), r.PathValue("id"))
	if errors.Is(err, jobs.ErrNoResults) {
		return &statusError{title: "The job's results are no longer held", status: http.StatusGone, detail: err.Error()}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, jobAnswer{Status: st, Items: items, Failures: failures}, s.log)
	return nil
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) error {
	st, err := s.jobs.Cancel(r.Context(), r.PathValue("id"))
	if errors.Is(err, jobs.ErrElsewhere) {
		return &statusError{title: "The job runs on another replica", status: http.StatusConflict, detail: err.Error()}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st, s.log)
	return nil
}

// statusError is a refusal of the job endpoints with its own status.
type statusError struct {
	status        int
	title, detail string
}

func (e *statusError) Error() string { return e.detail }
