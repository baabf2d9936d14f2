package jsoncheck

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		name, doc string
		want      *Error // nil: no problem
	}{
		{"clean", `{"a": {"b": [1, {"c": "d"}], "e": "é\u00e9\ud83d\ude00"}, "f": null}`, nil},
		{"same key in sibling objects", `[{"a": 1}, {"a": 2}]`, nil},
		{"same key at other levels", `{"a": {"a": {"a": 1}}}`, nil},
		{"key equal to a value", `{"a": "b", "b": "a"}`, nil},
		{"top-level duplicate", "{\n  \"package\": \"x\",\n  \"package\": \"y\"\n}",
			&Error{Line: 3, Column: 3, Path: "package", Message: `key "package" is already defined at line 2: remove one of them`}},
		{"nested duplicate", "{\"paths\": {\"/a\": {\"get\": {\"operationId\": \"x\",\n \"operationId\": \"y\"}}}}",
			&Error{Line: 2, Column: 2, Path: "paths./a.get.operationId", Message: `key "operationId" is already defined at line 1: remove one of them`}},
		{"duplicate in an array item", `{"caps": [{"id": 1}, {"id": 2, "x": 1, "id": 3}]}`,
			&Error{Line: 1, Column: 40, Path: "caps[1].id", Message: `key "id" is already defined at line 1: remove one of them`}},
		{"escaped duplicate", `{"a": 1, "\u0061": 2}`,
			&Error{Line: 1, Column: 10, Path: "a", Message: `key "a" is already defined at line 1: remove one of them`}},
		{"invalid UTF-8 in a value", "{\"a\": [\"ok\", \"b\xffc\"]}",
			&Error{Line: 1, Column: 16, Path: "a[1]", Message: "invalid UTF-8 byte 0xFF: save the file as UTF-8 (a decoder would replace it with U+FFFD)"}},
		{"invalid UTF-8 in a key", "{\"é\": 1,\n \"k\xc3\": 2}",
			&Error{Line: 2, Column: 4, Path: "", Message: "invalid UTF-8 byte 0xC3: save the file as UTF-8 (a decoder would replace it with U+FFFD)"}},
		{"lone high surrogate", `{"a": "x\ud800y"}`,
			&Error{Line: 1, Column: 9, Path: "a", Message: `\uD800 is half of a UTF-16 surrogate pair without its other half: it is not a character (a decoder would replace it with U+FFFD); fix the escape`}},
		{"lone low surrogate", `["\udc00"]`,
			&Error{Line: 1, Column: 3, Path: "[0]", Message: `\uDC00 is half of a UTF-16 surrogate pair without its other half: it is not a character (a decoder would replace it with U+FFFD); fix the escape`}},
		{"escaped quote and backslash", `{"a\"": 1, "a\\": 2, "a": 3}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Check([]byte(c.doc))
			switch {
			case c.want == nil && got != nil:
				t.Errorf("unexpected %v", got)
			case c.want != nil && (got == nil || *got != *c.want):
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	e := &Error{Line: 3, Column: 2, Path: "a.b", Message: "bad"}
	if e.Error() != "line 3, column 2: a.b: bad" {
		t.Errorf("%q", e.Error())
	}
	e.Path = ""
	if e.Error() != "line 3, column 2: bad" {
		t.Errorf("%q", e.Error())
	}
}

func TestInvalidUTF8(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{{"", -1}, {"abc", -1}, {"aé", -1}, {"a\xffb", 1}, {"éé\xc3", 4}} {
		if got := InvalidUTF8([]byte(c.s)); got != c.want {
			t.Errorf("InvalidUTF8(%q) = %d, want %d", c.s, got, c.want)
		}
	}
	if l, c := Position([]byte("ab\né\xffx"), 5); l != 2 || c != 2 {
		t.Errorf("Position: %d:%d", l, c)
	}
}

// A large document is checked in one pass (no position is computed from
// the start for every key).
func TestCheckLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 200_000 {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(`"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `_` + itoa(i) + `": {"a": [1, "é"]}`)
	}
	b.WriteString("}")
	if err := Check([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// FuzzCheck: Check never panics, and on JSON that encoding/json accepts it
// reports a duplicate exactly when decoding into a map loses a key, and
// invalid text exactly when the decoded strings differ from the raw ones.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a": 1, "a": 2}`, `{"a": {"b": 1}, "b": {"a": 1}}`, `[{"a": 1}, {"a": 1}]`,
		`{"a": "\ud83d\ude00"}`, `{"a": "\ud800"}`, "{\"a\": \"\xff\"}", `{"\u0061": 1, "a": 2}`,
		`{"a\"b": 1, "a\\": 2}`, `"x"`, `1`, `{"a": [1, 2, {"a": [3]}], "b": null}`, `{"a":`, `{"a": "`, `\`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data)
		if !json.Valid(data) {
			return
		}
		dup := hasDuplicate(t, data)
		switch {
		case dup && err == nil:
			t.Fatalf("a duplicate key was not reported in %q", data)
		case err != nil && !dup && utf8.Valid(data) && !strings.Contains(err.Message, "surrogate"):
			t.Fatalf("reported %v in %q, which has no duplicate key and is valid UTF-8", err, data)
		case err == nil && !utf8.Valid(data):
			t.Fatalf("invalid UTF-8 not reported in %q", data)
		}
	})
}

// hasDuplicate reports whether some object of the valid JSON data has a
// key twice, by decoding each object token by token.
func hasDuplicate(t *testing.T, data []byte) bool {
	var v json.RawMessage
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return dupIn(t, v)
}

func dupIn(t *testing.T, raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		_, _ = dec.Token() // {
		n := 0
		for dec.More() {
			if _, err := dec.Token(); err != nil { // key
				t.Fatal(err)
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != len(obj) {
			return true
		}
		for _, v := range obj {
			if dupIn(t, v) {
				return true
			}
		}
		return false
	}
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil {
		for _, v := range arr {
			if dupIn(t, v) {
				return true
			}
		}
	}
	return false
}
