package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// The reference: the official schema compiled by santhosh-tekuri/jsonschema
// (draft-07 through the schema's $schema; formats asserted, as that library
// does for drafts before 2019-09).

const schemaURL = "https://openstandardagents.org/schemas/v0.2.9/agent.json"

func referenceSchema(t testing.TB) (*jsonschema.Schema, map[string]any) {
	t.Helper()
	path := testpeers.Corpus(t, "ossa-v0.2.9/ossa-0.2.9.schema.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	return sch, raw
}

// refVerdict validates doc with the reference and returns the field paths
// (in this package's notation) of every failing leaf.
func refVerdict(sch *jsonschema.Schema, doc any) (bool, []string) {
	err := sch.Validate(doc)
	if err == nil {
		return true, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return false, []string{"?" + err.Error()}
	}
	var paths []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			paths = append(paths, pathOf(doc, e.InstanceLocation))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return false, paths
}

// pathOf renders a JSON pointer's tokens as a field path, using the document
// to tell array indexes from keys.
func pathOf(doc any, tokens []string) string {
	p, cur := "", doc
	for _, tok := range tokens {
		switch x := cur.(type) {
		case []any:
			i, _ := strconv.Atoi(tok)
			p = indexPath(p, i)
			if i < len(x) {
				cur = x[i]
			}
		case map[string]any:
			p = keyPath(p, tok)
			cur = x[tok]
		default:
			p = keyPath(p, tok)
		}
	}
	return p
}

// independentDecode reads data with yaml.v3's own decoder (not this
// package's node walker): nil and an error when the file is not exactly one
// YAML/JSON document.
func independentDecode(data []byte) (any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, v)
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%d documents", len(docs))
	}
	return jsonModel(docs[0]), nil
}

// jsonModel converts a yaml.v3 value to the JSON data model this package
// uses (timestamps become RFC 3339 text, as yaml.v3 loses the original).
func jsonModel(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonModel(e)
		}
		return x
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonModel(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonModel(e)
		}
		return x
	case int:
		return int64(x)
	case uint64:
		return float64(x)
	case time.Time:
		return x.Format(time.RFC3339)
	}
	return v
}

// sameModulo compares two documents, treating strings that differ only as
// two renderings of one timestamp as equal.
func sameModulo(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !sameModulo(x[k], y[k]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameModulo(x[i], y[i]) {
				return false
			}
		}
		return true
	case string:
		y, ok := b.(string)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		tx, ex := parseStamp(x)
		ty, ey := parseStamp(y)
		return ex == nil && ey == nil && tx.Equal(ty)
	case float64:
		if y, ok := b.(int64); ok {
			return x == float64(y)
		}
	case int64:
		if y, ok := b.(float64); ok {
			return float64(x) == y
		}
	}
	return reflect.DeepEqual(a, b)
}

func parseStamp(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999 -07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a timestamp")
}

func exampleFiles(t testing.TB) (string, []string) {
	t.Helper()
	dir := testpeers.Corpus(t, "ossa-v0.2.9/examples")
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return dir, files
}

// verdict is one file's result from one validator.
type verdict struct {
	readable bool
	valid    bool
	paths    []string // failing field paths (reference) or issue paths (ours)
	first    string   // ours: the first issue, rendered
}

func (v verdict) String() string {
	switch {
	case !v.readable:
		return "UNREADABLE"
	case v.valid:
		return "valid"
	}
	return "INVALID"
}

