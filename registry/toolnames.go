package registry

import (
	"context"
	"fmt"
	"strings"

	"github.com/caphub/caphub/capability"
)

// KeyPrefix selects capabilities by the start of their key.
type KeyPrefix struct {
	Scheme string
	// Domain is the domain, or with DomainPrefix the start of it.
	Domain       string
	DomainPrefix bool
	// Name is the start of the name ("" for any); with DomainPrefix any
	// name matches.
	Name string
}

// ToolNameConflictError refuses a capability whose MCP tool name
// (capability.ToolName) is already another capability's, or that would
// take the tool names of MCP servers' tools.
type ToolNameConflictError struct {
	URI      string // the refused capability, scheme:domain/name
	ToolName string
	Existing string // the capability that has the name; "" for a reserved name
}

// Error names both capabilities and the tool name, and what to do.
func (e *ToolNameConflictError) Error() string {
	if e.Existing == "" {
		return fmt.Sprintf("capability %s would be served over MCP as the tool %q, but ossa: capabilities cannot use the domain %q: tool names starting with \"mcp_\" belong to the tools of MCP servers (mcp: capabilities), which they would rename; choose another domain",
			e.URI, e.ToolName, capability.SchemeMCP)
	}
	return fmt.Sprintf("capability %s would be served over MCP as the tool %q, which is already the tool name of %s: MCP clients call tools by name, so a second capability with that name would rename the existing tool; register it under another domain or name",
		e.URI, e.ToolName, e.Existing)
}

// checkToolNames refuses (appending to failures) every definition of a
// registration, not refused already, that would change an existing MCP
// tool name. The gateway gives each capability its ToolName unless that is
// shared, in which case all sharers get hashed names (capability.ToolNames):
// so a capability may be registered only when no other capability, stored
// or in the same batch, has its ToolName. Plain names can be shared across
// schemes (ossa:mcp/x_y and mcp:x/y are both mcp_x_y), within mcp: when
// tool names differ by "." and "_" (mcp:s/a.b and mcp:s/a_b), and by a plain
// name equal to a long name's hashed one; the check finds them all, by key
// prefix. New versions of a capability keep its name and pass. Besides,
// ossa: capabilities may not use the domain "mcp", so that the names of MCP
// servers' tools cannot be taken before the server is discovered.
func (s *Service) checkToolNames(ctx context.Context, defs []capability.Definition, failures *[]BatchFailure) error {
	refused := map[int]bool{}
	for _, f := range *failures {
		refused[f.Index] = true
	}
	claimed := map[string]string{} // tool name → base, for the batch
	for i := range defs {
		if refused[i] {
			continue
		}
		u, err := capability.ParseURI(defs[i].URI)
		if err != nil {
			continue // validation refuses it
		}
		base, name := u.Base(), capability.ToolName(u.Base())
		fail := func(existing string) {
			*failures = append(*failures, BatchFailure{Index: i, URI: defs[i].URI, Err: &ToolNameConflictError{URI: base, ToolName: name, Existing: existing}})
		}
		if other, ok := claimed[name]; ok && other != base {
			fail(other)
			continue
		}
		claimed[name] = base
		existing, err := s.toolNameHolder(ctx, base, name)
		if err != nil {
			return err
		}
		switch {
		case existing != "":
			fail(existing)
		case u.Scheme == capability.SchemeOSSA && u.Domain == capability.SchemeMCP:
			fail("")
		}
	}
	return nil
}

// toolNameHolder returns a registered capability other than base whose
// ToolName is name, or "".
func (s *Service) toolNameHolder(ctx context.Context, base, name string) (string, error) {
	for _, p := range toolNamePrefixes(name) {
		keys, err := s.store.KeysWithPrefix(ctx, p)
		if err != nil {
			return "", fmt.Errorf("check the MCP tool name %q of %s: %w", name, base, err)
		}
		for _, k := range keys {
			if b := k.Scheme + ":" + k.Domain + "/" + k.Name; b != base && capability.ToolName(b) == name {
				return b, nil
			}
		}
	}
	return "", nil
}

// hashedNameKeep is how much of a plain name a hashed tool name keeps
// (capability.ToolName: the name cut to leave "_" and 8 hex digits).
const hashedNameKeep = capability.MaxToolNameLen - 1 - 8

// toolNamePrefixes returns key prefixes that select every capability whose
// ToolName can be name. A plain tool name is "<domain>_<name>" for ossa:
// (neither part changed: a domain has no "_", a name no character to
// replace) and "mcp_<domain>_<name>" for mcp:, with "." in the name
// replaced by "_"; a hashed one keeps the first hashedNameKeep characters
// of the plain name. So the domain is what precedes the first "_" and the
// name starts with the rest — for mcp: up to its first "_" after the first
// character, which may have been a ".". When name looks hashed (64
// characters ending in "_" and 8 hex digits), only its kept part is known
// of the plain name, which covers a plain name equal to it too; a domain
// longer than that part is selected by its start.
func toolNamePrefixes(name string) []KeyPrefix {
	plain, hashed := name, len(name) == capability.MaxToolNameLen && isHashSuffix(name[hashedNameKeep:])
	if hashed {
		plain = name[:hashedNameKeep]
	}
	var out []KeyPrefix
	split := func(scheme, s string, cut func(string) string) {
		if domain, rest, ok := strings.Cut(s, "_"); ok {
			out = append(out, KeyPrefix{Scheme: scheme, Domain: domain, Name: cut(rest)})
		} else if hashed && s != "" {
			out = append(out, KeyPrefix{Scheme: scheme, Domain: s, DomainPrefix: true}) // the domain goes on past the kept part
		}
		// A full plain name without "_" is no capability's.
	}
	split(capability.SchemeOSSA, plain, func(n string) string { return n })
	if rest, ok := strings.CutPrefix(plain, capability.SchemeMCP+"_"); ok {
		split(capability.SchemeMCP, rest, func(n string) string {
			if i := strings.IndexByte(n[min(1, len(n)):], '_'); i >= 0 {
				return n[:i+1] // the first "_" after the first character may stand for "."
			}
			return n
		})
	}
	return out
}

// isHashSuffix reports whether s is "_" and 8 lower-case hex digits.
func isHashSuffix(s string) bool {
	if len(s) != 9 || s[0] != '_' {
		return false
	}
	for _, c := range s[1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
