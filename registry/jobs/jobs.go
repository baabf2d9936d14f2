// Package jobs runs large registrations as background jobs: an import of
// thousands of definitions is accepted at once (POST /registry/jobs
// answers 202 with the job's URL), registered a chunk at a time
// (registry.Service.RegisterEach, registry.ImportChunk definitions a
// transaction) from a spooled copy of the request body, so that neither
// the server's memory nor any reply's deadline grows with its size, and
// followed by polling its status (progress, rate, failures) until it
// ends. A job's status is kept in the store's documents, so that after a
// restart a job that was running is reported failed, with how far it got,
// rather than forgotten.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// DocKind is the document kind of job statuses.
const DocKind = "registry_job"

// States of a job.
const (
	Running   = "running"
	Done      = "done"
	Failed    = "failed"
	Cancelled = "cancelled"
)

// maxFailures bounds the failures a status lists (Failed counts them all;
// the results list every one).
const maxFailures = 100

// keepFinished is how long a finished job's results stay in memory, and
// maxFinished how many finished jobs do.
const (
	keepFinished = time.Hour
	maxFinished  = 16
)

// saveEvery is how often a running job's progress is written to its
// document (its heartbeat), and staleAfter how old a running job's
// document may be before the job is taken for dead: its server stopped.
const (
	saveEvery  = 2 * time.Second
	staleAfter = 30 * time.Second
)

// Status is what GET /registry/jobs/{id} answers.
type Status struct {
	ID     string `json:"id"`
	Status string `json:"status"` // running, done, failed, cancelled
	registry.ImportProgress
	Warnings   int                        `json:"warnings"`              // warnings of the registered definitions (capability.Validate's SHOULDs)
	Rate       float64                    `json:"rate"`                  // definitions handled per second
	ETASeconds float64                    `json:"eta_seconds,omitempty"` // at that rate, while running
	StartedAt  time.Time                  `json:"started_at"`
	EndedAt    *time.Time                 `json:"ended_at,omitempty"`
	UpdatedAt  time.Time                  `json:"updated_at"`
	Actor      string                     `json:"actor,omitempty"`
	Error      string                     `json:"error,omitempty"` // why a failed job stopped
	Failures   []capability.ImportFailure `json:"failures,omitempty"`
	Results    string                     `json:"results"` // URL path of the results
}

// Ended reports whether the job is over.
func (s Status) Ended() bool { return s.Status != Running }

// Source hands a job its definitions a chunk at a time, with the entries
// it could not read (which the job counts as failed), until it returns (an
// error stops the job). It must stop when fn returns an error.
type Source func(fn func(defs []capability.Definition, unreadable []capability.ImportFailure) error) error

// Manager runs the jobs of one registry.
type Manager struct {
	svc *registry.Service
	log *slog.Logger

	mu   sync.Mutex
	jobs map[string]*job
}

// job is one job in this process.
type job struct {
	mu      sync.Mutex
	status  Status
	results []Outcome
	all     []capability.ImportFailure
	cancel  context.CancelFunc
	done    chan struct{}
}

// New returns the manager of svc's jobs.
func New(svc *registry.Service, log *slog.Logger) *Manager {
	if log == nil {
		log = slog.Default()
	}
	return &Manager{svc: svc, log: log, jobs: map[string]*job{}}
}

