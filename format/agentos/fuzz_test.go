package agentos

import (
	"encoding/json"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/caphub/caphub/capability"
)

// FuzzImportAgentOS feeds arbitrary bytes to Import: it must never panic,
// an error must name the file, and whatever it imports must be a
// definition the registry accepts (no validation errors, encodable as JSON).
func FuzzImportAgentOS(f *testing.F) {
	for _, p := range []string{"testdata/whatsapp.json", "testdata/contacts.json", "testdata/broken.json"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(manifest(good)))
	f.Add([]byte(`{"manifestVersion": "1.0", "package": "9", "capabilities": [{"id": "9", "intents": ["*"], "description": "d", "handler": {"type": "deeplink", "package": 1, "extras": {"n": 1e400}}, "inputs": [{"name": "", "type": "media"}]}]}`))
	f.Add([]byte(`{"manifestVersion": "1.0", "package": "a", "capabilities": [{"id": "x", "intents": ["\ud83d\ude00"], "description": "\u0000", "handler": {"type": "service"}, "inputs": [{"name": "$ref", "type": "object", "vaultKey": ""}]}]}`))
	f.Add([]byte("\xef\xbb\xbf{\"manifestVersion\": \"1.0\"}"))
	f.Add([]byte(`[[[[[[[[`))
	f.Add([]byte(`{"manifestVersion": "1.0", "package": "a", "package": "b", "capabilities": []}`))
	f.Add([]byte("{\"manifestVersion\": \"1.0\", \"package\": \"a\xff\", \"capabilities\": [{\"id\": \"x\", \"\\u0069d\": \"y\"}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Import("fuzz.json", data, Options{})
		if err != nil {
			if e, ok := err.(*Error); !ok || e.File != "fuzz.json" || e.Message == "" {
				t.Fatalf("error %#v is not a positioned *Error", err)
			}
			return
		}
		if !utf8.Valid(data) {
			t.Fatalf("imported a manifest that is not valid UTF-8: %q", data)
		}
		for _, fl := range res.Failures {
			if fl.Item == "" || fl.Reason == "" || fl.Line < 1 || fl.Column < 1 {
				t.Fatalf("failure without item, reason or position: %+v", fl)
			}
		}
		for i := range res.Definitions {
			d := &res.Definitions[i]
			if _, err := json.Marshal(d); err != nil {
				t.Fatalf("%s cannot be encoded: %v", d.URI, err)
			}
			for _, iss := range capability.Validate(d) {
				if iss.Severity == capability.SeverityError {
					t.Fatalf("%s: %s", d.URI, iss)
				}
			}
		}
	})
}
