package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	l.b.Reset()
	return out
}

func TestLog(t *testing.T) {
	const uri = "ossa:observability/log@1.0"
	buf := &lockedBuffer{}
	h := newHarness(t, Env{Log: slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	tests := []struct {
		name      string
		caller    string
		in        map[string]any
		wantLevel string
		wantAttrs map[string]any // expected "fields" group
	}{
		{"default level", "agent-7", map[string]any{"message": "started"}, "INFO", nil},
		{"warn with fields", "agent-7", map[string]any{"level": "warn", "message": "retrying upload", "fields": map[string]any{"attempt": int64(2), "file": "report.pdf", "nested": map[string]any{"ok": false}}},
			"WARN", map[string]any{"attempt": 2.0, "file": "report.pdf", "nested": map[string]any{"ok": false}}},
		{"debug", "", map[string]any{"level": "debug", "message": "tick"}, "DEBUG", nil},
		{"error", "x", map[string]any{"level": "error", "message": "failed", "fields": map[string]any{}}, "ERROR", map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := h.in(t)
			out := h.ok(uri, tt.caller, tt.in)
			if !reflect.DeepEqual(out, map[string]any{"logged": true}) {
				t.Errorf("output = %v", out)
			}
			lines := buf.lines(t)
			if len(lines) != 1 {
				t.Fatalf("%d log lines, want 1", len(lines))
			}
			l := lines[0]
			if l["level"] != tt.wantLevel || l["msg"] != tt.in["message"] || l["agent"] != tt.caller || l["capability"] != uri {
				t.Errorf("log line = %v", l)
			}
			if len(tt.wantAttrs) > 0 && !reflect.DeepEqual(l["fields"], tt.wantAttrs) {
				t.Errorf("fields = %v, want %v", l["fields"], tt.wantAttrs)
			}
		})
	}
	for i, tt := range []struct {
		in   map[string]any
		code string
	}{
		{map[string]any{"level": "fatal", "message": "x"}, "INVALID_LOG_ENTRY"},
		{map[string]any{"message": "  "}, "INVALID_LOG_ENTRY"},
		{map[string]any{}, "INVALID_LOG_ENTRY"},
		{map[string]any{"message": strings.Repeat("m", 16<<10+1)}, "INVALID_LOG_ENTRY"},
		{map[string]any{"message": "x", "fields": []any{1.0}}, invoke.CodeInvalidInput},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			h := h.in(t)
			_, err := h.call(uri, "a", tt.in)
			wantCode(t, err, tt.code)
		})
	}
	if lines := buf.lines(t); len(lines) != 0 {
		t.Errorf("refused entries were logged: %v", lines)
	}
}

// recordingSink records what Record receives.
type recordingSink struct {
	mu    sync.Mutex
	calls []string
	fail  error
}

func (s *recordingSink) Record(name string, value float64, labels map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(labels)
	s.calls = append(s.calls, name+" "+strconv.FormatFloat(value, 'g', -1, 64)+" "+string(b))
	return s.fail
}

// typedSink also wants the metric type.
type typedSink struct {
	recordingSink
	types []MetricType
}

func (s *typedSink) RecordTyped(typ MetricType, name string, value float64, labels map[string]string) error {
	s.types = append(s.types, typ)
	return s.Record(name, value, labels)
}

