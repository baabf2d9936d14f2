package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/caphub/caphub/capability"
)

// MaxToolNameLen is the longest tool name an AgentConfig gives: 64
// characters, the limit of the LLM APIs that agents hand their tools to
// (OpenAI and Anthropic function names match ^[a-zA-Z0-9_-]{1,64}$).
const MaxToolNameLen = 64

// toolNameHashLen is the number of hex digits of the hash suffix of a name
// that had to be cut.
const toolNameHashLen = 8

// ToolName returns the tool name an agent sees for a capability URI:
// "<domain>_<name>" for an ossa: URI (ossa:everruns/add@1.0 → "everruns_add")
// and "mcp_<server>_<tool>" for an mcp: URI (mcp:github/create_issue@1.0 →
// "mcp_github_create_issue"). The version is left out: an agent gets one
// version of a capability, and its tool name must not change when the
// registry moves it to a newer minor version. Every character outside
// [A-Za-z0-9_-] (dots included, which mcp: tool names may carry) becomes
// "_", so the name suits both MCP and the stricter LLM APIs.
//
// A name longer than MaxToolNameLen is cut to 55 characters and suffixed
// with "_" and the first 8 hex digits of the SHA-256 of the URI base
// (scheme:domain/name, without version); a text that is not a capability URI
// is named after its text without the version.
//
// ToolName is pure, so an agent's tool names depend only on its capabilities.
// It MUST give the same names as the MCP gateway's mcpgw.ToolName (same
// rules, same test vectors in toolname_test.go), so that a tool an agent is
// configured with is the tool of that name the gateway serves; the two are
// to be unified in one package. Two capabilities can map to the same name
// (ossa:mcp/x_y and mcp:x/y both give "mcp_x_y", and two major versions of
// one capability share a name): Config reports that as a conflict.
func ToolName(uri string) string {
	base, plain := toolNameParts(uri)
	if plain != "" && len(plain) <= MaxToolNameLen {
		return plain
	}
	sum := sha256.Sum256([]byte(base))
	h := hex.EncodeToString(sum[:])[:toolNameHashLen]
	keep := MaxToolNameLen - 1 - toolNameHashLen
	if len(plain) > keep {
		plain = plain[:keep]
	}
	if plain == "" {
		return "cap_" + h
	}
	return plain + "_" + h
}

// toolNameParts returns the URI base that long names are hashed from
// (scheme:domain/name) and the name before any length limit.
func toolNameParts(uri string) (base, plain string) {
	u, err := capability.ParseURI(uri)
	if err != nil {
		base, _, _ = strings.Cut(uri, "@")
		return base, sanitizeToolName(strings.NewReplacer(":", "_", "/", "_").Replace(base))
	}
	base = u.Base()
	if u.Scheme == capability.SchemeMCP {
		return base, sanitizeToolName("mcp_" + u.Domain + "_" + u.Name)
	}
	return base, sanitizeToolName(u.Domain + "_" + u.Name)
}

// sanitizeToolName replaces every character outside [A-Za-z0-9_-] with "_",
// one per character, so that names keep their shape.
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
