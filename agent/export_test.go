package agent

import "time"

// SetOverridesClock makes the binding-overrides cache of a read the time
// from now, so that tests step past its TTL instead of sleeping.
func (a *Agents) SetOverridesClock(now func() time.Time) { a.overrides.now = now }
