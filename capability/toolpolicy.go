package capability

import "strings"

// everruns' tool policies (ToolPolicy): a tool runs at once, or only once a
// human approved the call.
const (
	ToolPolicyAuto             = "auto"
	ToolPolicyRequiresApproval = "requires_approval"
)

// ToolPolicy returns a capability's everruns tool policy, declared as
// metadata.everruns.policy (everruns' Policy: Auto | RequiresApproval,
// written auto or requires_approval): auto when absent or "auto" (in any
// case), requires_approval for any other value, so that a misspelt
// requirement fails closed. A capability whose tool policy is
// requires_approval needs a human's approval for every call, whoever
// calls it.
func ToolPolicy(d *Definition) string {
	if d == nil {
		return ToolPolicyAuto
	}
	ns, _ := d.Metadata["everruns"].(map[string]any)
	v, present := ns["policy"]
	if !present || v == nil {
		return ToolPolicyAuto
	}
	if s, ok := v.(string); ok && strings.EqualFold(strings.TrimSpace(s), ToolPolicyAuto) {
		return ToolPolicyAuto
	}
	return ToolPolicyRequiresApproval
}