// TestExamplesMatchReference is the acceptance test of the validator: for
// every example file of the corpus, our verdict equals the official
// schema's, and for an invalid file our first issue's path is (a prefix or
// extension of) a path the reference reports.
func TestExamplesMatchReference(t *testing.T) {
	sch, _ := referenceSchema(t)
	dir, files := exampleFiles(t)
	if len(files) != 53 {
		t.Errorf("the corpus holds %d example files, want 53", len(files))
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-62s %-10s %-10s %s\n", "FILE", "OURS", "REFERENCE", "OUR FIRST ISSUE")
	counts := map[string]int{}
	var notes []string
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ours, ref verdict
		// Ours: UNREADABLE when the reader refuses the file, or finds it is
		// not one well-formed document (a duplicate key: yaml.v3, like
		// js-yaml, refuses such a file); else Validate's verdict.
		m, readIssues, rerr := ReadManifest(rel, data)
		var issues []capability.Issue
		if rerr == nil {
			issues = Validate(m)
		}
		switch {
		case rerr != nil:
			ours.first = rerr.Error()
		case capability.HasErrors(readIssues):
			ours.first = readIssues[0].String()
		default:
			ours.readable = true
			ours.valid = !capability.HasErrors(issues)
			for _, i := range issues {
				ours.paths = append(ours.paths, i.Path)
			}
			if len(issues) > 0 {
				ours.first = issues[0].String()
			}
		}
		// The reference reads the file with yaml.v3's own decoder.
		indep, ierr := independentDecode(data)
		if ierr == nil {
			ref.readable = true
			if !ours.readable {
				t.Errorf("%s: we cannot read it but yaml.v3 can", rel)
				continue
			}
			if !sameModulo(indep, m.Document) {
				t.Errorf("%s: our decoding differs from yaml.v3's", rel)
			}
			ref.valid, ref.paths = refVerdict(sch, m.Document) // the value both validators see
		} else {
			ref.first = ierr.Error()
		}
		if rerr == nil && !ours.readable {
			// Readable with reading errors: the schema verdicts on the
			// document as read (first value of a duplicate key) must agree too.
			refValid, _ := refVerdict(sch, m.Document)
			if refValid != !capability.HasErrors(issues) {
				t.Errorf("%s: on the document as read, ours valid=%v, reference valid=%v", rel, !capability.HasErrors(issues), refValid)
			}
			notes = append(notes, fmt.Sprintf("%s: %s; yaml.v3: %s; schema verdict on the document as read: ours %s, reference %s",
				rel, readIssues[0].Message, ref.first, validity(issues), validity(refIssuesOf(sch, m.Document))))
		}
		counts[ours.String()]++
		first := strings.TrimPrefix(ours.first, rel+":")
		if len(first) > 110 {
			first = first[:107] + "..."
		}
		fmt.Fprintf(&table, "%-62s %-10s %-10s %s\n", rel, ours, ref, first)
		if ours.String() != ref.String() {
			t.Errorf("%s: ours %s, reference %s (reference paths %v; ours %v)", rel, ours, ref, ref.paths, ours.paths)
			continue
		}
		if ours.readable && !ours.valid && !pathAgrees(ours.paths[0], ref.paths) {
			t.Errorf("%s: our first issue is at %s; the reference reports %v", rel, ours.paths[0], ref.paths)
		}
	}
	t.Logf("verdicts (ours vs the official schema through santhosh-tekuri/jsonschema):\n%s\n%d valid, %d invalid, %d unreadable\n%s",
		table.String(), counts["valid"], counts["INVALID"], counts["UNREADABLE"], strings.Join(notes, "\n"))
}

func validity(issues []capability.Issue) string {
	if capability.HasErrors(issues) {
		return "INVALID"
	}
	return "valid"
}

// refIssuesOf returns one error issue when the reference rejects doc.
func refIssuesOf(sch *jsonschema.Schema, doc any) []capability.Issue {
	if ok, _ := refVerdict(sch, doc); ok {
		return nil
	}
	return []capability.Issue{{Severity: capability.SeverityError}}
}

// pathAgrees reports whether p equals, extends or is extended by one of refs.
func pathAgrees(p string, refs []string) bool {
	for _, r := range refs {
		if p == r || r == "" || strings.HasPrefix(p, r+".") || strings.HasPrefix(p, r+"[") ||
			strings.HasPrefix(r, p+".") || strings.HasPrefix(r, p+"[") {
			return true
		}
	}
	return false
}

