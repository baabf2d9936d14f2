package security

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, to tamper with a site's database

	"github.com/caphub/caphub/capability"
)

// Break 6: "the record is never shorter than what happened". A
// registration was committed first and its audit event appended after, in
// another transaction: kill -9 of caphub serve under bulk registration left
// stored capability versions without their "registered" event (12 on
// SQLite, 4 on PostgreSQL), and caphub audit verify still said "intact".
// Now a version and its event commit in one transaction, and verify checks
// that every stored version has its event.

// TestAuditKill9DuringBulkRegistrationSQLite kills caphub serve on SQLite
// while batches are being registered over REST: afterwards every stored
// version has its registration event and audit verify passes.
func TestAuditKill9DuringBulkRegistrationSQLite(t *testing.T) {
	kill9DuringBulkRegistration(t, newSite(t), func() {})
}

// TestAuditKill9DuringBulkRegistrationPostgres is the same on PostgreSQL
// (CAPHUB_TEST_POSTGRES), in a schema of its own. The versions are read once
// the killed server's sessions have ended: a COMMIT it sent before it died
// still completes (a loaded CI run read 504 versions, then audit verify
// 704).
func TestAuditKill9DuringBulkRegistrationPostgres(t *testing.T) {
	db := postgresSchema(t)
	kill9DuringBulkRegistration(t, newSite(t, "CAPHUB_DB="+db), func() { postgresSessionsGone(t, db) })
}

// kill9DuringBulkRegistration kills s's server under bulk registration;
// settled returns once what the server sent its store is all there.
func kill9DuringBulkRegistration(t *testing.T, s *site, settled func()) {
	s.serve()
	const posters, batchSize, beforeKill = 6, 40, 12
	var acked atomic.Int64
	enough := make(chan struct{})
	var once sync.Once
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; ; b++ {
				select {
				case <-stop:
					return
				default:
				}
				status, err := postBatch(s.url, bulkBatch(p, b, batchSize))
				if err != nil {
					return // the server is gone
				}
				if status == http.StatusCreated && acked.Add(1) >= beforeKill {
					once.Do(func() { close(enough) })
				}
			}
		}()
	}
	select {
	case <-enough:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d batches were registered in a minute:\n%s", acked.Load(), s.logs.String())
	}
	// Kill the server while every poster has a batch in flight.
	if err := syscall.Kill(s.proc.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.exited
	close(stop)
	wg.Wait()
	settled()

	versions := storedVersions(t, s)
	if len(versions) < beforeKill*batchSize {
		t.Fatalf("%d versions stored, want at least the %d of the acknowledged batches", len(versions), beforeKill*batchSize)
	}
	recorded := registeredEvents(t, s)
	var missing []string
	for _, v := range versions {
		if !recorded[v] {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d stored versions have no registration event after kill -9, e.g. %s", len(missing), len(versions), missing[0])
	}
	out, errOut, code := s.caphub("audit", "verify")
	if code != 0 || !strings.Contains(out, "audit chain intact") || !strings.Contains(out, fmt.Sprintf("registrations recorded: all %d stored versions have their registration event", len(versions))) {
		t.Errorf("audit verify after kill -9: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("%d batches acknowledged before kill -9; %d versions stored (%d of them built-in or of batches not acknowledged)",
		acked.Load(), len(versions), len(versions)-int(acked.Load())*batchSize)
}

// TestAuditVerifyFindsUnrecordedVersion removes the newest event — the
// registration of the last version — from the database: the chain alone
// still verifies (a chain cut at its end is a shorter valid chain), but
// audit verify finds the version without its event, names it and exits 1.
func TestAuditVerifyFindsUnrecordedVersion(t *testing.T) {
	s := newSite(t)
	for i := range 2 {
		path := s.dir + fmt.Sprintf("/def%d.json", i)
		b, err := json.Marshal(bulkBatch(9, i, 1)[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := s.caphub("capability", "register", path); code != 0 {
			t.Fatalf("register %s: exit %d\n%s", path, code, errOut)
		}
	}
	if out, errOut, code := s.caphub("audit", "verify"); code != 0 {
		t.Fatalf("audit verify before tampering: exit %d\n%s%s", code, out, errOut)
	}
	db, err := sql.Open("sqlite", s.db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM audit_events WHERE seq = (SELECT max(seq) FROM audit_events)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, errOut, code := s.caphub("audit", "verify")
	if code != 1 || !strings.Contains(out, "audit chain intact: 1 event") ||
		!strings.Contains(out, "registrations NOT recorded: 1 of 2 stored versions have no registration event") ||
		!strings.Contains(out, "ossa:bulk/s9_b1_c0@1.0.0") {
		t.Errorf("audit verify with a version whose event was removed: exit %d, want 1 naming ossa:bulk/s9_b1_c0@1.0.0\n%s%s", code, out, errOut)
	}
	out, _, code = s.caphub("audit", "verify", "--format", "json")
	var res struct {
		OK            bool
		Registrations struct {
			OK         bool
			Unrecorded int
			Missing    []string
		}
	}
	if code != 1 || json.Unmarshal([]byte(out), &res) != nil || res.OK || res.Registrations.OK || res.Registrations.Unrecorded != 1 ||
		len(res.Registrations.Missing) != 1 || res.Registrations.Missing[0] != "ossa:bulk/s9_b1_c0@1.0.0" {
		t.Errorf("audit verify --format json: exit %d\n%s", code, out)
	}
}

// bulkBatch returns n small distinct definitions for batch b of poster p.
func bulkBatch(p, b, n int) []capability.Definition {
	defs := make([]capability.Definition, n)
	for i := range defs {
		name := fmt.Sprintf("s%d_b%d_c%d", p, b, i)
		defs[i] = capability.Definition{
			URI: "ossa:bulk/" + name + "@1.0", Name: name, Domain: "bulk", Version: "1.0.0", Stability: "stable",
			Description: fmt.Sprintf("Synthetic capability %d of batch %d of poster %d.", i, b, p),
			Input:       capability.Schema{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}},
			Output:      capability.Schema{"type": "object"},
			Bindings:    capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: "https://example.com/{q}"}},
		}
	}
	return defs
}

// postBatch registers defs in one request (POST /registry/capabilities);
// an error means no answer came.
func postBatch(base string, defs []capability.Definition) (int, error) {
	b, err := json.Marshal(map[string]any{"capabilities": defs})
	if err != nil {
		return 0, err
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Post(base+"/registry/capabilities", "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// storedVersions lists every stored version (caphub capability list) as
// "scheme:domain/name version".
func storedVersions(t *testing.T, s *site) []string {
	t.Helper()
	out, errOut, code := s.caphub("capability", "list", "--all-versions", "--format", "json")
	var list struct{ Items []capability.Definition }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("capability list: exit %d\n%s", code, errOut)
	}
	var vs []string
	for _, d := range list.Items {
		base, _, _ := strings.Cut(d.URI, "@")
		vs = append(vs, base+" "+d.Version)
	}
	return vs
}

// registeredEvents returns the versions the "registered" events name
// (caphub audit list), as storedVersions writes them.
func registeredEvents(t *testing.T, s *site) map[string]bool {
	t.Helper()
	out, errOut, code := s.caphub("audit", "list", "--kind", "registered", "--format", "json")
	var list struct {
		Items []struct {
			Capability string
			Data       struct{ Version string }
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("audit list: exit %d\n%s", code, errOut)
	}
	m := map[string]bool{}
	for _, e := range list.Items {
		base, _, _ := strings.Cut(e.Capability, "@")
		m[base+" "+e.Data.Version] = true
	}
	return m
}