// Start starts a job over total definitions from src, as actor (for the
// record; the registrations themselves are recorded as ctx's caller). The
// job runs detached from ctx's cancellation; Cancel stops it. cleanup, when
// not nil, runs once the job ends (to remove a spooled body).
func (m *Manager) Start(ctx context.Context, total int, actor string, src Source, cleanup func()) (Status, error) {
	id, err := newID()
	if err != nil {
		return Status{}, err
	}
	st := Status{ID: id, Status: Running, StartedAt: time.Now().UTC(), Actor: actor, Results: "/registry/jobs/" + id + "/results"}
	st.Total = total
	if err := m.save(ctx, st); err != nil {
		return Status{}, err
	}
	jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	j := &job{status: st, cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.prune()
	m.jobs[id] = j
	m.mu.Unlock()
	go m.run(jctx, j, src, cleanup)
	return st, nil
}

// run registers what src hands, a chunk at a time, and records the end.
func (m *Manager) run(ctx context.Context, j *job, src Source, cleanup func()) {
	defer close(j.done)
	defer j.cancel()
	if cleanup != nil {
		defer cleanup()
	}
	start := time.Now()
	stopBeat := m.heartbeat(ctx, j, start)
	err := src(func(defs []capability.Definition, unreadable []capability.ImportFailure) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var res []registry.RegisterResult
		failures := unreadable
		for len(defs) > 0 {
			n := min(len(defs), registry.ImportChunk)
			r, f, err := registry.RegisterEach(ctx, m.svc, defs[:n])
			if err != nil {
				return err
			}
			res, failures = append(res, r...), append(failures, f...)
			defs = defs[n:]
		}
		j.mu.Lock()
		for _, r := range res {
			// The definition is stored: keep only the outcome, and count
			// the warnings (tens of thousands of definitions can have
			// the same few each).
			j.status.Warnings += len(r.Warnings)
			j.results = append(j.results, Outcome{URI: r.URI, Version: r.Version, Created: r.Created, Digest: r.Digest, TrustTier: r.TrustTier})
		}
		j.all = append(j.all, failures...)
		st := &j.status
		st.Add(res, len(failures))
		if room := maxFailures - len(st.Failures); room > 0 {
			st.Failures = append(st.Failures, failures[:min(room, len(failures))]...)
		}
		st.Elapsed = time.Since(start)
		j.mu.Unlock()
		return nil
	})
	stopBeat()
	j.mu.Lock()
	now := time.Now().UTC()
	st := &j.status
	st.EndedAt, st.Elapsed = &now, time.Since(start)
	switch {
	case err == nil:
		st.Status = Done
	case ctx.Err() != nil:
		st.Status = Cancelled
		st.Error = fmt.Sprintf("cancelled after %d of %d definitions: those are registered", st.Done, st.Total)
	default:
		st.Status = Failed
		st.Error = fmt.Sprintf("%v: stopped after %d of %d definitions, which are registered", err, st.Done, st.Total)
	}
	final := j.snapshot()
	j.mu.Unlock()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := m.save(sctx, final); err != nil {
		m.log.Error("registration job: cannot save its end", "job", final.ID, "status", final.Status, "err", err)
	}
	m.log.Info("registration job ended", "job", final.ID, "status", final.Status, "done", final.Done, "registered", final.Registered,
		"unchanged", final.Unchanged, "failed", final.Failed, "seconds", final.Elapsed.Seconds())
}

// heartbeat saves j's progress every saveEvery until the returned stop is
// called.
func (m *Manager) heartbeat(ctx context.Context, j *job, start time.Time) (stop func()) {
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(saveEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			j.mu.Lock()
			j.status.Elapsed = time.Since(start)
			st := j.snapshot()
			j.mu.Unlock()
			if err := m.save(ctx, st); err != nil && ctx.Err() == nil {
				m.log.Warn("registration job: cannot save its progress", "job", st.ID, "err", err)
			}
		}
	}()
	return func() { close(quit); <-stopped }
}

// snapshot returns the status with its rate and ETA, under j.mu.
func (j *job) snapshot() Status {
	st := j.status
	st.Failures = append([]capability.ImportFailure(nil), st.Failures...)
	st.Rate = st.ImportProgress.Rate()
	if st.Status == Running {
		st.ETASeconds = st.ETA().Seconds()
	} else {
		st.ETASeconds = 0
	}
	return st
}

// Status returns a job's status: this process's, else the stored one
// (a job of an earlier run of the server). registry.ErrNotFound when there
// is none.
func (m *Manager) Status(ctx context.Context, id string) (Status, error) {
	if j := m.job(id); j != nil {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.snapshot(), nil
	}
	d, err := m.svc.Store().GetDoc(ctx, DocKind, id)
	if err != nil {
		return Status{}, fmt.Errorf("registration job %q: %w", id, err)
	}
	var st Status
	if err := json.Unmarshal(d.Value, &st); err != nil {
		return Status{}, fmt.Errorf("registration job %q: its stored status is damaged: %w", id, err)
	}
	if !st.Ended() && time.Since(st.UpdatedAt) > staleAfter {
		// Nobody has run it for a while: its server stopped.
		end := st.UpdatedAt
		st.Status, st.EndedAt, st.ETASeconds = Failed, &end, 0
		st.Error = fmt.Sprintf("the server running the job stopped after %d of %d definitions (no progress since %s): those are registered; post the document again to register the rest (identical content is a no-op)",
			st.Done, st.Total, st.UpdatedAt.Format(time.RFC3339))
	}
	return st, nil
}

