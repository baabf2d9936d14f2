package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/registry"
)

// RunDocs runs the behaviour suite of registry.DocStore. open must return a
// new, empty store and arrange for it to be closed when the test ends
// (t.Cleanup); when the store has a Close method the suite calls it too, so
// Close must be safe to call twice.
func RunDocs(t *testing.T, open func(t *testing.T) registry.DocStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s registry.DocStore)
	}{
		{"DocRoundTrip", testDocRoundTrip},
		{"DocReplace", testDocReplace},
		{"DocListPrefix", testDocListPrefix},
		{"DocListOrder", testDocListOrder},
		{"DocDelete", testDocDelete},
		{"DocApplyAtomicity", testDocApplyAtomicity},
		{"DocApplyMixed", testDocApplyMixed},
		{"DocInvalid", testDocInvalid},
		{"DocKindsIsolated", testDocKindsIsolated},
		{"DocConcurrentPut", testDocConcurrentPut},
		{"DocConcurrentApply", testDocConcurrentApply},
		{"DocClosed", testDocClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open(t)) })
	}
}

// docValues are JSON texts a store must keep byte for byte: whitespace, key
// order and duplicate keys as written, escapes not decoded (\u0000 and lone
// surrogates included), numbers beyond float64, nesting deeper than
// SQLite's json_valid() accepts, and a large document.
func docValues() map[string][]byte {
	return map[string][]byte{
		"object":      []byte(`{"name":"github","command":["npx","-y","@modelcontextprotocol/server-github"],"env":{}}`),
		"whitespace":  []byte(" \t\r\n{ \"b\" : 1 ,\n\t\"a\" : [ 1 , 2 ] }\n "),
		"duplicates":  []byte(`{"a":1,"a":2,"a":{"a":3}}`),
		"escapes":     []byte(`["\u0000","\ud800","\udc00x","\/","\u00e9","\"\\\b\f\n\r\t"]`),
		"unicode":     []byte(`{"ünï":"cödé ✓ 😀 \u2028","k":"` + "\u007f\u0080\U0010FFFF" + `"}`),
		"numbers":     []byte(`[12345678901234567890123456789,-0,1e99999,-1.50E-07,0.1000]`),
		"null":        []byte(`null`),
		"true":        []byte(`true`),
		"string":      []byte(`"just a string"`),
		"empty array": []byte(`[]`),
		"deep":        []byte(strings.Repeat("[", 1500) + strings.Repeat("]", 1500)),
		"large":       []byte(`{"blob":"` + strings.Repeat("0123456789abcdef", 1<<16) + `"}`),
	}
}

// checkDocTime checks that a document's UpdatedAt is UTC, in microseconds,
// and within a minute of [before, after] (a store may take the time from the
// database server's clock).
func checkDocTime(t *testing.T, what string, got, before, after time.Time) {
	t.Helper()
	if got.Location() != time.UTC {
		t.Errorf("%s: UpdatedAt %v is not UTC", what, got)
	}
	if got.Nanosecond()%1000 != 0 {
		t.Errorf("%s: UpdatedAt %v has sub-microsecond digits; stores keep microseconds", what, got)
	}
	if got.Before(before.Add(-time.Minute)) || got.After(after.Add(time.Minute)) {
		t.Errorf("%s: UpdatedAt %v is not within a minute of the write (%v .. %v)", what, got, before, after)
	}
}

func putDoc(t *testing.T, s registry.DocStore, kind, key, value string) {
	t.Helper()
	if err := s.PutDoc(t.Context(), kind, key, []byte(value)); err != nil {
		t.Fatalf("PutDoc(%q, %q): %v", kind, key, err)
	}
}

