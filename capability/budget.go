package capability

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Budgets bound the work a definition can cause before anything is compiled
// or stored: the JSON Schema compiler's time grows with the square of the
// number of subschemas and steeply with their depth (a schema 4,000 levels
// deep took 81 s), and the stores' JSON functions refuse deep documents
// differently (SQLite's json_valid stops at 1,000 levels, PostgreSQL's jsonb
// does not). Validate checks them first, and refuses a definition over any
// of them with issues naming the path and nothing else, so the same input
// gets the same answer whatever the store. CompileSchema checks the schema
// budgets too, so no caller compiles an unbounded schema.
//
// Nesting counts the objects and arrays on the way from the root to the
// deepest value, the root included: {} nests 1 level, {"items": {}} 2, and
// a property {"properties": {"a": {}}} 3. The limits are generous for real
// specifications: GitHub's REST API, imported with every $ref inlined, has
// schemas that nest at most 21 levels, hold at most 22,058 values and 4,577
// objects (input and output together).
const (
	// MaxSchemaNesting bounds the nesting of one JSON Schema (input, output,
	// and the schemas the OpenAPI importer converts).
	MaxSchemaNesting = 64
	// MaxDefinitionNesting bounds the nesting of a whole definition
	// (metadata, examples, extension fields): room for a schema at its limit
	// beside the definition's own levels, and far below what either store
	// accepts.
	MaxDefinitionNesting = 2 * MaxSchemaNesting
	// MaxSchemaNodes bounds the JSON values (objects, arrays, strings,
	// numbers, booleans, nulls) of a definition's input and output schemas
	// together; it is also the OpenAPI importer's default bound on one
	// operation's inlined schemas.
	MaxSchemaNodes = 100_000
	// MaxSchemaObjects bounds the objects and booleans of input and output
	// together: every value the compiler could be made to compile as a
	// subschema. Compiling 10,000 takes about 0.4 s, 30,000 over 4 s.
	MaxSchemaObjects = 10_000
)

// budgetWalker walks decoded JSON values, counting them and finding the
// first path that nests deeper than a limit. It keeps the path as a stack of
// segments and joins it only to report, and it visits object keys in sorted
// order, so the path it reports does not depend on map iteration.
type budgetWalker struct {
	limit   int      // deepest nesting allowed
	segs    []string // path of the value being walked
	deep    string   // first path deeper than limit, "" when none
	nodes   int      // values seen
	objects int      // objects and booleans seen
	maxN    int      // stop counting past this many values or objects (0: count everything)
}

// full reports whether the walker has seen more values or objects than
// its bound, after which walking further would only repeat the verdict.
func (w *budgetWalker) full() bool {
	return w.maxN > 0 && (w.nodes > w.maxN || w.objects > MaxSchemaObjects)
}

func (w *budgetWalker) path() string { return JoinPath(w.segs) }

