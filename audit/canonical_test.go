package audit

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// RFC 8785 §3.2.2.
		{"rfc 8785 example", `{
			"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
			"string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
			"literals": [null, true, false]
		}`, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		// RFC 8785 §3.2.3: names sort by UTF-16 code units, so the emoji
		// (D83D DE00) sorts before U+FB33 although its code point is greater.
		{"rfc 8785 sorting", `{
			"\u20ac": "Euro Sign",
			"\r": "Carriage Return",
			"\ufb33": "Hebrew Letter Dalet With Dagesh",
			"1": "One",
			"\ud83d\ude00": "Emoji: Grinning Face",
			"\u0080": "Control",
			"\u00f6": "Latin Small Letter O With Diaeresis"
		}`, "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"key order", `{"b":1,"a":2,"aa":3,"A":4,"":5}`, `{"":5,"A":4,"a":2,"aa":3,"b":1}`},
		{"nested key order", `{"z":{"y":[{"b":1,"a":2}],"x":null}}`, `{"z":{"x":null,"y":[{"a":2,"b":1}]}}`},
		{"whitespace", " \t\r\n[ 1 , { } , [ ] , \"\" ] \n", `[1,{},[],""]`},
		{"escapes written short", `"\b\f\n\r\t\"\\"`, `"\b\f\n\r\t\"\\"`},
		{"control characters as lowercase \\u", `"\u0000\u001F\u001e\u000B"`, `"\u0000\u001f\u001e\u000b"`},
		{"escaped characters unescaped", `"\u0041\u00e9\u20AC\/\ud83d\ude00"`, `"Aé€/😀"`},
		{"DEL, U+2028 and U+2029 as UTF-8", `"\u007f\u2028\u2029"`, "\"\u007f\u2028\u2029\""},
		{"UTF-8 kept", `"ünï cödé ✓ 😀"`, `"ünï cödé ✓ 😀"`},
		{"integers", `[0, 1, -1, 100, 1E2, 1e+2, 9007199254740993]`, `[0,1,-1,100,100,100,9007199254740992]`},
		{"1e21 and 1e20", `[1e21, 1e20, 123456789012345678901234]`, `[1e+21,100000000000000000000,1.2345678901234569e+23]`},
		{"fractions", `[0.1, 0.5, 4.50, 1.0, -1.5e-7, 1e-6, 1e-7, 0.000001234]`, `[0.1,0.5,4.5,1,-1.5e-7,0.000001,1e-7,0.000001234]`},
		{"negative zero", `[-0, -0.0, -0e10, 0e-5]`, `[0,0,0,0]`},
		{"underflow to zero", `1e-400`, `0`},
		{"literals", `[true,false,null]`, `[true,false,null]`},
		{"scalar", ` "x" `, `"x"`},
	}
	for _, tt := range tests {
		got, err := Canonicalize([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: Canonicalize(%q): %v", tt.name, tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%s: Canonicalize(%q)\n got %s\nwant %s", tt.name, tt.in, got, tt.want)
		}
		again, err := Canonicalize(got)
		if err != nil || string(again) != string(got) {
			t.Errorf("%s: canonical form is not a fixed point: %s → %s, %v", tt.name, got, again, err)
		}
	}
}