// docState returns the documents of a kind as key → value.
func docState(t *testing.T, s registry.DocStore, kind string) map[string]string {
	t.Helper()
	docs, err := s.ListDocs(t.Context(), kind, "")
	if err != nil {
		t.Fatalf("ListDocs(%q): %v", kind, err)
	}
	out := map[string]string{}
	for _, d := range docs {
		if d.Kind != kind {
			t.Errorf("ListDocs(%q) returned a document of kind %q", kind, d.Kind)
		}
		out[d.Key] = string(d.Value)
	}
	return out
}

func docKeys(docs []registry.Doc) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.Key
	}
	return out
}

// testDocRoundTrip checks that documents come back byte for byte from
// GetDoc and ListDocs, under any UTF-8 kind and key, and that the store
// keeps its own copy of the value.
func testDocRoundTrip(t *testing.T, s registry.DocStore) {
	testDocValuesExact(t, s)
	testDocNames(t, s)
	testDocCopy(t, s)
}

// testDocValuesExact puts every docValues value and checks GetDoc and
// ListDocs return it byte for byte, with a time of the put.
func testDocValuesExact(t *testing.T, s registry.DocStore) {
	ctx := t.Context()
	values := docValues()
	keys := slices.Sorted(maps.Keys(values))
	before := time.Now()
	for _, k := range keys {
		if err := s.PutDoc(ctx, "test", k, values[k]); err != nil {
			t.Fatalf("PutDoc(%s): %v", k, err)
		}
	}
	after := time.Now()
	checkGetDocsExact(t, s, values, before, after)
	// ListDocs returns the same bytes.
	docs, err := s.ListDocs(ctx, "test", "")
	if err != nil {
		t.Fatalf("ListDocs: %v", err)
	}
	if !slices.Equal(docKeys(docs), keys) {
		t.Fatalf("ListDocs keys = %q, want %q", docKeys(docs), keys)
	}
	for _, d := range docs {
		if !bytes.Equal(d.Value, values[d.Key]) {
			t.Errorf("ListDocs value of %s is not byte-exact: %.200q", d.Key, d.Value)
		}
		checkDocTime(t, "ListDocs "+d.Key, d.UpdatedAt, before, after)
	}
}

// testDocNames checks that kinds and keys are any UTF-8 text: spaces,
// slashes, wildcards, quotes, non-ASCII.
func testDocNames(t *testing.T, s registry.DocStore) {
	ctx := t.Context()
	names := [][2]string{
		{"mcp_server", "github"},
		{"mcp server/ü", `key with spaces/slashes\and "quotes"`},
		{"%", "_"},
		{"kind", "😀 \U0010FFFF"},
	}
	for _, n := range names {
		v := fmt.Sprintf(`{"kind":%q}`, n[0])
		putDoc(t, s, n[0], n[1], v)
		d, err := s.GetDoc(ctx, n[0], n[1])
		if err != nil || d.Kind != n[0] || d.Key != n[1] || string(d.Value) != v {
			t.Errorf("GetDoc(%q, %q) = %q %q %q, %v; want %q", n[0], n[1], d.Kind, d.Key, d.Value, err, v)
		}
	}
}

// testDocCopy checks that the store keeps its own copy: changing the
// caller's slice afterwards changes nothing.
func testDocCopy(t *testing.T, s registry.DocStore) {
	ctx := t.Context()
	buf := []byte(`{"v":1}`)
	if err := s.PutDoc(ctx, "test", "copy", buf); err != nil {
		t.Fatal(err)
	}
	buf[5] = '2'
	if d, err := s.GetDoc(ctx, "test", "copy"); err != nil || string(d.Value) != `{"v":1}` {
		t.Errorf("after changing the put slice, GetDoc = %q, %v; want the value as put", d.Value, err)
	}
}

