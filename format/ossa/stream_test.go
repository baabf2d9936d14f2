package ossa

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
)

// streamDoc is a capabilities document of n definitions, entry bad (if
// any) an unreadable one.
func streamDoc(n int, bad int) string {
	var b strings.Builder
	b.WriteString(`{"capabilities": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		if i == bad {
			b.WriteString(`{"uri": "ossa:s/c_bad@1.0", "name": ["not", "a", "string"]}`)
			continue
		}
		fmt.Fprintf(&b, `{"capability": {"uri": "ossa:s/c_%d@1.0", "name": "c_%d", "domain": "s", "version": "1.0.%d", "description": "Item %d.",
			"input": {"type": "object"}, "output": {}, "bindings": {"native": {"handler": "h"}}}}`, i, i, i, i)
	}
	b.WriteString("]}")
	return b.String()
}

func TestStream(t *testing.T) {
	doc := streamDoc(23, 17)
	n, err := Count(strings.NewReader(doc))
	if err != nil || n != 23 {
		t.Fatalf("Count: %d, %v; want 23", n, err)
	}
	var got []capability.Definition
	var failed []capability.ImportFailure
	var offsets []int
	err = Stream("body", strings.NewReader(doc), 5, func(defs []capability.Definition, f []capability.ImportFailure, offset int) error {
		got = append(got, defs...)
		failed = append(failed, f...)
		offsets = append(offsets, offset)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 22 || got[0].Name != "c_0" || got[21].Name != "c_22" || got[16].Version != "1.0.16" {
		t.Errorf("streamed %d definitions: %v", len(got), got)
	}
	if len(failed) != 1 || !strings.HasPrefix(failed[0].Item, "capabilities[17]") {
		t.Errorf("failures %v, want one for capabilities[17]", failed)
	}
	if fmt.Sprint(offsets) != "[0 5 10 15 20]" {
		t.Errorf("chunk offsets %v", offsets)
	}
	// What Read makes of the whole document, Stream makes a chunk at a time.
	whole, err := Read("body", []byte(streamDoc(23, -1)))
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	Stream("body", strings.NewReader(streamDoc(23, -1)), 4, func(defs []capability.Definition, _ []capability.ImportFailure, _ int) error {
		for _, d := range defs {
			a, _ := json.Marshal(d)
			b, _ := json.Marshal(whole.Entries[i].Definition)
			if !bytes.Equal(a, b) {
				t.Errorf("entry %d: streamed %s, read %s", i, a, b)
			}
			i++
		}
		return nil
	})
}

func TestStreamShapes(t *testing.T) {
	for _, tt := range []struct {
		doc       string
		streamble bool
	}{
		{`[{"uri": "ossa:a/b@1.0"}]`, false},
		{`{"definitions": {}, "capabilities": []}`, false},
		{`{"capabilities": [], "definitions": {}}`, false},
		{`{"capabilities": {"uri": "x"}}`, false},
		{`{"capabilities": []} {}`, false},
		{`capabilities: []`, false},
		{`{"capabilities": [{}, `, true}, // broken: a syntax error, not a shape
		{`{"capabilities": []}`, true},
	} {
		_, err := Count(strings.NewReader(tt.doc))
		if got := !errors.Is(err, ErrNotStreamable); got != tt.streamble {
			t.Errorf("Count(%s): %v", tt.doc, err)
		}
	}
	stop := errors.New("stop")
	err := Stream("body", strings.NewReader(streamDoc(10, -1)), 3, func([]capability.Definition, []capability.ImportFailure, int) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("Stream returned %v, want fn's error", err)
	}
}

// FuzzStream checks that Stream never panics, and that for a document
// Count accepts it hands over every entry once.
func FuzzStream(f *testing.F) {
	f.Add(streamDoc(3, 1))
	f.Add(`{"capabilities": []}`)
	f.Add(`{"capabilities": [1, "x", null, [], {"capability": 2}]}`)
	f.Add(`{"capabilities": [{"uri": "ossa:a/b@1.0", "name": "b", "name": "c"}]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		n, err := Count(strings.NewReader(doc))
		seen := 0
		serr := Stream("fuzz", bytes.NewReader([]byte(doc)), 2, func(defs []capability.Definition, failed []capability.ImportFailure, _ int) error {
			seen += len(defs) + len(failed)
			return nil
		})
		if err == nil && (serr != nil || seen < n) {
			t.Errorf("Count %d, but Stream handed %d entries (%v)", n, seen, serr)
		}
	})
}
