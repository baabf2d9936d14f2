package ossa

import (
	"bytes"
	"os"
	"reflect"
	"testing"
)

// FuzzRead feeds arbitrary bytes to the reader: it must never panic, and
// whatever it reads must survive a write and a second read unchanged.
func FuzzRead(f *testing.F) {
	for _, p := range []string{"testdata/scan.yaml", "testdata/broken.yaml", "testdata/registry.yaml", "testdata/lint.json"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("capabilities:\n  - uri: ossa:a/b@1.0\n    errors: oops\n"))
	f.Add([]byte("domains:\n  x:\n    capabilities: [ossa:x/y@1.0]\n"))
	f.Add([]byte("- capability: {uri: 'ossa:a/b@1.0', input: {$ref: '#/definitions/A'}}\ndefinitions: {A: {}}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("{\"capability\": {\"uri\": \"ossa:a/b@1.0\"}, \"capability\": {\"uri\": \"ossa:a/c@1.0\"}}"))
	f.Add([]byte("capability: {uri: 'ossa:a/b@1.0', name: \"\xff\"}\ndefinitions: {A: {}, A: {}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read("fuzz.yaml", data)
		if err != nil {
			return
		}
		_ = file.Validate()
		defs := file.Definitions()
		if len(defs) == 0 {
			return
		}
		for _, format := range []Format{YAML, JSON} {
			var buf bytes.Buffer
			if err := Write(&buf, defs, format); err != nil {
				return // values JSON cannot carry (e.g. NaN) are refused, not crashed on
			}
			again, err := Read("again", buf.Bytes())
			if err != nil {
				t.Fatalf("cannot read what was written (%s): %v\n%s", format, err, buf.String())
			}
			if !reflect.DeepEqual(defs, again.Definitions()) {
				t.Fatalf("round trip (%s) changed the definitions:\n%#v\n%#v", format, defs, again.Definitions())
			}
		}
	})
}
