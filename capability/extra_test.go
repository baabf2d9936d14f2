package capability

import (
	"encoding/json"
	"reflect"
	"testing"
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
