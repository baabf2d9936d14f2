package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// pollEvery is how often Import asks for its job's progress.
const pollEvery = 500 * time.Millisecond

// jobStatus is what the server answers about a registration job (the
// fields Import reads).
type jobStatus struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Error   string `json:"error"`
	Results string `json:"results"`
	registry.ImportProgress
}

// Import registers defs on the server as a registration job (POST
// /registry/jobs) and follows it until it ends, calling progress with each
// new count: no request waits for the whole import, so a long import never
// runs into the client's timeout while the server works. A server without
// jobs gets the definitions a chunk at a time instead. When ctx ends, the
// job is cancelled (what it registered stays registered).
func (c *Client) Import(ctx context.Context, defs []capability.Definition, progress func(registry.ImportProgress)) (registry.ImportResult, error) {
	var st jobStatus
	_, err := c.do(ctx, http.MethodPost, "/registry/jobs", map[string]any{"capabilities": defs}, &st)
	var pe *ProblemError
	if errors.As(err, &pe) && (pe.Status == http.StatusNotFound || pe.Status == http.StatusMethodNotAllowed) {
		return registry.ImportEach(ctx, c, defs, progress)
	}
	if err != nil {
		return registry.ImportResult{}, err
	}
	return c.followJob(ctx, st, progress)
}

// followJob polls the job st describes until it ends, calling progress
// with each new count, and returns its results; an error when it did not
// end done.
func (c *Client) followJob(ctx context.Context, st jobStatus, progress func(registry.ImportProgress)) (registry.ImportResult, error) {
	start := time.Now()
	last := -1
	for {
		if st.Done != last && progress != nil {
			last = st.Done
			p := st.ImportProgress
			p.Elapsed = time.Since(start)
			progress(p)
		}
		if st.Status != "running" {
			break
		}
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			c.do(cctx, http.MethodDelete, "/registry/jobs/"+st.ID, nil, nil)
			cancel()
			return registry.ImportResult{}, fmt.Errorf("import stopped: %w; the server's job %s was cancelled after %d of %d definitions, which are registered", ctx.Err(), st.ID, st.Done, st.Total)
		case <-time.After(pollEvery):
		}
		if _, err := c.do(ctx, http.MethodGet, "/registry/jobs/"+st.ID, nil, &st); err != nil {
			return registry.ImportResult{}, fmt.Errorf("follow the registration job %s: %w", st.ID, err)
		}
	}
	var res struct {
		Items    []registry.RegisterResult  `json:"items"`
		Failures []capability.ImportFailure `json:"failures"`
	}
	if _, err := c.do(ctx, http.MethodGet, st.Results, nil, &res); err != nil {
		return registry.ImportResult{}, fmt.Errorf("read the results of registration job %s (%s): %w", st.ID, st.Status, err)
	}
	out := registry.ImportResult{Results: res.Items, Failures: res.Failures}
	if st.Status != "done" {
		return out, fmt.Errorf("the server's registration job %s %s: %s", st.ID, st.Status, st.Error)
	}
	return out, nil
}

// PartialError says a large batch, which the server registered as a job
// (each definition on its own), had refused definitions: unlike a
// *registry.BatchError, the others were registered.
type PartialError struct {
	Registered int
	Failures   []capability.ImportFailure
}

func (e *PartialError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the server registered this large batch as a job, each definition on its own: %d registered, %d refused:", e.Registered, len(e.Failures))
	for i, f := range e.Failures {
		if i == 20 {
			fmt.Fprintf(&b, "\n  … and %d more", len(e.Failures)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s", f)
	}
	return b.String()
}