func TestCanonicalizeRefuses(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", ``, "end of input"},
		{"two values", `{} {}`, "after the JSON value"},
		{"duplicate name", `{"a":1,"b":2,"a":3}`, `duplicate member name "a"`},
		{"duplicate name by escape", `{"a":1,"\u0061":2}`, `duplicate member name "a"`},
		{"lone high surrogate", `"\ud800"`, `lone surrogate \ud800`},
		{"high surrogate then text", `"\ud800x"`, `lone surrogate \ud800`},
		{"high surrogate then high", `"\ud800\ud800"`, `lone surrogate \ud800`},
		{"lone low surrogate", `"\udc00"`, `lone surrogate \udc00`},
		{"invalid UTF-8", "\"\xff\"", "invalid UTF-8"},
		{"raw control character", "\"a\nb\"", "control character U+000A"},
		{"number too big", `1e400`, "beyond the range"},
		{"negative number too big", `[-1e400]`, "beyond the range"},
		{"leading zero", `01`, "after the JSON value"},
		{"leading plus", `+1`, "expected a JSON value"},
		{"bare dot", `1.`, "after '.'"},
		{"bare exponent", `1e`, "exponent"},
		{"bare minus", `-`, "expected a digit"},
		{"NaN", `NaN`, "expected a JSON value"},
		{"bad escape", `"\x"`, `invalid escape sequence \x`},
		{"short \\u", `"\u12"`, `\u escape`},
		{"trailing comma", `[1,]`, "expected a JSON value"},
		{"trailing comma in object", `{"a":1,}`, "member name"},
		{"missing colon", `{"a" 1}`, "expected ':'"},
		{"unterminated string", `"abc`, "end of input in a string"},
		{"unterminated array", `[1`, "expected ',' or ']'"},
		{"single quotes", `{'a':1}`, "member name"},
		{"too deep", strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), "nest more than"},
	}
	for _, tt := range tests {
		got, err := Canonicalize([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "offset") {
			t.Errorf("%s: Canonicalize(%q) = %s, %v; want an error with the offset and %q", tt.name, tt.in, got, err, tt.want)
		}
	}
	if _, err := Canonicalize([]byte(strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth))); err != nil {
		t.Errorf("nesting %d deep: %v, want it accepted", maxDepth, err)
	}
}

// TestFormatNumber checks the ECMAScript forms of RFC 8785 Appendix B's
// IEEE 754 values (checked against Node's JSON.stringify).
func TestFormatNumber(t *testing.T) {
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		f := math.Float64frombits(tt.bits)
		if got := FormatNumber(f); got != tt.want {
			t.Errorf("FormatNumber(%016x = %v) = %s, want %s", tt.bits, f, got, tt.want)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	ordered := []string{"", "\r", "1", "A", "a", "aa", "\u0080", "ö", "€", "\U0001F600", "\U0001F601", "\ufb33", "\uffff"}
	for i := range ordered {
		for j := range ordered {
			got := compareUTF16(ordered[i], ordered[j])
			if (i < j && got >= 0) || (i > j && got <= 0) || (i == j && got != 0) {
				t.Errorf("compareUTF16(%q, %q) = %d, want the sign of %d", ordered[i], ordered[j], got, i-j)
			}
		}
	}
}

// FuzzCanonicalize checks that the canonical form of any accepted input is
// a fixed point, is valid JSON, and means the same as the input.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"b":[1,2.5e3,-0],"a":{"\u00e9":"\ud83d\ude00"}}`, `[1e21,0.1,"\u0000"]`, `"x"`, `null`, `{"a":{"a":{}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonicalize(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Canonicalize(%q) = %q, not valid JSON", in, out)
		}
		again, err := Canonicalize(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("Canonicalize(%q) = %q, but that canonicalises to %q, %v", in, out, again, err)
		}
		var a, b any
		if json.Unmarshal(in, &a) != nil || json.Unmarshal(out, &b) != nil {
			t.Fatalf("Canonicalize accepted %q, which encoding/json refuses", in)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("Canonicalize(%q) = %q means something else", in, out)
		}
	})
}

// FuzzFormatNumber checks that every number reads back as itself.
func FuzzFormatNumber(f *testing.F) {
	for _, v := range []uint64{0, 1, 0x3ff0000000000000, 0x444b1ae4d6e2ef50, 0xbecbf647612f3696} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		v := math.Float64frombits(bits)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		s := FormatNumber(v)
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != v {
			t.Fatalf("FormatNumber(%v) = %s, which reads back as %v, %v", v, s, back, err)
		}
		if !json.Valid([]byte(s)) {
			t.Fatalf("FormatNumber(%v) = %s, not a JSON number", v, s)
		}
	})
}
