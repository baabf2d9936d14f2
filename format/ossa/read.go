// Package ossa reads and writes OSSA capability files (YAML or JSON): a single
// `capability:` document, a `capabilities:` list (or a top-level sequence),
// and registry indexes, both the OSSA §5.1 `registry:` layout and the
// `domains: {name: {capabilities: [...]}}` layout of the OSSA repository's
// own index.yaml. Every error and validation issue carries file:line:column
// and the field path.
package ossa

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/internal/jsonnode"
	"github.com/caphub/caphub/format/internal/srcfile"
	"github.com/caphub/caphub/internal/jsoncheck"
	"gopkg.in/yaml.v3"
)

// Kind says what a file holds.
type Kind string

const (
	KindCapability   Kind = "capability"   // one `capability:` document (or a bare definition)
	KindCapabilities Kind = "capabilities" // a list of definitions
	KindIndex        Kind = "index"        // a registry index
)

// File is what was read from one file.
type File struct {
	Name    string
	Kind    Kind
	Entries []Entry
	Index   *Index
	// Issues are problems with single entries found while reading (a field of
	// the wrong type, say). The other entries were still read.
	Issues []capability.Issue
}

// Entry is one capability definition of a file and where it is.
type Entry struct {
	Definition capability.Definition
	Path       string // document path of the definition: "capability", "capabilities[2]", "[0]"
	Line       int
	Column     int
	node       *yaml.Node
}

// Error is a problem that stops a file from being read at all; its Path is
// the document path of the offending value.
type Error = srcfile.Error

// ReadFile reads and decodes the file at path.
func ReadFile(path string) (*File, error) {
	data, err := srcfile.Read(path, "give the capability files inside it", "a capability file")
	if err != nil {
		return nil, err
	}
	return Read(path, data)
}

// Read decodes data (YAML or JSON); name is used in messages.
func Read(name string, data []byte) (*File, error) {
	docs, err := decodeDocuments(name, data)
	if err != nil {
		return nil, err
	}
	f := &File{Name: name}
	for i, doc := range docs {
		prefix := ""
		if len(docs) > 1 {
			prefix = fmt.Sprintf("document[%d].", i)
		}
		if err := f.readDocument(doc.Content[0], prefix); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// decodeDocuments decodes the YAML (or JSON) documents of a file; a file
// with none is an error.
func decodeDocuments(name string, data []byte) ([]*yaml.Node, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &Error{File: name, Line: 1, Column: 1, Message: "file is empty: expected a `capability:` document, a `capabilities:` list or a registry index"}
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		// JSON: read as the YAML parser would, ten times faster (and with
		// the escape \/, which it refuses); what is not plain JSON is left
		// to it.
		if doc, ok := jsonnode.Parse(data); ok {
			return []*yaml.Node{doc}, nil
		}
		// Tabs are legal JSON whitespace but not YAML indentation. Inside
		// JSON strings a raw tab is invalid anyway, so replacing them keeps
		// every line and column and changes no value.
		data = bytes.ReplaceAll(data, []byte{'\t'}, []byte{' '})
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, decodeError(name, data, err)
		}
		if len(doc.Content) > 0 {
			docs = append(docs, &doc)
		}
	}
	if len(docs) == 0 {
		return nil, &Error{File: name, Line: 1, Column: 1, Message: "file holds no document: expected a `capability:` document, a `capabilities:` list or a registry index"}
	}
	return docs, nil
}