// checkGetDocsExact checks that GetDoc returns each of values (under kind
// "test") byte for byte, updated between before and after.
func checkGetDocsExact(t *testing.T, s registry.DocStore, values map[string][]byte, before, after time.Time) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(values)) {
		d, err := s.GetDoc(t.Context(), "test", k)
		if err != nil {
			t.Errorf("GetDoc(%s): %v", k, err)
			continue
		}
		if d.Kind != "test" || d.Key != k {
			t.Errorf("GetDoc(%s) = kind %q key %q", k, d.Kind, d.Key)
		}
		if !bytes.Equal(d.Value, values[k]) {
			t.Errorf("GetDoc(%s) value is not byte-exact:\n got %.200q\nwant %.200q", k, d.Value, values[k])
		}
		checkDocTime(t, "GetDoc("+k+")", d.UpdatedAt, before, after)
	}
}

func testDocReplace(t *testing.T, s registry.DocStore) {
	ctx := t.Context()
	long := `{"version":1,"tools":["a","b","c","d"],"padding":"` + strings.Repeat("x", 1000) + `"}`
	putDoc(t, s, "agent", "planner", long)
	first, err := s.GetDoc(ctx, "agent", "planner")
	if err != nil {
		t.Fatal(err)
	}
	putDoc(t, s, "agent", "planner", `{"version":2}`)
	d, err := s.GetDoc(ctx, "agent", "planner")
	if err != nil {
		t.Fatal(err)
	}
	if string(d.Value) != `{"version":2}` {
		t.Errorf("after a replace GetDoc = %q, want the new value exactly (no remains of the old, longer one)", d.Value)
	}
	if d.UpdatedAt.Before(first.UpdatedAt) {
		t.Errorf("UpdatedAt went back from %v to %v on replace", first.UpdatedAt, d.UpdatedAt)
	}
	if got := docState(t, s, "agent"); len(got) != 1 || got["planner"] != `{"version":2}` {
		t.Errorf("after a replace the kind holds %q; want only the new value", got)
	}
	// Replacing with the same value is fine too.
	putDoc(t, s, "agent", "planner", `{"version":2}`)
	if got := docState(t, s, "agent"); len(got) != 1 {
		t.Errorf("after putting the same value the kind holds %d documents", len(got))
	}
}

// docPrefixKeys are keys around the edges of prefix ranges: LIKE wildcards,
// the last ASCII byte and the first multi-byte rune, the runes around the
// surrogates (which UTF-8 cannot encode), U+FFFF and the last rune U+10FFFF.
var docPrefixKeys = []string{
	"a", "a%", "a%b", "a_", "a_b", "ab", "abc", "ab/c", "aB", "a b",
	"a\u007f", "a\u007fz", "a\u0080", "aé", "aéz", "aê",
	"a\ud7ff", "a\ud7ffz", "a\ue000",
	"a\uffff", "a\uffffz", "a\U00010000",
	"a\U0010ffff", "a\U0010ffffz", "a\U0010ffff\U0010ffff",
	"b", "%", "%x", "_", "_x", "x%", "x_",
	"\U0010ffff", "\U0010ffffz", "\U0010ffff\U0010ffff", "\U0010ffff\U0010ffff\U0010ffff",
}

