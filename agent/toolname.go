package agent

import "github.com/caphub/caphub/capability"

// MaxToolNameLen is the longest tool name an AgentConfig gives (see
// capability.MaxToolNameLen).
const MaxToolNameLen = capability.MaxToolNameLen

// ToolName is the tool name of a capability URI in an AgentConfig: the same
// name the MCP gateway serves it under (capability.ToolName).
func ToolName(uri string) string { return capability.ToolName(uri) }
