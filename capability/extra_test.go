package capability

import (
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"
)

// JSON round trips keep unknown fields at every level and exact numbers.
func TestJSONRoundTripKeepsExtraAndNumbers(t *testing.T) {
	src := `{"uri":"ossa:a/b@1.0","name":"b","domain":"a","version":"1.0.0",
	"input":{"type":"object","properties":{"n":{"type":"integer","maximum":1152921504606846976,"default":0.5}}},
	"bindings":{"grpc":{"service":"S","method":"M","port":50051},"x-custom":{"a":1}},
	"errors":[{"code":"E","retryable":false,"http_status":404}],
	"x-team":"core"}`
	var d Definition
	if err := json.Unmarshal([]byte(src), &d); err != nil {
		t.Fatal(err)
	}
	max := d.Input["properties"].(map[string]any)["n"].(map[string]any)["maximum"]
	if max != int64(1<<60) {
		t.Errorf("maximum %v (%T), want exactly 2^60", max, max)
	}
	if d.Bindings.GRPC.Extra["port"] != int64(50051) || d.Bindings.Extra["x-custom"] == nil || d.Errors[0].Extra["http_status"] != int64(404) || d.Extra["x-team"] != "core" {
		t.Errorf("extra fields lost: %+v %+v %+v %+v", d.Bindings.GRPC, d.Bindings.Extra, d.Errors[0].Extra, d.Extra)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var again Definition
	if err := json.Unmarshal(b, &again); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, again) {
		t.Errorf("round trip differs:\n%#v\n%#v", d, again)
	}
}

// TestNormalizeOnlyWritesChanges: Normalize changes what is not canonical
// (whole float64s, maps with other keys, dates), and only reads a value
// that is canonical already, so that definitions sharing parts of their
// schemas (an OpenAPI import's components) can be normalised at once by
// the registry's workers. Under -race, Normalize writing every element
// back (as it did) is reported here.
func TestNormalizeOnlyWritesChanges(t *testing.T) {
	v := Normalize(map[string]any{
		"n": 2.0, "f": 0.5, "s": "x", "list": []any{1.0, map[any]any{"k": 3.0}},
		"date": time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC),
	})
	want := map[string]any{"n": int64(2), "f": 0.5, "s": "x", "list": []any{int64(1), map[string]any{"k": int64(3)}}, "date": "2024-05-01"}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("Normalize = %#v, want %#v", v, want)
	}
	shared := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "integer", "maximum": int64(10), "enum": []any{int64(1), 0.5, "x", true, nil}}}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				Normalize(shared)
			}
		}()
	}
	wg.Wait()
}
