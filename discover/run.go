package discover

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"gopkg.in/yaml.v3"
)

// Options steer a discovery.
type Options struct {
	Register bool   // register new and changed tools, deprecate vanished ones
	Version  string // caphub's version, reported as the introspector version
	// Export, when set, receives every definition the discovery registers
	// (e.g. to write RTFS files).
	Export func(defs []capability.Definition) error
}

// Report is the outcome of discovering one server.
type Report struct {
	Server   string                     `json:"server"`
	Tools    int                        `json:"tools"`
	Plan     *Plan                      `json:"plan,omitempty"`
	Failures []capability.ImportFailure `json:"failures,omitempty"`
	Error    string                     `json:"error,omitempty"`
}

// Run saves the server, lists its tools, caches the listing, and plans (and
// with Register, applies) the registry changes.
func Run(ctx context.Context, reg registry.API, servers ServerAPI, srv *mcpconn.Server, opts Options) (*Report, error) {
	listing, err := introspect(ctx, srv, opts.Version)
	if err != nil {
		return nil, err
	}
	if err := servers.SaveServer(ctx, srv); err != nil {
		return nil, err
	}
	if err := servers.SaveListing(ctx, listing); err != nil {
		return nil, err
	}
	defs, failures := Definitions(listing, opts.Version)
	plan, err := planRediscovery(ctx, reg, srv.Name, defs)
	if err != nil {
		return nil, err
	}
	rep := &Report{Server: srv.Name, Tools: len(listing.Tools), Plan: plan, Failures: append(failures, plan.Failures...)}
	if opts.Register {
		if err := applyPlan(ctx, reg, srv.Name, plan); err != nil {
			return rep, err
		}
		if opts.Export != nil && len(plan.Register) > 0 {
			if err := opts.Export(plan.Register); err != nil {
				return rep, fmt.Errorf("export: %w", err)
			}
		}
	}
	return rep, nil
}

// Config is a discovery configuration file: several servers discovered in
// parallel (CCOS §6.2 discovery options).
type Config struct {
	MaxParallelDiscoveries int              `json:"max_parallel_discoveries" yaml:"max_parallel_discoveries"`
	Register               *bool            `json:"register" yaml:"register"`             // default true
	ExportToRTFS           string           `json:"export_to_rtfs" yaml:"export_to_rtfs"` // a directory, "" for none
	Servers                []mcpconn.Server `json:"servers" yaml:"servers"`
}

// defaultMaxParallel is CCOS's default max_parallel_discoveries.
const defaultMaxParallel = 5

// ReadConfig reads a discovery configuration (YAML or JSON).
func ReadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read discovery config: %w", err)
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %v (expected max_parallel_discoveries, register, export_to_rtfs and servers: [{name, command, args, env, url, headers}])", path, err)
	}
	if c.MaxParallelDiscoveries == 0 {
		c.MaxParallelDiscoveries = defaultMaxParallel
	}
	if c.MaxParallelDiscoveries < 0 {
		return nil, fmt.Errorf("%s: max_parallel_discoveries %d must be positive", path, c.MaxParallelDiscoveries)
	}
	if len(c.Servers) == 0 {
		return nil, fmt.Errorf("%s: no servers: list them under the servers key", path)
	}
	seen := map[string]bool{}
	for i := range c.Servers {
		s := &c.Servers[i]
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("%s: servers[%d]: %v", path, i, err)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("%s: servers[%d]: the name %q is used twice", path, i, s.Name)
		}
		seen[s.Name] = true
	}
	return &c, nil
}

// Runner discovers one server (Run on a local registry, or a remote caphub
// doing it).
type Runner func(ctx context.Context, srv *mcpconn.Server) (*Report, error)

// RunAll discovers every server of a configuration with run, at most
// MaxParallelDiscoveries at a time. A server that fails is reported with
// its error; the others go on. Reports are in configuration order.
func RunAll(ctx context.Context, c *Config, run Runner) []*Report {
	reports := make([]*Report, len(c.Servers))
	sem := make(chan struct{}, max(c.MaxParallelDiscoveries, 1))
	var wg sync.WaitGroup
	for i := range c.Servers {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			srv := c.Servers[i]
			rep, err := run(ctx, &srv)
			if rep == nil {
				rep = &Report{Server: srv.Name}
			}
			if err != nil {
				rep.Error = err.Error()
			}
			reports[i] = rep
		}(i)
	}
	wg.Wait()
	return reports
}