// JoinPath writes path segments as an issue's field path: names joined by
// ".", index segments ("[3]") attached as they are ("paths./a.get",
// "input.items[0]").
func JoinPath(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		if b.Len() > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// walk visits v, found at nesting level (the level v itself is at when it
// is an object or an array). Most values are within every budget, and
// whether they are does not depend on the order of object keys: it first
// walks v in map order, without keeping the path, and walks it again in
// sorted order (walkSorted, which names the path) only when that finds a
// value too deep or too many values. Sorting every object's keys was most
// of a large import's validation.
func (w *budgetWalker) walk(v any, level int) {
	nodes, objects := w.nodes, w.objects
	if w.walkFast(v, level) {
		return
	}
	w.nodes, w.objects = nodes, objects
	w.walkSorted(v, level)
}

// walkFast counts v's values as walkSorted does and reports whether they
// are all within the nesting limit and the counts within their bound; it
// stops at the first value that is not.
func (w *budgetWalker) walkFast(v any, level int) bool {
	if w.full() {
		return false
	}
	w.nodes++
	switch x := v.(type) {
	case map[string]any:
		w.objects++
		if level > w.limit {
			return false
		}
		for _, e := range x {
			if !w.walkFast(e, level+1) {
				return false
			}
		}
	case []any:
		if level > w.limit {
			return false
		}
		for _, e := range x {
			if !w.walkFast(e, level+1) {
				return false
			}
		}
	case bool:
		w.objects++
	}
	return !w.full()
}

// walkSorted is walk in sorted key order, keeping the path of the value
// being walked, so the path it reports does not depend on map iteration.
func (w *budgetWalker) walkSorted(v any, level int) {
	if w.full() {
		return
	}
	w.nodes++
	switch x := v.(type) {
	case map[string]any:
		w.objects++
		if level > w.limit {
			if w.deep == "" {
				w.deep = w.path()
			}
			return
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			w.segs = append(w.segs, k)
			w.walkSorted(x[k], level+1)
			w.segs = w.segs[:len(w.segs)-1]
			if w.full() {
				return
			}
		}
	case []any:
		if level > w.limit {
			if w.deep == "" {
				w.deep = w.path()
			}
			return
		}
		for i, e := range x {
			w.segs = append(w.segs, "["+strconv.Itoa(i)+"]")
			w.walkSorted(e, level+1)
			w.segs = w.segs[:len(w.segs)-1]
			if w.full() {
				return
			}
		}
	case bool:
		w.objects++
	}
}

// nestingMessage is what an issue about a schema that nests too deep says.
var nestingMessage = fmt.Sprintf("schema nesting exceeds %d levels: flatten the schema (move shared parts to $defs and $ref them)", MaxSchemaNesting)

// CheckSchemaBudget reports the budgets a definition's input and output
// schemas break: either nesting deeper than MaxSchemaNesting (at the path of
// the first value too deep, "input.items.items…"), or together more than
// MaxSchemaNodes values or MaxSchemaObjects objects. It walks at most about
// MaxSchemaNodes values, however large the schemas are, and compiles
// nothing. Importers call it to refuse what registration would refuse.
func CheckSchemaBudget(input, output Schema) []Issue {
	var issues []Issue
	w := &budgetWalker{limit: MaxSchemaNesting, maxN: MaxSchemaNodes}
	for _, s := range []struct {
		name   string
		schema Schema
	}{{"input", input}, {"output", output}} {
		if s.schema == nil {
			continue
		}
		w.segs, w.deep = append(w.segs[:0], s.name), ""
		w.walk(map[string]any(s.schema), 1)
		if w.deep != "" {
			issues = append(issues, Issue{Severity: SeverityError, Path: w.deep, Rule: RuleSchemas, Message: nestingMessage})
		}
		if w.full() {
			issues = append(issues, Issue{Severity: SeverityError, Path: s.name, Rule: RuleSchemas, Message: sizeMessage(w)})
			break
		}
	}
	return issues
}

func sizeMessage(w *budgetWalker) string {
	if w.objects > MaxSchemaObjects {
		return fmt.Sprintf("the input and output schemas hold more than %d objects together, more than caphub compiles: simplify the schemas or split the capability", MaxSchemaObjects)
	}
	return fmt.Sprintf("the input and output schemas hold more than %d values together: simplify the schemas or split the capability", MaxSchemaNodes)
}

// schemaBudget is CheckSchemaBudget for one schema, as SchemaIssues whose
// pointer is relative to the schema.
func schemaBudget(s Schema) []SchemaIssue {
	w := &budgetWalker{limit: MaxSchemaNesting, maxN: MaxSchemaNodes}
	w.walk(map[string]any(s), 1)
	var out []SchemaIssue
	if w.deep != "" {
		out = append(out, SchemaIssue{Pointer: w.deep, Message: nestingMessage})
	}
	if w.full() {
		out = append(out, SchemaIssue{Message: sizeMessage(w)})
	}
	return out
}

// checkNesting reports the free-form parts of a definition (metadata,
// examples, fields kept in Extra) that nest deeper than
// MaxDefinitionNesting. The schemas have their own, lower limit.
func checkNesting(d *Definition) []Issue {
	var issues []Issue
	w := &budgetWalker{limit: MaxDefinitionNesting}
	// at walks v, the value of the field at path, whose object is at
	// nesting level parent.
	at := func(v any, parent int, path ...string) {
		if v == nil {
			return
		}
		w.segs, w.deep = append(w.segs[:0], path...), ""
		w.walk(v, parent+1)
		if w.deep != "" {
			issues = append(issues, Issue{Severity: SeverityError, Path: w.deep, Rule: RuleCaphub,
				Message: fmt.Sprintf("definition nesting exceeds %d levels: flatten this value", MaxDefinitionNesting)})
		}
	}
	extra := func(m map[string]any, parent int, path ...string) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			at(m[k], parent, append(path, k)...)
		}
	}
	// The definition is level 1; its fields' values are level 2.
	extra(d.Extra, 1)
	if d.Metadata != nil {
		at(d.Metadata, 1, "metadata")
	}
	for i, e := range d.Errors {
		extra(e.Extra, 3, "errors", "["+strconv.Itoa(i)+"]")
	}
	for i, ex := range d.Examples {
		p := []string{"examples", "[" + strconv.Itoa(i) + "]"}
		at(ex.Input, 3, append(p, "input")...)
		at(ex.Output, 3, append(p, "output")...)
		extra(ex.Extra, 3, p...)
	}
	b := d.Bindings
	extra(b.Extra, 2, "bindings")
	for _, x := range []struct {
		name string
		m    map[string]any
	}{{"native", extraOf(b.Native)}, {"mcp", extraOf(b.MCP)}, {"http", extraOf(b.HTTP)}, {"grpc", extraOf(b.GRPC)}, {"cli", extraOf(b.CLI)}, {"delegation", extraOf(b.Delegation)}} {
		extra(x.m, 3, "bindings", x.name)
	}
	if b.HTTP != nil {
		extra(extraOf(b.HTTP.Auth), 4, "bindings", "http", "auth")
	}
	extra(extraOf(d.Display), 2, "display")
	extra(extraOf(d.Attestation), 2, "attestation")
	extra(extraOf(d.Provenance), 2, "provenance")
	return issues
}

// checkBudgets returns the issues of every budget d breaks (see
// MaxSchemaNesting), none when it is within all of them.
func checkBudgets(d *Definition) []Issue {
	return append(CheckSchemaBudget(d.Input, d.Output), checkNesting(d)...)
}