// mutation breaks (or, for a control, keeps) one schema rule in a valid
// manifest.
type mutation struct {
	name  string
	apply func(doc map[string]any)
	valid bool   // the expected verdict
	path  string // where the issue must be
}

func section(doc map[string]any, key string) map[string]any {
	m, ok := doc[key].(map[string]any)
	if !ok {
		m = map[string]any{}
		doc[key] = m
	}
	return m
}

var mutations = []mutation{
	{"remove spec.role (required)", func(d map[string]any) { delete(section(d, "spec"), "role") }, false, "spec.role"},
	{"kind: Tool (enum)", func(d map[string]any) { d["kind"] = "Tool" }, false, "kind"},
	{"unknown top-level key (additionalProperties: false)", func(d map[string]any) { d["labels"] = "x" }, false, "labels"},
	{"remove apiVersion (required)", func(d map[string]any) { delete(d, "apiVersion") }, false, "apiVersion"},
	{"spec.llm.provider: openia (enum)", func(d map[string]any) {
		section(d, "spec")["llm"] = map[string]any{"provider": "openia", "model": "gpt-4"}
	}, false, "spec.llm.provider"},
	{"metadata.name: 42 (type)", func(d map[string]any) { section(d, "metadata")["name"] = int64(42) }, false, "metadata.name"},
	{"spec.llm.temperature: hot (type)", func(d map[string]any) {
		section(d, "spec")["llm"] = map[string]any{"provider": "openai", "model": "gpt-4", "temperature": "hot"}
	}, false, "spec.llm.temperature"},
	{"spec.tools: a mapping (type)", func(d map[string]any) { section(d, "spec")["tools"] = map[string]any{"type": "mcp"} }, false, "spec.tools"},
	{"metadata: null (type)", func(d map[string]any) { d["metadata"] = nil }, false, "metadata"},
	{"apiVersion: ossa/v2.0 (pattern)", func(d map[string]any) { d["apiVersion"] = "ossa/v2.0" }, false, "apiVersion"},
	{"apiVersion: ossa/v0.2.9-alpha.1 (pattern)", func(d map[string]any) { d["apiVersion"] = "ossa/v0.2.9-alpha.1" }, false, "apiVersion"},
	{"apiVersion: ossa/v1 (pattern, control)", func(d map[string]any) { d["apiVersion"] = "ossa/v1" }, true, ""},
	{"metadata.name: My_Agent (pattern)", func(d map[string]any) { section(d, "metadata")["name"] = "My_Agent" }, false, "metadata.name"},
	{"metadata.version: v1.0.0 (pattern)", func(d map[string]any) { section(d, "metadata")["version"] = "v1.0.0" }, false, "metadata.version"},
	{"spec.llm.temperature: 2.5 (maximum)", func(d map[string]any) {
		section(d, "spec")["llm"] = map[string]any{"provider": "openai", "model": "gpt-4", "temperature": 2.5}
	}, false, "spec.llm.temperature"},
	{"spec.llm.temperature: 2 (maximum, control)", func(d map[string]any) {
		section(d, "spec")["llm"] = map[string]any{"provider": "openai", "model": "gpt-4", "temperature": int64(2)}
	}, true, ""},
	{"spec.llm.maxTokens: 0 (minimum)", func(d map[string]any) {
		section(d, "spec")["llm"] = map[string]any{"provider": "openai", "model": "gpt-4", "maxTokens": int64(0)}
	}, false, "spec.llm.maxTokens"},
	{"spec.llm.maxTokens: 1.5 (integer)", func(d map[string]any) {
		section(d, "spec")["llm"] = map[string]any{"provider": "openai", "model": "gpt-4", "maxTokens": 1.5}
	}, false, "spec.llm.maxTokens"},
	{"spec.llm.maxTokens: 100.0 (integer, control)", func(d map[string]any) {
		section(d, "spec")["llm"] = map[string]any{"provider": "openai", "model": "gpt-4", "maxTokens": 100.0}
	}, true, ""},
	{"spec.llm.max_tokens (nested additionalProperties: false)", func(d map[string]any) {
		section(d, "spec")["llm"] = map[string]any{"provider": "openai", "model": "gpt-4", "max_tokens": int64(100)}
	}, false, "spec.llm.max_tokens"},
	{"spec.role: \"\" (minLength)", func(d map[string]any) { section(d, "spec")["role"] = "" }, false, "spec.role"},
	{"metadata.description: 2001 characters (maxLength)", func(d map[string]any) {
		section(d, "metadata")["description"] = strings.Repeat("é", 2001)
	}, false, "metadata.description"},
	{"metadata.labels value of 64 characters (additionalProperties schema)", func(d map[string]any) {
		section(d, "metadata")["labels"] = map[string]any{"app.kubernetes.io/name": strings.Repeat("x", 64)}
	}, false, `metadata.labels["app.kubernetes.io/name"]`},
	{"spec.runtimes.gitlab.endpoint: a space in the host (format uri)", func(d map[string]any) {
		section(d, "spec")["runtimes"] = map[string]any{"gitlab": map[string]any{"endpoint": "http://gdk test:5052/"}}
	}, false, "spec.runtimes.gitlab.endpoint"},
	{"spec.runtimes.gitlab.endpoint: relative (format uri)", func(d map[string]any) {
		section(d, "spec")["runtimes"] = map[string]any{"gitlab": map[string]any{"endpoint": "/v1/agents"}}
	}, false, "spec.runtimes.gitlab.endpoint"},
	{"spec.runtimes.gitlab.endpoint: http://[::1]:5052 (format uri, control)", func(d map[string]any) {
		section(d, "spec")["runtimes"] = map[string]any{"gitlab": map[string]any{"endpoint": "http://[::1]:5052", "model": "opus"}}
	}, true, ""},
	{"spec.prompts.few_shot_examples: 21 items (maxItems)", func(d map[string]any) {
		var ex []any
		for range 21 {
			ex = append(ex, map[string]any{"input": "a", "output": "b"})
		}
		section(d, "spec")["prompts"] = map[string]any{"few_shot_examples": ex}
	}, false, "spec.prompts.few_shot_examples"},
	{"spec.tools[0] without type (nested required)", func(d map[string]any) {
		section(d, "spec")["tools"] = []any{map[string]any{"name": "search"}}
	}, false, "spec.tools[0].type"},
	{"spec.tools[0].capabilities[0]: a string ($ref Capability, type)", func(d map[string]any) {
		section(d, "spec")["tools"] = []any{map[string]any{"type": "mcp", "capabilities": []any{"read_file"}}}
	}, false, "spec.tools[0].capabilities[0]"},
	{"spec.identity without instance_id (required)", func(d map[string]any) {
		section(d, "spec")["identity"] = map[string]any{"interaction_id": map[string]any{"generation": "ulid", "scope": "turn"}}
	}, false, "spec.identity.instance_id"},
	{"spec.capabilities URIs and capability_bindings (spec allows extra keys, control)", func(d map[string]any) {
		s := section(d, "spec")
		s["capabilities"] = []any{"ossa:security/scan_vulnerabilities@1.0"}
		s["capability_bindings"] = map[string]any{"ossa:security/scan_vulnerabilities@1.0": map[string]any{"mcp": map[string]any{"server": "trivy", "tool": "scan"}}}
	}, true, ""},
	{"extensions.custom_framework (extensions allow extra keys, control)", func(d map[string]any) {
		section(d, "extensions")["custom_framework"] = map[string]any{"anything": true}
	}, true, ""},
	{"extensions.kagent: a string ($ref KAgentExtension, type)", func(d map[string]any) { section(d, "extensions")["kagent"] = "yes" }, false, "extensions.kagent"},
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}

