package capability

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodeSeeds are definitions whose encoding could trip the splice:
// strings holding the marker or HTML characters, extra fields (named like
// the schemas too), no schemas, empty ones.
var encodeSeeds = []string{
	`{"uri":"ossa:a/b@1.0","name":"b","domain":"a","version":"1.0.0","input":{"type":"object"},"output":{}}`,
	`{"uri":"ossa:a/b@1.0","name":"b","domain":"a","version":"1.0.0","title":"\"input\":null,\"output\":null","description":"<b>&amp;</b> \u2028","input":{"properties":{"x":{"description":"\"input\":null,\"output\":null <&>"}}},"output":{"$defs":{"a":{"type":"string"}}},"zz":{"input":null},"aa":1}`,
	`{"uri":"ossa:a/b@1.0","name":"b","domain":"a","version":"1.0.0","stability":"deprecated","deprecated_by":"ossa:a/c@2.0","bindings":{"http":{"method":"GET","url":"https://x.example/{id}","x-extra":true}},"provenance":{"method":"openapi","created_at":"2026-01-01T00:00:00Z"},"metadata":{"input":null,"output":null},"examples":[{"input":{"id":1},"output":null}]}`,
	`{"uri":"ossa:a/b@1.0","name":"b","domain":"a","version":"1.0.0","input":{},"output":{"type":"array","items":{"enum":[1.5,-2,1e300,"x",null,true]}}}`,
}

// MarshalEncoded gives exactly the bytes json.Marshal gives.
func TestMarshalEncoded(t *testing.T) {
	for _, seed := range encodeSeeds {
		checkMarshalEncoded(t, []byte(seed))
	}
	// No schemas at all.
	d := Definition{URI: "ossa:a/b@1.0", Name: "b", Domain: "a", Version: "1.0.0"}
	enc, err := EncodeSchemas(&d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := MarshalEncoded(d, enc)
	want, _ := json.Marshal(d)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("no schemas: MarshalEncoded = %s, %v; json.Marshal = %s", got, err, want)
	}
}

// FuzzMarshalEncoded: for any definition, MarshalEncoded with the
// schemas EncodeSchemas gives is json.Marshal's encoding.
func FuzzMarshalEncoded(f *testing.F) {
	for _, s := range encodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkMarshalEncoded(t, data)
	})
}

func checkMarshalEncoded(t *testing.T, data []byte) {
	t.Helper()
	var d Definition
	if err := json.Unmarshal(data, &d); err != nil {
		return
	}
	want, err := json.Marshal(d)
	if err != nil {
		return
	}
	enc, err := EncodeSchemas(&d)
	if err != nil {
		t.Fatalf("EncodeSchemas of %s: %v", data, err)
	}
	got, err := MarshalEncoded(d, enc)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("MarshalEncoded of %s:\n got %s (%v)\nwant %s", data, got, err, want)
	}
}
