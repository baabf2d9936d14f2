package rest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/internal/problem"
	"github.com/caphub/caphub/registry"
)

// Problem is an RFC 9457 problem document, with caphub's extension members
// for validation issues and breaking changes.
type Problem struct {
	Type     string              `json:"type"`
	Title    string              `json:"title"`
	Status   int                 `json:"status"`
	Detail   string              `json:"detail,omitempty"`
	Instance string              `json:"instance,omitempty"`
	Issues   []capability.Issue  `json:"issues,omitempty"`
	Changes  []capability.Change `json:"changes,omitempty"`
	Required string              `json:"required_bump,omitempty"`
	Declared string              `json:"declared_bump,omitempty"`
	// Sunset details, for 410 Gone.
	DeprecatedBy   string `json:"deprecated_by,omitempty"`
	MigrationGuide string `json:"migration_guide,omitempty"`
	// Failures of a batch registration, one problem per refused definition.
	Failures []BatchFailure `json:"failures,omitempty"`
	// Invocation failures: the error code (declared by the capability or
	// caphub's own), whether a retry may succeed, the binding, and details
	// such as every attempt.
	Code      string         `json:"code,omitempty"`
	Retryable bool           `json:"retryable,omitempty"`
	Binding   string         `json:"binding,omitempty"`
	Details   map[string]any `json:"details,omitempty"`
	// Partial is what an agent's capabilities compose to when some cannot
	// be applied (GET /v1/agents/{id}/config answering 422): for showing
	// the agent, never for running it.
	Partial *agent.AgentConfig `json:"partial,omitempty"`
}

// BatchFailure is one refused definition of a batch registration.
type BatchFailure struct {
	Index   int      `json:"index"`
	URI     string   `json:"uri,omitempty"`
	Problem *Problem `json:"problem"`
}

// problemFor maps an error to its problem document: the one place where
// domain errors become HTTP statuses.
func problemFor(err error) *Problem {
	if p := invokeProblem(err); p != nil {
		return p
	}
	var (
		ve *capability.ValidationError
		be *registry.BreakingChangeError
		ba *registry.BatchError
		ce *registry.ConflictError
		te *registry.ToolNameConflictError
		se *registry.SunsetError
		re *requestError
		ue *discover.UpstreamError
		ae *agentIssueError
		sc *scopeError
		st *statusError
	)
	switch {
	case errors.As(err, &ba):
		return batchProblem(err, ba)
	case errors.As(err, &sc):
		return &Problem{Type: problem.Base + "insufficient-scope", Title: "The token lacks the scope this request needs", Status: http.StatusForbidden, Detail: err.Error()}
	case errors.As(err, &ae):
		return &Problem{Type: problem.Base + "invalid-agent", Title: "The agent's manifest or capabilities cannot be applied", Status: http.StatusUnprocessableEntity, Detail: err.Error(), Issues: ae.ve.Issues, Partial: ae.partial}
	case errors.As(err, &ve):
		return &Problem{Type: problem.Base + "invalid-definition", Title: "The capability definition is invalid", Status: http.StatusUnprocessableEntity, Detail: err.Error(), Issues: ve.Issues}
	case errors.As(err, &be):
		return &Problem{Type: problem.Base + "version-bump-too-small", Title: "The version bump is smaller than the changes need", Status: http.StatusUnprocessableEntity,
			Detail: err.Error(), Changes: be.Report.Changes, Required: be.Report.Required.String(), Declared: be.Report.Declared.String()}
	case errors.As(err, &ce):
		return &Problem{Type: problem.Base + "version-conflict", Title: "This version is already registered with other content", Status: http.StatusConflict, Detail: err.Error()}
	case errors.As(err, &te):
		return &Problem{Type: problem.Base + "tool-name-taken", Title: "The capability would take another capability's MCP tool name", Status: http.StatusConflict, Detail: err.Error()}
	case errors.As(err, &se):
		return &Problem{Type: problem.Base + "sunset", Title: "The capability version is past its sunset date", Status: http.StatusGone, Detail: err.Error(), DeprecatedBy: se.DeprecatedBy, MigrationGuide: se.MigrationGuide}
	case errors.As(err, &re):
		return &Problem{Type: problem.Base + "bad-request", Title: "The request is malformed", Status: http.StatusBadRequest, Detail: re.msg, Issues: re.issues}
	case errors.As(err, &st):
		return &Problem{Type: problem.Base + "job-refused", Title: st.title, Status: st.status, Detail: st.detail}
	case errors.As(err, &ue):
		return &Problem{Type: problem.Base + "upstream-failed", Title: "The upstream server failed", Status: http.StatusBadGateway, Detail: err.Error()}
	}
	return sentinelProblem(err)
}

// batchProblem lists one problem per refused definition of a batch; the
// batch is a conflict when one of them is.
func batchProblem(err error, ba *registry.BatchError) *Problem {
	p := &Problem{Type: problem.Base + "batch-refused", Title: "Some definitions were refused; nothing was registered", Status: http.StatusUnprocessableEntity, Detail: err.Error()}
	for _, f := range ba.Failures {
		sub := problemFor(f.Err)
		p.Failures = append(p.Failures, BatchFailure{Index: f.Index, URI: f.URI, Problem: sub})
		if sub.Status == http.StatusConflict {
			p.Status = http.StatusConflict
		}
	}
	return p
}

// sentinelProblem maps the errors known by identity; anything else is an
// internal error, whose details stay in the server log.
func sentinelProblem(err error) *Problem {
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return &Problem{Type: problem.Base + "not-found", Title: "Not found", Status: http.StatusNotFound, Detail: err.Error()}
	case errors.Is(err, registry.ErrInvalid), errors.Is(err, registry.ErrInvalidCursor):
		return &Problem{Type: problem.Base + "invalid-request", Title: "The request is invalid", Status: http.StatusBadRequest, Detail: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return &Problem{Type: problem.Base + "timeout", Title: "The request timed out", Status: http.StatusServiceUnavailable, Detail: "the registry did not answer in time: retry"}
	}
	return &Problem{Type: problem.Base + "internal", Title: "Internal error", Status: http.StatusInternalServerError, Detail: "the registry failed to answer; the server log has the details"}
}

// requestError is a malformed request (unreadable body, bad parameter).
type requestError struct {
	msg    string
	issues []capability.Issue
}

func (e *requestError) Error() string { return e.msg }

func badRequest(msg string) error { return &requestError{msg: msg} }

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p := problemFor(err)
	p.Instance = r.URL.Path
	if p.Status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else {
		s.log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "status", p.Status, "err", err)
	}
	s.writeProblem(w, p)
}

// writeProblem writes a problem document as the response.
func (s *Server) writeProblem(w http.ResponseWriter, p *Problem) {
	if err := problem.Write(w, p.Status, p); err != nil {
		s.log.Debug("write problem", "err", err)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any, log *slog.Logger) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		log.Debug("write response", "err", err)
	}
}
