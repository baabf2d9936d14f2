package builtin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
)

// The OSSA observability domain: ossa:observability/log@1.0 writes an entry
// to caphub's log (Env.Log), tagged with the calling agent so an operator
// can tell agents apart, and ossa:observability/metric@1.0 records a sample
// in Env.Metrics (not tagged: an agent label would multiply the time series;
// an agent that wants one passes it as a label).

// Limits of the observability built-ins.
const (
	logMaxMessageBytes = 16 << 10
	metricMaxLabels    = 32
)

// Prometheus data-model names: metric names may hold colons, label names may
// not, and label names starting with "__" are reserved.
var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// logLevels maps the level names log accepts to slog levels.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

func observabilityEntries() []entry {
	logDef := capability.Definition{
		Domain:      "observability",
		Name:        "log",
		Title:       "Write log entry",
		Description: "Write an entry to caphub's structured log at a level, with a message and fields, tagged with the calling agent.",
		Keywords:    []string{"log", "logging", "observability", "audit"},
		Input: object(true, map[string]any{
			"level":   prop("string", "Severity: debug, info, warn or error. Defaults to info.", "enum", anyStrings("debug", "info", "warn", "error"), "default", "info"),
			"message": prop("string", "What happened (up to 16 KiB).", "minLength", int64(1), "maxLength", int64(logMaxMessageBytes)),
			"fields":  prop("object", "Structured context: field name → any JSON value. Logged under the group \"fields\"."),
		}, "message"),
		Output: object(false, map[string]any{"logged": prop("boolean", "Always true.")}, "logged"),
		Errors: []capability.ErrorDef{
			errDef("INVALID_LOG_ENTRY", false, "The level is not debug, info, warn or error, or the message is empty or longer than 16 KiB."),
		},
		Effects: []string{"writes"},
		Examples: []capability.Example{{
			Input:  map[string]any{"level": "warn", "message": "retrying upload", "fields": map[string]any{"attempt": int64(2), "file": "report.pdf"}},
			Output: map[string]any{"logged": true},
		}},
	}
	metricDef := capability.Definition{
		Domain:      "observability",
		Name:        "metric",
		Title:       "Record metric",
		Description: "Record a metric sample (counter, gauge or histogram) with labels, in the Prometheus data model.",
		Keywords:    []string{"metric", "metrics", "counter", "gauge", "histogram", "observability", "prometheus"},
		Input: object(true, map[string]any{
			"name":  prop("string", "Metric name, [a-zA-Z_:][a-zA-Z0-9_:]* (e.g. tasks_completed_total).", "pattern", metricNameRE.String()),
			"value": prop("number", "The sample: the amount to add for a counter (not negative), the current value for a gauge, one observation for a histogram."),
			"type":  prop("string", "counter, gauge or histogram. Defaults to gauge.", "enum", anyStrings(string(MetricCounter), string(MetricGauge), string(MetricHistogram)), "default", string(MetricGauge)),
			"labels": prop("object", fmt.Sprintf("Label name → value (strings). Names match [a-zA-Z_][a-zA-Z0-9_]* and do not start with \"__\"; at most %d labels.", metricMaxLabels),
				"propertyNames", map[string]any{"pattern": labelNameRE.String()},
				"additionalProperties", map[string]any{"type": "string"},
				"maxProperties", int64(metricMaxLabels)),
		}, "name", "value"),
		Output: object(false, map[string]any{
			"recorded": prop("boolean", "Always true."),
			"name":     prop("string", "The metric name."),
			"type":     prop("string", "The metric type.", "enum", anyStrings(string(MetricCounter), string(MetricGauge), string(MetricHistogram))),
		}, "recorded", "name", "type"),
		Errors: []capability.ErrorDef{
			errDef("INVALID_METRIC", false, "The metric name or a label name is not a Prometheus name, a label name starts with \"__\", there are too many labels, the type is unknown, or a counter's value is negative; the message says which."),
			errDef("METRIC_SINK_FAILED", true, "The metrics backend refused or failed to record the sample."),
		},
		Effects: []string{"writes"},
		Examples: []capability.Example{{
			Input:  map[string]any{"name": "tasks_completed_total", "value": int64(1), "type": "counter", "labels": map[string]any{"queue": "email"}},
			Output: map[string]any{"recorded": true, "name": "tasks_completed_total", "type": "counter"},
		}},
	}
	return []entry{
		{def: define(logDef), handler: logHandler},
		{def: define(metricDef), handler: metricHandler},
	}
}

