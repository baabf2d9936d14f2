package openapi

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/caphub/caphub/capability"
)

// defsPrefix starts every $ref a converted schema holds: the shared schemas
// a capability's input or output needs are under its own $defs.
const defsPrefix = "#/$defs/"

// maxAliasHops bounds how far a chain of schemas that are only a $ref to
// the next is followed, when looking for a loop or for the schema at its
// end.
const maxAliasHops = 32

// component is a schema that the document references with $ref
// (components.schemas.Pet, definitions.Pet, or any local JSON pointer): it
// is converted once per document, under a name unique in the document, and
// every capability whose schemas reference it (directly or through other
// components) carries it in its $defs.
type component struct {
	ptr  string // JSON pointer of the schema in the document
	ref  string // the $ref as first written, for messages
	name string // key under $defs
	raw  any    // the schema as written
	done bool   // converted (schema, size, deps and err are set)
	// schema is the converted schema, its $refs pointing at "#/$defs/…";
	// size counts its nodes and bytes its JSON; deps are the components it
	// references directly, by name; err is why it could not be converted.
	schema any
	size   int
	bytes  int
	deps   []*component
	err    error
	// stub stands for the component in a schema whose shared parts are
	// over their budget (see withDefs).
	stub map[string]any
}

// componentName returns the $defs name of the schema at ptr: its pointer's
// segments joined with ".", without the leading components.schemas (3.x)
// or definitions (2.0), so that components.schemas.Pet is Pet; characters
// other than ASCII letters, digits, "_", "." and "-" become "_" (so that
// "#/$defs/<name>" needs no escaping in a JSON pointer nor a URI
// fragment).
func componentName(ptr string) string {
	for _, p := range []string{"/components/schemas/", "/definitions/"} {
		if rest, ok := strings.CutPrefix(ptr, p); ok {
			ptr = "/" + rest
			break
		}
	}
	segs := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, s := range segs {
		segs[i] = safeName(unescapePointer(s))
	}
	return strings.Trim(strings.Join(segs, "."), ".")
}

func unescapePointer(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

// safeName replaces the characters of s that a $defs name avoids (see
// componentName) with "_".
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		default:
			b[i] = '_'
		}
	}
	return string(b)
}

// nameComponents gives the document's named schemas (components.schemas in
// 3.x, definitions in 2.0) their $defs names up front, in sorted order, so
// that a name depends on the document alone, never on which operation
// referenced it first.
func (c *converter) nameComponents() {
	for _, ptr := range []string{"/components/schemas", "/definitions"} {
		m, _ := c.lookupQuiet(ptr).(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			p := ptr + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			c.newComponent(p, "#"+p, m[k])
		}
	}
}

// lookupQuiet returns the value at ptr, nil when there is none.
func (c *converter) lookupQuiet(ptr string) any {
	v, err := c.lookup("#"+ptr, ptr)
	if err != nil {
		return nil
	}
	return v
}

// newComponent registers the schema at ptr under a free name.
func (c *converter) newComponent(ptr, ref string, raw any) *component {
	name := componentName(ptr)
	if name == "" {
		name = "schema"
	}
	if _, taken := c.byName[name]; taken {
		for k := 2; ; k++ {
			n := name + "_" + strconv.Itoa(k)
			if _, taken := c.byName[n]; !taken {
				name = n
				break
			}
		}
	}
	comp := &component{ptr: ptr, ref: ref, name: name, raw: raw}
	c.comps[ptr] = comp
	c.byName[name] = comp
	return comp
}

// component returns the component a $ref names, registering it on first
// use; a $ref that points nowhere is an error.
func (c *converter) component(ref string) (*component, error) {
	ptr, err := pointer(ref)
	if err != nil {
		return nil, err
	}
	if comp, ok := c.comps[ptr]; ok {
		return comp, nil
	}
	raw, err := c.lookup(ref, ptr)
	if err != nil {
		return nil, err
	}
	return c.newComponent(ptr, ref, raw), nil
}

// convertComponent converts a component once: its schema (whose $refs
// only name other components, converted when a capability needs them, so
// that conversion never recurses from one component into another) and the
// components it references. A component that is only a $ref leading back
// to itself (A → B → A) constrains nothing: it becomes {} with a comment.
func (c *converter) convertComponent(comp *component) {
	if comp.done {
		return
	}
	comp.done = true
	if c.aliasLoop(comp) {
		comp.schema = map[string]any{"$comment": "caphub: " + comp.ref + " is a loop of $refs that never reaches a schema: it accepts any value"}
		comp.size, comp.bytes = 3, 100
		comp.stub = comp.schema.(map[string]any)
		return
	}
	s, size, err := c.schema(comp.raw, 1)
	if err != nil {
		comp.err = inRef(err, comp.ref)
		return
	}
	// In canonical form once, so that registering the definitions that
	// share it only reads it (see Result.Definitions).
	comp.schema, comp.size = capability.Normalize(s), size
	if b, err := json.Marshal(s); err == nil {
		comp.bytes = len(b)
	}
	seen := map[*component]bool{}
	c.refsIn(s, func(dep *component) {
		if !seen[dep] {
			seen[dep] = true
			comp.deps = append(comp.deps, dep)
		}
	})
	sortComponents(comp.deps)
	comp.stub = map[string]any{"$comment": stubComment}
	if m, ok := s.(map[string]any); ok {
		if t, ok := m["type"]; ok {
			comp.stub["type"] = t
		}
	}
}

