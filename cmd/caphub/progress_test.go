package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
)

func TestProgressText(t *testing.T) {
	for _, tt := range []struct {
		p    registry.ImportProgress
		want string
	}{
		{registry.ImportProgress{Total: 60000, Done: 1500, Elapsed: time.Second}, "1,500 of 60,000 definitions (2%), 1,500/s, about 39s left"},
		{registry.ImportProgress{Total: 1223, Done: 1223, Failed: 2, Elapsed: 2 * time.Second}, "1,223 of 1,223 definitions (100%), 612/s, 2 failed"},
		{registry.ImportProgress{Done: 7}, "7 definitions"},
	} {
		if got := progressText(tt.p, "definitions"); got != tt.want {
			t.Errorf("progressText(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
	var b bytes.Buffer
	line := progressLine(&b, "definitions")
	line(registry.ImportProgress{Total: 2, Done: 1})
	line(registry.ImportProgress{Total: 2, Done: 2})
	if out := b.String(); strings.Count(out, "\r") != 2 || !strings.HasSuffix(out, "(100%)\n") {
		t.Errorf("progress line wrote %q", out)
	}
}

// TestImportQuietWhenPiped checks that an import run with stderr not a
// terminal prints no progress there.
func TestImportQuietWhenPiped(t *testing.T) {
	cmd := newImportCmd()
	cmd.SetErr(&bytes.Buffer{})
	if importProgress(cmd) != nil {
		t.Error("progress on a stderr that is not a terminal")
	}
}

// TestCountingRunner checks that a discovery of several servers reports
// each one that ends, failures counted.
func TestCountingRunner(t *testing.T) {
	var seen []registry.ImportProgress
	run := countingRunner(func(_ context.Context, srv *mcpconn.Server) (*discover.Report, error) {
		if srv.Name == "bad" {
			return nil, errors.New("unreachable")
		}
		return &discover.Report{Server: srv.Name}, nil
	}, 3, func(p registry.ImportProgress) { seen = append(seen, p) })
	for _, name := range []string{"a", "bad", "c"} {
		run(context.Background(), &mcpconn.Server{Name: name})
	}
	if len(seen) != 3 || seen[2].Done != 3 || seen[2].Total != 3 || seen[2].Failed != 1 {
		t.Errorf("progress %+v", seen)
	}
	if countingRunner(nil, 3, nil) != nil {
		t.Error("without progress the runner should be the given one")
	}
}