func hasIssueAt(issues []capability.Issue, path string) bool {
	for _, i := range issues {
		if i.Path == path {
			return true
		}
	}
	return false
}

// TestMutations breaks one rule at a time in every valid example: our
// verdict must equal the reference's and the expected one, and the issue
// must name the broken field. Each mutated document is also written as YAML
// and read back, so the issue's line must be the field's.
func TestMutations(t *testing.T) {
	sch, _ := referenceSchema(t)
	dir, files := exampleFiles(t)
	var bases []*Manifest
	for _, f := range files {
		data, _ := os.ReadFile(f)
		rel, _ := filepath.Rel(dir, f)
		m, ri, err := ReadManifest(rel, data)
		if err == nil && len(ri) == 0 && len(Validate(m)) == 0 {
			bases = append(bases, m)
		}
	}
	if len(bases) == 0 {
		t.Fatal("no valid example to mutate")
	}
	var report strings.Builder
	for _, mu := range mutations {
		agree := 0
		for _, base := range bases {
			doc := deepCopy(base.Document).(map[string]any)
			mu.apply(doc)
			ours := validateDocument(doc)
			refValid, refPaths := refVerdict(sch, doc)
			oursValid := !capability.HasErrors(ours)
			where := base.File + ": " + mu.name
			if oursValid != refValid || oursValid != mu.valid {
				t.Errorf("%s: ours valid=%v, reference valid=%v, want %v (ours %v, reference %v)", where, oursValid, refValid, mu.valid, ours, refPaths)
				continue
			}
			if !mu.valid {
				if !hasIssueAt(ours, mu.path) {
					t.Errorf("%s: no issue at %s: %v", where, mu.path, ours)
					continue
				}
				if !pathAgrees(ours[0].Path, refPaths) {
					t.Errorf("%s: our first issue is at %s, the reference reports %v", where, ours[0].Path, refPaths)
					continue
				}
				if !positioned(t, where, doc, mu.path) {
					continue
				}
			}
			agree++
		}
		verdict := "invalid at " + mu.path
		if mu.valid {
			verdict = "valid"
		}
		fmt.Fprintf(&report, "%-75s %-55s %d/%d agree\n", mu.name, verdict, agree, len(bases))
	}
	t.Logf("mutations of %d valid examples (ours and the reference agree, issue at the broken field):\n%s", len(bases), report.String())
}

