// Package metrics is caphub's Prometheus instrumentation: the invocation
// metrics (calls, errors by code, latency by binding) and the metrics that
// agents record through ossa:observability/metric, served on /metrics.
package metrics

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds one registry of collectors.
type Metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	limited  *prometheus.CounterVec
	regOps   *prometheus.HistogramVec
	commits  *prometheus.HistogramVec
	http     *prometheus.HistogramVec

	mu     sync.Mutex
	custom map[string]customMetric // agent-recorded metrics by name

	// httpSeries are the series of http used so far (see httpObserver).
	httpMu     sync.RWMutex
	httpSeries map[httpSeries]prometheus.Observer
}

// httpSeries names one series of caphub_http_request_duration_seconds.
type httpSeries struct {
	route, method string
	code          int
}

// maxHTTPSeries bounds the series httpObserver keeps (route groups and
// methods are fixed sets, codes three digits: far fewer are used).
const maxHTTPSeries = 1024

type customMetric struct {
	kind   string
	labels []string
	vec    prometheus.Collector
}

// New returns a fresh set of metrics with Go and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), custom: map[string]customMetric{}, httpSeries: map[httpSeries]prometheus.Observer{}}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "caphub_invocations_total", Help: "Capability invocations by binding used and outcome (ok or error).",
	}, []string{"binding", "outcome"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "caphub_invocation_errors_total", Help: "Failed invocations by error code.",
	}, []string{"code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "caphub_invocation_duration_seconds", Help: "Invocation latency by binding used.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"binding"})
	m.limited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "caphub_rate_limited_total", Help: "Requests answered 429 by the rate limit they exceeded (token or agent).",
	}, []string{"limit"})
	m.regOps = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "caphub_registry_operation_duration_seconds", Help: "Registry operations (register, resolve, get, list, search, deprecate) by outcome, and their latency.",
		Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
	}, []string{"op", "outcome"})
	m.commits = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "caphub_audit_commit_duration_seconds", Help: "Commits of the audit writer (events appended together) by outcome, and their latency.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30},
	}, []string{"outcome"})
	m.http = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "caphub_http_request_duration_seconds", Help: "HTTP requests by route group, method and status code, and their latency (MCP streams: until the answer ends).",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 60},
	}, []string{"route", "method", "code"})
	m.reg.MustRegister(m.regOps, m.commits, m.http)
	m.reg.MustRegister(m.calls, m.errors, m.duration, m.limited, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveInvocation records one invocation. binding is the binding that
// answered ("none" when none did); code is "" on success.
func (m *Metrics) ObserveInvocation(binding, code string, d time.Duration) {
	if binding == "" {
		binding = "none"
	}
	outcome := "ok"
	if code != "" {
		outcome = "error"
		m.errors.WithLabelValues(code).Inc()
	}
	m.calls.WithLabelValues(binding, outcome).Inc()
	m.duration.WithLabelValues(binding).Observe(d.Seconds())
}

// RateLimited counts one request refused by the rate limit kind.
func (m *Metrics) RateLimited(kind string) { m.limited.WithLabelValues(kind).Inc() }

// ObserveRegistry records one registry operation (registry.WithObserver).
func (m *Metrics) ObserveRegistry(op string, d time.Duration, err error) {
	m.regOps.WithLabelValues(op, outcome(err)).Observe(d.Seconds())
}

// ObserveAuditCommit records one commit of the audit writer
// (audit.WithCommitObserver).
func (m *Metrics) ObserveAuditCommit(_ int, d time.Duration, err error) {
	m.commits.WithLabelValues(outcome(err)).Observe(d.Seconds())
}

// ObserveHTTP records one HTTP request; route is a fixed group (see
// Instrument), never the raw path.
func (m *Metrics) ObserveHTTP(route, method string, code int, d time.Duration) {
	m.httpObserver(route, method, code).Observe(d.Seconds())
}

// httpObserver returns a request's series, looked up in the vector once:
// WithLabelValues hashes the labels, and the code must be formatted, on
// every call (two allocations a request).
func (m *Metrics) httpObserver(route, method string, code int) prometheus.Observer {
	k := httpSeries{route: route, method: method, code: code}
	m.httpMu.RLock()
	o, ok := m.httpSeries[k]
	m.httpMu.RUnlock()
	if ok {
		return o
	}
	o = m.http.WithLabelValues(route, method, strconv.Itoa(code))
	m.httpMu.Lock()
	if len(m.httpSeries) < maxHTTPSeries {
		m.httpSeries[k] = o
	}
	m.httpMu.Unlock()
	return o
}

func outcome(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// Sources are the state /metrics reads when scraped: each func may be
// nil (its series are then left out).
type Sources struct {
	// Sessions counts the MCP sessions of each upstream (the front).
	Sessions func() map[string]int
	// Spawns are the stdio servers started and the starts that failed.
	Spawns func() (started, failed int64)
	// AuditQueue is how many audit events wait for the writer.
	AuditQueue func() int
	// Cache is the registry cache's hits and misses.
	Cache func() (hits, misses uint64)
}

// Watch registers the series read from src at each scrape.
func (m *Metrics) Watch(src Sources) {
	if src.Sessions != nil {
		m.reg.MustRegister(&mapGauge{desc: prometheus.NewDesc("caphub_gateway_sessions", "MCP sessions open per upstream (saved server) of the front.", []string{"upstream"}, nil), read: src.Sessions})
	}
	if src.Spawns != nil {
		for _, c := range []struct {
			outcome string
			pick    func(a, b int64) int64
		}{{"ok", func(a, _ int64) int64 { return a }}, {"failed", func(_, b int64) int64 { return b }}} {
			m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "caphub_upstream_spawns_total", Help: "Stdio MCP servers started, by outcome.", ConstLabels: prometheus.Labels{"outcome": c.outcome},
			}, func() float64 { a, b := src.Spawns(); return float64(c.pick(a, b)) }))
		}
	}
	if src.AuditQueue != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "caphub_audit_queue_depth", Help: "Audit events waiting for the writer.",
		}, func() float64 { return float64(src.AuditQueue()) }))
	}
	if src.Cache != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "caphub_registry_cache_hits_total", Help: "Reads the registry's version cache answered.",
		}, func() float64 { h, _ := src.Cache(); return float64(h) }))
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "caphub_registry_cache_misses_total", Help: "Reads the registry's version cache sent to the store.",
		}, func() float64 { _, n := src.Cache(); return float64(n) }))
	}
}