func TestMetric(t *testing.T) {
	const uri = "ossa:observability/metric@1.0"
	sink := &recordingSink{}
	h := newHarness(t, Env{Metrics: sink})
	valid := []struct {
		in       map[string]any
		wantCall string
		wantType string
	}{
		{map[string]any{"name": "tasks_completed_total", "value": int64(1), "type": "counter", "labels": map[string]any{"queue": "email"}}, `tasks_completed_total 1 {"queue":"email"}`, "counter"},
		{map[string]any{"name": "queue:depth", "value": 12.5}, `queue:depth 12.5 {}`, "gauge"},
		{map[string]any{"name": "_latency_seconds", "value": 0.25, "type": "histogram", "labels": map[string]any{"_route": "/x", "b2": ""}}, `_latency_seconds 0.25 {"_route":"/x","b2":""}`, "histogram"},
		{map[string]any{"name": "temperature", "value": -3.0, "type": "gauge"}, `temperature -3 {}`, "gauge"},
		{map[string]any{"name": "zero_counter", "value": int64(0), "type": "counter"}, `zero_counter 0 {}`, "counter"},
	}
	for _, tt := range valid {
		out := h.ok(uri, "agent", tt.in)
		if !reflect.DeepEqual(out, map[string]any{"recorded": true, "name": tt.in["name"], "type": tt.wantType}) {
			t.Errorf("output = %v", out)
		}
	}
	var want []string
	for _, tt := range valid {
		want = append(want, tt.wantCall)
	}
	if !reflect.DeepEqual(sink.calls, want) {
		t.Errorf("sink calls:\n got %q\nwant %q", sink.calls, want)
	}

	manyLabels := map[string]any{}
	for i := range 33 {
		manyLabels["l"+strings.Repeat("x", i)] = "v"
	}
	invalid := []struct {
		name      string
		in        map[string]any
		code      string
		mention   string
		schemaBad bool // the input schema refuses it too
	}{
		{"name starts with digit", map[string]any{"name": "1abc", "value": 1.0}, "INVALID_METRIC", `"1abc"`, true},
		{"name with dash", map[string]any{"name": "http-requests", "value": 1.0}, "INVALID_METRIC", `"http-requests"`, true},
		{"empty name", map[string]any{"name": "", "value": 1.0}, "INVALID_METRIC", `""`, true},
		{"name with space", map[string]any{"name": "a b", "value": 1.0}, "INVALID_METRIC", `"a b"`, true},
		{"label with colon", map[string]any{"name": "m", "value": 1.0, "labels": map[string]any{"a:b": "v"}}, "INVALID_METRIC", `"a:b"`, true},
		{"label starts with digit", map[string]any{"name": "m", "value": 1.0, "labels": map[string]any{"9x": "v"}}, "INVALID_METRIC", `"9x"`, true},
		{"reserved label", map[string]any{"name": "m", "value": 1.0, "labels": map[string]any{"__name__": "v"}}, "INVALID_METRIC", "reserved", false},
		{"too many labels", map[string]any{"name": "m", "value": 1.0, "labels": manyLabels}, "INVALID_METRIC", "33 labels", true},
		{"negative counter", map[string]any{"name": "c_total", "value": -1.0, "type": "counter"}, "INVALID_METRIC", "negative", false},
		{"unknown type", map[string]any{"name": "m", "value": 1.0, "type": "summary"}, "INVALID_METRIC", `"summary"`, true},
		{"label value not string", map[string]any{"name": "m", "value": 1.0, "labels": map[string]any{"a": 1.0}}, invoke.CodeInvalidInput, `"a"`, true},
		{"value missing", map[string]any{"name": "m"}, invoke.CodeInvalidInput, `"value"`, true},
	}
	sch, issues := capability.CompileSchema(h.defs[uri].Input)
	if len(issues) > 0 {
		t.Fatal(issues)
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			h := h.in(t)
			sink.calls = nil
			_, err := h.call(uri, "agent", tt.in)
			wantCode(t, err, tt.code, tt.mention)
			if len(sink.calls) != 0 {
				t.Errorf("the sink received a refused sample: %v", sink.calls)
			}
			if schemaErr := sch.Validate(tt.in); (schemaErr != nil) != tt.schemaBad {
				t.Errorf("input schema verdict = %v, want refused=%v", schemaErr, tt.schemaBad)
			}
		})
	}

	// A failing sink is a retryable METRIC_SINK_FAILED.
	sink.fail = errors.New("push gateway unreachable")
	_, err := h.call(uri, "agent", map[string]any{"name": "m", "value": 1.0})
	if ie := wantCode(t, err, "METRIC_SINK_FAILED", "push gateway unreachable"); !ie.Retryable {
		t.Error("METRIC_SINK_FAILED should be retryable")
	}

	// A typed sink is told the type.
	ts := &typedSink{}
	th := newHarness(t, Env{Metrics: ts})
	th.ok(uri, "", map[string]any{"name": "a_total", "value": 2.0, "type": "counter"})
	th.ok(uri, "", map[string]any{"name": "b", "value": 2.0})
	if !reflect.DeepEqual(ts.types, []MetricType{MetricCounter, MetricGauge}) || len(ts.calls) != 2 {
		t.Errorf("typed sink got types %v, calls %v", ts.types, ts.calls)
	}

	// Without a sink the capability says so.
	_, err = newHarness(t, Env{}).call(uri, "", map[string]any{"name": "m", "value": 1.0})
	if err == nil || !strings.Contains(err.Error(), "Env.Metrics") {
		t.Errorf("err = %v, want one naming Env.Metrics", err)
	}
}
