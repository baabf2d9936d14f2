package rtfs

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func parseOne(t *testing.T, src string) Value {
	t.Helper()
	forms, err := Parse("t.rtfs", []byte(src))
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	if len(forms) != 1 {
		t.Fatalf("Parse(%q): %d forms, want 1", src, len(forms))
	}
	return forms[0]
}

func TestParseAtoms(t *testing.T) {
	tests := []struct {
		src  string
		kind Kind
		str  string
		i    int64
		f    float64
		b    bool
	}{
		{src: "nil", kind: KindNil},
		{src: "true", kind: KindBool, b: true},
		{src: "false", kind: KindBool},
		{src: "42", kind: KindInt, i: 42},
		{src: "-7", kind: KindInt, i: -7},
		{src: "+3", kind: KindInt, i: 3},
		{src: "9223372036854775807", kind: KindInt, i: math.MaxInt64},
		{src: "1.5", kind: KindFloat, f: 1.5},
		{src: "-2.5e3", kind: KindFloat, f: -2500},
		{src: "1e+21", kind: KindFloat, f: 1e21},
		{src: "6E-2", kind: KindFloat, f: 0.06},
		{src: "##Inf", kind: KindFloat, f: math.Inf(1)},
		{src: "##-Inf", kind: KindFloat, f: math.Inf(-1)},
		{src: ":foo", kind: KindKeyword, str: "foo"},
		{src: ":ns/name", kind: KindKeyword, str: "ns/name"},
		{src: ":string?", kind: KindKeyword, str: "string?"},
		{src: ":com.acme:v1.0/foo", kind: KindKeyword, str: "com.acme:v1.0/foo"},
		{src: "::auto", kind: KindKeyword, str: ":auto"},
		{src: "foo", kind: KindSymbol, str: "foo"},
		{src: "ccos.io/println", kind: KindSymbol, str: "ccos.io/println"},
		{src: "-", kind: KindSymbol, str: "-"},
		{src: "->", kind: KindSymbol, str: "->"},
		{src: "-foo", kind: KindSymbol, str: "-foo"},
		{src: "entries:", kind: KindSymbol, str: "entries:"},
		{src: "λ", kind: KindSymbol, str: "λ"},
		{src: "2025-10-23T21:35:43Z", kind: KindTimestamp, str: "2025-10-23T21:35:43Z"},
		{src: "123e4567-e89b-12d3-a456-426614174000", kind: KindUUID, str: "123e4567-e89b-12d3-a456-426614174000"},
		{src: `"plain"`, kind: KindString, str: "plain"},
		{src: `"a\nb\tc\"d\\e\/f"`, kind: KindString, str: "a\nb\tc\"d\\e/f"},
		{src: `"caf\u00e9 \ud83d\ude00"`, kind: KindString, str: "café 😀"},
		{src: `"keeps \d unknown escapes"`, kind: KindString, str: `keeps \d unknown escapes`},
		{src: "\"multi\nline\"", kind: KindString, str: "multi\nline"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			v := parseOne(t, tt.src)
			if v.Kind != tt.kind {
				t.Fatalf("kind %v, want %v", v.Kind, tt.kind)
			}
			switch tt.kind {
			case KindInt:
				if v.Int != tt.i {
					t.Errorf("int %d, want %d", v.Int, tt.i)
				}
			case KindFloat:
				if v.Float != tt.f {
					t.Errorf("float %g, want %g", v.Float, tt.f)
				}
			case KindBool:
				if v.Bool != tt.b {
					t.Errorf("bool %v, want %v", v.Bool, tt.b)
				}
			case KindNil:
			default:
				if v.Str != tt.str {
					t.Errorf("str %q, want %q", v.Str, tt.str)
				}
			}
			if v.Line != 1 || v.Column != 1 || v.Offset != 0 || v.End != len(tt.src) {
				t.Errorf("span %d:%d [%d,%d), want 1:1 [0,%d)", v.Line, v.Column, v.Offset, v.End, len(tt.src))
			}
		})
	}
	if v := parseOne(t, "##NaN"); v.Kind != KindFloat || !math.IsNaN(v.Float) {
		t.Errorf("##NaN: %+v", v)
	}
}