// decodeError is the *Error of a YAML decoding error: invalid UTF-8 at the
// first invalid byte (the parser names no position for it), else a syntax
// error.
func decodeError(name string, data []byte, err error) error {
	if off := jsoncheck.InvalidUTF8(data); off >= 0 && strings.Contains(err.Error(), "UTF-8") {
		line, col := jsoncheck.Position(data, off)
		return &Error{File: name, Line: line, Column: col, Message: fmt.Sprintf("invalid UTF-8 byte 0x%02X: save the file as UTF-8", data[off])}
	}
	return syntaxError(name, err)
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntaxError turns a YAML parser error into an *Error with a position.
func syntaxError(name string, err error) error {
	msg := err.Error()
	line := 0
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return &Error{File: name, Line: line, Column: 1, Message: "not valid YAML or JSON: " + msg}
}

func mappingValue(n *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// readDocument reads one YAML document: a list of capabilities, or a
// mapping of one of the layouts (see readMapping).
func (f *File) readDocument(root *yaml.Node, prefix string) error {
	for root.Kind == yaml.AliasNode && root.Alias != nil {
		root = root.Alias
	}
	switch root.Kind {
	case yaml.SequenceNode:
		f.setKind(KindCapabilities)
		f.addEntries(root.Content, prefix, nil)
		return nil
	case yaml.MappingNode:
		return f.readMapping(root, prefix)
	}
	return &Error{File: f.Name, Line: root.Line, Column: root.Column, Path: strings.TrimSuffix(prefix, "."),
		Message: "expected a mapping (`capability:`, `capabilities:`, `registry:` or `domains:`), found " + kindName(root)}
}

// addEntries adds the capabilities of a list at prefix, each a definition
// or a mapping whose `capability:` holds it.
func (f *File) addEntries(items []*yaml.Node, prefix string, defs map[string]any) {
	for i, item := range items {
		path := fmt.Sprintf("%s[%d]", prefix, i)
		if _, inner := mappingValue(item, "capability"); inner != nil {
			f.addEntry(inner, path+".capability", defs)
		} else {
			f.addEntry(item, path, defs)
		}
	}
}

// readMapping reads a document that is a mapping: `capability:`,
// `capabilities:`, `registry:`, `domains:`, or a definition itself (it has
// a `uri:`).
func (f *File) readMapping(root *yaml.Node, prefix string) error {
	if dups := documentDuplicates(f.Name, strings.TrimSuffix(prefix, "."), root); len(dups) > 0 {
		f.Issues = append(f.Issues, dups...)
		return nil
	}
	defs := fileDefinitions(root)
	if _, v := mappingValue(root, "capability"); v != nil {
		f.setKind(KindCapability)
		f.addEntry(v, prefix+"capability", defs)
		return nil
	}
	if k, v := mappingValue(root, "capabilities"); v != nil {
		if v.Kind != yaml.SequenceNode {
			return &Error{File: f.Name, Line: k.Line, Column: k.Column, Path: prefix + "capabilities", Message: "must be a list of capability definitions, found " + kindName(v)}
		}
		f.setKind(KindCapabilities)
		f.addEntries(v.Content, prefix+"capabilities", defs)
		return nil
	}
	return f.readIndexOrDefinition(root, prefix, defs)
}

// readIndexOrDefinition reads a `registry:` or `domains:` index, or a
// mapping that is a definition itself.
func (f *File) readIndexOrDefinition(root *yaml.Node, prefix string, defs map[string]any) error {
	if _, v := mappingValue(root, "registry"); v != nil {
		f.setKind(KindIndex)
		return f.readRegistry(v, prefix+"registry")
	}
	if _, v := mappingValue(root, "domains"); v != nil && v.Kind == yaml.MappingNode {
		f.setKind(KindIndex)
		return f.readDomainIndex(v, prefix+"domains")
	}
	if k, _ := mappingValue(root, "uri"); k != nil {
		f.setKind(KindCapability)
		f.addEntry(root, strings.TrimSuffix(prefix, "."), defs)
		return nil
	}
	return &Error{File: f.Name, Line: root.Line, Column: root.Column, Path: strings.TrimSuffix(prefix, "."),
		Message: "not a capability file: expected a top-level `capability:` mapping, a `capabilities:` list, a `registry:` index or a `domains:` index (keys found: " + strings.Join(keys(root), ", ") + ")"}
}

func (f *File) setKind(k Kind) {
	if f.Kind == "" || f.Kind == KindCapability && k == KindCapabilities {
		f.Kind = k
	} else if f.Kind == KindCapability && k == KindCapability {
		f.Kind = KindCapabilities // several documents of one capability each
	}
}

func keys(n *yaml.Node) []string {
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, n.Content[i].Value)
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "nothing"
}

// fileDefinitions returns the file-level `definitions:` (or `$defs:`)
// section that schemas may reference as #/definitions/Name.
func fileDefinitions(root *yaml.Node) map[string]any {
	for _, key := range []string{"definitions", "$defs"} {
		if _, v := mappingValue(root, key); v != nil {
			var m map[string]any
			if v.Decode(&m) == nil && m != nil {
				return capability.Normalize(m).(map[string]any)
			}
		}
	}
	return nil
}

// addEntry decodes one definition. A decode failure becomes an Issue and the
// entry is skipped; the others are still read.
func (f *File) addEntry(n *yaml.Node, path string, defs map[string]any) {
	if n.Kind != yaml.MappingNode {
		f.Issues = append(f.Issues, capability.Issue{Severity: capability.SeverityError, Path: path, File: f.Name, Line: n.Line, Column: n.Column,
			Message: "a capability definition must be a mapping (uri, name, domain, version, input, output, bindings, ...), found " + kindName(n)})
		return
	}
	if dups := duplicateKeys(f.Name, path, n); len(dups) > 0 {
		f.Issues = append(f.Issues, dups...)
		return
	}
	var d capability.Definition
	if err := n.Decode(&d); err != nil {
		f.Issues = append(f.Issues, decodeIssues(f.Name, path, n, err)...)
		return
	}
	d.Normalize()
	if defs != nil {
		d.Input = inlineFileDefinitions(d.Input, defs)
		d.Output = inlineFileDefinitions(d.Output, defs)
	}
	f.Entries = append(f.Entries, Entry{Definition: d, Path: path, Line: n.Line, Column: n.Column, node: n})
}

// duplicateKeys reports every mapping key that appears twice under n: YAML
// forbids it, and silently keeping one of the values would lose the other.
func duplicateKeys(file, path string, n *yaml.Node) []capability.Issue {
	var out []capability.Issue
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.MappingNode:
			seen := map[string]*yaml.Node{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				p := joinPath(path, k.Value)
				if first, dup := seen[k.Value]; dup && k.Kind == yaml.ScalarNode {
					out = append(out, capability.Issue{Severity: capability.SeverityError, File: file, Path: p, Line: k.Line, Column: k.Column,
						Message: fmt.Sprintf("key %q is already defined at line %d: remove one of them", k.Value, first.Line)})
					continue
				}
				seen[k.Value] = k
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				walk(item, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(n, path)
	return out
}

// documentDuplicates reports the keys written twice at the top of a
// document (`capability:` twice: which one is meant would be a guess) and
// anywhere in its file-level definitions or $defs. Keys inside a definition
// are checked when it is read (see addEntry), the index sections when they
// are decoded.
func documentDuplicates(file, path string, root *yaml.Node) []capability.Issue {
	var out []capability.Issue
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if k.Kind != yaml.ScalarNode {
			continue
		}
		p := joinPath(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			out = append(out, capability.Issue{Severity: capability.SeverityError, File: file, Path: p, Line: k.Line, Column: k.Column,
				Message: fmt.Sprintf("key %q is already defined at line %d: remove one of them", k.Value, first.Line)})
			continue
		}
		seen[k.Value] = k
		if k.Value == "definitions" || k.Value == "$defs" {
			out = append(out, duplicateKeys(file, p, root.Content[i+1])...)
		}
	}
	return out
}

var typeErrLineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// decodeIssues turns a yaml decode error into issues with positions and paths.
func decodeIssues(file, path string, n *yaml.Node, err error) []capability.Issue {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return []capability.Issue{{Severity: capability.SeverityError, Path: path, File: file, Line: n.Line, Column: n.Column, Message: err.Error()}}
	}
	var out []capability.Issue
	for _, e := range te.Errors {
		iss := capability.Issue{Severity: capability.SeverityError, Path: path, File: file, Line: n.Line, Column: n.Column, Message: e}
		if m := typeErrLineRE.FindStringSubmatch(e); m != nil {
			line, _ := strconv.Atoi(m[1])
			iss.Line, iss.Message = line, explainTypeError(m[2])
			if sub, node := findLine(n, line, ""); node != nil {
				iss.Column = node.Column
				if sub != "" {
					iss.Path = path + "." + sub
				}
			}
		}
		out = append(out, iss)
	}
	return out
}

var cannotUnmarshalRE = regexp.MustCompile("^cannot unmarshal !!(\\w+) (?:`([^`]*)` )?into (.*)$")

func explainTypeError(msg string) string {
	m := cannotUnmarshalRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	found := map[string]string{"seq": "a list", "map": "a mapping", "str": "a string", "int": "a number", "float": "a number", "bool": "a boolean"}[m[1]]
	if found == "" {
		found = m[1]
	}
	if m[2] != "" {
		found += fmt.Sprintf(" (%s)", m[2])
	}
	want := m[3]
	switch {
	case strings.HasPrefix(want, "[]"):
		want = "a list"
	case strings.HasPrefix(want, "map["):
		want = "a mapping"
	case want == "string":
		want = "a string"
	case want == "bool":
		want = "true or false"
	case strings.HasPrefix(want, "capability."):
		want = "a mapping"
	}
	return fmt.Sprintf("expected %s, found %s", want, found)
}

// findLine returns the path (relative to n) and the node of the first value
// node that starts on line.
func findLine(n *yaml.Node, line int, path string) (string, *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := joinPath(path, k.Value)
			if k.Line == line || v.Line == line && v.Kind == yaml.ScalarNode {
				return p, v
			}
			if p2, node := findLine(v, line, p); node != nil {
				return p2, node
			}
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if item.Line == line && item.Kind == yaml.ScalarNode {
				return p, item
			}
			if p2, node := findLine(item, line, p); node != nil {
				return p2, node
			}
		}
	}
	return "", nil
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

