package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// progressEvery is how often the progress line is rewritten at most.
const progressEvery = 200 * time.Millisecond

// importProgress returns what reports an import's progress on stderr, one
// line rewritten in place ("1,500 of 60,000 definitions (25%), 2,134/s,
// about 27s left"), or nil when stderr is not a terminal or --quiet is
// set: scripts and logs get only the result.
func importProgress(cmd *cobra.Command) func(registry.ImportProgress) {
	return progressFor(cmd, "definitions")
}

// progressFor is importProgress counting noun ("definitions", "servers").
func progressFor(cmd *cobra.Command, noun string) func(registry.ImportProgress) {
	if quiet, _ := cmd.Flags().GetBool("quiet"); quiet {
		return nil
	}
	w := cmd.ErrOrStderr()
	if !isTerminal(w) {
		return nil
	}
	return progressLine(w, noun)
}

// progressLine writes progress to w as a line rewritten in place, ended
// when the work is complete.
func progressLine(w io.Writer, noun string) func(registry.ImportProgress) {
	var last time.Time
	return func(p registry.ImportProgress) {
		end := p.Total > 0 && p.Done >= p.Total
		if !end && time.Since(last) < progressEvery {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "\r\033[K%s", progressText(p, noun))
		if end {
			fmt.Fprintln(w)
		}
	}
}

// progressText is one progress line.
func progressText(p registry.ImportProgress, noun string) string {
	s := fmt.Sprintf("%s %s", thousands(p.Done), noun)
	if p.Total > 0 {
		s = fmt.Sprintf("%s of %s %s (%d%%)", thousands(p.Done), thousands(p.Total), noun, p.Done*100/p.Total)
	}
	if r := p.Rate(); r > 0 {
		s += fmt.Sprintf(", %s/s", thousands(int(r+0.5)))
	}
	if eta := p.ETA(); eta > 0 {
		s += fmt.Sprintf(", about %s left", eta.Round(time.Second))
	}
	if p.Failed > 0 {
		s += fmt.Sprintf(", %d failed", p.Failed)
	}
	return s
}

// thousands writes n with commas: 60,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// countingRunner wraps run to report, as servers finish, how many of
// total have been discovered.
func countingRunner(run discover.Runner, total int, progress func(registry.ImportProgress)) discover.Runner {
	if progress == nil {
		return run
	}
	var mu sync.Mutex
	p := registry.ImportProgress{Total: total}
	start := time.Now()
	return func(ctx context.Context, srv *mcpconn.Server) (*discover.Report, error) {
		rep, err := run(ctx, srv)
		mu.Lock()
		defer mu.Unlock()
		p.Done++
		if err != nil {
			p.Failed++
		}
		p.Elapsed = time.Since(start)
		progress(p)
		return rep, err
	}
}
