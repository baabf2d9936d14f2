package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/caphub/caphub/bench/internal/load"
)

// col is a column of the table: a target measured.
type col int

const (
	colSQLite col = iota // caphub on SQLite
	colPG                // caphub on PostgreSQL
	colRef               // the reference: the official MCP Registry (its SQL replayed, or its server over HTTP)
	nCols
)

// kind says what a row's figures are and how they print.
type kind int

const (
	kLatency  kind = iota // p50 / p95 / p99 and operations per second
	kBytes                // a size in bytes
	kDuration             // a time
	kCount                // a number of things
	kText                 // words (the last round's)
)

// stat is one measurement of one target in one round.
type stat struct {
	p50, p95, p99 time.Duration // kLatency
	rate          float64       // kLatency: successful operations per second
	total, failed int64         // kLatency
	firstErr      string        // kLatency: why the first failure failed
	value         float64       // kBytes, kDuration (ns), kCount
	text          string        // kText
}

// latencyStat summarises a load.Result.
func latencyStat(r load.Result) stat {
	s := stat{p50: load.Pct(r.Latencies, 50), p95: load.Pct(r.Latencies, 95), p99: load.Pct(r.Latencies, 99),
		rate: r.Rate(), total: r.Total, failed: r.Failed}
	if r.FirstErr != nil {
		s.firstErr = r.FirstErr.Error()
	}
	return s
}

// row is one line of the table: one measurement, its stats by column and
// round (nil where a target was not measured).
type row struct {
	label string
	kind  kind
	// base names the row this one's ratio is taken against, column by
	// column (e.g. registrations under load against alone); "" compares
	// the columns of this row.
	base  string
	cells [nCols][]*stat
}

// table collects the rows in the order they were first added.
type table struct {
	rows    []*row
	byLabel map[string]*row
	// notes are printed under the table (what a reference is, what
	// failed and why).
	notes []string
}

func newTable() *table { return &table{byLabel: map[string]*row{}} }

// add records s for column c in round r of the row label, creating the
// row (of kind k) on first use.
func (t *table) add(label string, k kind, c col, r int, s stat) *row {
	rw := t.byLabel[label]
	if rw == nil {
		rw = &row{label: label, kind: k}
		t.byLabel[label] = rw
		t.rows = append(t.rows, rw)
	}
	for len(rw.cells[c]) <= r {
		rw.cells[c] = append(rw.cells[c], nil)
	}
	rw.cells[c][r] = &s
	if s.failed > 0 {
		t.note("%s, %s: %d of %d failed; the first: %s", label, colNames[c], s.failed, s.total, s.firstErr)
	}
	return rw
}

// colNames name the columns in notes.
var colNames = [nCols]string{"caphub SQLite", "caphub PostgreSQL", "reference"}

// note adds a line under the table, once.
func (t *table) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if !slices.Contains(t.notes, n) {
		t.notes = append(t.notes, n)
	}
}

// stats are a column's measurements over the rounds.
type stats []*stat

