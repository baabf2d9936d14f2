package ossa

import (
	"fmt"

	"github.com/caphub/caphub/capability"
	"gopkg.in/yaml.v3"
)

// Index is a registry index (OSSA §5.1): the domains and the capability
// versions a registry holds.
type Index struct {
	Version      string        `json:"version,omitempty" yaml:"version,omitempty"`
	UpdatedAt    string        `json:"updated_at,omitempty" yaml:"updated_at,omitempty"`
	Domains      []IndexDomain `json:"domains,omitempty" yaml:"domains,omitempty"`
	Capabilities []IndexEntry  `json:"capabilities,omitempty" yaml:"capabilities,omitempty"`

	refs []entryRef // where each entry of Capabilities was read, for issues
}

type entryRef struct {
	path         string
	line, column int
	bare         bool // the entry is a bare URI string, not a mapping with a uri field
}

// IndexDomain describes one domain of an index. Capabilities is filled only
// when read from the `domains: {name: {capabilities: [...]}}` layout.
type IndexDomain struct {
	Name         string   `json:"name" yaml:"name"`
	Description  string   `json:"description,omitempty" yaml:"description,omitempty"`
	Maintainer   string   `json:"maintainer,omitempty" yaml:"maintainer,omitempty"`
	Capabilities []string `json:"capabilities,omitempty" yaml:"capabilities,omitempty"`
}

// IndexEntry is one capability version listed in an index.
type IndexEntry struct {
	URI             string   `json:"uri" yaml:"uri"`
	Stability       string   `json:"stability,omitempty" yaml:"stability,omitempty"`
	AddedIn         string   `json:"added_in,omitempty" yaml:"added_in,omitempty"`
	DeprecatedBy    string   `json:"deprecated_by,omitempty" yaml:"deprecated_by,omitempty"`
	SunsetDate      string   `json:"sunset_date,omitempty" yaml:"sunset_date,omitempty"`
	MigrationGuide  string   `json:"migration_guide,omitempty" yaml:"migration_guide,omitempty"`
	BreakingChanges []string `json:"breaking_changes,omitempty" yaml:"breaking_changes,omitempty"`
}

// readRegistry reads the OSSA §5.1 layout (the value of `registry:`).
func (f *File) readRegistry(n *yaml.Node, path string) error {
	var idx Index
	if err := n.Decode(&idx); err != nil {
		iss := decodeIssues(f.Name, path, n, err)
		return &Error{File: f.Name, Line: iss[0].Line, Column: iss[0].Column, Path: iss[0].Path, Message: iss[0].Message}
	}
	if _, caps := mappingValue(n, "capabilities"); caps != nil {
		for i, item := range caps.Content {
			idx.refs = append(idx.refs, entryRef{path: fmt.Sprintf("%s.capabilities[%d]", path, i), line: item.Line, column: item.Column})
		}
	}
	f.Index = &idx
	return nil
}

// readDomainIndex reads the layout of the OSSA repository's index.yaml:
// `domains: {<name>: {description, capabilities: [uri, ...]}}`.
func (f *File) readDomainIndex(n *yaml.Node, path string) error {
	idx := &Index{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		dom := IndexDomain{Name: k.Value}
		var body struct {
			Description  string   `yaml:"description"`
			Maintainer   string   `yaml:"maintainer"`
			Capabilities []string `yaml:"capabilities"`
		}
		if err := v.Decode(&body); err != nil {
			iss := decodeIssues(f.Name, path+"."+k.Value, v, err)
			return &Error{File: f.Name, Line: iss[0].Line, Column: iss[0].Column, Path: iss[0].Path, Message: iss[0].Message}
		}
		dom.Description, dom.Maintainer, dom.Capabilities = body.Description, body.Maintainer, body.Capabilities
		idx.Domains = append(idx.Domains, dom)
		_, list := mappingValue(v, "capabilities")
		for j, uri := range body.Capabilities {
			ref := entryRef{path: fmt.Sprintf("%s.%s.capabilities[%d]", path, k.Value, j), bare: true}
			if list != nil && j < len(list.Content) {
				ref.line, ref.column = list.Content[j].Line, list.Content[j].Column
			}
			idx.Capabilities = append(idx.Capabilities, IndexEntry{URI: uri})
			idx.refs = append(idx.refs, ref)
		}
	}
	f.Index = idx
	return nil
}

// validate checks each entry of the index: URIs, stability, deprecation.
func (idx *Index) validate(file string) []capability.Issue {
	var out []capability.Issue
	for i, e := range idx.Capabilities {
		for _, p := range e.problems() {
			ref := entryRef{path: fmt.Sprintf("capabilities[%d]", i)}
			if i < len(idx.refs) {
				ref = idx.refs[i]
			}
			field := p.field
			if field == "uri" && ref.bare {
				field = ""
			}
			out = append(out, capability.Issue{Severity: p.severity, File: file, Line: ref.line, Column: ref.column, Path: joinPath(ref.path, field), Message: p.message})
		}
	}
	return out
}

// entryProblem is something wrong with a field of an index entry.
type entryProblem struct {
	field    string
	severity capability.Severity
	message  string
}

// problems checks an index entry: its URI, stability and deprecation.
func (e IndexEntry) problems() []entryProblem {
	var out []entryProblem
	add := func(field string, sev capability.Severity, format string, args ...any) {
		out = append(out, entryProblem{field, sev, fmt.Sprintf(format, args...)})
	}
	if u, err := capability.ParseURI(e.URI); err != nil {
		add("uri", capability.SeverityError, "%v", err)
	} else if !u.HasVersion {
		add("uri", capability.SeverityError, "%q has no version: index entries name one version, @MAJOR.MINOR", e.URI)
	}
	if !validStability[e.Stability] {
		add("stability", capability.SeverityError, "%q is not a stability: use experimental, beta, stable or deprecated", e.Stability)
	}
	if e.Stability == capability.StabilityDeprecated && e.DeprecatedBy == "" && e.MigrationGuide == "" {
		add("deprecated_by", capability.SeverityWarning, "a deprecated entry should name its replacement")
	}
	if _, err := capability.ParseURI(e.DeprecatedBy); e.DeprecatedBy != "" && err != nil {
		add("deprecated_by", capability.SeverityError, "%v", err)
	}
	if _, err := capability.ParseDate(e.SunsetDate); e.SunsetDate != "" && err != nil {
		add("sunset_date", capability.SeverityError, "%v", err)
	}
	return out
}

// validStability are the stabilities an index entry may have ("" for
// none).
var validStability = map[string]bool{"": true, capability.StabilityExperimental: true, capability.StabilityBeta: true,
	capability.StabilityStable: true, capability.StabilityDeprecated: true}