func logHandler(e *env) Handler {
	return func(ctx context.Context, call *invoke.Call) (any, error) {
		in := inputOf(call)
		levelName, ok, err := stringField(in, "level")
		if err != nil {
			return nil, err
		}
		if !ok {
			levelName = "info"
		}
		level, known := logLevels[levelName]
		if !known {
			return nil, invoke.Errorf("INVALID_LOG_ENTRY", false, "level %q is not a log level: use debug, info, warn or error", levelName)
		}
		msg, _, err := stringField(in, "message")
		if err != nil {
			return nil, err
		}
		switch {
		case strings.TrimSpace(msg) == "":
			return nil, invoke.Errorf("INVALID_LOG_ENTRY", false, "the message is empty: say what happened")
		case len(msg) > logMaxMessageBytes:
			return nil, invoke.Errorf("INVALID_LOG_ENTRY", false, "the message is %d bytes long: give at most %d, and put details in fields", len(msg), logMaxMessageBytes)
		}
		attrs := []slog.Attr{slog.String("agent", callerOf(call)), slog.String("capability", uriOf("observability", "log"))}
		if f, present := in["fields"]; present && f != nil {
			fields, isObject := f.(map[string]any)
			if !isObject {
				return nil, invalidInput("field \"fields\" must be an object, not %s", jsonType(f))
			}
			names := make([]string, 0, len(fields))
			for k := range fields {
				names = append(names, k)
			}
			slices.Sort(names)
			group := make([]any, 0, len(names))
			for _, k := range names {
				group = append(group, slog.Any(k, fields[k]))
			}
			attrs = append(attrs, slog.Group("fields", group...))
		}
		e.Log.LogAttrs(ctx, level, msg, attrs...)
		return map[string]any{"logged": true}, nil
	}
}

func metricHandler(e *env) Handler {
	return func(_ context.Context, call *invoke.Call) (any, error) {
		if e.Metrics == nil {
			return nil, errors.New("ossa:observability/metric is not available: caphub was started without a metrics sink (builtin.Env.Metrics is nil)")
		}
		in := inputOf(call)
		name, _, err := stringField(in, "name")
		if err != nil {
			return nil, err
		}
		if !metricNameRE.MatchString(name) {
			return nil, invoke.Errorf("INVALID_METRIC", false, "metric name %q must match [a-zA-Z_:][a-zA-Z0-9_:]* (letters, digits, underscores and colons, not starting with a digit), e.g. tasks_completed_total", name)
		}
		value, err := numberField(in, "value")
		if err != nil {
			return nil, err
		}
		typeName, ok, err := stringField(in, "type")
		if err != nil {
			return nil, err
		}
		typ := MetricType(typeName)
		if !ok {
			typ = MetricGauge
		}
		switch typ {
		case MetricCounter:
			if value < 0 {
				return nil, invoke.Errorf("INVALID_METRIC", false, "counter %s cannot go down: its value %v is negative; record a gauge for values that fall", name, value)
			}
		case MetricGauge, MetricHistogram:
		default:
			return nil, invoke.Errorf("INVALID_METRIC", false, "type %q is not a metric type: use counter, gauge or histogram", typeName)
		}
		labels, err := metricLabels(name, in["labels"])
		if err != nil {
			return nil, err
		}
		if ts, typed := e.Metrics.(TypedMetricSink); typed {
			err = ts.RecordTyped(typ, name, value, labels)
		} else {
			err = e.Metrics.Record(name, value, labels)
		}
		if err != nil {
			return nil, &invoke.Error{Code: "METRIC_SINK_FAILED", Retryable: true, Message: fmt.Sprintf("record %s %s: %v", typ, name, err), Cause: err}
		}
		return map[string]any{"recorded": true, "name": name, "type": string(typ)}, nil
	}
}

// metricLabels reads and checks the labels of a sample.
func metricLabels(metric string, v any) (map[string]string, error) {
	labels := map[string]string{}
	if v == nil {
		return labels, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, invalidInput("field \"labels\" must be an object of label name → string, not %s", jsonType(v))
	}
	if len(m) > metricMaxLabels {
		return nil, invoke.Errorf("INVALID_METRIC", false, "metric %s has %d labels: give at most %d (every label value combination is a new time series)", metric, len(m), metricMaxLabels)
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		switch {
		case !labelNameRE.MatchString(k):
			return nil, invoke.Errorf("INVALID_METRIC", false, "label name %q of metric %s must match [a-zA-Z_][a-zA-Z0-9_]* (letters, digits and underscores, not starting with a digit; no colons)", k, metric)
		case strings.HasPrefix(k, "__"):
			return nil, invoke.Errorf("INVALID_METRIC", false, "label name %q of metric %s starts with \"__\", which is reserved: rename it", k, metric)
		}
		s, isString := m[k].(string)
		if !isString {
			return nil, invalidInput("label %q of metric %s must be a string, not %s", k, metric, jsonType(m[k]))
		}
		labels[k] = s
	}
	return labels, nil
}
