package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/fallback"
)

func TestResolveCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "c.db")
	spec, _ := filepath.Abs(filepath.Join("..", "..", "internal", "fallback", "testdata", "tracker.yaml"))
	t.Setenv("CAPHUB_SERVER", "")

	// Off by default: just missing.
	t.Setenv(fallback.EnvEnabled, "")
	t.Setenv(fallback.EnvAuto, "")
	code, out, _ := caphub(t, "capability", "resolve", "--db", db, "ossa:tracker/list_tickets", "--openapi", spec)
	if code != 1 || !strings.Contains(out, "resolution is off") {
		t.Fatalf("off: %d %q", code, out)
	}
	if code, _, _ := caphub(t, "capability", "resolve", "--db", db, "ossa:tracker/list_tickets", "--auto"); code != 2 {
		t.Fatalf("--auto while off: exit %d", code)
	}
	t.Setenv(fallback.EnvEnabled, "maybe")
	if code, _, _ := caphub(t, "capability", "resolve", "--db", db, "ossa:tracker/list_tickets"); code != 2 {
		t.Fatalf("bad flag: exit %d", code)
	}

	t.Setenv(fallback.EnvEnabled, "true")
	code, out, _ = caphub(t, "capability", "resolve", "--db", db, "ossa:tracker/list_tickets", "--openapi", spec)
	if code != 1 || !strings.Contains(out, "ossa:tracker/list_tickets@1.0  [openapi:") {
		t.Fatalf("proposal: %d %q", code, out)
	}
	code, out, errOut := caphub(t, "capability", "resolve", "--db", db, "ossa:tracker/list_tickets", "--openapi", spec, "--auto", "--format", "json")
	if code != 0 {
		t.Fatalf("auto: %d %q %q", code, out, errOut)
	}
	var got struct {
		Result fallback.Result `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Result.Registered) != 1 {
		t.Fatalf("auto json: %v %q", err, out)
	}
	code, out, _ = caphub(t, "capability", "resolve", "--db", db, "ossa:tracker/list_tickets")
	if code != 0 || !strings.Contains(out, "resolves to ossa:tracker/list_tickets@1.0") {
		t.Fatalf("found: %d %q", code, out)
	}
}
