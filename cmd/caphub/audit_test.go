package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/store/sqlite"
)

// tamperSQL runs one statement on the database file directly, past the
// store, as someone altering the chain would.
func tamperSQL(t *testing.T, path, query string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		t.Fatalf("tamper with %q: %v", query, err)
	}
}

func TestAuditCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "caphub.db")
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	l := audit.New(st)
	for i, e := range []chain.Event{
		{Kind: audit.KindRegistered, Actor: "alice", Capability: "ossa:text/echo@1.0", Data: json.RawMessage(`{"version":"1.0.0"}`)},
		{Kind: audit.KindInvocation, Actor: "agent-7", Capability: "ossa:text/echo@1", Data: json.RawMessage(`{"code":""}`)},
		{Kind: audit.KindRegistered, Actor: "alice", Capability: "ossa:text/upper@1.0", Data: json.RawMessage(`{"version":"1.0.0"}`)},
		{Kind: audit.KindInvocation, Actor: "agent-7", Capability: "ossa:text/upper@1.0", Data: json.RawMessage(`{"code":"TIMEOUT"}`)},
		{Kind: audit.KindDeprecated, Actor: "bob", Capability: "ossa:text/echo@1.0.0", Data: json.RawMessage(`{"migration_guide":"use upper"}`)},
	} {
		if _, err := l.Append(t.Context(), e); err != nil {
			t.Fatalf("append event %d: %v", i+1, err)
		}
	}
	st.Close()
	db := []string{"--db", path}
	cli := func(args ...string) (int, string, string) { return caphub(t, append(args, db...)...) }

	code, out, errOut := cli("audit", "verify")
	if code != 0 || !strings.Contains(out, "audit chain intact: 5 events, head event 5, hash ") {
		t.Fatalf("verify an intact chain: exit %d\n%s%s", code, out, errOut)
	}

	code, out, errOut = cli("audit", "list")
	if code != 0 || !strings.Contains(out, "SEQ  TIME") || !strings.Contains(out, "agent-7") || !strings.HasSuffix(out, "5 events\n") {
		t.Errorf("list: exit %d\n%s%s", code, out, errOut)
	}
	for _, tt := range []struct {
		args []string
		want []int64
	}{
		{[]string{"--kind", "invocation"}, []int64{2, 4}},
		{[]string{"--capability", "ossa:text/echo"}, []int64{1, 2, 5}},
		{[]string{"--capability", "ossa:text/echo@1.0"}, []int64{1}},
		{[]string{"--limit", "2", "--after-seq", "2"}, []int64{3, 4}},
		{[]string{"--since", "1h"}, []int64{1, 2, 3, 4, 5}},
		{[]string{"--since", "2d"}, []int64{1, 2, 3, 4, 5}},
		{[]string{"--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, []int64{}},
	} {
		code, out, errOut := cli(append([]string{"audit", "list", "--format", "json"}, tt.args...)...)
		var got struct{ Items []chain.Event }
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
			t.Errorf("list %v: exit %d\n%s%s", tt.args, code, out, errOut)
			continue
		}
		var seqs []int64
		for _, e := range got.Items {
			seqs = append(seqs, e.Seq)
		}
		if fmt.Sprint(seqs) != fmt.Sprint(tt.want) {
			t.Errorf("list %v: events %v, want %v", tt.args, seqs, tt.want)
		}
	}

	// Tampering with the database directly breaks the chain where it
	// happened.
	tamperSQL(t, path, `UPDATE audit_events SET data = '{"code":"OK"}' WHERE seq = 4`)
	code, out, errOut = cli("audit", "verify")
	if code != 1 || !strings.Contains(out, "audit chain broken at event 4: event 4 was altered: its hash does not match its content") || !strings.Contains(out, "; the 3 events before it are intact") {
		t.Errorf("verify after altering event 4: exit %d, want 1\n%s%s", code, out, errOut)
	}
	tamperSQL(t, path, `DELETE FROM audit_events WHERE seq = 2`)
	code, out, errOut = cli("audit", "verify", "--format", "json")
	var res audit.VerifyResult
	if code != 1 || json.Unmarshal([]byte(out), &res) != nil || res.OK || res.Break == nil || res.Break.Seq != 2 ||
		res.Break.Message != "event 2 is missing (the chain jumps from 1 to 3)" {
		t.Errorf("verify after deleting event 2: exit %d, want 1\n%s%s", code, out, errOut)
	}

	for _, args := range [][]string{
		{"audit", "list", "--since", "yesterday"},
		{"audit", "list", "--limit", "-1"},
		{"audit", "prune", "--max-events", "1", "--server", "http://127.0.0.1:1"},
		{"audit", "list", "--until", "tomorrow"},
		{"audit", "verify", "extra"},
	} {
		if code, out, errOut := cli(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)\n%s%s", args, code, out, errOut)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2025, 6, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2025-06-01T08:30:00Z":      time.Date(2025, 6, 1, 8, 30, 0, 0, time.UTC),
		"2025-06-01T08:30:00+02:00": time.Date(2025, 6, 1, 6, 30, 0, 0, time.UTC),
		"2025-06-01":                time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC),
		"90m":                       now.Add(-90 * time.Minute),
		"24h":                       now.Add(-24 * time.Hour),
		"7d":                        now.Add(-7 * 24 * time.Hour),
		"1d12h":                     now.Add(-36 * time.Hour),
	} {
		got, err := parseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yesterday", "-5m", "d", "xd", "1d-", "2025-13-01"} {
		if _, err := parseSince(in, now); err == nil || !strings.Contains(err.Error(), "--since") {
			t.Errorf("parseSince(%q): %v, want an error naming --since", in, err)
		}
	}
}

