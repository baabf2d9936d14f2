// Package metrics is caphub's Prometheus instrumentation: the invocation
// metrics (calls, errors by code, latency by binding) and the metrics that
// agents record through ossa:observability/metric, served on /metrics.
package metrics

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
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

	mu     sync.Mutex
	custom map[string]customMetric // agent-recorded metrics by name
}

type customMetric struct {
	kind   string
	labels []string
	vec    prometheus.Collector
}

// New returns a fresh set of metrics with Go and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), custom: map[string]customMetric{}}
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
