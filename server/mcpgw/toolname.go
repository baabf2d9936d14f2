package mcpgw

import "github.com/caphub/caphub/capability"

// MaxToolNameLen is the longest tool name the gateway gives (see
// capability.MaxToolNameLen).
const MaxToolNameLen = capability.MaxToolNameLen

// ToolName is the MCP tool name of a capability URI; see
// capability.ToolName, which the gateway, agents and the CLI share.
func ToolName(uri string) string { return capability.ToolName(uri) }

// ToolNames names a set of capabilities with collisions resolved; see
// capability.ToolNames.
func ToolNames(uris []string) map[string]string { return capability.ToolNames(uris) }
