package mcpregistry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readFileT(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReadValid: each hand-written server.json reads as one entry, with
// its raw document kept.
func TestReadValid(t *testing.T) {
	for _, name := range []string{"npm.json", "pypi.json", "oci.json", "remote.json"} {
		t.Run(name, func(t *testing.T) {
			doc, err := Read(readFileT(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if len(doc.Entries) != 1 || doc.List || len(doc.Invalid) != 0 {
				t.Fatalf("got %+v", doc)
			}
			if e := doc.Entries[0]; e.Server.Name == "" || len(e.Raw) == 0 || e.Official != nil {
				t.Errorf("entry %+v", e)
			}
		})
	}
}

// TestReadInvalid: each invalid document is refused with the path of the
// offending value and what to do.
func TestReadInvalid(t *testing.T) {
	for name, want := range map[string][]string{
		"no-version.json":               {"version: is missing", `packages[0].version: "^1.2.0" is a version range`},
		"bad-name.json":                 {"name: \"no slash here\" must be NAMESPACE/NAME"},
		"long-description.json":         {"description: is 126 characters long", "at most 100"},
		"wrong-type.json":               {"line 2", "packages", "is a JSON object, but must be an array"},
		"positional-without-value.json": {"packages[0].packageArguments[0]: a positional argument needs a value or a valueHint"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read(readFileT(t, filepath.Join("invalid", name)))
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("want an InvalidError, got %v", err)
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestReadDocumentErrors: what is not a registry document at all, or is
// beyond a budget, is refused with a position.
func TestReadDocumentErrors(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	for name, tc := range map[string]struct{ doc, want string }{
		"syntax":    {`{"name": "a/b",` + "\n" + `}`, "line 2, column 2: not valid JSON"},
		"array":     {`[1, 2]`, "not a JSON object"},
		"deep":      {`{"servers": ` + deep + `}`, "nested deeper than 32 levels"},
		"duplicate": {`{"name": "a/bc", "name": "a/bd", "description": "d", "version": "1.0.0"}`, `line 1, column 18: name: key "name" is already defined`},
		"servers":   {`{"servers": {"a": 1}}`, "servers: must be an array"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	big := `{"servers": [` + strings.Repeat(`{},`, MaxEntries) + `{}]}`
	if _, err := Read([]byte(big)); err == nil || !strings.Contains(err.Error(), "more than the 1000 a page may hold") {
		t.Errorf("too many entries: %v", err)
	}
}

// TestReadList: a page of the API, current and July 2025 shapes, with
// its cursor, registry metadata and invalid entries reported beside the
// valid ones.
func TestReadList(t *testing.T) {
	npm, remote := readFileT(t, "npm.json"), readFileT(t, "remote.json")
	page := fmt.Sprintf(`{"servers": [
		{"server": %s, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "isLatest": true}}},
		{"server": {"name": "bad"}},
		{"server": %s}
	], "metadata": {"nextCursor": "c2", "count": 3}}`, npm, remote)
	doc, err := Read([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	if !doc.List || doc.NextCursor != "c2" || len(doc.Entries) != 2 || len(doc.Invalid) != 1 {
		t.Fatalf("got %+v", doc)
	}
	if o := doc.Entries[0].Official; o == nil || !o.IsLatest || o.Status != "active" {
		t.Errorf("official metadata %+v", o)
	}
	if inv := doc.Invalid[0]; inv.Where != "servers[1].server" || !strings.Contains(inv.Error(), "description: is missing") {
		t.Errorf("invalid entry: %v", inv)
	}
	legacy := fmt.Sprintf(`{"servers": [%s], "metadata": {"next_cursor": "x"}}`, npm)
	doc, err = Read([]byte(legacy))
	if err != nil || len(doc.Entries) != 1 || doc.NextCursor != "x" {
		t.Fatalf("legacy page: %+v %v", doc, err)
	}
}

// TestLatest keeps the version the registry marks latest and drops
// deleted entries.
func TestLatest(t *testing.T) {
	mk := func(v string, latest bool, status string) Entry {
		return Entry{Server: &Server{Name: "a/b", Version: v}, Official: &Official{IsLatest: latest, Status: status}}
	}
	kept, dropped := Latest([]Entry{mk("1.0.0", false, "active"), mk("2.0.0", true, "active"), mk("1.5.0", false, "active"), {Server: &Server{Name: "c/d", Version: "1"}, Official: &Official{Status: "deleted"}}})
	if len(kept) != 1 || kept[0].Server.Version != "2.0.0" || len(dropped) != 3 {
		t.Fatalf("kept %+v dropped %q", kept, dropped)
	}
}
