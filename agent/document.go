package agent

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/caphub/caphub/capability"
	"gopkg.in/yaml.v3"
)

// A manifest is validated as the JSON data model a JSON Schema validator
// sees: objects with string keys, arrays, strings, numbers, booleans and
// null. The decoder below builds that value from yaml.v3 nodes and records,
// for every field path, where the key and the value are in the file, so
// every issue can name file:line:column.

// position is where a field is: its key (for a mapping entry) and its value.
// For an array item or the document root the key position is the value's.
type position struct {
	keyLine, keyCol int
	line, col       int
}

// Limits that keep a hostile file (aliases that expand exponentially, very
// deep nesting) from exhausting memory or the stack.
const (
	maxDepth = 512
	maxNodes = 1 << 18 // values after alias expansion; real manifests have a few thousand
)

// decoder turns a yaml.Node tree into the JSON data model.
type decoder struct {
	file      string
	positions map[string]position
	issues    []capability.Issue
	nodes     int
	expanding map[*yaml.Node]bool // anchors being expanded: an alias to one of them is a cycle
	scalars   map[*yaml.Node]any  // resolved numbers and booleans, for aliases
	tooBig    bool
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, positions: map[string]position{}, expanding: map[*yaml.Node]bool{}, scalars: map[*yaml.Node]any{}}
}

func (d *decoder) issue(path string, line, col int, format string, args ...any) {
	d.issues = append(d.issues, capability.Issue{Severity: capability.SeverityError, Path: path, File: d.file,
		Line: line, Column: col, Rule: RuleYAML, Message: fmt.Sprintf(format, args...)})
}

// value decodes n found at path; key is the mapping key node that introduced
// it (nil for array items and the root).
func (d *decoder) value(n *yaml.Node, path string, key *yaml.Node, depth int) any {
	if d.tooBig {
		return nil
	}
	d.record(n, path, key)
	d.nodes++
	if d.nodes > maxNodes || depth > maxDepth {
		d.tooBig = true
		d.issue(path, n.Line, n.Column, "the document is too large or too deeply nested once aliases are expanded (limit %d values, depth %d): write it out without alias chains", maxNodes, maxDepth)
		return nil
	}
	switch n.Kind {
	case yaml.AliasNode:
		return d.alias(n, path, key, depth)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return d.value(n.Content[0], path, key, depth+1)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			out = append(out, d.value(item, indexPath(path, i), nil, depth+1))
		}
		return out
	case yaml.MappingNode:
		return d.mapping(n, path, depth)
	case yaml.ScalarNode:
		return d.scalar(n, path)
	}
	return nil
}