// TestServeShutdownKeepsAuditEvents: invocation records are written behind
// the calls (not waited for), so a clean shutdown must write every one that
// was queued: after SIGTERM the chain holds an invocation event per call
// that returned, and verifies.
func TestServeShutdownKeepsAuditEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caphub binary")
	}
	t.Setenv("CAPHUB_SERVER", "")
	db := filepath.Join(t.TempDir(), "caphub.db")
	p := startServe(t, db)
	const calls = 300
	for i := range calls {
		resp, err := http.Post(p.url+"/v1/invoke", "application/json", strings.NewReader(fmt.Sprintf(`{"uri":"ossa:everruns/add@1.0","input":{"a":%d,"b":1}}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("invoke %d: %s", i, resp.Status)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(); err != nil {
		t.Fatalf("serve did not stop cleanly: %v\n%s", err, p.logs)
	}
	code, out, errOut := caphub(t, "audit", "list", "--db", db, "--kind", "invocation", "--format", "json")
	if code != exitOK {
		t.Fatalf("audit list: %d %s", code, errOut)
	}
	if n := strings.Count(out, `"kind": "invocation"`); n != calls {
		t.Errorf("%d invocation events after shutdown, want %d", n, calls)
	}
	if code, out, errOut = caphub(t, "audit", "verify", "--db", db); code != exitOK || !strings.Contains(out, "intact") {
		t.Errorf("audit verify: %d %s %s", code, out, errOut)
	}
}

// TestAuditPruneCommand prunes a database's chain by hand: the limits are
// checked, verify then says where it verified from (text and JSON), a
// second prune moves the checkpoint, and a chain whose first kept events
// were deleted is reported broken and not pruned.
func TestAuditPruneCommand(t *testing.T) {
	t.Setenv(envAuditMaxEvents, "")
	t.Setenv(envAuditMaxAge, "")
	path := filepath.Join(t.TempDir(), "caphub.db")
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	l := audit.New(st)
	for i := range 30 {
		if _, err := l.Record(t.Context(), audit.KindInvocation, "agent-7", "ossa:text/echo@1.0", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	st.Close()
	cli := func(args ...string) (int, string, string) { return caphub(t, append(args, "--db", path)...) }

	for _, args := range [][]string{
		{"audit", "prune"},
		{"audit", "prune", "--max-events", "-1"},
		{"audit", "prune", "--max-age", "yesterday"},
		{"audit", "prune", "--max-age", "-5m"},
		{"audit", "prune", "--max-age", "99999999999d"},
	} {
		if code, out, errOut := cli(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)\n%s%s", args, code, out, errOut)
		}
	}
	if code, out, errOut := cli("audit", "prune", "--max-age", "90d"); code != 0 || out != "nothing to prune: 30 events kept\n" {
		t.Errorf("prune of events younger than 90 days: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := cli("audit", "prune", "--max-events", "10")
	if code != 0 || !strings.HasPrefix(out, "pruned 20 events in 1 batch: events 1 to 20 (up to ") || !strings.Contains(out, "11 events kept from event 21; checkpoint hash ") {
		t.Fatalf("prune to 10 events: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli("audit", "verify")
	if code != 0 || !strings.Contains(out, "audit chain intact: verified 11 events from event 21 (checkpoint of ") || !strings.Contains(out, ", 20 events pruned) to event 31, head hash ") {
		t.Errorf("verify after the prune: exit %d\n%s%s", code, out, errOut)
	}

	// The variables are the defaults of the flags.
	t.Setenv(envAuditMaxEvents, "5")
	code, out, errOut = cli("audit", "prune", "--format", "json")
	var pr audit.PruneResult
	if code != 0 || json.Unmarshal([]byte(out), &pr) != nil || pr.Pruned != 6 || pr.Checkpoint == nil || pr.Checkpoint.Seq != 26 || pr.Checkpoint.Record != 32 || pr.Kept != 6 {
		t.Fatalf("prune with %s=5: exit %d\n%s%s", envAuditMaxEvents, code, out, errOut)
	}
	code, out, errOut = cli("audit", "verify", "--format", "json")
	var res audit.VerifyResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.OK || res.FromSeq != 27 || res.FromHash != pr.Checkpoint.Hash || res.Pruned != 26 ||
		res.Checkpoint == nil || res.Checkpoint.Record != 32 || res.Count != 6 || res.HeadSeq != 32 {
		t.Errorf("verify --format json after two prunes: exit %d\n%s%s", code, out, errOut)
	}
	for _, field := range []string{`"from_seq": 27`, `"from_hash": "` + pr.Checkpoint.Hash, `"pruned": 26`, `"checkpoint": {`} {
		if !strings.Contains(out, field) {
			t.Errorf("verify --format json lacks %s:\n%s", field, out)
		}
	}
	t.Setenv(envAuditMaxEvents, "")

	// Events deleted at the start without a checkpoint: broken, and prune
	// refuses to remove the evidence.
	tamperSQL(t, path, `DELETE FROM audit_events WHERE seq = 27`)
	code, out, errOut = cli("audit", "verify")
	if code != 1 || !strings.Contains(out, "audit chain broken at event 27: event 27 is missing: the checkpoint says events 1 to 26 were pruned, but the chain starts at event 28") {
		t.Errorf("verify after deleting event 27: exit %d, want 1\n%s%s", code, out, errOut)
	}
	if code, out, errOut := cli("audit", "prune", "--max-events", "1"); code != 1 || !strings.Contains(errOut, "nothing was pruned; run caphub audit verify") {
		t.Errorf("prune of a broken chain: exit %d, want 1\n%s%s", code, out, errOut)
	}
}

// TestAuditRetentionConfig: serve reads --audit-max-events and
// --audit-max-age, else their variables; zero keeps everything.
func TestAuditRetentionConfig(t *testing.T) {
	serveConfig := func(args ...string) (config, error) {
		root := newRootCmd()
		cmd, rest, err := root.Find(append([]string{"serve"}, args...))
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatal(err)
		}
		return configFrom(cmd, slog.LevelWarn)
	}
	for _, c := range []struct {
		events, age string
		args        []string
		want        audit.Retention
		wantErr     string
	}{
		{want: audit.Retention{}},
		{events: "1000", age: "30d", want: audit.Retention{MaxEvents: 1000, MaxAge: 30 * 24 * time.Hour}},
		{events: "1000", age: "30d", args: []string{"--audit-max-events", "50", "--audit-max-age", "90m"}, want: audit.Retention{MaxEvents: 50, MaxAge: 90 * time.Minute}},
		{age: "0", args: []string{"--audit-max-events", "0"}, want: audit.Retention{}},
		{events: "many", wantErr: envAuditMaxEvents},
		{args: []string{"--audit-max-events", "-3"}, wantErr: "--audit-max-events -3"},
		{age: "forever", wantErr: envAuditMaxAge},
	} {
		t.Setenv(envAuditMaxEvents, c.events)
		t.Setenv(envAuditMaxAge, c.age)
		cfg, err := serveConfig(c.args...)
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%+v: error %v, want one naming %s", c, err, c.wantErr)
		case c.wantErr == "" && (err != nil || cfg.auditRetention != c.want):
			t.Errorf("%+v: retention %+v, %v; want %+v", c, cfg.auditRetention, err, c.want)
		}
	}
}

