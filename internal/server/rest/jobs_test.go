package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/registry/jobs"
)

// jobDoc is a capabilities document of n small definitions, entry bad an
// unreadable one (none when bad < 0), padded to at least pad bytes with
// long descriptions.
func jobDoc(domain string, n, bad, pad int) []byte {
	desc := "Fetch an item."
	if pad > 0 {
		desc += strings.Repeat(" More words.", pad/n/12+1)
	}
	var b strings.Builder
	b.WriteString(`{"capabilities": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		if i == bad {
			b.WriteString(`{"uri": "ossa:bulk/x@1.0", "bindings": "none"}`)
			continue
		}
		fmt.Fprintf(&b, `{"uri": "ossa:%s/item_%d@1.0", "name": "item_%d", "domain": %q, "version": "1.0.0", "description": %q,
			"input": {"type": "object"}, "output": {}, "bindings": {"http": {"method": "GET", "url": "https://bulk.example.com/items/%d"}}}`, domain, i, i, domain, desc, i)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// waitStatus polls a job until it ends.
func waitStatus(t *testing.T, call func(method, path string) answer, location string) jobs.Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		a := call("GET", location)
		if a.status != 200 {
			t.Fatalf("GET %s: %d %s", location, a.status, a.body)
		}
		var st jobs.Status
		if err := json.Unmarshal(a.body, &st); err != nil {
			t.Fatal(err)
		}
		if st.Ended() {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still running: %s", a.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestJobs(t *testing.T) {
	srv, _ := newTestServer(t)
	get := func(method, path string) answer { return call(t, srv, method, path, "", nil) }

	// POST /registry/jobs: 202 with the job's URL; it registers every
	// readable definition, a chunk at a time, and lists the unreadable one.
	a := call(t, srv, "POST", "/registry/jobs", "application/json", jobDoc("bulk", 1200, 700, 0))
	if a.status != 202 || a.header.Get("Location") == "" {
		t.Fatalf("POST /registry/jobs: %d %s", a.status, a.body)
	}
	st := waitStatus(t, get, a.header.Get("Location"))
	if st.Status != jobs.Done || st.Total != 1200 || st.Done != 1200 || st.Registered != 1199 || st.Failed != 1 || st.Rate <= 0 {
		t.Fatalf("job ended %+v", st)
	}
	if len(st.Failures) != 1 || !strings.HasPrefix(st.Failures[0].Item, "capabilities[700]") {
		t.Errorf("failures %+v, want capabilities[700]", st.Failures)
	}
	r := get("GET", st.Results)
	var res struct {
		Items []registry.RegisterResult `json:"items"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &res) != nil || len(res.Items) != 1199 || res.Items[0].URI != "ossa:bulk/item_0@1.0" || !res.Items[0].Created {
		t.Errorf("results: %d %.300s", r.status, r.body)
	}
	if g := get("GET", "/registry/capabilities/bulk/item_1199@1.0.0"); g.status != 200 {
		t.Errorf("the last definition of the job is not registered: %d", g.status)
	}

	// The same document again: every definition unchanged.
	a = call(t, srv, "POST", "/registry/jobs", "application/json", jobDoc("bulk", 1200, 700, 0))
	if st := waitStatus(t, get, a.header.Get("Location")); st.Unchanged != 1199 || st.Registered != 0 {
		t.Errorf("again: %+v", st)
	}

	// A POST /registry/capabilities over SyncBodySize becomes a job.
	big := jobDoc("large", 300, -1, SyncBodySize+1)
	a = call(t, srv, "POST", "/registry/capabilities", "application/json", big)
	if a.status != 202 || !strings.HasPrefix(a.header.Get("Location"), "/registry/jobs/") {
		t.Fatalf("large POST /registry/capabilities: %d %.300s", a.status, a.body)
	}
	if st := waitStatus(t, get, a.header.Get("Location")); st.Status != jobs.Done || st.Registered != 300 || st.Done != 300 {
		t.Errorf("large POST's job: %+v", st)
	}

	// Cancelling an ended job changes nothing; unknown jobs are 404.
	if d := get("DELETE", a.header.Get("Location")); d.status != 200 {
		t.Errorf("DELETE of an ended job: %d %s", d.status, d.body)
	}
	for _, p := range []string{"/registry/jobs/nope", "/registry/jobs/nope/results"} {
		if g := get("GET", p); g.status != 404 {
			t.Errorf("GET %s: %d", p, g.status)
		}
	}
	if a := call(t, srv, "POST", "/registry/jobs", "application/json", []byte(`{"capabilities": [{}`)); a.status != 400 {
		t.Errorf("a broken document: %d %s", a.status, a.body)
	}
}

// TestJobStale checks that a job whose server stopped is reported failed,
// with how far it got.
func TestJobStale(t *testing.T) {
	srv, _ := newTestServer(t)
	s := srv.Config.Handler.(*Server)
	old := jobs.Status{ID: "gone", Status: jobs.Running, StartedAt: time.Now().Add(-time.Hour)}
	old.Total, old.Done = 10, 4
	b, _ := json.Marshal(old)
	// Written as an older server process left it: not refreshed since.
	if err := s.svc.Store().PutDoc(context.Background(), jobs.DocKind, "gone", []byte(strings.Replace(string(b), `"updated_at":"0001-01-01T00:00:00Z"`, `"updated_at":"2020-01-01T00:00:00Z"`, 1))); err != nil {
		t.Fatal(err)
	}
	a := call(t, srv, "GET", "/registry/jobs/gone", "", nil)
	var st jobs.Status
	if a.status != 200 || json.Unmarshal(a.body, &st) != nil || st.Status != jobs.Failed || !strings.Contains(st.Error, "after 4 of 10") {
		t.Errorf("stale job: %d %s", a.status, a.body)
	}
	if a := call(t, srv, "GET", "/registry/jobs/gone/results", "", nil); a.status != 410 {
		t.Errorf("results of a job of an earlier run: %d %s", a.status, a.body)
	}
}

// TestJobCancel cancels a running job: it stops after the chunk it is
// registering, which stays registered.
func TestJobCancel(t *testing.T) {
	srv, _ := newTestServer(t)
	a := call(t, srv, "POST", "/registry/jobs", "application/json", jobDoc("cancel", 20000, -1, 0))
	if a.status != 202 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	d := call(t, srv, "DELETE", a.header.Get("Location"), "", nil)
	var st jobs.Status
	if d.status != 200 || json.Unmarshal(d.body, &st) != nil {
		t.Fatalf("DELETE: %d %s", d.status, d.body)
	}
	if st.Status != jobs.Cancelled || st.Done >= st.Total || st.Done%registry.ImportChunk != 0 || !strings.Contains(st.Error, "cancelled after") {
		t.Fatalf("cancelled job: %+v", st)
	}
	stored := 0
	f := registry.ListFilter{Domain: "cancel", AllVersions: true, Limit: 100}
	for {
		p, err := srv.Config.Handler.(*Server).svc.Store().List(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		stored += len(p.Items)
		if p.NextCursor == "" {
			break
		}
		f.Cursor = p.NextCursor
	}
	if stored != st.Registered {
		t.Errorf("%d registered according to the job, %d stored", st.Registered, stored)
	}
}