// positioned writes doc as YAML, reads it back, and checks that the issue at
// path is on the line of the broken field (or, for a missing field, of its
// parent).
func positioned(t *testing.T, where string, doc map[string]any, path string) bool {
	t.Helper()
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := ReadManifest("mutated.yaml", data)
	if err != nil {
		t.Errorf("%s: cannot read the mutated document back: %v", where, err)
		return false
	}
	lines := strings.Split(string(data), "\n")
	for _, iss := range Validate(m) {
		if iss.Path != path {
			continue
		}
		if iss.Line < 1 || iss.Line > len(lines) || iss.Column < 1 {
			t.Errorf("%s: issue %v has no position", where, iss)
			return false
		}
		text := lines[iss.Line-1]
		key := path
		if strings.HasSuffix(iss.Rule, "/required") {
			key = parentPath(path)
		}
		for strings.HasSuffix(key, "]") && !strings.HasSuffix(key, "\"]") {
			key = parentPath(key) // an item: its line starts with "- "
		}
		if key == "" {
			return true // the root: line 1
		}
		last := key[len(parentPath(key)):]
		last = strings.TrimPrefix(last, ".")
		if strings.HasPrefix(last, "[") {
			last, _ = strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(last, "["), "]"))
		}
		if !strings.Contains(text, last) && !strings.HasPrefix(strings.TrimSpace(text), "-") {
			t.Errorf("%s: issue %v points at line %d %q, which is not %s", where, iss, iss.Line, text, last)
			return false
		}
		return true
	}
	t.Errorf("%s: no issue at %s after a YAML round trip", where, path)
	return false
}
