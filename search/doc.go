package search

import (
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/caphub/caphub/capability"
)

// Budgets of what is read of a definition's parameters.
const (
	maxParams          = 64  // parameters read, nested ones included
	maxParamDescBytes  = 300 // of each parameter's description
	maxDescriptionByte = 8 << 10
)

// DocOf is the document of a capability version: its text in fields, and
// the action its name (else its HTTP method, else its CCOS category) says
// it does.
func DocOf(id string, def *capability.Definition, meta any) Doc {
	d := Doc{ID: id, Meta: meta}
	d.Text[FieldName] = def.Name
	d.Text[FieldTitle] = def.Title
	d.Text[FieldDescription] = cleanProse(def.Description, maxDescriptionByte)
	d.Text[FieldTags] = strings.Join(def.Keywords, " ")
	d.Text[FieldPath] = address(def.Bindings)
	d.Text[FieldParams] = params(def.Input)
	d.Text[FieldDomain] = strings.Join(append(append([]string{def.Domain}, def.Domains...), def.Categories...), " ")
	d.Text[FieldIntents] = strings.Join(def.Intents, " ")
	d.Action = actionOf(def)
	d.Object = objectOf(def)
	d.Many = manyOf(def)
	d.Scope = def.Domain
	return d
}

// objectOf is the text of what a definition acts on: the last literal
// segment of its HTTP path (/repos/{owner}/{repo}/issues/{n}/comments:
// comments; /chat.postMessage: message), else the words of its MCP tool or
// name; the verbs of an action left out either way.
func objectOf(def *capability.Definition) string {
	var segs []string
	if h := def.Bindings.HTTP; h != nil {
		p := h.URL
		if u, err := url.Parse(h.URL); err == nil && u.Host != "" {
			p = u.Path
		}
		for _, seg := range strings.Split(p, "/") {
			if j := strings.IndexByte(seg, '{'); j >= 0 {
				seg = seg[:j] // thumbnail.{extension}, {id}
			}
			for _, part := range strings.Split(seg, ".") {
				if formats[strings.ToLower(part)] {
					continue // Calls.json: calls
				}
				if part = nouns(part); part != "" {
					segs = append(segs, part)
				}
			}
		}
	} else if m := def.Bindings.MCP; m != nil && m.Tool != "" {
		segs = append(segs, nouns(m.Tool))
	} else {
		segs = append(segs, nouns(def.Name))
	}
	if len(segs) == 0 {
		return ""
	}
	return segs[len(segs)-1]
}

// manyOf tells whether a definition reads many things or one: a GET whose
// path ends in a resource (/repos/{owner}/{repo}/commits) lists them, one
// that ends in a parameter (/commits/{ref}) reads one; ManyUnknown for
// everything else.
func manyOf(def *capability.Definition) Many {
	h := def.Bindings.HTTP
	if h == nil || !strings.EqualFold(h.Method, "GET") {
		return ManyUnknown
	}
	p := h.URL
	if u, err := url.Parse(h.URL); err == nil && u.Host != "" {
		p = u.Path
	}
	p = strings.TrimRight(p, "/")
	last := p[strings.LastIndexByte(p, '/')+1:]
	if i := strings.LastIndexByte(last, '.'); i > 0 && formats[strings.ToLower(last[i+1:])] {
		last = last[:i] // Calls/{Sid}.json
	}
	switch {
	case strings.HasSuffix(last, "}"):
		return ManyOne
	case plural(last):
		return ManyMany
	}
	return ManyUnknown // /readme, /content: one thing, or it cannot tell
}

// plural reports whether the word w looks like a plural (commits,
// repositories, people; not status, address, analysis).
func plural(w string) bool {
	return irregularPlurals[w] || len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is")
}

// irregularPlurals are plurals without an s.
var irregularPlurals = wordSet("people children men women criteria")

// formats are the file extensions a path may end with, which name the
// format of the answer, not a thing.
var formats = wordSet("json xml yaml yml csv txt html atom rss")

// nouns is the words of src but for the verbs of an action that lead it
// (postMessage: message; create_entities: entities), "" when it is only
// verbs (conversations.list: list).
func nouns(src string) string {
	words := Words(src)
	for len(words) > 0 && isVerb(words[0]) {
		words = words[1:]
	}
	return strings.Join(words, " ")
}

// isVerb reports whether w is a verb of an action, and not as often a
// thing (a message, an email, an alert).
func isVerb(w string) bool {
	_, ok := actionVerbs[w]
	return ok && !thingsToo[w]
}

// links are URLs in prose (markdown links included): their words are noise.
var links = regexp.MustCompile(`https?://[^\s)>\]]+`)

// cleanProse is s without URLs, cut to at most n bytes.
func cleanProse(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return links.ReplaceAllString(s, " ")
}

// address is the text of where the bindings go: the HTTP path (not the
// host), the MCP tool, the gRPC service and method.
func address(b capability.Bindings) string {
	var parts []string
	if h := b.HTTP; h != nil {
		p := h.URL
		if u, err := url.Parse(strings.NewReplacer("{", "", "}", "").Replace(h.URL)); err == nil && u.Host != "" {
			p = u.Path
		}
		parts = append(parts, p)
	}
	if m := b.MCP; m != nil {
		parts = append(parts, m.Tool)
	}
	if g := b.GRPC; g != nil {
		parts = append(parts, g.Service, g.Method)
	}
	return strings.Join(parts, " ")
}

// params is the text of an input schema's parameters: each name and the
// start of its description, the top level first, then one level down,
// looking through local $refs into the schema's $defs (where an imported
// API keeps its shared components).
func params(s capability.Schema) string {
	var b strings.Builder
	n := 0
	var walk func(s map[string]any, depth int)
	walk = func(m map[string]any, depth int) {
		m = deref(s, m)
		props, _ := m["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		var nested []map[string]any
		for _, k := range names {
			if n >= maxParams {
				return
			}
			n++
			b.WriteString(k)
			b.WriteByte(' ')
			p, _ := props[k].(map[string]any)
			desc, _ := p["description"].(string)
			if desc == "" {
				desc, _ = deref(s, p)["description"].(string)
			}
			if desc != "" {
				b.WriteString(cleanProse(desc, maxParamDescBytes))
				b.WriteByte(' ')
			}
			if depth == 0 && p != nil {
				nested = append(nested, p)
			}
		}
		for _, p := range nested {
			walk(p, depth+1)
		}
	}
	walk(s, 0)
	return b.String()
}

// maxRefHops bounds how many $refs deref follows (a cycle ends there).
const maxRefHops = 8

// deref follows m's local $ref in root, a few hops; m itself when it has
// none or it names nothing.
func deref(root capability.Schema, m map[string]any) map[string]any {
	for range maxRefHops {
		ref, _ := m["$ref"].(string)
		if ref == "" {
			return m
		}
		v, ok := capability.LocalRef(root, ref)
		next, isMap := v.(map[string]any)
		if !ok || !isMap {
			return m
		}
		m = next
	}
	return m
}

// actionOf is the action a definition does: the first verb of its name,
// else its HTTP method, else its CCOS CRUD category.
func actionOf(def *capability.Definition) string {
	for _, w := range Words(def.Name) {
		if a, ok := actionVerbs[w]; ok {
			return a
		}
	}
	if h := def.Bindings.HTTP; h != nil {
		if a, ok := methodActions[strings.ToUpper(h.Method)]; ok {
			return a
		}
	}
	for _, c := range def.Categories {
		switch c {
		case ActionCreate, ActionRead, ActionUpdate, ActionDelete, ActionSearch, ActionNotify:
			return c
		}
	}
	return ""
}