// median of m over the rounds measured; NaN when none was.
func (ss stats) median(m func(*stat) float64) float64 {
	var xs []float64
	for _, s := range ss {
		if s != nil && !math.IsNaN(m(s)) {
			xs = append(xs, m(s))
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
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratio is the median over rounds of a's m over b's m in the same round:
// measured seconds apart, so the machine's drift cancels out. NaN when no
// round has both.
func ratio(a, b stats, m func(*stat) float64) float64 {
	var xs []float64
	for i := range min(len(a), len(b)) {
		if a[i] == nil || b[i] == nil {
			continue
		}
		x, y := m(a[i]), m(b[i])
		if math.IsNaN(x) || math.IsNaN(y) || y <= 0 {
			continue
		}
		xs = append(xs, x/y)
	}
	return median(xs)
}

var (
	mP50   = func(s *stat) float64 { return float64(s.p50) }
	mP95   = func(s *stat) float64 { return float64(s.p95) }
	mP99   = func(s *stat) float64 { return float64(s.p99) }
	mRate  = func(s *stat) float64 { return s.rate }
	mValue = func(s *stat) float64 { return s.value }
)

// cell formats a column's medians.
func (rw *row) cell(c col) string {
	ss := stats(rw.cells[c])
	if !slices.ContainsFunc(ss, func(s *stat) bool { return s != nil }) {
		return "—"
	}
	switch rw.kind {
	case kLatency:
		var total, failed int64
		for _, s := range ss {
			if s != nil {
				total += s.total
				failed += s.failed
			}
		}
		out := fmt.Sprintf("%s / %s / %s · %s/s", dur(ss.median(mP50)), dur(ss.median(mP95)), dur(ss.median(mP99)), num(ss.median(mRate)))
		if failed > 0 {
			out += fmt.Sprintf(" (%d of %d failed)", failed, total)
		}
		return out
	case kBytes:
		return size(ss.median(mValue))
	case kDuration:
		return dur(ss.median(mValue))
	case kCount:
		return count(ss.median(mValue))
	default:
		for i := len(ss) - 1; i >= 0; i-- {
			if ss[i] != nil {
				return ss[i].text
			}
		}
		return "—"
	}
}

// ratioCell says how the row compares: a latency row's p50 and throughput,
// a value row's value; against the base row when it has one (each
// column), else SQLite and PostgreSQL against the reference, else
// PostgreSQL against SQLite.
func (t *table) ratioCell(rw *row) string {
	var parts []string
	cmp := func(name string, a, b stats) {
		switch rw.kind {
		case kLatency:
			p, r := ratio(a, b, mP50), ratio(a, b, mRate)
			if !math.IsNaN(p) || !math.IsNaN(r) {
				parts = append(parts, fmt.Sprintf("%s: p50 %s, %s/s", name, times(p), times(r)))
			}
		case kBytes, kDuration, kCount:
			if v := ratio(a, b, mValue); !math.IsNaN(v) {
				parts = append(parts, fmt.Sprintf("%s: %s", name, times(v)))
			}
		}
	}
	if base := t.byLabel[rw.base]; base != nil {
		cmp("SQLite ÷ base", rw.cells[colSQLite], base.cells[colSQLite])
		cmp("PG ÷ base", rw.cells[colPG], base.cells[colPG])
	} else if slices.ContainsFunc(rw.cells[colRef], func(s *stat) bool { return s != nil }) {
		cmp("SQLite ÷ ref", rw.cells[colSQLite], rw.cells[colRef])
		cmp("PG ÷ ref", rw.cells[colPG], rw.cells[colRef])
	} else {
		cmp("PG ÷ SQLite", rw.cells[colPG], rw.cells[colSQLite])
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, "; ")
}

// print writes the table as Markdown, then its notes.
func (t *table) print(w io.Writer) {
	fmt.Fprintln(w, "| measurement | caphub SQLite | caphub PostgreSQL | reference | ratio |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, rw := range t.rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", rw.label, mdCell(rw.cell(colSQLite)), mdCell(rw.cell(colPG)), mdCell(rw.cell(colRef)), t.ratioCell(rw))
	}
	if len(t.notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range t.notes {
			fmt.Fprintln(w, "- "+n)
		}
	}
}

// mdCell makes s fit in one Markdown table cell: one line, no bar.
func mdCell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", "\\|")
}

// num formats a rate: one decimal below 100, else whole with thousands
// separators; — for NaN.
func num(x float64) string {
	if !math.IsNaN(x) && x < 100 {
		return fmt.Sprintf("%.1f", x)
	}
	return count(x)
}

// count formats x whole, with thousands separators; — for NaN.
func count(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	s := fmt.Sprintf("%.0f", x)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// dur formats a duration held in a float (nanoseconds), — for NaN.
func dur(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	d := time.Duration(x)
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	default:
		return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
	}
}

// size formats bytes, — for NaN.
func size(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case x >= 1<<20:
		return fmt.Sprintf("%.1f MiB", x/(1<<20))
	case x >= 1<<10:
		return fmt.Sprintf("%.1f KiB", x/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", x)
	}
}

// times formats a ratio, — for NaN.
func times(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", x)
}
