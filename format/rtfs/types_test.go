package rtfs

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
)

func mustJSON(t *testing.T, s string) capability.Schema {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return capability.Normalize(m).(map[string]any)
}

func typeOf(t *testing.T, src string) capability.Schema {
	t.Helper()
	s, err := TypeToSchema(parseOne(t, src))
	if err != nil {
		t.Fatalf("TypeToSchema(%s): %v", src, err)
	}
	return s
}

// typeTable holds RTFS types, the JSON Schema each is read as, and the RTFS
// type that schema is written as (the canonical spelling).
var typeTable = []struct {
	rtfs, schema, canonical string
}{
	{":string", `{"type":"string"}`, ":string"},
	{":int", `{"type":"integer"}`, ":int"},
	{":integer", `{"type":"integer"}`, ":int"},
	{":float", `{"type":"number"}`, ":float"},
	{":number", `{"type":"number"}`, ":float"},
	{":bool", `{"type":"boolean"}`, ":bool"},
	{"boolean", `{"type":"boolean"}`, ":bool"},
	{":nil", `{"type":"null"}`, ":nil"},
	{"nil", `{"type":"null"}`, ":nil"},
	{":any", `{}`, ":any"},
	{":keyword", `{"type":"string","x-rtfs-type":"keyword"}`, ":keyword"},
	{":symbol", `{"type":"string","x-rtfs-type":"symbol"}`, ":symbol"},
	{":timestamp", `{"type":"string","format":"date-time"}`, ":timestamp"},
	{":uuid", `{"type":"string","format":"uuid"}`, ":uuid"},
	{":map", `{"type":"object"}`, ":map"},
	{"[:map]", `{"type":"object"}`, ":map"},
	{"{}", `{"type":"object"}`, ":map"},
	{":vector", `{"type":"array"}`, ":vector"},
	{":string?", `{"type":["string","null"]}`, "[:union :string :nil]"},
	{"[:vector :string]", `{"type":"array","items":{"type":"string"}}`, "[:vector :string]"},
	{"[:vector :map]", `{"type":"array","items":{"type":"object"}}`, "[:vector :map]"},
	{"[:vector :int?]", `{"type":"array","items":{"type":["integer","null"]}}`, "[:vector [:union :int :nil]]"},
	{"[:map [:owner :string] [:line :float?] [:labels [:vector :string]?] [:state :string ?]]",
		`{"type":"object","properties":{"owner":{"type":"string"},"line":{"type":"number"},"labels":{"type":"array","items":{"type":"string"}},"state":{"type":"string"}},"required":["owner"]}`,
		"[:map [:labels [:vector :string]?] [:line :float?] [:owner :string] [:state :string?]]"},
	{"[:map [:b :int] [:a :int]]", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`, "[:map [:a :int] [:b :int]]"},
	{"{:q :string ;; optional\n :lat :float ;; optional\n :cnt :int}",
		`{"type":"object","properties":{"q":{"type":"string"},"lat":{"type":"number"},"cnt":{"type":"integer"}},"required":["cnt"]}`,
		"[:map [:cnt :int] [:lat :float?] [:q :string?]]"},
	{"{:coord {:lon :float :lat :float} :name :string? \"two words\" :bool}",
		`{"type":"object","properties":{"coord":{"type":"object","properties":{"lon":{"type":"number"},"lat":{"type":"number"}},"required":["lat","lon"]},"name":{"type":"string"},"two words":{"type":"boolean"}},"required":["coord","two words"]}`,
		`[:map [:coord [:map [:lat :float] [:lon :float]]] [:name :string?] ["two words" :bool]]`},
	{"[:map [:id :string] [:* :int]]", `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":{"type":"integer"}}`, "[:map [:id :string] [:* :int]]"},
	{"[:map-of :string :int]", `{"type":"object","additionalProperties":{"type":"integer"}}`, "[:map-of :string :int]"},
	{"[:map-of :keyword [:vector :any]]", `{"type":"object","additionalProperties":{"type":"array","items":{}}}`, "[:map-of :string [:vector :any]]"},
	{"[:map-of :uuid :bool]", `{"type":"object","additionalProperties":{"type":"boolean"},"propertyNames":{"type":"string","format":"uuid"}}`, "[:map-of :uuid :bool]"},
	{"[:tuple :string :int]", `{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}`, "[:tuple :string :int]"},
	{"[:union :string :int]", `{"type":["string","integer"]}`, "[:union :string :int]"},
	{"[:union :string :string]", `{"type":"string"}`, ":string"},
	{"[:union :string [:vector :int]]", `{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"integer"}}]}`, "[:union :string [:vector :int]]"},
	{"[:enum \"LEFT\" \"RIGHT\"]", `{"type":"string","enum":["LEFT","RIGHT"]}`, `[:enum "LEFT" "RIGHT"]`},
	{"[:enum :open :closed]", `{"type":"string","enum":["open","closed"]}`, `[:enum "open" "closed"]`},
	{"[:enum 1 2.5]", `{"type":"number","enum":[1,2.5]}`, "[:enum 1 2.5]"},
	{"[:enum 1 \"a\" nil]", `{"enum":[1,"a",null]}`, `[:enum 1 "a" nil]`},
	{"[:val 42]", `{"const":42}`, "[:val 42]"},
	{"[:and :int [:>= 0] [:< 100]]", `{"type":"integer","minimum":0,"exclusiveMaximum":100}`, "[:and :int [:>= 0] [:< 100]]"},
	{"[:and :string [:min-length 1] [:max-length 5] [:matches-regex \"^[a-z]+$\"]]", `{"type":"string","minLength":1,"maxLength":5,"pattern":"^[a-z]+$"}`, `[:and :string [:min-length 1] [:max-length 5] [:matches-regex "^[a-z]+$"]]`},
	{"[:and :string [:length 3]]", `{"type":"string","minLength":3,"maxLength":3}`, "[:and :string [:min-length 3] [:max-length 3]]"},
	{"[:and :float [:in-range 0 1.5]]", `{"type":"number","minimum":0,"maximum":1.5}`, "[:and :float [:>= 0] [:<= 1.5]]"},
	{"[:and [:vector :string] [:non-empty]]", `{"type":"array","items":{"type":"string"},"minItems":1}`, "[:and [:vector :string] [:min-count 1]]"},
	{"[:and [:map [:a :int]] [:non-empty]]", `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"minProperties":1}`, "[:and [:map [:a :int]] [:non-empty]]"},
	{"[:and :string [:non-empty]]", `{"type":"string","minLength":1}`, "[:and :string [:min-length 1]]"},
	{"[:and :string [:= \"x\"]]", `{"type":"string","const":"x"}`, `[:and :string [:= "x"]]`},
	{"[:and [:map [:a :int]] [:map [:b :int]]]", `{"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"integer"}},"required":["b"]}]}`, "[:and [:map [:a :int]] [:map [:b :int]]]"},
	{"[:map [:files [:vector [:map [:content :string] [:path :string]]]] [:opt [:union :string :nil]]]",
		`{"type":"object","properties":{"files":{"type":"array","items":{"type":"object","properties":{"content":{"type":"string"},"path":{"type":"string"}},"required":["content","path"]}},"opt":{"type":["string","null"]}},"required":["files","opt"]}`,
		"[:map [:files [:vector [:map [:content :string] [:path :string]]]] [:opt [:union :string :nil]]]"},
}

func TestTypeToSchema(t *testing.T) {
	for _, tt := range typeTable {
		t.Run(tt.rtfs, func(t *testing.T) {
			got := typeOf(t, tt.rtfs)
			want := mustJSON(t, tt.schema)
			if !reflect.DeepEqual(got, want) {
				gj, _ := json.Marshal(got)
				t.Fatalf("got  %s\nwant %s", gj, tt.schema)
			}
			if _, issues := capability.CompileSchema(got); len(issues) > 0 {
				t.Errorf("not a valid JSON Schema: %v", issues)
			}
		})
	}
}

func TestSchemaToType(t *testing.T) {
	for _, tt := range typeTable {
		t.Run(tt.rtfs, func(t *testing.T) {
			s := mustJSON(t, tt.schema)
			if got := SchemaToType(s); got != tt.canonical {
				t.Fatalf("SchemaToType(%s) = %s, want %s", tt.schema, got, tt.canonical)
			}
			// Both directions agree: the canonical type reads as the schema.
			if back := typeOf(t, tt.canonical); !reflect.DeepEqual(back, s) {
				bj, _ := json.Marshal(back)
				t.Errorf("TypeToSchema(%s) = %s, want %s", tt.canonical, bj, tt.schema)
			}
		})
	}
}

// TestSchemaToTypeNearest covers JSON Schemas RTFS types cannot fully say:
// the nearest type is written (and WriteCapability carries the rest).
func TestSchemaToTypeNearest(t *testing.T) {
	tests := []struct{ schema, want string }{
		{`{"type":"string","description":"Repository owner"}`, ":string"},
		{`{"type":"string","enum":["LEFT","RIGHT"],"description":"side"}`, `[:enum "LEFT" "RIGHT"]`},
		{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false,"required":["a"]}`, "[:map [:a :string]]"},
		{`{"type":"object","properties":{}}`, "[:map]"},
		{`{"type":"string","format":"email"}`, ":string"},
		{`{"oneOf":[{"type":"string"}]}`, ":any"},
		{`{"type":["string"]}`, ":string"},
		{`{"type":"array","items":true}`, "[:vector :any]"},
		{`{"const":{"a":1}}`, ":any"},
		{`{"properties":{"x":{"type":"integer"}}}`, "[:map [:x :int?]]"},
		{`{"items":{"type":"integer"}}`, "[:vector :int]"},
	}
	for _, tt := range tests {
		if got := SchemaToType(mustJSON(t, tt.schema)); got != tt.want {
			t.Errorf("SchemaToType(%s) = %s, want %s", tt.schema, got, tt.want)
		}
	}
}

func TestTypeErrors(t *testing.T) {
	tests := []struct {
		src       string
		line, col int
		msg       string
	}{
		{":strng", 1, 1, "unknown type keyword :strng: use one of :string :int"},
		{"[:map [:a :string] [:b]]", 1, 20, "a [:map …] entry is [:key Type]"},
		{"[:map [:a :string] [:a :int]]", 1, 21, `key "a" appears twice`},
		{"{:a :string\n :b :wat}", 2, 5, "unknown type keyword :wat"},
		{"[:vector :string :int]", 1, 1, "[:vector T] takes one element type, got 2"},
		{"[:fn [:int] :int]", 1, 1, "[:fn …] has no JSON Schema equivalent"},
		{"[:frob :int]", 1, 1, "unknown type form [:frob …]"},
		{"[:enum]", 1, 1, "[:enum …] needs at least one value"},
		{"[:enum [1]]", 1, 8, "is not a literal"},
		{"[:and :int [:>= \"x\"]]", 1, 17, "[:>= …] needs a number"},
		{"[:and [:and :string [:min-length 1]] [:min-length 2]]", 1, 38, "sets minLength, which the type already has"},
		{"[:map [:a :string :x]]", 1, 19, "at most the optional marker ?"},
		{"\"text\"", 1, 1, `string "text" is not a type`},
		{"[1 2]", 1, 1, "a type vector starts with a keyword"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := TypeToSchema(parseOne(t, tt.src))
			var te *TypeError
			if !errors.As(err, &te) {
				t.Fatalf("error %v, want a *TypeError", err)
			}
			if te.Line != tt.line || te.Column != tt.col || !strings.Contains(te.Message, tt.msg) {
				t.Errorf("%d:%d %q, want %d:%d containing %q", te.Line, te.Column, te.Message, tt.line, tt.col, tt.msg)
			}
		})
	}
}

func TestEquivalentSchemas(t *testing.T) {
	mcp := mustJSON(t, `{"type":"object","properties":{
		"owner":{"type":"string","description":"Repository owner"},
		"perPage":{"type":"number","minimum":1},
		"labels":{"type":"array","items":{"type":"string"}},
		"side":{"type":"string","enum":["LEFT","RIGHT"]}},
		"required":["owner","perPage"]}`)
	same := typeOf(t, "[:map [:labels [:vector :string]?] [:owner :string] [:perPage :float] [:side :string?]]")
	if diffs := equivalentSchemas(mcp, same); len(diffs) != 0 {
		t.Errorf("equivalent schemas reported different: %v", diffs)
	}
	other := typeOf(t, "[:map [:labels [:vector :int]?] [:owner :string?] [:perPage :int] [:extra :bool]]")
	want := []string{
		"extra: property only in the second schema",
		"labels[]: type :string vs :int",
		"owner: required in the first schema, optional in the second",
		"perPage: type :float vs :int",
		"side: property only in the first schema",
	}
	if got := equivalentSchemas(mcp, other); !reflect.DeepEqual(got, want) {
		t.Errorf("differences:\n got %q\nwant %q", got, want)
	}
}