func TestParseCollectionsAndPositions(t *testing.T) {
	src := "; header\n(capability \"x\"\n  :input-schema {\n    :a :string ;; optional\n    :b [:vector :int]\n  }, 'q `(~a ~@b) @ctx #(+ % 1) ^{:doc \"d\"} f)\n"
	forms, err := Parse("t.rtfs", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(forms) != 1 {
		t.Fatalf("%d forms, want 1", len(forms))
	}
	f := forms[0]
	if f.Kind != KindList || f.Line != 2 || f.Column != 1 || len(f.Items) != 9 {
		t.Fatalf("list at %d:%d with %d items: %+v", f.Line, f.Column, len(f.Items), f)
	}
	m := f.Items[3]
	if m.Kind != KindMap || m.Line != 3 || m.Column != 17 || len(m.Items) != 4 {
		t.Fatalf("map at %d:%d with %d items", m.Line, m.Column, len(m.Items))
	}
	if got := m.Items[1]; got.Comment != "optional" || got.Line != 4 || got.Column != 8 {
		t.Errorf(":a's type: comment %q at %d:%d, want \"optional\" at 4:8", got.Comment, got.Line, got.Column)
	}
	if got := m.Items[3]; got.Comment != "" || got.Kind != KindVector {
		t.Errorf(":b's type: %+v", got)
	}
	if got := m.Text([]byte(src)); !strings.HasPrefix(got, "{\n    :a :string ;; optional") || !strings.HasSuffix(got, "}") {
		t.Errorf("Text of the map: %q", got)
	}
	prefixes := []string{"'", "`", "@", "#", "^"}
	for i, want := range prefixes {
		p := f.Items[4+i]
		if p.Kind != KindPrefixed || p.Str != want {
			t.Errorf("item %d: %v %q, want reader macro %q", 4+i, p.Kind, p.Str, want)
		}
	}
	if q := f.Items[5].Items[0]; q.Kind != KindList || q.Items[0].Str != "~" || q.Items[1].Str != "~@" {
		t.Errorf("quasiquote body: %+v", q)
	}
	if meta := f.Items[8]; len(meta.Items) != 2 || meta.Items[0].Kind != KindMap || !meta.Items[1].IsSymbol("f") {
		t.Errorf("^meta form: %+v", meta)
	}
}

func TestParseBlockCommentsAndBOM(t *testing.T) {
	src := "\xEF\xBB\xBF#| block\n comment |# [1 #| inner |# 2] ; line\n:k"
	forms, err := Parse("t.rtfs", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(forms) != 2 || len(forms[0].Items) != 2 || forms[0].Comment != "line" || !forms[1].IsKeyword("k") || forms[1].Line != 3 {
		t.Fatalf("forms: %+v", forms)
	}
}

func TestParseErrors(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	tests := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"unterminated string", "(capability \"x\"\n  :name \"oops)\n", 2, 9, `string opened here is never closed: add the closing "`},
		{"unclosed list", "(capability \"x\"\n  :name \"a\"\n", 1, 1, `"(" opened here is never closed (the file ends at 3:1): add ")"`},
		{"mismatched closer", "(a [b c)\n", 1, 8, `")" does not close "[" opened at 1:4: close it with "]" first`},
		{"stray closer", "(a)\n  )", 2, 3, `unexpected ")": no bracket is open here; remove it`},
		{"odd map", "{:a 1\n :b}", 1, 1, "map has 3 forms, an odd number: every key needs a value (the last form, keyword :b at 2:2, has none)"},
		{"bad unicode escape", `"x\u12G4"`, 1, 3, `invalid \u escape: write \u and four hexadecimal digits`},
		{"lone surrogate", `"\ud800x"`, 1, 2, `half of a UTF-16 surrogate pair`},
		{"bad number", "[1 2x]", 1, 4, `"2x" is not a number`},
		{"integer overflow", "99999999999999999999", 1, 1, "does not fit in 64 bits"},
		{"float overflow", "1e999", 1, 1, "out of range"},
		{"colon alone", "[: a]", 1, 2, "':' alone is not a keyword"},
		{"set literal", "  #{1 2}", 1, 3, "unsupported reader macro '#'"},
		{"bad special number", "##Foo", 1, 1, `"##Foo" is not a special number`},
		{"unclosed block comment", "a #| never", 1, 3, "block comment #| is never closed"},
		{"quote at end", "(a 'b) '", 1, 8, "' at the end of the file"},
		{"quote before closer", "(a ')", 1, 4, `' is followed by ")"`},
		{"invalid utf-8", "(a \"\xff\")", 1, 5, "invalid UTF-8 byte 0xff"},
		{"too deep", deep, 1, MaxDepth + 1, "nesting deeper than 512 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("bad.rtfs", []byte(tt.src))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v, want a *SyntaxError", err)
			}
			if se.File != "bad.rtfs" || se.Line != tt.line || se.Column != tt.col {
				t.Errorf("at %s:%d:%d, want bad.rtfs:%d:%d (%s)", se.File, se.Line, se.Column, tt.line, tt.col, se.Message)
			}
			if !strings.Contains(se.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", se.Message, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), "bad.rtfs:") {
				t.Errorf("Error() %q does not start with the file", err.Error())
			}
		})
	}
}

func TestParseColumnsCountCharacters(t *testing.T) {
	_, err := Parse("t.rtfs", []byte("(\"é\" ]"))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Column != 6 {
		t.Fatalf("error %v, want column 6 (characters, not bytes)", err)
	}
}
