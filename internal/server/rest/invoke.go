package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/internal/problem"
	"github.com/caphub/caphub/invoke"
)

// Invoker runs capabilities (invoke.Pipeline is one).
type Invoker interface {
	Invoke(ctx context.Context, req invoke.Request) (*invoke.Result, error)
}

// WithInvoker adds POST /v1/invoke.
func WithInvoker(inv Invoker) Option { return func(s *Server) { s.invoker = inv } }

// WithMetrics serves h on /metrics.
func WithMetrics(h http.Handler) Option { return func(s *Server) { s.metrics = h } }

func (s *Server) invokeRoutes() []route {
	var out []route
	if s.invoker != nil {
		out = append(out, route{method: "POST", path: "/v1/invoke", scope: auth.ScopeInvoke, summary: "Invoke a capability: {uri, input} → {output, binding, attempts, duration_ms, warnings}",
			body: "{uri, input, lenient?, approval_id?} (approval_id: retry a call that was approved, as the X-Caphub-Approval header does)", handler: s.invoke,
			responses: map[int]string{200: "result", 202: "held for a human's approval (details.approval_id; the same call again gives the same pending approval)", 404: "not found", 422: "invalid input or a declared error",
				429: "the caller has the most pending approvals allowed: decide some or wait for them to expire", 502: "the upstream failed", 504: "timeout"}})
	}
	if s.metrics != nil {
		out = append(out, route{method: "GET", path: "/metrics", scope: auth.ScopeRead, summary: "Prometheus metrics", handler: func(w http.ResponseWriter, r *http.Request) error {
			s.metrics.ServeHTTP(w, r)
			return nil
		}, responses: map[int]string{200: "metrics in the Prometheus text format"}})
	}
	return out
}

// InvokeRequest is the body of POST /v1/invoke: the call, and the approval
// it is retried with (as the X-Caphub-Approval header names it; the body
// serves a client such as the web UI that sends no headers of its own).
type InvokeRequest struct {
	invoke.Request
	ApprovalID string `json:"approval_id,omitempty"`
}

func (s *Server) invoke(w http.ResponseWriter, r *http.Request) error {
	var req InvokeRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.URI == "" {
		return badRequest("give the capability to invoke: {\"uri\": \"ossa:domain/name@1.0\", \"input\": {...}}")
	}
	ctx := r.Context()
	if req.ApprovalID != "" {
		if h := r.Header.Get(ApprovalHeader); h != "" && h != req.ApprovalID {
			return badRequest(fmt.Sprintf("the body's approval_id %q and the %s header %q differ: send one", req.ApprovalID, ApprovalHeader, h))
		}
		ctx = identity.WithApproval(ctx, req.ApprovalID)
	}
	res, err := s.invoker.Invoke(ctx, req.Request)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res, s.log)
	return nil
}

// invokeProblem maps an invocation error to its problem document.
func invokeProblem(err error) *Problem {
	var e *invoke.Error
	if !errors.As(err, &e) {
		return nil
	}
	status := invoke.HTTPStatus(e.Code)
	return &Problem{Type: problem.Base + "invocation-failed", Title: "The invocation failed: " + e.Code, Status: status, Detail: e.Error(),
		Code: e.Code, Retryable: e.Retryable, Binding: e.Binding, Details: e.Details}
}
