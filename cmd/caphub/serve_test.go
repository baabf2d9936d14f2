package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/client"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/registry"
	"github.com/jackc/pgx/v5"
)

// caphubBinary builds the real caphub binary once per test run (removed
// by TestMain).
func caphubBinary(t testing.TB) string { return testpeers.Caphub(t) }

// serveProc is a running `caphub serve` process (testpeers.StartServe).
type serveProc struct {
	*testpeers.Serve
	cmd  *exec.Cmd
	url  string
	logs *bytes.Buffer
}

// wait waits until the process has exited and returns how.
func (p *serveProc) wait() error { return p.Wait() }

// startServe starts `caphub serve` on db (with extra flags) and waits until
// /healthz answers.
func startServe(t *testing.T, db string, flags ...string) *serveProc {
	t.Helper()
	return startServeEnv(t, nil, db, flags...)
}

// startServeEnv is startServe with variables (NAME=value) added to the
// environment.
func startServeEnv(t *testing.T, env []string, db string, flags ...string) *serveProc {
	t.Helper()
	logs := &bytes.Buffer{}
	s := testpeers.StartServe(t, testpeers.ServeOptions{Bin: caphubBinary(t), Env: env, Flags: append([]string{"--db", db}, flags...),
		Logs: logs, LogText: logs.String})
	return &serveProc{Serve: s, cmd: s.Cmd, url: s.URL, logs: logs}
}

func synthetic(prefix string, batch, n int) []capability.Definition {
	defs := make([]capability.Definition, n)
	for i := range defs {
		name := fmt.Sprintf("%s_b%d_c%d", prefix, batch, i)
		defs[i] = capability.Definition{
			URI: "ossa:bulk/" + name + "@1.0", Name: name, Domain: "bulk", Version: "1.0.0", Stability: "stable",
			Description: fmt.Sprintf("Synthetic capability %d of batch %d", i, batch),
			Input:       capability.Schema{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}},
			Output:      capability.Schema{"type": "object"},
			Bindings:    capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: "https://example.com/{q}"}},
		}
	}
	return defs
}

func postJSON(url string, body any) (int, []byte, error) {
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out, nil
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// kill -9 during bulk registration: after a restart the database opens,
// every acknowledged batch is there in full, and no batch is half-written.
func TestServeKill9DuringBulkRegistration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caphub binary")
	}
	db := filepath.Join(t.TempDir(), "caphub.db")
	p := startServe(t, db)
	const batchSize = 40
	acked := map[int]bool{}
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := 0; ; b++ {
			select {
			case <-stop:
				return
			default:
			}
			status, _, err := postJSON(p.url+"/registry/capabilities", map[string]any{"capabilities": synthetic("k", b, batchSize)})
			if err != nil {
				return // the server is gone
			}
			if status == http.StatusCreated {
				mu.Lock()
				acked[b] = true
				mu.Unlock()
			}
		}
	}()
	// Let several batches land, then kill the server mid-stream.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 5 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.wait()
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 5 {
		t.Fatalf("only %d batches were acknowledged before the kill:\n%s", len(acked), p.logs.String())
	}

	q := startServe(t, db)
	cl, err := client.New(q.url)
	if err != nil {
		t.Fatal(err)
	}
	list, err := registry.ListAll(context.Background(), cl, registry.ListFilter{Domain: "bulk"}) // every page
	if err != nil {
		t.Fatal(err)
	}
	perBatch := map[int]int{}
	for _, r := range list {
		var b, c int
		if _, err := fmt.Sscanf(r.Definition.Name, "k_b%d_c%d", &b, &c); err != nil {
			t.Fatalf("unexpected capability %s", r.Definition.Name)
		}
		perBatch[b]++
	}
	for b := range acked {
		if perBatch[b] != batchSize {
			t.Errorf("acknowledged batch %d has %d of %d capabilities after the restart", b, perBatch[b], batchSize)
		}
	}
	for b, n := range perBatch {
		if n != batchSize {
			t.Errorf("batch %d is half-written: %d of %d capabilities", b, n, batchSize)
		}
	}
	t.Logf("%d batches acknowledged before kill -9, %d present after restart (%d capabilities)", len(acked), len(perBatch), len(list))
}

// Two `caphub serve` replicas on one PostgreSQL database see each other's
// writes at once.
func TestServeReplicasOnPostgres(t *testing.T) {
	base := os.Getenv("CAPHUB_TEST_POSTGRES")
	if base == "" {
		t.Skip("CAPHUB_TEST_POSTGRES not set: skipping the PostgreSQL replica test")
	}
	if testing.Short() {
		t.Skip("builds and runs the caphub binary")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect %s: %v", base, err)
	}
	schema := fmt.Sprintf("caphub_replicas_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	db := base + sep + "search_path=" + schema
	a := startServe(t, db)
	b := startServe(t, db)

	for i, pair := range [][2]*serveProc{{a, b}, {b, a}} {
		writer, reader := pair[0], pair[1]
		defs := synthetic(fmt.Sprintf("r%d", i), 0, 3)
		status, body, err := postJSON(writer.url+"/registry/capabilities", map[string]any{"capabilities": defs})
		if err != nil || status != http.StatusCreated {
			t.Fatalf("register on %s: %d %v %s", writer.url, status, err, body)
		}
		for _, d := range defs {
			if s := getStatus(t, reader.url+"/registry/capabilities/bulk/"+d.Name+"@1.0"); s != 200 {
				t.Errorf("replica %s does not see %s written through %s: status %d", reader.url, d.Name, writer.url, s)
			}
		}
		// A conflicting write through the other replica is refused.
		defs[0].Description = "changed"
		status, body, _ = postJSON(reader.url+"/registry/capabilities", map[string]any{"capability": defs[0]})
		if status != http.StatusConflict {
			t.Errorf("conflicting write through the other replica: %d %s", status, body)
		}
	}
}
