// Package security is caphub's security suite: each test starts the real
// `caphub serve` binary on loopback and attacks it the way a web page, a
// token holder or a hostile definition would. Every test names the break it
// guards against; each failed on the code before its fix.
package security

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/testpeers"
	"github.com/jackc/pgx/v5"
)

// caphubBin is the binary TestMain builds once for the whole suite.
var caphubBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "caphub-security")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	caphubBin = filepath.Join(dir, "caphub")
	statSources("..")
	if out, err := exec.Command("go", "build", "-o", caphubBin, "../cmd/caphub").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ../cmd/caphub: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// statSources stats every Go file of the module: go test records the files
// a test stats, so a change to the binary's sources invalidates the cached
// result of this package, which imports none of them.
func statSources(root string) {
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".cache" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			_, _ = os.Stat(p)
		}
		return nil
	})
}

// site is one caphub installation: a database, the environment its
// commands run with, and (after serve) a running server.
type site struct {
	t    *testing.T
	dir  string
	db   string
	env  []string
	url  string
	logs *syncBuffer
	// proc is the running serve and exited closes when it exits (kill9).
	proc   *exec.Cmd
	exited chan struct{}
}

// newSite makes an empty installation in a temporary directory. env adds
// NAME=VALUE entries to the environment of every command it runs.
func newSite(t *testing.T, env ...string) *site {
	t.Helper()
	dir := t.TempDir()
	return &site{t: t, dir: dir, db: filepath.Join(dir, "caphub.db"), env: env, logs: &syncBuffer{}}
}

// caphub runs a CLI command against the site's database and returns its
// standard output, standard error and exit code.
func (s *site) caphub(args ...string) (stdout, stderr string, code int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, caphubBin, args...)
	cmd.Dir = s.dir
	cmd.Env = append(append(os.Environ(), "CAPHUB_DB="+s.db), s.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		s.t.Fatalf("caphub %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// token creates an API token with the given scopes (and extra flags, such as
// --agent) and returns its secret. Create tokens before serve: serve
// decides at start whether tokens are required.
func (s *site) token(name string, flags ...string) string {
	s.t.Helper()
	out, errOut, code := s.caphub(append([]string{"token", "create", name}, flags...)...)
	if code != 0 {
		s.t.Fatalf("token create %s: exit %d\n%s", name, code, errOut)
	}
	return strings.TrimSpace(out)
}

// serve starts `caphub serve` on a free loopback port with extra flags and
// waits until /healthz answers; the server is stopped when the test ends.
func (s *site) serve(flags ...string) {
	s.t.Helper()
	srv := testpeers.StartServe(s.t, testpeers.ServeOptions{Bin: caphubBin, Dir: s.dir, Env: append([]string{"CAPHUB_DB=" + s.db}, s.env...), Flags: flags, Logs: s.logs, LogText: s.logs.String})
	s.url, s.proc, s.exited = srv.URL, srv.Cmd, srv.Exited
}

// req is one HTTP request to the site.
type req struct {
	method, path string
	token        string            // bearer token, "" for none
	header       map[string]string // extra headers; "Host" sets the Host
	body         string
	contentType  string // default application/json when body is set; "-" for none
}

// do sends r and returns the status and body.
func (s *site) do(r req) (int, string, http.Header) {
	s.t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, s.url+r.path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	switch {
	case r.contentType == "-":
	case r.contentType != "":
		hr.Header.Set("Content-Type", r.contentType)
	case r.body != "":
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		if strings.EqualFold(k, "Host") {
			hr.Host = v
			continue
		}
		hr.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(hr)
	if err != nil {
		s.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// syncBuffer is a bytes.Buffer safe for a process writing while a test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// postgresSchema creates an empty schema in the CAPHUB_TEST_POSTGRES
// database, dropped when the test ends, and returns a URL whose
// search_path selects it; it skips the test when the variable is unset.
func postgresSchema(t *testing.T) string {
	t.Helper()
	base := os.Getenv("CAPHUB_TEST_POSTGRES")
	if base == "" {
		t.Skip("CAPHUB_TEST_POSTGRES not set: skipping the PostgreSQL case")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to CAPHUB_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "caphub_security_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		// Runs after the server's cleanup (registered later, run first).
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("CAPHUB_TEST_POSTGRES is not a URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", schema) // names its sessions (see postgresSessionsGone)
	u.RawQuery = q.Encode()
	return u.String()
}

// postgresSessionsGone waits until PostgreSQL has no session left of the
// database URL postgresSchema gave (by its application_name): after a
// kill -9 of caphub, a COMMIT the server sent before it died still
// completes, and its rows appear a moment later, once the session ends.
func postgresSessionsGone(t *testing.T, dbURL string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := u.Query().Get("application_name")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("CAPHUB_TEST_POSTGRES"))
	if err != nil {
		t.Fatalf("connect to CAPHUB_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name).Scan(&n); err != nil {
			t.Fatalf("read pg_stat_activity: %v", err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d PostgreSQL sessions of the killed server still open after 2 minutes", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