// wantPrefixKeys returns the docPrefixKeys that start with prefix, in byte
// order.
func wantPrefixKeys(prefix string) []string {
	want := []string{}
	for _, k := range docPrefixKeys {
		if strings.HasPrefix(k, prefix) {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	return want
}

// checkListDocsPrefix checks ListDocs of kind k (holding docPrefixKeys, the
// i-th with value {"i":i}) with prefix.
func checkListDocsPrefix(t *testing.T, s registry.DocStore, prefix string) {
	t.Helper()
	want := wantPrefixKeys(prefix)
	docs, err := s.ListDocs(t.Context(), "k", prefix)
	if err != nil {
		t.Errorf("ListDocs(%q): %v", prefix, err)
		return
	}
	if docs == nil {
		t.Errorf("ListDocs(%q) = nil; want an empty, non-nil slice", prefix)
	}
	if got := docKeys(docs); !slices.Equal(got, want) {
		t.Errorf("ListDocs(%q) = %+q\nwant %+q", prefix, got, want)
	}
	for _, d := range docs {
		i := slices.Index(docPrefixKeys, d.Key)
		if d.Kind != "k" || string(d.Value) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Errorf("ListDocs(%q): document %q = kind %q value %q", prefix, d.Key, d.Kind, d.Value)
		}
	}
}

// testDocListPrefix checks ListDocs with prefixes around the edges of
// prefix ranges (see docPrefixKeys), and of a kind with no documents.
func testDocListPrefix(t *testing.T, s registry.DocStore) {
	ctx := t.Context()
	var ops []registry.DocOp
	for i, k := range docPrefixKeys {
		ops = append(ops, registry.DocOp{Kind: "k", Key: k, Value: fmt.Appendf(nil, `{"i":%d}`, i)})
		// The same keys in a neighbouring kind must not show.
		ops = append(ops, registry.DocOp{Kind: "k2", Key: k, Value: []byte(`"other kind"`)})
	}
	if err := s.ApplyDocs(ctx, ops); err != nil {
		t.Fatalf("ApplyDocs: %v", err)
	}
	for _, prefix := range []string{
		"", "a", "a%", "a_", "%", "_", "x", "ab", "a\u007f", "aé", "a\ud7ff", "a\uffff",
		"a\U0010ffff", "a\U0010ffff\U0010ffff", "\U0010ffff", "\U0010ffff\U0010ffff",
		"zzz", "abcd", "a%b%", "\U0010ffff\U0010ffff\U0010ffff\U0010ffff",
	} {
		checkListDocsPrefix(t, s, prefix)
	}
	if docs, err := s.ListDocs(ctx, "missing", ""); err != nil || docs == nil || len(docs) != 0 {
		t.Errorf("ListDocs of an empty kind = %#v, %v; want an empty, non-nil slice and no error", docs, err)
	}
}

func testDocListOrder(t *testing.T, s registry.DocStore) {
	// Byte order, not a locale's: upper case before lower case, "~" after
	// letters, multi-byte runes after ASCII, by code point.
	keys := []string{"b", "a", "B", "A", "é", "e", "E", "z", "~", "aa", "a b", "a-b", "a.b", "a/b", "10", "9", "1",
		"\U0001F600", "\uFFFD", "\u00e9\u0301", "ä", "Z", "_", "-", " x"}
	for i, k := range keys {
		putDoc(t, s, "order", k, fmt.Sprint(i))
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	docs, err := s.ListDocs(t.Context(), "order", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := docKeys(docs); !slices.Equal(got, want) {
		t.Errorf("ListDocs order = %+q\nwant byte order %+q", got, want)
	}
}

// expectMissingDoc checks that err, from method on the missing document
// mcp_server/github, is ErrNotFound and names the kind and the key.
func expectMissingDoc(t *testing.T, method string, err error) {
	t.Helper()
	if !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("%s of a missing document: %v; want ErrNotFound", method, err)
	}
	if !strings.Contains(err.Error(), "mcp_server") || !strings.Contains(err.Error(), "github") {
		t.Errorf("error %q does not name the kind and the key", err)
	}
}

// testDocDelete checks DeleteDoc: missing documents are ErrNotFound, a
// delete removes only its document, and a deleted document can be put again.
func testDocDelete(t *testing.T, s registry.DocStore) {
	ctx := t.Context()
	_, err := s.GetDoc(ctx, "mcp_server", "github")
	expectMissingDoc(t, "GetDoc", err)
	expectMissingDoc(t, "DeleteDoc", s.DeleteDoc(ctx, "mcp_server", "github"))
	putDoc(t, s, "mcp_server", "github", `{"a":1}`)
	putDoc(t, s, "mcp_server", "github2", `{"a":2}`)
	if err := s.DeleteDoc(ctx, "mcp_server", "github"); err != nil {
		t.Fatalf("DeleteDoc: %v", err)
	}
	if _, err := s.GetDoc(ctx, "mcp_server", "github"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("GetDoc after DeleteDoc: %v; want ErrNotFound", err)
	}
	if err := s.DeleteDoc(ctx, "mcp_server", "github"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("second DeleteDoc: %v; want ErrNotFound", err)
	}
	if got := docState(t, s, "mcp_server"); len(got) != 1 || got["github2"] != `{"a":2}` {
		t.Errorf("after deleting one document the kind holds %q; want only github2", got)
	}
	if err := s.DeleteDoc(ctx, "mcp_server", "github2"); err != nil {
		t.Fatal(err)
	}
	if docs, err := s.ListDocs(ctx, "mcp_server", ""); err != nil || docs == nil || len(docs) != 0 {
		t.Errorf("ListDocs after deleting everything = %#v, %v; want an empty, non-nil slice", docs, err)
	}
	// A deleted document can be put again.
	putDoc(t, s, "mcp_server", "github", `{"a":3}`)
	if d, err := s.GetDoc(ctx, "mcp_server", "github"); err != nil || string(d.Value) != `{"a":3}` {
		t.Errorf("GetDoc after putting a deleted document again = %q, %v", d.Value, err)
	}
}

func testDocApplyAtomicity(t *testing.T, s registry.DocStore) {
	ctx := t.Context()
	putDoc(t, s, "k", "keep", `{"keep":true}`)
	for name, bad := range map[string]registry.DocOp{
		"invalid JSON":        {Kind: "k", Key: "bad", Value: []byte(`{"a":`)},
		"nil value":           {Kind: "k", Key: "bad"},
		"invalid UTF-8":       {Kind: "k", Key: "bad", Value: []byte("\"\xff\"")},
		"empty kind":          {Kind: "", Key: "bad", Value: []byte(`1`)},
		"empty key":           {Kind: "k", Key: "", Value: []byte(`1`)},
		"empty key of delete": {Kind: "k", Key: "", Delete: true},
		"NUL in key":          {Kind: "k", Key: "a\x00b", Value: []byte(`1`)},
	} {
		ops := []registry.DocOp{
			{Kind: "k", Key: "a", Value: []byte(`"a"`)},
			{Kind: "k", Key: "keep", Value: []byte(`{"replaced":true}`)},
			{Kind: "other", Key: "b", Value: []byte(`"b"`)},
			bad,
			{Kind: "k", Key: "keep", Delete: true},
			{Kind: "k", Key: "c", Value: []byte(`"c"`)},
		}
		err := s.ApplyDocs(ctx, ops)
		if err == nil {
			t.Errorf("%s: ApplyDocs with an invalid op in the middle succeeded", name)
		} else if errors.Is(err, registry.ErrNotFound) {
			t.Errorf("%s: ApplyDocs: %v; want a validation error, not ErrNotFound", name, err)
		}
		if got := docState(t, s, "k"); len(got) != 1 || got["keep"] != `{"keep":true}` {
			t.Errorf("%s: after a failed ApplyDocs kind k holds %q; want only the original keep", name, got)
		}
		if got := docState(t, s, "other"); len(got) != 0 {
			t.Errorf("%s: after a failed ApplyDocs kind other holds %q; want nothing", name, got)
		}
	}
	if err := s.ApplyDocs(ctx, nil); err != nil {
		t.Errorf("ApplyDocs of no ops: %v", err)
	}
	if err := s.ApplyDocs(ctx, []registry.DocOp{}); err != nil {
		t.Errorf("ApplyDocs of an empty slice: %v", err)
	}
}

func testDocApplyMixed(t *testing.T, s registry.DocStore) {
	ctx := t.Context()
	putDoc(t, s, "k", "old1", `1`)
	putDoc(t, s, "k", "old2", `2`)
	putDoc(t, s, "k", "old3", `3`)
	putDoc(t, s, "j", "old1", `"j"`)
	before := time.Now()
	err := s.ApplyDocs(ctx, []registry.DocOp{
		{Kind: "k", Key: "new1", Value: []byte(`{"n":1}`)},
		{Kind: "k", Key: "old1", Delete: true},
		{Kind: "k", Key: "old2", Value: []byte(`{"replaced":2}`)},
		{Kind: "k", Key: "missing", Delete: true}, // not an error here
		{Kind: "j", Key: "new", Value: []byte(` [ "j" ] `)},
		{Kind: "k", Key: "new1", Value: []byte(`{"n":"last put wins"}`)},
		{Kind: "k", Key: "gone", Value: []byte(`"put then deleted"`)},
		{Kind: "k", Key: "gone", Delete: true},
		{Kind: "k", Key: "old3", Delete: true},
		{Kind: "k", Key: "old3", Value: []byte(`"deleted then put"`)},
	})
	after := time.Now()
	if err != nil {
		t.Fatalf("ApplyDocs: %v", err)
	}
	want := map[string]string{
		"new1": `{"n":"last put wins"}`,
		"old2": `{"replaced":2}`,
		"old3": `"deleted then put"`,
	}
	if got := docState(t, s, "k"); !maps.Equal(got, want) {
		t.Errorf("after ApplyDocs kind k = %q\nwant %q", got, want)
	}
	if got, want := docState(t, s, "j"), map[string]string{"old1": `"j"`, "new": ` [ "j" ] `}; !maps.Equal(got, want) {
		t.Errorf("after ApplyDocs kind j = %q\nwant %q", got, want)
	}
	d, err := s.GetDoc(ctx, "k", "old2")
	if err != nil {
		t.Fatal(err)
	}
	checkDocTime(t, "a document ApplyDocs replaced", d.UpdatedAt, before, after)
	// A batch of only deletes, some of missing documents.
	if err := s.ApplyDocs(ctx, []registry.DocOp{
		{Kind: "k", Key: "new1", Delete: true}, {Kind: "k", Key: "nothing", Delete: true}, {Kind: "j", Key: "old1", Delete: true},
	}); err != nil {
		t.Fatalf("ApplyDocs of deletes: %v", err)
	}
	if got := docState(t, s, "k"); len(got) != 2 {
		t.Errorf("after deleting new1 kind k = %q; want old2 and old3", got)
	}
	if got := docState(t, s, "j"); len(got) != 1 || got["new"] == "" {
		t.Errorf("after deleting old1 kind j = %q; want only new", got)
	}
}

// testDocInvalid checks that values that are not JSON, and kinds, keys and
// prefixes that are empty, not UTF-8 or hold NUL, are refused and write
// nothing.
func testDocInvalid(t *testing.T, s registry.DocStore) {
	putDoc(t, s, "k", "x", `{"good":true}`)
	testDocInvalidValues(t, s)
	testDocInvalidNames(t, s)
	testDocInvalidPrefixes(t, s)
	if got := docState(t, s, "k"); len(got) != 1 {
		t.Errorf("refused writes left kind k = %q; want only x", got)
	}
}

// testDocInvalidValues checks that PutDoc refuses values that are not JSON
// (or too deep), saying so, for the stored document x and for a new one.
func testDocInvalidValues(t *testing.T, s registry.DocStore) {
	ctx := t.Context()
	for name, v := range map[string][]byte{
		"nil":               nil,
		"empty":             {},
		"only whitespace":   []byte(" \n"),
		"truncated":         []byte(`{"a":[1,2`),
		"single quotes":     []byte(`{'a':1}`),
		"NaN":               []byte(`NaN`),
		"two values":        []byte(`1 2`),
		"trailing comma":    []byte(`[1,]`),
		"trailing garbage":  []byte(`{"a":1}x`),
		"control character": []byte("\"a\x01b\""),
		"invalid UTF-8":     []byte("\"\xff\xfe\""),
		"bad escape":        []byte(`"\x"`),
		"too deep":          []byte(strings.Repeat("[", 10001) + strings.Repeat("]", 10001)),
	} {
		err := s.PutDoc(ctx, "k", "x", v)
		if err == nil {
			t.Errorf("%s: PutDoc of %.40q succeeded; want an error", name, v)
			continue
		}
		if errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), "JSON") && !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("%s: PutDoc: %v; want an error saying the value is not JSON", name, err)
		}
		if d, err := s.GetDoc(ctx, "k", "x"); err != nil || string(d.Value) != `{"good":true}` {
			t.Errorf("%s: after a refused PutDoc the document is %q, %v; want it unchanged", name, d.Value, err)
		}
		if err := s.PutDoc(ctx, "k", "new", v); err == nil {
			t.Errorf("%s: PutDoc of a new document succeeded", name)
		}
		if _, err := s.GetDoc(ctx, "k", "new"); !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("%s: a refused PutDoc created the document: %v", name, err)
		}
	}
}