// stubComment marks the stub of a component (see withDefs): short, since
// a schema of a densely connected document may hold a hundred of them, and
// the $defs key names the component.
const stubComment = "caphub: not expanded (over the budget of shared schemas)"

func sortComponents(list []*component) {
	slices.SortFunc(list, func(a, b *component) int { return strings.Compare(a.name, b.name) })
}

// aliasLoop reports whether comp is a $ref (siblings aside) to a schema
// that is a $ref to … comp again.
func (c *converter) aliasLoop(comp *component) bool {
	cur := comp.raw
	for range maxAliasHops {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return false
		}
		ptr, err := pointer(ref)
		if err != nil {
			return false
		}
		if ptr == comp.ptr {
			return true
		}
		if cur, err = c.lookup(ref, ptr); err != nil {
			return false
		}
	}
	return false
}

// refsIn calls fn with the component of every "#/$defs/…" $ref in a
// converted schema. A converted schema holds "$ref" keys only as
// references: data values and property names never carry one (see
// copyMap and schemaMap).
func (c *converter) refsIn(v any, fn func(*component)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "$ref" {
				if s, ok := e.(string); ok && strings.HasPrefix(s, defsPrefix) {
					if comp := c.byName[s[len(defsPrefix):]]; comp != nil {
						fn(comp)
					}
				}
				continue
			}
			c.refsIn(e, fn)
		}
	case []any:
		for _, e := range x {
			c.refsIn(e, fn)
		}
	}
}

// withDefs returns a capability's input or output schema s with the
// components it references, directly or through each other, under $defs
// (s itself when it references none), and the number of nodes added. A
// component that could not be converted makes it an error naming the
// component.
//
// The components are added nearest first (those s references, then those
// they reference, …; the smallest first within each step) while their JSON fits in
// budget bytes (no bound when budget is 0 or less); a component that does
// not fit is in $defs as its stub, {"type": <its type, if it has one>,
// "$comment": stubComment}, which accepts every value the
// component accepts, and what it references is not added for it. Densely
// connected documents (Microsoft Graph's types reach nearly all of its
// 2,600 schemas) thus give schemas of a bounded size.
func (c *converter) withDefs(s map[string]any, budget int) (map[string]any, int, error) {
	seen := map[*component]bool{}
	var step []*component
	c.refsIn(s, func(comp *component) {
		if !seen[comp] {
			seen[comp] = true
			step = append(step, comp)
		}
	})
	defs := map[string]any{}
	size, used := 1, 0
	for len(step) > 0 {
		for _, comp := range step {
			c.convertComponent(comp)
			if comp.err != nil {
				return nil, 0, comp.err
			}
		}
		// The smallest first: as many whole components as the budget
		// holds (enumerations, small objects), the large ones as stubs.
		slices.SortFunc(step, func(a, b *component) int {
			if a.bytes != b.bytes {
				return a.bytes - b.bytes
			}
			return strings.Compare(a.name, b.name)
		})
		var next []*component
		for _, comp := range step {
			if budget > 0 && used+comp.bytes > budget {
				defs[comp.name] = comp.stub
				size = addSize(size, len(comp.stub)*2+1)
				continue
			}
			defs[comp.name] = comp.schema
			size = addSize(size, comp.size+1)
			used += comp.bytes
			for _, dep := range comp.deps {
				if !seen[dep] {
					seen[dep] = true
					next = append(next, dep)
				}
			}
		}
		step = next
	}
	if len(defs) == 0 {
		return s, 0, nil
	}
	out := shallowCopy(s)
	out["$defs"] = defs
	return out, size, nil
}

// deref returns the converted schema a "#/$defs/…" $ref stands for (with
// nothing beside it but a title or description), following a chain of
// them, and the component it is; any other schema as it is, and nil.
// Importers look through a $ref this way where the shape of a schema
// decides something (whether a body's properties become input fields, how
// an array parameter is sent).
func (c *converter) deref(s any) (any, *component) {
	var last *component
	for range maxAliasHops {
		m, ok := s.(map[string]any)
		if !ok {
			break
		}
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, defsPrefix) {
			break
		}
		for k := range m {
			if k != "$ref" && k != "description" && k != "title" {
				return s, last
			}
		}
		comp := c.byName[ref[len(defsPrefix):]]
		if comp == nil {
			break
		}
		c.convertComponent(comp)
		if comp.err != nil {
			break
		}
		s, last = comp.schema, comp
	}
	return s, last
}

// shape is deref without the component.
func (c *converter) shape(s any) any {
	t, _ := c.deref(s)
	return t
}

// hoist returns the schema a capability's output is, and the nodes it
// adds: the converted response schema, or, when that is only a $ref to a
// component whose schema is an object (a title and description beside it
// aside), a copy of that schema with those annotations, so that the
// output's own keywords (its type, its properties) are at its root, where
// readers of an output look; a recursive component stays in $defs for its
// own $refs.
func (c *converter) hoist(s map[string]any) (map[string]any, int) {
	t, comp := c.deref(s)
	m, isMap := t.(map[string]any)
	if comp == nil || !isMap {
		return s, 0
	}
	out := shallowCopy(m)
	for _, k := range annotationKeys {
		if v, ok := s[k]; ok {
			out[k] = v
		}
	}
	return out, comp.size
}
