package capability

import (
	"encoding/json"
	"testing"
)

func TestOnlyKnownKeys(t *testing.T) {
	known := map[string]bool{"uri": true, "name": true, "input": true}
	for _, tt := range []struct {
		data string
		want bool
	}{
		{`{}`, true}, {` { } `, true}, {`{"uri":"x"}`, true},
		{`{"uri":"a\"}b","name":{"x":[1,{"y":"}"}],"z":null},"input":[]}`, true},
		{"{\n\t\"uri\" : 1 ,\r\n \"name\":true}\n", true},
		{`{"uri":"x","other":1}`, false}, {`{"URI":"x"}`, false}, {`{"ur\u0069":"x"}`, false},
		{`null`, false}, {`[]`, false}, {`{"uri":"x"} {"z":1}`, false}, {``, false}, {`{"uri":`, false},
	} {
		if got := onlyKnownKeys([]byte(tt.data), known); got != tt.want {
			t.Errorf("onlyKnownKeys(%s) = %v; want %v", tt.data, got, tt.want)
		}
	}
}

// FuzzOnlyKnownKeys: whenever the scan says a valid JSON document has only
// known keys, decoding it says so too; it never panics.
func FuzzOnlyKnownKeys(f *testing.F) {
	for _, s := range []string{`{}`, `{"uri":"x","name":[1,{"a":"}"}]}`, `{"uri":"\"","x":1}`, `{"a":{"uri":1}}`, `{"uri":1}{`, `"uri"`} {
		f.Add([]byte(s))
	}
	known := map[string]bool{"uri": true, "name": true}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !onlyKnownKeys(data, known) || !json.Valid(data) {
			return
		}
		var all map[string]json.RawMessage
		if err := json.Unmarshal(data, &all); err != nil {
			t.Fatalf("scan accepted %q, which is not an object: %v", data, err)
		}
		for k := range all {
			if !known[k] {
				t.Fatalf("scan accepted %q with the unknown key %q", data, k)
			}
		}
	})
}