// testDocInvalidNames checks kinds and keys: not empty, UTF-8, no NUL.
// Every method refuses them with an error that is not ErrNotFound.
func testDocInvalidNames(t *testing.T, s registry.DocStore) {
	ctx := t.Context()
	for name, n := range map[string][2]string{
		"empty kind":         {"", "x"},
		"empty key":          {"k", ""},
		"NUL in kind":        {"k\x00", "x"},
		"NUL in key":         {"k", "x\x00y"},
		"invalid UTF-8 kind": {"k\xff", "x"},
		"invalid UTF-8 key":  {"k", "x\xc3"},
	} {
		kind, key := n[0], n[1]
		if err := s.PutDoc(ctx, kind, key, []byte(`1`)); err == nil {
			t.Errorf("%s: PutDoc succeeded", name)
		}
		if _, err := s.GetDoc(ctx, kind, key); err == nil || errors.Is(err, registry.ErrNotFound) {
			t.Errorf("%s: GetDoc: %v; want an error saying what is wrong, not ErrNotFound", name, err)
		}
		if err := s.DeleteDoc(ctx, kind, key); err == nil || errors.Is(err, registry.ErrNotFound) {
			t.Errorf("%s: DeleteDoc: %v; want an error saying what is wrong, not ErrNotFound", name, err)
		}
	}
}

