package audit

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/caphub/caphub/invoke"
)

// general is what an invocation's Data was before recordJSON, and still is
// where it declines: the record encoded by encoding/json, then
// canonicalized.
func general(t testing.TB, rec invoke.Record) ([]byte, error) {
	t.Helper()
	b, err := marshalData(KindInvocation, rec)
	if err != nil {
		return nil, err
	}
	return eventData(KindInvocation, b)
}

// TestRecordJSON holds recordJSON to the general path byte for byte, over
// records with every field set and unset, escapes, invalid UTF-8, numbers
// of every notation, zones and errors, and checks that it declines what
// only the general path can encode (or refuse).
func TestRecordJSON(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC)
	full := invoke.Record{Time: at, URI: "mcp:everything/test_simple_text", Version: "1.0.0", Caller: "agent:a", Credential: "token:ci",
		Binding: "mcp", Attempts: []invoke.Attempt{
			{Binding: "mcp", Attempt: 1, DurationMS: 0.25, Error: &invoke.Error{Code: "TIMEOUT", Message: "no answer <in> 30s & \"more\"", Retryable: true, Binding: "mcp"}},
			{Binding: "mcp", Attempt: 2, DurationMS: 1e-7, Error: &invoke.Error{Code: "X", Message: "\u2028\x01\t\n\\"}},
			{Binding: "http", Attempt: 3, DurationMS: 123456789012345678901234.0},
		}, DurationMS: 1.5e21, Code: "TIMEOUT", Message: "é \U0001F600 \xff\xfe bad", BindingsFrom: "agent:a"}
	cases := map[string]invoke.Record{
		"relayed call":      {Time: at, URI: "mcp:everything/test_simple_text", Caller: "anonymous", Binding: "mcp", Attempts: []invoke.Attempt{{Binding: "mcp", Attempt: 1, DurationMS: 0.412}}, DurationMS: 0.413},
		"every field":       full,
		"zero":              {},
		"no attempts":       {Time: at, URI: "u", Attempts: []invoke.Attempt{}},
		"zone":              {Time: time.Date(2025, 6, 1, 12, 0, 0, 0, time.FixedZone("X", -(5*3600+30*60))), URI: "u"},
		"whole second":      {Time: at.Truncate(time.Second), URI: "u", DurationMS: 100},
		"negative zero":     {Time: at, URI: "u", DurationMS: math.Copysign(0, -1)},
		"small and large":   {Time: at, URI: "u", DurationMS: 0.000001, Attempts: []invoke.Attempt{{Attempt: -3, DurationMS: 1e300}, {Attempt: math.MaxInt, DurationMS: 5e-324}}},
		"controls in names": {Time: at, URI: "a\x00b\x1fc\x7f", Caller: "\"/\\", Version: "</script>"},
	}
	for name, rec := range cases {
		want, err := general(t, rec)
		if err != nil {
			t.Fatalf("%s: the general path fails: %v", name, err)
		}
		got, ok := recordJSON(rec)
		if !ok {
			t.Errorf("%s: recordJSON declined", name)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	declined := map[string]invoke.Record{
		"details": {URI: "u", Attempts: []invoke.Attempt{{Error: &invoke.Error{Code: "X", Details: map[string]any{"a": 1}}}}},
		"NaN":     {URI: "u", DurationMS: math.NaN()},
		"Inf":     {URI: "u", Attempts: []invoke.Attempt{{DurationMS: math.Inf(1)}}},
		"year":    {URI: "u", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"zone":    {URI: "u", Time: time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600))},
	}
	for name, rec := range declined {
		if b, ok := recordJSON(rec); ok {
			t.Errorf("%s: recordJSON = %s, want it to decline", name, b)
		}
	}
}

// TestEncodeInvocation: an enqueued invocation's Data is the general
// path's, whether recordJSON writes it or declines.
func TestEncodeInvocation(t *testing.T) {
	for _, rec := range []invoke.Record{
		{URI: "u", Caller: "c", Attempts: []invoke.Attempt{{Binding: "mcp", Attempt: 1, DurationMS: 2}}},
		{URI: "u", Attempts: []invoke.Attempt{{Error: &invoke.Error{Code: "X", Details: map[string]any{"b": []any{1.0, "x"}}}}}},
	} {
		r := &pending{data: rec}
		r.e.Kind = KindInvocation
		if err := r.encode(); err != nil {
			t.Fatal(err)
		}
		want, err := general(t, rec)
		if err != nil {
			t.Fatal(err)
		}
		if string(r.e.Data) != string(want) {
			t.Errorf("encode:\n got %s\nwant %s", r.e.Data, want)
		}
	}
}

// FuzzRecordJSON: for any strings and numbers, recordJSON writes what the
// general path writes, or declines where it fails.
func FuzzRecordJSON(f *testing.F) {
	f.Add("mcp:everything/test_simple_text", "agent:a", "TIMEOUT", "no answer", 0.412, int64(1735787045123456789), 1, -3600)
	f.Add("\xff\x00\u2028", "\"\\", "", "\U0001F600", 1e21, int64(0), -1, 0)
	f.Fuzz(func(t *testing.T, uri, caller, code, msg string, ms float64, unixNano int64, attempt int, zone int) {
		tm := time.Unix(0, unixNano).In(time.FixedZone("z", zone%(30*3600)))
		rec := invoke.Record{Time: tm, URI: uri, Caller: caller, Code: code, Message: msg, DurationMS: ms, Version: msg, Binding: code,
			Attempts: []invoke.Attempt{{Binding: caller, Attempt: attempt, DurationMS: ms / 3, Error: &invoke.Error{Code: code, Message: msg, Binding: uri}}}}
		want, err := general(t, rec)
		got, ok := recordJSON(rec)
		switch {
		case err != nil && ok:
			t.Fatalf("the general path fails (%v), recordJSON wrote %s", err, got)
		case err == nil && !ok:
			t.Fatalf("recordJSON declined what the general path writes: %s", want)
		case ok && string(got) != string(want):
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
		if ok {
			var v map[string]any
			if err := json.Unmarshal(got, &v); err != nil {
				t.Fatalf("not JSON: %v: %s", err, got)
			}
		}
	})
}

// BenchmarkRecordJSON encodes the record of a relayed call, as the audit
// writer does for every call the gateway relays.
func BenchmarkRecordJSON(b *testing.B) {
	rec := invoke.Record{Time: time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC), URI: "mcp:everything/test_simple_text", Caller: "anonymous",
		Binding: "mcp", Attempts: []invoke.Attempt{{Binding: "mcp", Attempt: 1, DurationMS: 0.412}}, DurationMS: 0.413}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := recordJSON(rec); !ok {
			b.Fatal("recordJSON declined")
		}
	}
}