// mapGauge is a gauge with one label whose values are read at scrape.
type mapGauge struct {
	desc *prometheus.Desc
	read func() map[string]int
}

func (g *mapGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *mapGauge) Collect(ch chan<- prometheus.Metric) {
	for k, v := range g.read() {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(v), k)
	}
}

// routeGroups are the label values of caphub_http_request_duration_seconds,
// longest prefix first: a fixed set, so no path a client sends adds a series.
var routeGroups = []string{
	"/registry/capabilities", "/registry/search", "/registry/resolve", "/registry/negotiate", "/registry/jobs", "/registry/index.yaml",
	"/mcp/agents", "/mcp/servers", "/mcp/sse", "/mcp",
	"/v1/capabilities", "/v1/invoke", "/v1/servers", "/v1/agents", "/v1/approvals", "/v1/policies", "/v1/tokens", "/v1/audit",
	"/v0", "/healthz", "/readyz", "/metrics", "/openapi.json",
}

// RouteGroup is the group of a request path (other when none).
func RouteGroup(path string) string {
	for _, g := range routeGroups {
		if path == g || strings.HasPrefix(path, g+"/") || (strings.HasPrefix(path, g) && strings.HasPrefix(path[len(g):], ".")) {
			return g
		}
	}
	return "other"
}

// Instrument records every request next serves (ObserveHTTP).
func (m *Metrics) Instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, r)
		method := r.Method
		switch method {
		case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		default:
			method = "other"
		}
		m.ObserveHTTP(RouteGroup(r.URL.Path), method, sw.code, time.Since(start))
	})
}

// statusWriter notes the status a handler answered with, passing flushes
// through (MCP answers stream).
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// Metric kinds an agent may record.
const (
	Counter   = "counter"
	Gauge     = "gauge"
	Histogram = "histogram"
)

// Record records an agent's metric: a counter adds value, a gauge sets it,
// a histogram observes it. A name keeps the kind and label names it was
// first recorded with; caphub's own metric names (caphub_*) are reserved.
func (m *Metrics) Record(name, kind string, value float64, labels map[string]string) error {
	names, err := checkMetric(name, labels)
	if err != nil {
		return err
	}
	c, err := m.customMetric(name, kind, names)
	if err != nil {
		return err
	}
	if c.kind != kind {
		return fmt.Errorf("metric %q is a %s, not a %s", name, c.kind, kind)
	}
	if strings.Join(c.labels, ",") != strings.Join(names, ",") {
		return fmt.Errorf("metric %q has the labels [%s], not [%s]", name, strings.Join(c.labels, ", "), strings.Join(names, ", "))
	}
	switch v := c.vec.(type) {
	case *prometheus.CounterVec:
		if value < 0 {
			return fmt.Errorf("counter %q can only increase: %v is negative", name, value)
		}
		v.With(labels).Add(value)
	case *prometheus.GaugeVec:
		v.With(labels).Set(value)
	case *prometheus.HistogramVec:
		v.With(labels).Observe(value)
	}
	return nil
}

// checkMetric checks an agent's metric name and label names, and returns
// the label names sorted.
func checkMetric(name string, labels map[string]string) ([]string, error) {
	if !metricNameRE.MatchString(name) {
		return nil, fmt.Errorf("metric name %q must match [a-zA-Z_:][a-zA-Z0-9_:]*", name)
	}
	if strings.HasPrefix(name, "caphub_") || strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
		return nil, fmt.Errorf("metric name %q is reserved (caphub_, go_ and process_ are caphub's own): choose another prefix", name)
	}
	names := make([]string, 0, len(labels))
	for k := range labels {
		if !labelNameRE.MatchString(k) || strings.HasPrefix(k, "__") {
			return nil, fmt.Errorf("label name %q must match [a-zA-Z_][a-zA-Z0-9_]* and not start with __", k)
		}
		names = append(names, k)
	}
	sort.Strings(names)
	return names, nil
}

// customMetric returns the agent metric name, registering it with kind and
// label names when it is new.
func (m *Metrics) customMetric(name, kind string, names []string) (customMetric, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.custom[name]
	if ok {
		return c, nil
	}
	switch kind {
	case Counter:
		c.vec = prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: "Recorded by an agent."}, names)
	case Gauge:
		c.vec = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: "Recorded by an agent."}, names)
	case Histogram:
		c.vec = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: "Recorded by an agent."}, names)
	default:
		return c, fmt.Errorf("metric type %q: use counter, gauge or histogram", kind)
	}
	if err := m.reg.Register(c.vec); err != nil {
		return c, fmt.Errorf("register metric %q: %w", name, err)
	}
	c.kind, c.labels = kind, names
	m.custom[name] = c
	return c, nil
}
