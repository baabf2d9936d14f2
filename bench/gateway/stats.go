package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// A sample is one measurement of one target in one round.
type sample struct {
	calls, failed int64
	callsPerSec   float64
	p50, p99      time.Duration
	gwCPUPerCall  float64 // µs; NaN when there is no gateway (direct)
	upCPUPerCall  float64 // µs
	gwRSSMiB      float64 // at the end of the load, sessions open; NaN when there is no gateway
	open          time.Duration
	procs         string // the processes counted, gateway+upstream, at the end of the load
}

// metric picks one figure of a sample, as a float.
type metric func(sample) float64

var (
	mCallsPerSec metric = func(s sample) float64 { return s.callsPerSec }
	mP50         metric = func(s sample) float64 { return float64(s.p50) }
	mP99         metric = func(s sample) float64 { return float64(s.p99) }
	mGwCPU       metric = func(s sample) float64 { return s.gwCPUPerCall }
	mUpCPU       metric = func(s sample) float64 { return s.upCPUPerCall }
	mRSS         metric = func(s sample) float64 { return s.gwRSSMiB }
	mOpen        metric = func(s sample) float64 { return float64(s.open) }
)

// rounds holds a target's samples by round; a round where the target was
// not measured (or failed) holds nil.
type rounds []*sample

// median is the median of m over the rounds that have a sample and a
// number (NaN when none has).
func (r rounds) median(m metric) float64 {
	var xs []float64
	for _, s := range r {
		if s != nil && !math.IsNaN(m(*s)) {
			xs = append(xs, m(*s))
		}
	}
	return median(xs)
}

// median of xs; NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// ratio is the median over rounds of target's m over peer's m in the same
// round: measured minutes apart at most, so drift in the machine's load
// cancels out. NaN when no round has both (with a positive peer figure).
func ratio(target, peer rounds, m metric) float64 {
	var xs []float64
	for i := range min(len(target), len(peer)) {
		t, p := target[i], peer[i]
		if t == nil || p == nil {
			continue
		}
		a, b := m(*t), m(*p)
		if math.IsNaN(a) || math.IsNaN(b) || b <= 0 {
			continue
		}
		xs = append(xs, a/b)
	}
	return median(xs)
}

// table is the results of one (upstream transport, sessions) pair.
type table struct {
	transport string
	sessions  int
	targets   []string          // in the order printed
	results   map[string]rounds // by target
}

// print writes the table as Markdown: each target's medians over rounds,
// its ratios to each peer measured in this table and, when a target NAME
// has a NAME@base (-caphub-base), its ratios to that.
func (t *table) print(w io.Writer, peers []string) {
	var present []string
	for _, p := range peers {
		if _, ok := t.results[p]; ok {
			present = append(present, p)
		}
	}
	withBase := slices.ContainsFunc(t.targets, func(n string) bool { return strings.HasSuffix(n, baseSuffix) })
	fmt.Fprintf(w, "\n### %s upstream, %d session%s\n\n", t.transport, t.sessions, plural(t.sessions))
	head := "| target | calls/s | p50 | p99 | gateway CPU µs/call | upstream CPU µs/call | gateway RSS MiB | open sessions | procs | failed |"
	rule := "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for _, p := range present {
		head += " vs " + p + " (calls/s, p50, CPU/call, RSS) |"
		rule += "---|"
	}
	if withBase {
		head += " vs NAME" + baseSuffix + " (calls/s, p50, CPU/call, RSS) |"
		rule += "---|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	for _, name := range t.targets {
		r := t.results[name]
		var failed, calls int64
		procs := "—"
		for _, s := range r {
			if s != nil {
				failed += s.failed
				calls += s.calls
				procs = s.procs
			}
		}
		row := fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d/%d |", name,
			num(r.median(mCallsPerSec), 0), dur(r.median(mP50)), dur(r.median(mP99)),
			num(r.median(mGwCPU), 0), num(r.median(mUpCPU), 0), num(r.median(mRSS), 1),
			dur(r.median(mOpen)), procs, failed, calls)
		for _, p := range present {
			if p == name {
				row += " 1 |"
				continue
			}
			pr := t.results[p]
			row += " " + ratios(r, pr) + " |"
		}
		if withBase {
			if base, ok := t.results[name+baseSuffix]; ok {
				row += " " + ratios(r, base) + " |"
			} else {
				row += " — |"
			}
		}
		fmt.Fprintln(w, row)
	}
}

// ratios is a target's ratios to another's: calls/s, p50, CPU/call, RSS.
func ratios(r, other rounds) string {
	return fmt.Sprintf("%s, %s, %s, %s", times(ratio(r, other, mCallsPerSec)), times(ratio(r, other, mP50)),
		times(ratio(r, other, mGwCPU)), times(ratio(r, other, mRSS)))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// num formats x with prec decimals, — for NaN.
func num(x float64, prec int) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.*f", prec, x)
}

// dur formats a duration held in a float (nanoseconds), — for NaN.
func dur(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	d := time.Duration(x)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

// times formats a ratio, — for NaN.
func times(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", x)
}