// Results returns the results (without their warnings, which the status
// counts) and every failure of a job of this process, so far. ErrNoResults when the job ran in an earlier run of the server.
func (m *Manager) Results(ctx context.Context, id string) ([]Outcome, []capability.ImportFailure, Status, error) {
	j := m.job(id)
	if j == nil {
		st, err := m.Status(ctx, id)
		if err != nil {
			return nil, nil, Status{}, err
		}
		return nil, nil, st, ErrNoResults
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.results, j.all, j.snapshot(), nil
}

// Outcome is what a job did with one definition: registry.RegisterResult
// without the warnings (the status counts them) and the stored record,
// so that a job's results stay small however many definitions it has.
type Outcome struct {
	URI       string `json:"uri"`
	Version   string `json:"version"`
	Created   bool   `json:"created"`
	Digest    string `json:"digest"`
	TrustTier string `json:"trust_tier,omitempty"`
}

// ErrNoResults: a job's results are held by the server process that ran
// it, which has restarted or let them go (an hour after the job ended).
var ErrNoResults = errors.New("the results of this job are no longer held: they are kept in memory for an hour by the server process that ran it; its status still counts them, and caphub capability list shows what is registered")

// ErrElsewhere: the job runs in another process of the server.
var ErrElsewhere = errors.New("job runs elsewhere")

// Cancel stops a running job after the chunk it is registering, and waits
// for it to stop (or ctx to end). The definitions registered before stay
// registered.
func (m *Manager) Cancel(ctx context.Context, id string) (Status, error) {
	j := m.job(id)
	if j == nil {
		st, err := m.Status(ctx, id)
		if err == nil && !st.Ended() {
			return st, fmt.Errorf("registration job %s runs on another replica of the server: send the DELETE to it (or wait for the job to end): %w", id, ErrElsewhere)
		}
		return st, err // ended: nothing to cancel
	}
	j.cancel()
	select {
	case <-j.done:
	case <-ctx.Done():
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.snapshot(), nil
}

// Wait waits until the job ends or ctx does.
func (m *Manager) Wait(ctx context.Context, id string) error {
	j := m.job(id)
	if j == nil {
		return nil
	}
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Manager) job(id string) *job {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jobs[id]
}

// prune lets go of finished jobs older than keepFinished, and of the
// oldest finished ones beyond maxFinished (under m.mu).
func (m *Manager) prune() {
	var finished []*job
	var ids []string
	for id, j := range m.jobs {
		j.mu.Lock()
		end := j.status.EndedAt
		j.mu.Unlock()
		if end == nil {
			continue
		}
		if time.Since(*end) > keepFinished {
			delete(m.jobs, id)
			continue
		}
		finished, ids = append(finished, j), append(ids, id)
	}
	for len(finished) >= maxFinished {
		oldest := 0
		for i := range finished {
			if finished[i].status.EndedAt.Before(*finished[oldest].status.EndedAt) {
				oldest = i
			}
		}
		delete(m.jobs, ids[oldest])
		finished = append(finished[:oldest], finished[oldest+1:]...)
		ids = append(ids[:oldest], ids[oldest+1:]...)
	}
}

// save writes st to the job's document.
func (m *Manager) save(ctx context.Context, st Status) error {
	st.UpdatedAt = time.Now().UTC()
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := m.svc.Store().PutDoc(ctx, DocKind, st.ID, b); err != nil {
		return fmt.Errorf("save registration job %s: %w", st.ID, err)
	}
	return nil
}

func newID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a job id: %w", err)
	}
	return hex.EncodeToString(b), nil
}
