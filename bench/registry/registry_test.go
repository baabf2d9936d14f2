package main

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// logWriter sends the harness's progress to the test's log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestHarnessTiny runs every measurement at a tiny size against SQLite
// (and PostgreSQL with the reference when CAPHUB_TEST_POSTGRES is set),
// with the SQLite target's own server as the -peer-url registry, and
// checks that every figure was measured without a failure.
func TestHarnessTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("builds caphub and runs servers")
	}
	pg := os.Getenv("CAPHUB_TEST_POSTGRES")
	if pg == "" {
		t.Log("CAPHUB_TEST_POSTGRES is not set: SQLite only (set it to a PostgreSQL URL to run the PostgreSQL target and the reference)")
	}
	cfg, err := parseFlags([]string{"-n", "300", "-duration", "300ms", "-rounds", "1", "-clients", "4", "-page", "20",
		"-batch-defs", "500", "-invoke-clients", "2", "-postgres", pg,
		"-peer-list", "/registry/capabilities?limit=50", "-peer-get", "/registry/capabilities/{domain}/{name}@{version}",
		"-peer-list-page", "/registry/capabilities?limit={limit}"}, logWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	b, err := setup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	// The peer: a real HTTP registry, here caphub's own SQLite server.
	cfg.peerURL = b.targets[0].srv.Base
	if b.peer, err = newPeer(cfg); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := b.run(&out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if !strings.Contains(out.String(), "| measurement | caphub SQLite | caphub PostgreSQL | reference | ratio |") {
		t.Error("no table header in the output")
	}
	checkRun(t, b, pg != "")
}

// checkRun checks the figures of a tiny run: every row measured for the
// stores (and the reference where it runs) without failure, the peer
// measured, the batch whole and committed.
func checkRun(t *testing.T, b *bench, withPG bool) {
	want := []col{colSQLite}
	if withPG {
		want = append(want, colPG)
	}
	for _, rw := range b.tab.rows {
		for _, c := range want {
			if !strings.HasPrefix(rw.label, "two replicas") || c == colPG {
				checkCell(t, rw, c)
			}
		}
		if withPG && refRow(rw.label) {
			checkCell(t, rw, colRef)
		}
	}
	for _, label := range []string{"GET one version over HTTP, 4 clients", "list the first page over HTTP (limit=20)"} {
		if rw := b.tab.byLabel[label]; rw == nil || rw.cells[colRef] == nil {
			t.Errorf("%s: the peer was not measured", label)
		}
	}
	if withPG && b.tab.byLabel["two replicas: registrations on A while B serves invocations (2 clients)"] == nil {
		t.Error("the replicas were not measured")
	}
	for _, c := range want {
		checkBatch(t, b, c)
	}
}

// checkBatch checks that the batch's client got the whole reply and the
// store committed every definition.
func checkBatch(t *testing.T, b *bench, c col) {
	if rw := b.tab.byLabel["batch of 500 definitions in one POST: the client got the whole reply"]; rw == nil || !strings.HasPrefix(rw.cell(c), "yes") {
		t.Errorf("batch on %s: want the whole reply, got %q", colNames[c], cellOf(rw, c))
	}
	if rw := b.tab.byLabel["batch of 500 definitions in one POST: versions committed"]; rw == nil || rw.cell(c) != "500" {
		t.Errorf("batch on %s: versions committed %q, want 500", colNames[c], cellOf(rw, c))
	}
}

// refRow reports whether the reference measures the row.
func refRow(label string) bool {
	for _, p := range []string{"resolve", "list the first page (", "list a deep page", "search, 10", "register one definition"} {
		if strings.HasPrefix(label, p) {
			return true
		}
	}
	return false
}

// checkCell fails unless the row has a figure for c, and no failure.
func checkCell(t *testing.T, rw *row, c col) {
	t.Helper()
	if len(rw.cells[c]) == 0 || rw.cells[c][len(rw.cells[c])-1] == nil {
		t.Errorf("%s: nothing measured for %s", rw.label, colNames[c])
		return
	}
	for _, s := range rw.cells[c] {
		if s == nil {
			continue
		}
		switch rw.kind {
		case kLatency:
			if s.total == 0 || s.failed > 0 || s.p50 <= 0 || s.rate <= 0 {
				t.Errorf("%s, %s: %d calls, %d failed (%s), p50 %s, %.1f/s", rw.label, colNames[c], s.total, s.failed, s.firstErr, s.p50, s.rate)
			}
		case kBytes, kDuration:
			if s.value <= 0 {
				t.Errorf("%s, %s: %v", rw.label, colNames[c], s.value)
			}
		}
	}
}

func cellOf(rw *row, c col) string {
	if rw == nil {
		return "(no row)"
	}
	return rw.cell(c)
}

func TestParseFlagsErrors(t *testing.T) {
	for args, want := range map[string]string{
		"-only get,lst":      `unknown measurement "lst"`,
		"-only ,":            "names no measurement",
		"-n 3":               "at least 10",
		"-clients 0":         "at least 1",
		"-duration 0s":       "positive time",
		"-batch-defs 0":      "at least 1 definition",
		"-rounds 2 leftover": "unexpected argument",
	} {
		_, err := parseFlags(strings.Fields(args), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseFlags(%s) = %v, want an error saying %q", args, err, want)
		}
	}
	cfg, err := parseFlags([]string{"-only", "get, list", "-batch-defs", "0"}, &bytes.Buffer{})
	if err != nil || !cfg.wants("get") || !cfg.wants("list") || cfg.wants("batch") {
		t.Errorf("-only get, list: %+v, %v", cfg, err)
	}
}

func TestRatiosAreTakenWithinRounds(t *testing.T) {
	tab := newTable()
	// SQLite is twice as slow as the reference in each round, though the
	// machine's speed changes between rounds.
	for r, ms := range []time.Duration{1, 5, 2} {
		tab.add("x", kLatency, colSQLite, r, stat{p50: 2 * ms * time.Millisecond, rate: 100 / float64(ms), total: 10})
		tab.add("x", kLatency, colRef, r, stat{p50: ms * time.Millisecond, rate: 200 / float64(ms), total: 10})
	}
	rw := tab.byLabel["x"]
	if got := ratio(rw.cells[colSQLite], rw.cells[colRef], mP50); math.Abs(got-2) > 1e-9 {
		t.Errorf("p50 ratio %v, want 2", got)
	}
	if got := tab.ratioCell(rw); got != "SQLite ÷ ref: p50 2.00×, 0.50×/s" {
		t.Errorf("ratio cell %q", got)
	}
	if got := rw.cell(colSQLite); got != "4.000 ms / 0.000 ms / 0.000 ms · 50.0/s" {
		t.Errorf("cell %q", got)
	}
	if got := rw.cell(colPG); got != "—" {
		t.Errorf("an unmeasured cell is %q, want —", got)
	}
	// A failure is counted in the cell and explained in a note.
	tab.add("y", kLatency, colPG, 0, stat{p50: time.Millisecond, rate: 1, total: 4, failed: 1, firstErr: "boom"})
	if got := tab.byLabel["y"].cell(colPG); !strings.Contains(got, "(1 of 4 failed)") || len(tab.notes) != 1 || !strings.Contains(tab.notes[0], "boom") {
		t.Errorf("cell %q, notes %q", got, tab.notes)
	}
}

func TestPeerEntries(t *testing.T) {
	// The official registry's list shapes: July 2025 (id at the top) and
	// later (the server nested, ids in the official metadata).
	july := map[string]any{"id": "a1", "name": "io.github.x/y", "version_detail": map[string]any{"version": "1.0.2"}}
	later := map[string]any{"server": map[string]any{"name": "io.github.x/y", "version": "2.0.0"},
		"_meta": map[string]any{"io.modelcontextprotocol.registry/official": map[string]any{"serverId": "s9", "versionId": "v9"}}}
	for _, c := range []struct {
		item      map[string]any
		tmpl, out string
	}{
		{july, "/v0/servers/{id}", "/v0/servers/a1"},
		{july, "/v0/servers/{name}/versions/{version}", "/v0/servers/io.github.x%2Fy/versions/1.0.2"},
		{later, "/v0/servers/{id}?version={versionId}", "/v0/servers/s9?version=v9"},
		{later, "/v0/servers/{name}/versions/{version}", "/v0/servers/io.github.x%2Fy/versions/2.0.0"},
	} {
		if got, ok := expand(c.tmpl, entryFields(c.item)); !ok || got != c.out {
			t.Errorf("expand(%s) = %q, %v; want %q", c.tmpl, got, ok, c.out)
		}
	}
	if _, ok := expand("/v0/servers/{nope}", entryFields(july)); ok {
		t.Error("a missing field expanded")
	}
}

func TestFormats(t *testing.T) {
	for got, want := range map[string]string{
		count(0): "0", count(60000): "60,000", count(math.NaN()): "—",
		num(37.04): "37.0", num(1234567): "1,234,567",
		size(840): "840 B", size(16.7 * (1 << 20)): "16.7 MiB",
		dur(float64(280 * time.Microsecond)): "0.280 ms", dur(float64(60040 * time.Millisecond)): "60.04 s",
		mdCell("a\n  b | c"): `a b \| c`,
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