// testDocInvalidPrefixes checks that ListDocs refuses an empty kind and a
// prefix that is not UTF-8 or holds NUL.
func testDocInvalidPrefixes(t *testing.T, s registry.DocStore) {
	for name, n := range map[string][2]string{
		"empty kind":           {"", "x"},
		"NUL in prefix":        {"k", "x\x00"},
		"invalid UTF-8 prefix": {"k", "x\xc3"},
	} {
		if docs, err := s.ListDocs(t.Context(), n[0], n[1]); err == nil {
			t.Errorf("%s: ListDocs = %q, nil; want an error", name, docKeys(docs))
		}
	}
}

func testDocKindsIsolated(t *testing.T, s registry.DocStore) {
	ctx := t.Context()
	// "a" is a prefix of "ab", and "a"+"b" in some other split: none of them
	// may see the others' documents.
	for _, kind := range []string{"a", "ab", "agent", "mcp_server"} {
		putDoc(t, s, kind, "same", fmt.Sprintf(`{"kind":%q}`, kind))
		putDoc(t, s, kind, "b"+kind, `0`)
	}
	for _, kind := range []string{"a", "ab", "agent", "mcp_server"} {
		d, err := s.GetDoc(ctx, kind, "same")
		if err != nil || d.Kind != kind || string(d.Value) != fmt.Sprintf(`{"kind":%q}`, kind) {
			t.Errorf("GetDoc(%s, same) = %q %q, %v", kind, d.Kind, d.Value, err)
		}
		if got := docState(t, s, kind); len(got) != 2 {
			t.Errorf("kind %s holds %q; want its own two documents", kind, got)
		}
	}
	if _, err := s.GetDoc(ctx, "a", "bab"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("GetDoc(a, bab) sees kind ab's document: %v", err)
	}
	if err := s.DeleteDoc(ctx, "a", "same"); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ab", "agent", "mcp_server"} {
		if _, err := s.GetDoc(ctx, kind, "same"); err != nil {
			t.Errorf("deleting a/same deleted %s/same: %v", kind, err)
		}
	}
	if docs, err := s.ListDocs(ctx, "ag", ""); err != nil || len(docs) != 0 {
		t.Errorf("ListDocs(ag) = %q, %v; a kind is not a prefix", docKeys(docs), err)
	}
}

