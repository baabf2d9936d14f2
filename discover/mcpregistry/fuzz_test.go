package mcpregistry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead: Read never panics, and whatever it accepts maps to a plan and
// back to an entry without panicking; an accepted entry's raw document
// reads again.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	invalid, _ := filepath.Glob("testdata/invalid/*.json")
	for _, name := range append(files, invalid...) {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"servers": [{"server": {"name": "a/b", "description": "d", "version": "1"}}], "metadata": {"nextCursor": "x"}}`))
	f.Add([]byte(`{"server": {"name": "a/b"}, "_meta": {}}`))
	f.Add([]byte(`{"name": "a/b", "description": "d", "version": "1", "remotes": [{"type": "sse", "url": "{u}"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Read(data)
		if err != nil {
			return
		}
		for _, e := range doc.Entries {
			if !json.Valid(e.Raw) {
				t.Fatalf("raw entry is not JSON: %s", e.Raw)
			}
			if _, err := Read(e.Raw); err != nil {
				t.Fatalf("an accepted entry does not read again: %v", err)
			}
			p := Connect(e, LocalName(e.Server.Name, false), Options{})
			if p.Server == nil && p.Skipped == "" {
				t.Fatal("a plan with neither connection nor reason")
			}
		}
	})
}
