package registry

import (
	"context"
	"errors"
	"time"

	"github.com/caphub/caphub/capability"
)

// ImportChunk is how many definitions an import registers in one
// transaction: large enough to share commits, small enough that memory and
// a transaction's length stay bounded whatever the import's size.
const ImportChunk = 500

// ImportResult is what an import did: the results of the definitions it
// registered (or found registered already), in their order, and the
// definitions it could not register, with the reason.
type ImportResult struct {
	Results  []RegisterResult           `json:"results"`
	Failures []capability.ImportFailure `json:"failures,omitempty"`
}

// ImportProgress is how far an import has come.
type ImportProgress struct {
	Total      int           `json:"total"`      // definitions to register; 0 while unknown
	Done       int           `json:"done"`       // definitions handled
	Registered int           `json:"registered"` // new versions stored
	Unchanged  int           `json:"unchanged"`  // already registered with the same content
	Failed     int           `json:"failed"`     // refused
	Elapsed    time.Duration `json:"-"`
}

// Rate is the definitions handled per second so far.
func (p ImportProgress) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Done) / p.Elapsed.Seconds()
}

// ETA is the time the rest should take at the rate so far; 0 when it
// cannot be told.
func (p ImportProgress) ETA() time.Duration {
	r := p.Rate()
	if r <= 0 || p.Total <= p.Done {
		return 0
	}
	return time.Duration(float64(p.Total-p.Done) / r * float64(time.Second))
}

// Add counts the outcome of one chunk.
func (p *ImportProgress) Add(res []RegisterResult, failures int) {
	for _, r := range res {
		if r.Created {
			p.Registered++
		} else {
			p.Unchanged++
		}
	}
	p.Failed += failures
	p.Done += len(res) + failures
}

// Import registers defs as an import does, each on its own in effect: a
// chunk of ImportChunk definitions at a time in one transaction, the
// definitions the registry refuses reported as failures and the others
// registered. progress, when not nil, is called after each chunk. An error
// is returned only when the import could not go on (the store failed, ctx
// ended); the chunks before it are registered.
func (s *Service) Import(ctx context.Context, defs []capability.Definition, progress func(ImportProgress)) (ImportResult, error) {
	return ImportEach(ctx, s, defs, progress)
}

// BatchRegisterer registers a batch of definitions all or nothing:
// *Service, and client.Client against a server.
type BatchRegisterer interface {
	RegisterBatch(ctx context.Context, defs []capability.Definition) ([]RegisterResult, error)
}

// ImportEach is Service.Import through any BatchRegisterer.
func ImportEach(ctx context.Context, reg BatchRegisterer, defs []capability.Definition, progress func(ImportProgress)) (ImportResult, error) {
	var out ImportResult
	p := ImportProgress{Total: len(defs)}
	start := time.Now()
	for len(defs) > 0 {
		n := min(len(defs), ImportChunk)
		res, failures, err := RegisterEach(ctx, reg, defs[:n])
		if err != nil {
			return out, err
		}
		out.Results = append(out.Results, res...)
		out.Failures = append(out.Failures, failures...)
		p.Add(res, len(failures))
		p.Elapsed = time.Since(start)
		if progress != nil {
			progress(p)
		}
		defs = defs[n:]
	}
	return out, nil
}

// RegisterEach registers defs in one transaction, leaving out those the
// registry refuses (a *BatchError's failures, a version registered with
// other content), which it reports as failures. The results are those of
// the others, in order.
//
// A store names one conflict at a time; when there is one, the others are
// found by halving: the rest is registered again as two halves, so that k
// conflicts among n definitions cost about k·log(n) attempts, not k·n.
func RegisterEach(ctx context.Context, reg BatchRegisterer, defs []capability.Definition) ([]RegisterResult, []capability.ImportFailure, error) {
	var failures []capability.ImportFailure
	for len(defs) > 0 {
		res, err := reg.RegisterBatch(ctx, defs)
		var be *BatchError
		var ce *ConflictError
		switch {
		case err == nil:
			return res, failures, nil
		case errors.As(err, &be):
			refused := map[int]bool{}
			for _, f := range be.Failures {
				refused[f.Index] = true
				failures = append(failures, capability.ImportFailure{Item: defs[f.Index].URI, Reason: f.Err.Error()})
			}
			defs = keep(defs, func(i int, _ *capability.Definition) bool { return !refused[i] })
		case errors.As(err, &ce):
			at := -1
			for i := range defs {
				if k, kerr := KeyOf(&defs[i]); kerr == nil && k == ce.Key {
					at = i
					break
				}
			}
			if at < 0 {
				return nil, failures, err
			}
			conflict := capability.ImportFailure{Item: defs[at].URI + " (" + defs[at].Version + ")", Reason: ce.Error()}
			if len(defs) == 1 {
				return nil, append(failures, conflict), nil
			}
			rest := append(append([]capability.Definition(nil), defs[:at]...), defs[at+1:]...)
			half := len(rest) / 2
			r1, f1, err := RegisterEach(ctx, reg, rest[:half])
			if err != nil {
				return nil, failures, err
			}
			r2, f2, err := RegisterEach(ctx, reg, rest[half:])
			if err != nil {
				return nil, failures, err
			}
			failures = append(append(append(failures, conflict), f1...), f2...)
			return append(r1, r2...), failures, nil
		default:
			return nil, failures, err
		}
	}
	return nil, failures, nil
}

// keep returns the definitions of defs for which ok holds, in a new slice.
func keep(defs []capability.Definition, ok func(i int, d *capability.Definition) bool) []capability.Definition {
	var out []capability.Definition
	for i := range defs {
		if ok(i, &defs[i]) {
			out = append(out, defs[i])
		}
	}
	return out
}
