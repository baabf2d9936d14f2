package rtfs

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/caphub/caphub/capability"
)

// Test support: comparing schemas the way CCOS's MCP-to-RTFS conversion
// preserves them (used by the type and paired-corpus tests).

// equivalentSchemas compares two input schemas the way CCOS's conversion of
// an MCP tool schema to an RTFS type preserves them: the same property names,
// the same types (JSON types compared as the RTFS types they map to:
// integer → :int, number → :float, …) and the same optionality (required
// set), recursively through properties, items and additionalProperties.
// Descriptions, enums, defaults and the order of "required" are ignored. It
// returns the differences, each with the path where it is; none means
// equivalent.
func equivalentSchemas(a, b capability.Schema) []string {
	var diffs []string
	equivalent("", map[string]any(a), map[string]any(b), &diffs, 0)
	return diffs
}

// rtfsTypeOf names the RTFS type a schema's JSON type maps to.
func rtfsTypeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return primitiveName(t)
	case []any:
		var names []string
		for _, x := range t {
			if n, ok := x.(string); ok {
				names = append(names, primitiveName(n))
			}
		}
		sort.Strings(names)
		return "[:union " + strings.Join(names, " ") + "]"
	}
	if _, ok := s["properties"]; ok {
		return ":map"
	}
	if _, ok := s["items"]; ok {
		return ":vector"
	}
	if enum, ok := s["enum"].([]any); ok {
		if t := commonJSONType(enum); t != "" {
			return primitiveName(t)
		}
	}
	return ":any"
}

func equivalent(path string, a, b map[string]any, diffs *[]string, depth int) {
	at := func(p string) string {
		if p == "" {
			return "(root)"
		}
		return p
	}
	if depth > MaxDepth {
		return
	}
	ta, tb := rtfsTypeOf(a), rtfsTypeOf(b)
	if ta != tb {
		*diffs = append(*diffs, fmt.Sprintf("%s: type %s vs %s", at(path), ta, tb))
		return
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch ta {
	case ":map":
		pa, _ := a["properties"].(map[string]any)
		pb, _ := b["properties"].(map[string]any)
		ra, rb := requiredSet(a), requiredSet(b)
		names := map[string]bool{}
		for k := range pa {
			names[k] = true
		}
		for k := range pb {
			names[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(names)) {
			xa, inA := pa[k]
			xb, inB := pb[k]
			switch {
			case !inA:
				*diffs = append(*diffs, fmt.Sprintf("%s: property only in the second schema", join(k)))
				continue
			case !inB:
				*diffs = append(*diffs, fmt.Sprintf("%s: property only in the first schema", join(k)))
				continue
			}
			if ra[k] != rb[k] {
				*diffs = append(*diffs, fmt.Sprintf("%s: %s in the first schema, %s in the second", join(k), optionality(ra[k]), optionality(rb[k])))
			}
			ma, _ := xa.(map[string]any)
			mb, _ := xb.(map[string]any)
			equivalent(join(k), ma, mb, diffs, depth+1)
		}
		for k := range ra {
			if _, ok := pa[k]; !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s: required in the first schema but not a property", join(k)))
			}
		}
		for k := range rb {
			if _, ok := pb[k]; !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s: required in the second schema but not a property", join(k)))
			}
		}
		if xa, ok := a["additionalProperties"].(map[string]any); ok {
			if xb, ok := b["additionalProperties"].(map[string]any); ok {
				equivalent(join("*"), xa, xb, diffs, depth+1)
			}
		}
	case ":vector":
		ia, _ := a["items"].(map[string]any)
		ib, _ := b["items"].(map[string]any)
		equivalent(path+"[]", ia, ib, diffs, depth+1)
	}
}

func optionality(required bool) string {
	if required {
		return "required"
	}
	return "optional"
}

func requiredSet(s map[string]any) map[string]bool {
	out := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if n, ok := r.(string); ok {
				out[n] = true
			}
		}
	}
	if req, ok := s["required"].([]string); ok {
		for _, n := range req {
			out[n] = true
		}
	}
	return out
}
