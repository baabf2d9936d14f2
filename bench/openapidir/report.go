package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/caphub/caphub/bench/internal/load"
)

// slowest is how many of the slowest specs the report names.
const slowest = 10

// report gathers the results of a run.
type report struct {
	started                      time.Time
	elapsed                      time.Duration
	specs, workers               int
	timeout                      time.Duration
	byOutcome                    map[string]int
	panics                       int
	operations, imported, regist int
	defBytes, schemaBytes        int64
	results                      []result
	peakRSS                      int64
}

func (r *report) add(res result) {
	if r.byOutcome == nil {
		r.byOutcome = map[string]int{}
	}
	r.byOutcome[res.outcome]++
	if res.panicked {
		r.panics++
	}
	r.operations += res.operations
	r.imported += res.imported
	r.regist += res.registered
	r.defBytes += res.defBytes
	r.schemaBytes += res.schemaBytes
	r.results = append(r.results, res)
}

// finish notes the run's time and the process's peak RSS.
func (r *report) finish() {
	r.elapsed = time.Since(r.started)
	if m, err := load.ReadMemory(os.Getpid()); err == nil {
		r.peakRSS = m.HWM
	}
}

// String is the summary: outcomes, totals, the slowest specs.
func (r *report) String() string {
	var b strings.Builder
	pct := func(n int) string { return fmt.Sprintf("%d (%.1f%%)", n, 100*float64(n)/float64(max(r.specs, 1))) }
	fmt.Fprintf(&b, "openapidir: %d specs in %s (%d workers, %s each at most)\n", r.specs, r.elapsed.Round(time.Second), r.workers, r.timeout)
	fmt.Fprintf(&b, "  full       %s\n", pct(r.byOutcome[outcomeFull]))
	fmt.Fprintf(&b, "  partial    %s\n", pct(r.byOutcome[outcomePartial]))
	fmt.Fprintf(&b, "  failed     %s\n", pct(r.byOutcome[outcomeFailed]))
	fmt.Fprintf(&b, "  timed out  %s\n", pct(r.byOutcome[outcomeTimedOut]))
	fmt.Fprintf(&b, "  panics     %d\n", r.panics)
	fmt.Fprintf(&b, "operations %d, imported %d, registered %d\n", r.operations, r.imported, r.regist)
	fmt.Fprintf(&b, "definitions %s (input and output schemas %s)\n", mb(r.defBytes), mb(r.schemaBytes))
	fmt.Fprintf(&b, "peak RSS %s\n", mb(r.peakRSS))
	byTime := slices.Clone(r.results)
	slices.SortFunc(byTime, func(a, b result) int { return int(b.elapsed - a.elapsed) })
	fmt.Fprintf(&b, "slowest (wall time; CPU time of the process meanwhile, the spec's own with -workers 1):\n")
	for _, res := range byTime[:min(slowest, len(byTime))] {
		fmt.Fprintf(&b, "  %8s  CPU %8s  %-50s %s, %d of %d operations, definitions %s\n",
			res.elapsed.Round(time.Millisecond), res.cpu.Round(time.Millisecond), res.spec, res.outcome, res.registered, res.operations, mb(res.defBytes))
	}
	bySize := slices.Clone(r.results)
	slices.SortFunc(bySize, func(a, b result) int { return int(b.defBytes - a.defBytes) })
	fmt.Fprintf(&b, "largest definitions:\n")
	for _, res := range bySize[:min(slowest, len(bySize))] {
		fmt.Fprintf(&b, "  %9s  %-50s %d operations, schemas %s\n", mb(res.defBytes), res.spec, res.imported, mb(res.schemaBytes))
	}
	return b.String()
}

// Details lists every spec that did not import fully, with why.
func (r *report) Details() string {
	var b strings.Builder
	bad := slices.Clone(r.results)
	bad = slices.DeleteFunc(bad, func(res result) bool { return res.outcome == outcomeFull })
	slices.SortFunc(bad, func(a, b result) int { return strings.Compare(a.spec.String(), b.spec.String()) })
	fmt.Fprintf(&b, "\nnot imported fully (%d):\n", len(bad))
	for _, res := range bad {
		reason := res.reason
		if !res.panicked {
			reason = clip(reason, 400, true)
		}
		fmt.Fprintf(&b, "  %s: %s, %d of %d operations: %s\n", res.spec, res.outcome, res.registered, res.operations, reason)
	}
	return b.String()
}

// mb writes a byte count in MB (10^6 bytes).
func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
