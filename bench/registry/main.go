// Command registry is the registry's load benchmark (issue: registry at
// scale), side by side with the official MCP Registry. It loads N synthetic
// capabilities (storetest.Synthetic: varied text over 50 domains) through
// registry.Service into a fresh SQLite file and, with -postgres, a fresh
// PostgreSQL schema (ANALYZE after the load), starts the real `caphub
// serve` (built here) on each, and measures in interleaved rounds (SQLite,
// PostgreSQL, reference; again…), reporting medians over rounds and
// ratios taken within a round, since the machine is shared and noisy:
//
//   - get: GET one version over HTTP at 1 and -clients clients, the answer's
//     size, and the server's RSS under that load and after;
//   - resolve: Service.Resolve of random URIs;
//   - list: the first page (service and HTTP) and a deep page by cursor;
//   - search: Service.Search over the search index, and the store's own;
//   - write: concurrent registrations (new capabilities and new versions of
//     loaded ones), at service level and over HTTP;
//   - replicas (PostgreSQL): registrations on one `caphub serve` replica
//     alone, then while a second replica on the same schema serves
//     invocations (POST /v1/invoke of ossa:everruns/noop, each audited);
//   - batch: one -batch-defs definition registration over HTTP (once per
//     store, after the rounds): wall time, whether the reply was whole, the
//     server's peak RSS.
//
// The reference, with -postgres: the official MCP Registry's PostgreSQL
// schema, loaded with the same N entries in a schema of its own, and its
// list, search, get and publish queries replayed with pgx (mcpreg.go).
// With -peer-url, a running registry's HTTP API (e.g. the official one's
// in-memory build) is measured beside caphub's GET and list.
//
// Run: go run ./bench/registry [-n 100000] [-postgres URL] [-rounds 3] [-duration 5s]
// Quick: go run ./bench/registry -n 10000 -duration 3s -only get,list
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// measurements names what -only can pick, in the order a round runs them.
var measurements = []string{"get", "resolve", "list", "search", "write", "replicas", "batch"}

// config is what the flags say.
type config struct {
	n, rounds, clients, loadBatch, pageSize  int
	batchDefs, invokeClients, peerIDs        int
	peerPID                                  int
	duration, batchTimeout                   time.Duration
	pgURL, sqlitePath, pgSchema, caphub      string
	peerURL, peerList, peerGet, peerListPage string
	only                                     map[string]bool
	keep                                     bool
	// progress receives what the harness is doing (stderr; a test's log).
	progress *log.Logger
}

// wants reports whether measurement m runs.
func (c *config) wants(m string) bool { return c.only[m] }

func parseFlags(args []string, progress io.Writer) (*config, error) {
	fs := flag.NewFlagSet("registry", flag.ContinueOnError)
	fs.SetOutput(progress)
	c := &config{progress: log.New(progress, "", log.Ltime)}
	fs.IntVar(&c.n, "n", 100000, "capabilities to load")
	fs.IntVar(&c.rounds, "rounds", 3, "interleaved rounds (each measures every target once)")
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "how long each measurement of one target runs")
	fs.IntVar(&c.clients, "clients", 32, "concurrent clients of the concurrent measurements (GET and registrations also run at 1)")
	fs.IntVar(&c.loadBatch, "load-batch", 1000, "definitions per registration batch when loading")
	fs.IntVar(&c.pageSize, "page", 100, "page size of the list measurements (caphub's default page)")
	fs.IntVar(&c.batchDefs, "batch-defs", 60000, "definitions in the one-request batch registration")
	fs.DurationVar(&c.batchTimeout, "batch-timeout", 10*time.Minute, "how long the batch's client waits for the reply (and a job's end)")
	fs.IntVar(&c.invokeClients, "invoke-clients", 8, "clients invoking on the second replica (replicas)")
	fs.StringVar(&c.pgURL, "postgres", os.Getenv("CAPHUB_TEST_POSTGRES"), "PostgreSQL URL (default $CAPHUB_TEST_POSTGRES; empty: SQLite only, and no reference)")
	fs.StringVar(&c.caphub, "caphub", "", "caphub binary to serve with (built from this repository when empty): two builds measured in turn compare them")
	fs.StringVar(&c.sqlitePath, "sqlite", "", "SQLite file to use and keep; loading is skipped when it already holds N capabilities (repeated runs)")
	fs.StringVar(&c.pgSchema, "pg-schema", "", "PostgreSQL schema to use and keep (loading skipped when it holds N capabilities); default a fresh one, dropped at the end")
	fs.StringVar(&c.peerURL, "peer-url", "", "base URL of a running HTTP registry to GET beside caphub, e.g. the official MCP Registry's in-memory build at http://127.0.0.1:8080")
	fs.StringVar(&c.peerList, "peer-list", "/v0/servers?limit=100", "the peer's list path, read (following metadata.next_cursor) for the entries to GET")
	fs.StringVar(&c.peerGet, "peer-get", "/v0/servers/{id}", "the peer's GET path; {field} is a listed entry's string field (id, name, version, … also from _meta's official id and a nested server)")
	fs.StringVar(&c.peerListPage, "peer-list-page", "/v0/servers?limit={limit}", "the peer's first-page list path for the list measurement ({limit}: -page)")
	fs.IntVar(&c.peerIDs, "peer-ids", 1000, "at most this many listed peer entries to GET")
	fs.IntVar(&c.peerPID, "peer-pid", 0, "the peer's process id, to read its RSS (optional)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory and PostgreSQL schemas")
	only := fs.String("only", strings.Join(measurements, ","), "measurements to run, comma-separated: "+strings.Join(measurements, ", "))
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: every setting is a flag (-h lists them)", fs.Arg(0))
	}
	if err := c.parseOnly(*only); err != nil {
		return nil, err
	}
	return c, c.check()
}

// parseOnly reads -only.
func (c *config) parseOnly(only string) error {
	c.only = map[string]bool{}
	for _, m := range strings.Split(only, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if !slices.Contains(measurements, m) {
			return fmt.Errorf("-only %q: unknown measurement %q; choose from %s", only, m, strings.Join(measurements, ", "))
		}
		c.only[m] = true
	}
	if len(c.only) == 0 {
		return fmt.Errorf("-only %q names no measurement; choose from %s", only, strings.Join(measurements, ", "))
	}
	return nil
}

// check refuses settings the harness cannot run with.
func (c *config) check() error {
	switch {
	case c.n < 10:
		return fmt.Errorf("-n %d: load at least 10 capabilities", c.n)
	case c.rounds < 1 || c.clients < 1 || c.loadBatch < 1 || c.pageSize < 1 || c.invokeClients < 1 || c.peerIDs < 1:
		return fmt.Errorf("-rounds, -clients, -load-batch, -page, -invoke-clients and -peer-ids must be at least 1")
	case c.duration <= 0:
		return fmt.Errorf("-duration %s: give a positive time, e.g. 3s", c.duration)
	case c.batchDefs < 1 && c.wants("batch"):
		return fmt.Errorf("-batch-defs %d: give at least 1 definition, or leave batch out of -only", c.batchDefs)
	}
	return nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if err == flag.ErrHelp {
			return
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	b, err := setup(cfg)
	if err != nil {
		log.Fatal(err)
	}
	// The servers started must not outlive an interrupted run.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		cfg.progress.Print("interrupted: stopping the servers started and dropping the schemas")
		b.close()
		os.Exit(1)
	}()
	err = b.run(os.Stdout)
	b.close()
	if err != nil {
		log.Fatal(err)
	}
}