var pathSegRE = regexp.MustCompile(`[^.\[\]]+|\[\d+\]`)

// locate returns the position of path (relative to n): the key of the
// deepest field on the path that exists in the file, so an issue about a
// missing field points at its parent.
func locate(n *yaml.Node, path string) (line, col int) {
	line, col = n.Line, n.Column
	cur := n
	for _, seg := range pathSegRE.FindAllString(path, -1) {
		for cur.Kind == yaml.AliasNode && cur.Alias != nil {
			cur = cur.Alias
		}
		if strings.HasPrefix(seg, "[") {
			i, _ := strconv.Atoi(strings.Trim(seg, "[]"))
			if cur.Kind != yaml.SequenceNode || i >= len(cur.Content) {
				return
			}
			cur = cur.Content[i]
			line, col = cur.Line, cur.Column
			continue
		}
		k, v := mappingValue(cur, seg)
		if v == nil {
			return
		}
		line, col = k.Line, k.Column
		cur = v
	}
	return
}

// inlineFileDefinitions copies the file-level definitions a schema references
// (#/definitions/Name, transitively) into the schema's own `definitions`, so
// that each definition stands alone once it leaves its file.
func inlineFileDefinitions(s capability.Schema, defs map[string]any) capability.Schema {
	if s == nil {
		return nil
	}
	local, _ := s["definitions"].(map[string]any)
	need := map[string]bool{}
	var queue []string
	collect := func(v any) {
		walkRefs(v, func(ref string) {
			name, ok := strings.CutPrefix(ref, "#/definitions/")
			if !ok {
				return
			}
			name, _, _ = strings.Cut(name, "/")
			name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
			if _, mine := local[name]; mine || need[name] {
				return
			}
			if _, ok := defs[name]; ok {
				need[name] = true
				queue = append(queue, name)
			}
		})
	}
	collect(map[string]any(s))
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		collect(defs[name])
	}
	if len(need) == 0 {
		return s
	}
	merged := map[string]any{}
	for k, v := range local {
		merged[k] = v
	}
	for name := range need {
		merged[name] = defs[name]
	}
	s["definitions"] = merged
	return s
}

func walkRefs(v any, fn func(string)) {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			fn(ref)
		}
		for _, e := range x {
			walkRefs(e, fn)
		}
	case []any:
		for _, e := range x {
			walkRefs(e, fn)
		}
	}
}

// Validate runs capability.Validate on every entry and returns the reading
// issues plus the validation issues, each with the file, its line and column
// and the full field path ("capabilities[0].bindings.mcp.server").
func (f *File) Validate() []capability.Issue {
	issues := append([]capability.Issue(nil), f.Issues...)
	for i := range f.Entries {
		e := &f.Entries[i]
		for _, iss := range capability.Validate(&e.Definition) {
			iss.File = f.Name
			iss.Line, iss.Column = locate(e.node, iss.Path)
			iss.Path = joinPath(e.Path, iss.Path)
			issues = append(issues, iss)
		}
	}
	if f.Index != nil {
		issues = append(issues, f.Index.validate(f.Name)...)
	}
	return issues
}

// Definitions returns the definitions read, in file order.
func (f *File) Definitions() []capability.Definition {
	out := make([]capability.Definition, len(f.Entries))
	for i, e := range f.Entries {
		out[i] = e.Definition
	}
	return out
}
