package capability

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
)

// MaxToolNameLen is the longest MCP tool name caphub gives: 64 characters,
// the limit of the LLM APIs that agents hand MCP tools to (MCP itself allows
// 128).
const MaxToolNameLen = 64

// hashLen is the number of hex digits of the hash suffix ToolName adds.
const hashLen = 8

// ToolName returns the MCP tool name of a capability URI: "<domain>_<name>"
// for an ossa: URI (ossa:everruns/add@1.0 → "everruns_add") and
// "mcp_<server>_<tool>" for an mcp: URI (mcp:github/create_issue →
// "mcp_github_create_issue"). The version is left out, since the gateway
// serves one tool per capability (its latest version). Every character
// outside [A-Za-z0-9_-] (dots included) becomes "_", so the name matches
// both the MCP tool-name charset and the stricter one of LLM APIs.
//
// A name longer than MaxToolNameLen is cut to 55 characters and suffixed
// with "_" and the first 8 hex digits of the SHA-256 of the URI base
// (scheme:domain/name, without version), e.g. "mcp_some_server_with_a_…_1a2b3c4d".
//
// ToolName is pure: the same URI always gives the same name, whatever else
// is registered. Two capabilities can still map to the same name (ossa:mcp/x_y
// and mcp:x/y both give "mcp_x_y"); the gateway then gives both of them
// their hashed names (see ToolNames), so which one was registered first does
// not matter.
func ToolName(uri string) string {
	base, plain := toolNameParts(uri)
	if plain != "" && len(plain) <= MaxToolNameLen {
		return plain
	}
	return hashedToolName(base, plain, hashLen)
}

// ToolNames returns the tool name of each URI of a set, collisions resolved:
// URIs whose ToolName is the same get their hashed names instead (the name
// cut to fit, "_" and 8 hex digits of the SHA-256 of the URI base), and
// should hashed names collide too, longer hashes (16, then 64 digits). The
// result depends only on the set, never on its order. URIs naming the same
// capability (different versions) share one name.
func ToolNames(uris []string) map[string]string {
	items, byBase := toolNameItems(uris)
	// Raise the level of every capability whose name is shared until all
	// names are distinct; the last level (the whole digest) always is.
	bases := slices.Sorted(maps.Keys(byBase))
	for round := 0; round <= len(hashLevels); round++ {
		if !raiseClashes(bases, byBase) {
			break
		}
	}
	out := make(map[string]string, len(items))
	for _, it := range items {
		if it.level < 0 {
			out[it.uri] = byBase[it.base].name()
		} else {
			out[it.uri] = it.name()
		}
	}
	return out
}

// toolNameItem is one URI being named by ToolNames.
type toolNameItem struct {
	uri, base, plain string
	level            int // 0: plain ToolName; 1..: hashLevels[level-1]; -1: named as its capability's first URI
}

// name is the item's tool name at its level.
func (it *toolNameItem) name() string {
	if it.level == 0 {
		return it.plain
	}
	return hashedToolName(it.base, it.plain, hashLevels[min(it.level, len(hashLevels))-1])
}

// toolNameItems makes an item of each URI, and returns the first item of
// each capability by URI base; names too long start hashed.
func toolNameItems(uris []string) ([]*toolNameItem, map[string]*toolNameItem) {
	items := make([]*toolNameItem, 0, len(uris))
	byBase := map[string]*toolNameItem{}
	for _, u := range uris {
		base, plain := toolNameParts(u)
		if it, ok := byBase[base]; ok {
			items = append(items, &toolNameItem{uri: u, base: base, plain: it.plain, level: -1}) // follows its capability
			continue
		}
		it := &toolNameItem{uri: u, base: base, plain: plain}
		if plain == "" || len(plain) > MaxToolNameLen {
			it.level = 1
		}
		byBase[base] = it
		items = append(items, it)
	}
	return items, byBase
}

// raiseClashes raises the level of every capability whose name another
// shares (up to the last level) and reports whether any was raised.
func raiseClashes(bases []string, byBase map[string]*toolNameItem) bool {
	owners := map[string][]*toolNameItem{}
	for _, b := range bases {
		it := byBase[b]
		n := it.name()
		owners[n] = append(owners[n], it)
	}
	raised := false
	for _, group := range owners {
		if len(group) < 2 {
			continue
		}
		for _, it := range group {
			if it.level < len(hashLevels) {
				it.level++
				raised = true
			}
		}
	}
	return raised
}

// hashLevels are the hash lengths (hex digits) tried in turn when hashed
// names collide.
var hashLevels = []int{hashLen, 16, 64}

// toolNameParts returns the URI base that names are hashed from
// (scheme:domain/name) and the plain name before any length limit.
func toolNameParts(uri string) (base, plain string) {
	u, err := ParseURI(uri)
	if err != nil {
		// Not a capability URI: name it after its text, without the version.
		base, _, _ = strings.Cut(uri, "@")
		return base, sanitizeToolName(strings.NewReplacer(":", "_", "/", "_").Replace(base))
	}
	base = u.Base()
	if u.Scheme == SchemeMCP {
		return base, sanitizeToolName("mcp_" + u.Domain + "_" + u.Name)
	}
	return base, sanitizeToolName(u.Domain + "_" + u.Name)
}

// sanitizeToolName replaces every character outside [A-Za-z0-9_-] with "_"
// (one per character, so that names keep their shape).
func sanitizeToolName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// hashedToolName is plain cut to leave room for "_" and n hex digits of the
// SHA-256 of base, followed by them.
func hashedToolName(base, plain string, n int) string {
	sum := sha256.Sum256([]byte(base))
	h := hex.EncodeToString(sum[:])[:n]
	keep := MaxToolNameLen - 1 - n
	if keep <= 0 {
		return h
	}
	if len(plain) > keep {
		plain = plain[:keep]
	}
	if plain == "" {
		return "cap_" + h
	}
	return plain + "_" + h
}
