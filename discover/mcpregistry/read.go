package mcpregistry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/caphub/caphub/internal/jsoncheck"
	"github.com/caphub/caphub/mcpconn"
)

// Budgets of what Read accepts. A server.json is a few kilobytes and the
// official registry's pages hold at most 100 entries; these leave room
// while keeping a hostile or mistaken document from costing much.
const (
	MaxServerBytes = mcpconn.MaxRegistryBytes // one server.json
	MaxListBytes   = 16 << 20                 // one page of a list
	MaxDepth       = 32                       // nesting of objects and arrays
	MaxEntries     = 1000                     // servers in one page
	MaxPackages    = 32                       // packages, and remotes, of a server
	MaxArguments   = 128                      // runtime or package arguments of a package
	MaxKeyValues   = 128                      // environment variables or headers
	MaxVariables   = 64                       // variables of one input
	MaxChoices     = 256                      // choices of one input
)

// Error is one problem of a document: where (the 1-based line and column,
// when known, and the path of the value, e.g. "packages[0].version") and
// what is wrong and what to do.
type Error struct {
	Line, Column int
	Path         string
	Message      string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// InvalidError is an entry that does not follow the schema: where it is
// in the document ("" for a server.json, "servers[3]" in a list), its name
// when it has one, and every problem found (at most maxProblems).
type InvalidError struct {
	Where    string
	Name     string
	Problems []*Error
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	switch {
	case e.Where != "" && e.Name != "":
		fmt.Fprintf(&b, "%s (%s): ", e.Where, e.Name)
	case e.Where != "":
		b.WriteString(e.Where + ": ")
	case e.Name != "":
		b.WriteString(e.Name + ": ")
	}
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Entry is one server read from a document.
type Entry struct {
	Server *Server
	// Raw is the server.json as it was read: what caphub keeps with the
	// saved connection and serves again.
	Raw json.RawMessage
	// Official is the registry's metadata of a list entry; nil for a bare
	// server.json.
	Official *Official
	// Where is the entry's place in the document: "" for a server.json,
	// "servers[3]" in a list, "server" for one API response.
	Where string
}

// Document is what Read found: the valid entries, the invalid ones (each
// with its problems), and a list's cursor to the next page.
type Document struct {
	Entries    []Entry
	Invalid    []*InvalidError
	NextCursor string
	// List is set when the document was a page of the registry API.
	List bool
}

// Read reads a server.json, one API response ({"server": …, "_meta": …})
// or a page of the registry API's server list ({"servers": [...],
// "metadata": {"nextCursor": …}}; the July 2025 shape, with flat entries
// and next_cursor, is read too). A document that is not one of these is an
// error; so is a server.json that does not follow the schema. In a list,
// each entry that does not is reported in Document.Invalid and the others
// are read.
func Read(data []byte) (*Document, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(data) > MaxListBytes {
		return nil, &Error{Message: fmt.Sprintf("the document is %d bytes, more than the %d-byte limit of a registry page: ask for fewer servers per page (limit=…)", len(data), MaxListBytes)}
	}
	if err := checkJSON(data); err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, &Error{Message: "the document is not a JSON object: give a server.json or a page of GET /v0/servers"}
	}
	_, hasServers := top["servers"]
	_, hasServer := top["server"]
	_, hasName := top["name"]
	switch {
	case hasServers && !hasName:
		return readList(top)
	case hasServer && !hasName:
		e, err := readResponse(top["server"], top["_meta"], "server")
		if err != nil {
			return nil, err
		}
		return &Document{Entries: []Entry{*e}}, nil
	}
	if len(data) > MaxServerBytes {
		return nil, &Error{Message: fmt.Sprintf("the server.json is %d bytes, more than the %d-byte limit", len(data), MaxServerBytes)}
	}
	s, err := decodeServer(data, "")
	if err != nil {
		return nil, err
	}
	return &Document{Entries: []Entry{{Server: s, Raw: compact(data)}}}, nil
}

// checkJSON refuses what is not one well-formed JSON value, is nested
// deeper than MaxDepth, or has a duplicate key, invalid UTF-8 or a lone
// surrogate (jsoncheck), with the position.
func checkJSON(data []byte) error {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := jsoncheck.Position(data, int(se.Offset))
			return &Error{Line: line, Column: col, Message: "not valid JSON: " + se.Error()}
		}
		return &Error{Message: "not valid JSON"}
	}
	if off := depthExceeded(data, MaxDepth); off >= 0 {
		line, col := jsoncheck.Position(data, off)
		return &Error{Line: line, Column: col, Message: fmt.Sprintf("nested deeper than %d levels: no registry document is", MaxDepth)}
	}
	if e := jsoncheck.Check(data); e != nil {
		return &Error{Line: e.Line, Column: e.Column, Path: e.Path, Message: e.Message}
	}
	return nil
}

