package rest

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/caphub/caphub/registry"
)

// ReadyCheck is one condition of readiness (GET /readyz): Check returns
// nil when it holds. Describe says, for anyone who may call /readyz, what
// failing means; the error itself goes to the log alone.
type ReadyCheck struct {
	Name     string
	Describe string
	Check    func(ctx context.Context) error
}

// readyTimeout bounds each check: a load balancer asks often and must get
// an answer even when the store hangs.
const readyTimeout = 2 * time.Second

// WithReadiness adds checks to /readyz, which without them asks only that
// the store answers.
func WithReadiness(checks ...ReadyCheck) Option {
	return func(s *Server) { s.ready = append(s.ready, checks...) }
}

// readyz runs every check at once, each within readyTimeout, and answers
// 200 when all hold, else 503 naming those that fail.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	checks := append([]ReadyCheck{{Name: "store", Describe: "the store does not answer", Check: func(ctx context.Context) error {
		_, err := s.svc.List(ctx, registry.ListFilter{Limit: 1})
		return err
	}}}, s.ready...)
	results := make(map[string]string, len(checks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			err := c.Check(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				s.log.Warn("not ready", "check", c.Name, "err", err)
				results[c.Name] = c.Describe
				return
			}
			results[c.Name] = "ok"
		})
	}
	wg.Wait()
	status, code := "ready", http.StatusOK
	for _, v := range results {
		if v != "ok" {
			status, code = "not ready", http.StatusServiceUnavailable
		}
	}
	writeJSON(w, code, map[string]any{"status": status, "checks": results}, s.log)
	return nil
}
