package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

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
		if got := progressText(tt.p); got != tt.want {
			t.Errorf("progressText(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
	var b bytes.Buffer
	line := progressLine(&b)
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
