// Package otlptest is a real OTLP/HTTP trace receiver for tests: an HTTP
// server that accepts POST /v1/traces as a collector does (protobuf or
// JSON), decodes it with the official OTLP protobuf types and keeps the
// spans it received.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// maxBody bounds one export request.
const maxBody = 16 << 20

// Span is one received span, its ids in hex as traceparent writes them.
type Span struct {
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string // "" for a root span
	Kind         tracepb.Span_SpanKind
	Attrs        map[string]string // values as strings
	Links        []string          // the span ids of the linked spans
	Error        bool              // status ERROR
	Service      string            // the resource's service.name
}

// Receiver is a running receiver.
type Receiver struct {
	URL string // http://127.0.0.1:PORT; OTEL_EXPORTER_OTLP_ENDPOINT takes it

	mu       sync.Mutex
	spans    []Span
	requests int
	bad      []string
}

// Start starts a receiver, stopped when the test ends.
func Start(t testing.TB) *Receiver {
	rc := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL
	return rc
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		rc.refuse(w, http.StatusNotFound, r.Method+" "+r.URL.Path+": only POST /v1/traces is served")
		return
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, maxBody)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			rc.refuse(w, http.StatusBadRequest, "gzip: "+err.Error())
			return
		}
		body = io.LimitReader(zr, maxBody)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		rc.refuse(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	var req coltrace.ExportTraceServiceRequest
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/x-protobuf"):
		err = proto.Unmarshal(data, &req)
	case strings.HasPrefix(ct, "application/json"):
		err = protojson.Unmarshal(data, &req)
	default:
		rc.refuse(w, http.StatusUnsupportedMediaType, "Content-Type "+ct)
		return
	}
	if err != nil {
		rc.refuse(w, http.StatusBadRequest, "decoding the export request: "+err.Error())
		return
	}
	rc.mu.Lock()
	rc.requests++
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Kind: s.GetKind(), Attrs: attrs(s.GetAttributes()), Service: service,
					Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
				}
				if len(s.GetParentSpanId()) > 0 {
					sp.ParentSpanID = hex.EncodeToString(s.GetParentSpanId())
				}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, hex.EncodeToString(l.GetSpanId()))
				}
				rc.spans = append(rc.spans, sp)
			}
		}
	}
	rc.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (rc *Receiver) refuse(w http.ResponseWriter, code int, why string) {
	rc.mu.Lock()
	rc.bad = append(rc.bad, why)
	rc.mu.Unlock()
	http.Error(w, why, code)
}

// attrs writes attribute values as strings.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.GetStringValue()
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = strconv.FormatInt(v.GetIntValue(), 10)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = strconv.FormatBool(v.GetBoolValue())
		default:
			m[kv.GetKey()] = protojson.Format(v)
		}
	}
	return m
}

// Spans is every span received so far.
func (rc *Receiver) Spans() []Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.spans)
}

// Requests is how many export requests were accepted; Refused lists why
// the others were not.
func (rc *Receiver) Requests() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.requests
}

// Refused lists the requests the receiver refused and why.
func (rc *Receiver) Refused() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.bad)
}

// WaitFor waits up to d for a span named name and returns the spans
// received by then.
func (rc *Receiver) WaitFor(name string, d time.Duration) []Span {
	deadline := time.Now().Add(d)
	for {
		spans := rc.Spans()
		if slices.ContainsFunc(spans, func(s Span) bool { return s.Name == name }) || time.Now().After(deadline) {
			return spans
		}
		time.Sleep(20 * time.Millisecond)
	}
}
