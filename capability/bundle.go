package capability

// IsBundle reports whether d is a bundle in everruns' sense, a capability
// that equips an agent rather than being called: it lists the capabilities
// it provides (Tools), or carries everruns display metadata (an icon or a
// category, which only everruns capabilities have; this is what makes the
// everruns noop, with neither tools nor prompt, a bundle that gives
// nothing). Any other capability is a unit capability, given to an agent as
// one tool.
func (d *Definition) IsBundle() bool {
	return len(d.Tools) > 0 || d.Display != nil && (d.Display.Icon != "" || d.Display.Category != "")
}

// ComingSoon reports whether d is an experimental bundle, "coming soon" in
// everruns' terms: listed in the catalog, but not ready to give an agent
// tools or to be called, so it is offered neither as an MCP tool nor in an
// agent's configuration.
func (d *Definition) ComingSoon() bool {
	return d.IsBundle() && d.Stability == StabilityExperimental
}