// FuzzAuditMaxAge: any --audit-max-age value is read or refused without a
// panic; an age read is not negative and reads back from its String.
func FuzzAuditMaxAge(f *testing.F) {
	for _, s := range []string{"", "0", "90m", "720h", "30d", "1d12h", "-5m", "d", "9223372036854775807d", "106751d23h47m16s", "106751d24h", " 7d "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseMaxAge(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("parseMaxAge(%q) = %v, a negative age", s, d)
		}
		if back, err := parseMaxAge(d.String()); err != nil || back != d {
			t.Fatalf("parseMaxAge(%q) = %v, which reads back from %q as %v, %v", s, d, d.String(), back, err)
		}
	})
}

// TestAuditRetentionServe: caphub serve --audit-max-events prunes its
// chain in the background as calls are recorded, logs it, and the chain
// verifies from the checkpoint after shutdown.
func TestAuditRetentionServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caphub binary")
	}
	t.Setenv("CAPHUB_SERVER", "")
	db := filepath.Join(t.TempDir(), "caphub.db")
	p := startServe(t, db, "--audit-max-events", "50")
	for i := range 200 {
		resp, err := http.Post(p.url+"/v1/invoke", "application/json", strings.NewReader(fmt.Sprintf(`{"uri":"ossa:everruns/add@1.0","input":{"a":%d,"b":1}}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("invoke %d: %s", i, resp.Status)
		}
	}
	// The pruner runs beside the calls: wait (bounded) until it pruned.
	var res audit.VerifyResult
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, out, errOut := caphub(t, "audit", "verify", "--db", db, "--format", "json")
		if code != exitOK && code != 1 || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("audit verify: exit %d\n%s%s", code, out, errOut)
		}
		if res.Checkpoint != nil && res.Pruned >= 150 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after 200 calls serve --audit-max-events 50 had pruned %d events:\n%s", res.Pruned, p.logs)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(); err != nil {
		t.Fatalf("serve did not stop cleanly: %v\n%s", err, p.logs)
	}
	code, out, errOut := caphub(t, "audit", "verify", "--db", db)
	if code != exitOK || !strings.Contains(out, "audit chain intact: verified ") || !strings.Contains(out, "events pruned) to event ") {
		t.Errorf("audit verify after serve pruned: exit %d\n%s%s", code, out, errOut)
	}
	if logs := p.logs.String(); !strings.Contains(logs, "audit retention: pruning the audit chain in the background") || !strings.Contains(logs, `msg="audit chain pruned"`) {
		t.Errorf("serve's logs do not show its retention:\n%s", logs)
	}
}