func testDocConcurrentPut(t *testing.T, s registry.DocStore) {
	const n = 8
	values := make([]string, n)
	for i := range values {
		// Different lengths, so that a torn write would show.
		values[i] = fmt.Sprintf(`{"writer":%d,"pad":%q}`, i, strings.Repeat(string(rune('a'+i)), 100*(i+1)))
	}
	start := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			for j := 0; j < 5; j++ {
				if err := s.PutDoc(t.Context(), "race", "same", []byte(values[i])); err != nil {
					errs <- err
					return
				}
			}
		}(i)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent PutDoc: %v", err)
	}
	d, err := s.GetDoc(t.Context(), "race", "same")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(values, string(d.Value)) {
		t.Errorf("after concurrent PutDocs the value is %.80q…, none of the values put", d.Value)
	}
	if got := docState(t, s, "race"); len(got) != 1 {
		t.Errorf("concurrent PutDocs of one key left %d documents", len(got))
	}
}

func testDocConcurrentApply(t *testing.T, s registry.DocStore) {
	// Each writer puts the same keys in its own order; every batch is
	// atomic, so whoever committed last owns every key.
	const n = 8
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	start := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var ops []registry.DocOp
			for j := range keys {
				k := keys[(i+j)%len(keys)]
				if i%2 == 1 {
					k = keys[len(keys)-1-(i+j)%len(keys)]
				}
				ops = append(ops, registry.DocOp{Kind: "race", Key: k, Value: fmt.Appendf(nil, `{"writer":%d}`, i)})
			}
			<-start
			errs <- s.ApplyDocs(t.Context(), ops)
		}(i)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent ApplyDocs: %v", err)
		}
	}
	got := docState(t, s, "race")
	if len(got) != len(keys) {
		t.Fatalf("after concurrent ApplyDocs the kind holds %d documents, want %d", len(got), len(keys))
	}
	for _, k := range keys {
		if got[k] != got[keys[0]] {
			t.Errorf("after concurrent ApplyDocs the documents mix batches: %q", got)
			break
		}
	}
}

func testDocClosed(t *testing.T, s registry.DocStore) {
	ctx := t.Context()
	putDoc(t, s, "k", "x", `1`)
	c, ok := s.(interface{ Close() error })
	if !ok {
		t.Skip("the store has no Close method")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	notClosed := func(what string, err error) {
		t.Helper()
		if err == nil || errors.Is(err, registry.ErrNotFound) {
			t.Errorf("%s after Close: %v; want an error saying the store is closed", what, err)
		}
	}
	notClosed("PutDoc", s.PutDoc(ctx, "k", "y", []byte(`1`)))
	_, err := s.GetDoc(ctx, "k", "x")
	notClosed("GetDoc", err)
	_, err = s.ListDocs(ctx, "k", "")
	notClosed("ListDocs", err)
	notClosed("DeleteDoc", s.DeleteDoc(ctx, "k", "x"))
	notClosed("ApplyDocs", s.ApplyDocs(ctx, []registry.DocOp{{Kind: "k", Key: "y", Value: []byte(`1`)}}))
	notClosed("ApplyDocs of no ops", s.ApplyDocs(ctx, nil))
}
