package rest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/caphub/caphub/internal/problem"
)

// DefaultRequestTimeout is the time budget of a REST request unless
// WithRequestTimeout sets another: long enough for an invocation with its
// retries, short enough that a slow request cannot hold the server's
// resources for minutes.
const DefaultRequestTimeout = 60 * time.Second

// budgetWriteGrace is how long past the budget the answer may take to be
// written (the budget problem itself, or a slow client reading a page).
const budgetWriteGrace = 10 * time.Second

// WithRequestTimeout sets the time budget of every request (default
// DefaultRequestTimeout; 0 or less turns it off). Past it the request's
// context is cancelled and the client gets a 503 problem naming the budget.
// The MCP endpoints, whose streams live long, are not served here.
func WithRequestTimeout(d time.Duration) Option {
	return func(s *Server) { s.budget = d }
}

// withinBudget serves r with h under the time budget: h runs with a context
// cancelled when the budget is spent, writing into a buffer; if it has not
// answered by then (or answered with a failure the cancellation caused),
// the client gets the budget problem instead, and what h writes later is
// dropped. A panic in h is re-raised here, as net/http expects.
func (s *Server) withinBudget(w http.ResponseWriter, r *http.Request, h http.Handler) {
	if s.budget <= 0 {
		h.ServeHTTP(w, r)
		return
	}
	ctx, cancel := s.budgetContext(w, r)
	defer cancel()
	bw := &budgetWriter{header: http.Header{}}
	done := make(chan struct{})
	panicked := make(chan any, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				panicked <- p
			}
		}()
		h.ServeHTTP(bw, r.WithContext(ctx))
		close(done)
	}()
	select {
	case p := <-panicked:
		panic(p)
	case <-done:
		if ctx.Err() == context.DeadlineExceeded && bw.code >= 500 {
			s.writeBudgetProblem(w, r, bw) // the failure is the budget's doing: say so
			return
		}
		dst := w.Header()
		for k, v := range bw.header {
			dst[k] = v
		}
		if bw.code == 0 {
			bw.code = http.StatusOK
		}
		w.WriteHeader(bw.code)
		_, _ = w.Write(bw.buf.Bytes())
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			s.writeBudgetProblem(w, r, bw)
		} else {
			bw.stop() // the client went away: nobody to answer
		}
	}
}

// budgetContext is r's context cancelled when the time budget is spent
// (r's own when there is no budget). The server's own WriteTimeout is
// moved past the budget, so that it cannot cut the answer short of it (or
// the budget problem).
func (s *Server) budgetContext(w http.ResponseWriter, r *http.Request) (context.Context, context.CancelFunc) {
	if s.budget <= 0 {
		return r.Context(), func() {}
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.budget + budgetWriteGrace))
	return context.WithTimeout(r.Context(), s.budget)
}

// writeBudgetProblem stops h's writes and answers 503 with the budget.
func (s *Server) writeBudgetProblem(w http.ResponseWriter, r *http.Request, bw *budgetWriter) {
	bw.stop()
	s.writeProblem(w, s.budgetProblem(r))
}

// budgetProblem is the 503 of a request that spent its time budget,
// logged.
func (s *Server) budgetProblem(r *http.Request) *Problem {
	p := &Problem{Type: problem.Base + "request-timeout", Title: "The request exceeded its time budget", Status: http.StatusServiceUnavailable, Instance: r.URL.Path,
		Detail: fmt.Sprintf("%s %s did not finish within the request time budget of %s and was cancelled: ask for less (a smaller limit, a narrower filter), retry later, or have the operator raise the budget (caphub serve --request-timeout)",
			r.Method, r.URL.Path, s.budget)}
	s.log.Warn("request exceeded its time budget", "method", r.Method, "path", r.URL.Path, "budget", s.budget)
	return p
}

// budgetWriter buffers a handler's answer until it is done; once stopped
// (the budget is spent), writes fail with http.ErrHandlerTimeout.
type budgetWriter struct {
	mu      sync.Mutex
	header  http.Header
	buf     bytes.Buffer
	code    int
	stopped bool
}

func (w *budgetWriter) Header() http.Header { return w.header }

func (w *budgetWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped && w.code == 0 {
		w.code = code
	}
}

func (w *budgetWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return 0, http.ErrHandlerTimeout
	}
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.buf.Write(p)
}

func (w *budgetWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}