// depthExceeded returns the offset of the first bracket that opens a
// level deeper than max, or -1. data is valid JSON.
func depthExceeded(data []byte, max int) int {
	depth, inString, escaped := 0, false, false
	for i, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return i
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return -1
}

// readList reads a page of the server list.
func readList(top map[string]json.RawMessage) (*Document, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(top["servers"], &items); err != nil {
		return nil, &Error{Path: "servers", Message: "must be an array of server entries"}
	}
	if len(items) > MaxEntries {
		return nil, &Error{Path: "servers", Message: fmt.Sprintf("%d entries, more than the %d a page may hold: ask for fewer (limit=…)", len(items), MaxEntries)}
	}
	doc := &Document{List: true}
	if raw, ok := top["metadata"]; ok && string(raw) != "null" {
		var md struct {
			NextCursor *string `json:"nextCursor"`
			Legacy     *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(raw, &md); err != nil {
			return nil, &Error{Path: "metadata", Message: "must be an object with nextCursor (a string) and count"}
		}
		switch {
		case md.NextCursor != nil:
			doc.NextCursor = *md.NextCursor
		case md.Legacy != nil:
			doc.NextCursor = *md.Legacy
		}
	}
	for i, item := range items {
		where := fmt.Sprintf("servers[%d]", i)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(item, &obj); err != nil {
			doc.Invalid = append(doc.Invalid, &InvalidError{Where: where, Problems: []*Error{{Message: "must be an object: {\"server\": {...}, \"_meta\": {...}}"}}})
			continue
		}
		var e *Entry
		var err error
		if server, ok := obj["server"]; ok {
			e, err = readResponse(server, obj["_meta"], where+".server")
		} else {
			e, err = readResponse(item, nil, where) // the July 2025 shape: the server itself
		}
		if err != nil {
			var inv *InvalidError
			if !errors.As(err, &inv) {
				inv = &InvalidError{Where: where, Problems: []*Error{asError(err)}}
			}
			doc.Invalid = append(doc.Invalid, inv)
			continue
		}
		doc.Entries = append(doc.Entries, *e)
	}
	return doc, nil
}

// asError is err as an *Error.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Message: err.Error()}
}

// readResponse reads one entry: its server.json and the registry's _meta.
func readResponse(server, meta json.RawMessage, where string) (*Entry, error) {
	if len(server) > MaxServerBytes {
		return nil, &InvalidError{Where: where, Problems: []*Error{{Message: fmt.Sprintf("the server.json is %d bytes, more than the %d-byte limit", len(server), MaxServerBytes)}}}
	}
	s, err := decodeServer(server, where)
	if err != nil {
		return nil, err
	}
	e := &Entry{Server: s, Raw: compact(server), Where: where}
	if len(meta) > 0 && string(meta) != "null" {
		var m map[string]json.RawMessage
		if json.Unmarshal(meta, &m) == nil {
			if raw, ok := m[OfficialMetaKey]; ok {
				var o Official
				if json.Unmarshal(raw, &o) == nil {
					e.Official = &o
				}
			}
		}
	}
	return e, nil
}

// decodeServer decodes and validates one server.json.
func decodeServer(data []byte, where string) (*Server, error) {
	var s Server
	if err := json.Unmarshal(data, &s); err != nil {
		p := decodeProblem(data, err)
		if where != "" {
			p.Line, p.Column = 0, 0 // a position in the entry, not in the page
		}
		return nil, &InvalidError{Where: where, Problems: []*Error{p}}
	}
	if problems := Validate(&s); len(problems) > 0 {
		return nil, &InvalidError{Where: where, Name: s.Name, Problems: problems}
	}
	return &s, nil
}

// decodeProblem says which field has the wrong type, and where.
func decodeProblem(data []byte, err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		line, col := jsoncheck.Position(data, int(te.Offset))
		want := te.Type.Kind().String()
		switch want {
		case "slice":
			want = "array"
		case "map", "struct":
			want = "object"
		case "bool":
			want = "boolean"
		}
		return &Error{Line: line, Column: col, Path: te.Field, Message: fmt.Sprintf("is a JSON %s, but must be a%s %s", te.Value, article(want), want)}
	}
	return &Error{Message: "not a server.json object: " + err.Error()}
}

func article(w string) string {
	if strings.IndexByte("aeiou", w[0]) >= 0 {
		return "n"
	}
	return ""
}

// compact is data without insignificant white space (data is valid JSON).
func compact(data []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return append(json.RawMessage(nil), data...)
	}
	return b.Bytes()
}