// record keeps the position of the value n at path (the first one found
// there) and of its key.
func (d *decoder) record(n *yaml.Node, path string, key *yaml.Node) {
	if _, seen := d.positions[path]; seen {
		return
	}
	pos := position{line: n.Line, col: n.Column, keyLine: n.Line, keyCol: n.Column}
	if key != nil {
		pos.keyLine, pos.keyCol = key.Line, key.Column
		if (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && n.Style&yaml.FlowStyle == 0 {
			// A block collection starts on the line after its key: an issue
			// about the value as a whole is clearer at the key.
			pos.line, pos.col = key.Line, key.Column
		}
	}
	d.positions[path] = pos
}

// alias decodes the value an alias refers to; an alias inside the value it
// refers to is a cycle.
func (d *decoder) alias(n *yaml.Node, path string, key *yaml.Node, depth int) any {
	target := n.Alias
	if target == nil {
		return nil
	}
	if d.expanding[target] {
		d.issue(path, n.Line, n.Column, "alias *%s refers to a value that contains it: JSON cannot hold a cycle", n.Value)
		return nil
	}
	d.expanding[target] = true
	defer delete(d.expanding, target)
	return d.value(target, path, key, depth+1)
}

// mapping decodes a mapping. Explicit keys win over merged ones (YAML
// `<<: *anchor`), and earlier merges win over later ones. A key written twice
// is an error: YAML forbids it, and JSON readers disagree on which value
// counts.
func (d *decoder) mapping(n *yaml.Node, path string, depth int) map[string]any {
	out := map[string]any{}
	keyAt := map[string]*yaml.Node{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		rk := k
		for rk.Kind == yaml.AliasNode && rk.Alias != nil {
			rk = rk.Alias
		}
		if rk.Kind == yaml.ScalarNode && rk.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if rk.Kind != yaml.ScalarNode {
			d.issue(path, k.Line, k.Column, "a mapping key is %s: keys must be plain strings (JSON object keys)", kindName(rk))
			continue
		}
		name := rk.Value
		if first, dup := keyAt[name]; dup {
			d.issue(keyPath(path, name), k.Line, k.Column, "key %q is already defined at line %d: remove one of them", name, first.Line)
			continue
		}
		keyAt[name] = k
		out[name] = d.value(v, keyPath(path, name), k, depth+1)
	}
	for _, m := range merges {
		d.merge(m, path, out, depth+1)
	}
	return out
}

// merge applies one `<<` value, a mapping (usually an alias to one) or a
// list of them, adding the keys out does not have yet.
func (d *decoder) merge(v *yaml.Node, path string, out map[string]any, depth int) {
	r := v
	for r.Kind == yaml.AliasNode && r.Alias != nil {
		r = r.Alias
	}
	switch r.Kind {
	case yaml.MappingNode:
		src, _ := d.value(v, path, nil, depth).(map[string]any)
		for k, val := range src {
			if _, ok := out[k]; !ok {
				out[k] = val
			}
		}
	case yaml.SequenceNode:
		if v.Kind == yaml.SequenceNode {
			for _, item := range v.Content {
				if depth > maxDepth {
					return
				}
				ri := item
				for ri.Kind == yaml.AliasNode && ri.Alias != nil {
					ri = ri.Alias
				}
				if ri.Kind != yaml.MappingNode {
					d.issue(path, item.Line, item.Column, "`<<` (merge) needs mappings, found %s", kindName(ri))
					continue
				}
				d.merge(item, path, out, depth+1)
			}
			return
		}
		fallthrough
	default:
		d.issue(path, v.Line, v.Column, "`<<` (merge) needs a mapping or a list of mappings, found %s", kindName(r))
	}
}

// scalar resolves a scalar as yaml.v3 does (so `1.0` is a number and `true`
// a boolean) and converts it to the JSON data model: whole numbers become
// int64, other numbers float64, and timestamps keep their text (JSON has no
// date type; the schema sees a string).
func (d *decoder) scalar(n *yaml.Node, path string) any {
	switch n.ShortTag() {
	case "!!str", "!!binary":
		return n.Value
	case "!!null":
		return nil
	case "!!timestamp":
		return n.Value
	case "!!bool", "!!int", "!!float":
	default:
		return n.Value // an application tag (!Ref, …): keep the text
	}
	if v, ok := d.scalars[n]; ok {
		return v // an alias to a scalar already resolved
	}
	v := d.resolveScalar(n, path)
	d.scalars[n] = v
	return v
}

// resolveScalar converts a !!bool, !!int or !!float scalar.
func (d *decoder) resolveScalar(n *yaml.Node, path string) any {
	var x any
	if err := n.Decode(&x); err != nil {
		d.issue(path, n.Line, n.Column, "%q cannot be read as %s: %v", n.Value, strings.TrimPrefix(n.ShortTag(), "!!"), err)
		return n.Value
	}
	switch v := x.(type) {
	case int:
		return int64(v)
	case int64:
		return v
	case uint64:
		if v <= math.MaxInt64 {
			return int64(v)
		}
		return float64(v)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			d.issue(path, n.Line, n.Column, "%s is not a JSON number: write a finite number", n.Value)
			return v
		}
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 && !strings.ContainsAny(n.Value, ".eE") {
			return int64(v)
		}
		return v
	case time.Time:
		return n.Value
	}
	return x
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// Field paths name a value inside the document: "spec.tools[0].type". A key
// holding '.', '[', ']', '"' or white space is written quoted in brackets,
// `metadata.labels["app.kubernetes.io/name"]`, so every path is unambiguous.

func keyPath(parent, key string) string {
	if !plainKey(key) {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		switch {
		case r == '.', r == '[', r == ']', r == '"', r == '\\':
			return false
		case r <= ' ', r == 0x7f, r == 0x85, r == 0xa0, r == 0x2028, r == 0x2029:
			return false
		}
	}
	return true
}
