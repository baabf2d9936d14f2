package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// Versions is where CheckRegistrations reads the stored capability
// versions from: a registry.Store.
type Versions interface {
	List(ctx context.Context, f registry.ListFilter) (registry.Page, error)
}

// versionsPage is how many versions CheckRegistrations reads at a time.
const versionsPage = 500

// maxReported bounds how many unrecorded versions a RegistrationCheck
// names.
const maxReported = 100

// RegistrationCheck is what CheckRegistrations found.
type RegistrationCheck struct {
	// OK is true when every stored version has its "registered" event.
	OK bool `json:"ok"`
	// Versions counts the stored versions checked.
	Versions int64 `json:"versions"`
	// Unrecorded counts the stored versions without a "registered" event
	// although they were stored after the chain began; Missing names the
	// first of them (at most 100), as ossa:domain/name@1.2.3.
	Unrecorded int64    `json:"unrecorded"`
	Missing    []string `json:"missing,omitempty"`
	// Predating counts the versions without an event that were stored
	// before the chain's first event: registered before this database kept
	// an audit chain. They are not a failure.
	Predating int64 `json:"predating,omitempty"`
	// Pruned counts the versions without an event that were stored before
	// the chain's checkpoint (at or before the last pruned event): their
	// events were pruned by the retention. They are not a failure.
	Pruned int64 `json:"pruned,omitempty"`
}

// String returns e.g. "registrations recorded: all 1223 stored versions
// have their registration event" or "registrations NOT recorded: 12 of
// 1223 stored versions have no registration event: …".
func (c *RegistrationCheck) String() string {
	var b strings.Builder
	if c.OK {
		fmt.Fprintf(&b, "registrations recorded: all %s have their registration event", versions(c.Versions-c.Predating-c.Pruned))
	} else {
		fmt.Fprintf(&b, "registrations NOT recorded: %d of %s have no registration event (stored without their record, or their events were removed): %s",
			c.Unrecorded, versions(c.Versions), strings.Join(c.Missing, ", "))
		if n := c.Unrecorded - int64(len(c.Missing)); n > 0 {
			fmt.Fprintf(&b, " and %d more", n)
		}
	}
	switch {
	case c.Predating == 1:
		b.WriteString("; 1 stored version predates the audit chain (stored before its first event) and has none")
	case c.Predating > 1:
		fmt.Fprintf(&b, "; %d stored versions predate the audit chain (stored before its first event) and have none", c.Predating)
	}
	switch {
	case c.Pruned == 1:
		b.WriteString("; 1 stored version was registered before the checkpoint (its registration event was pruned)")
	case c.Pruned > 1:
		fmt.Fprintf(&b, "; %d stored versions were registered before the checkpoint (their registration events were pruned)", c.Pruned)
	}
	return b.String()
}

// versions counts stored versions in words.
func versions(n int64) string {
	if n == 1 {
		return "1 stored version"
	}
	return fmt.Sprintf("%d stored versions", n)
}

// CheckRegistrations checks that every capability version stored in
// versions has its "registered" event in the chain: an event about the
// version's URI (@MAJOR.MINOR, as the registry records it) whose data names
// its full version. Since a version and its event commit in one
// transaction (registry.Store.PutAudited), a version without one was stored
// past the registry, or its event was removed — which the chain alone
// cannot show when the newest events were cut off. Versions stored before
// the chain's first event predate it and are counted apart, as are, once
// the chain was pruned, those stored before its checkpoint (whose events
// may have been pruned); when the chain is empty, every stored version
// counts as unrecorded.
//
// It streams: a page of versions at a time, with one query for the
// "registered" events of the page; memory does not grow with the registry.
func (l *Log) CheckRegistrations(ctx context.Context, vs Versions) (*RegistrationCheck, error) {
	c := &RegistrationCheck{}
	first, err := l.store.ListAudit(ctx, chain.Filter{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("check registrations: %w", err)
	}
	st, err := l.store.AuditState(ctx)
	if err != nil {
		return nil, fmt.Errorf("check registrations: %w", err)
	}
	cp := st.Checkpoint
	f := registry.ListFilter{AllVersions: true, Limit: versionsPage}
	for {
		page, err := vs.List(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("check registrations: list the stored versions: %w", err)
		}
		uris := make([]string, len(page.Items))
		for i, r := range page.Items {
			uris[i] = registeredURI(r.Key)
		}
		recorded, err := l.registeredVersions(ctx, uris)
		if err != nil {
			return nil, err
		}
		for i, r := range page.Items {
			c.Versions++
			switch {
			case recorded[uris[i]+" "+r.Key.Version]:
			case cp != nil && !r.RegisteredAt.After(cp.Time):
				c.Pruned++
			case cp == nil && len(first) > 0 && r.RegisteredAt.Before(first[0].Time):
				c.Predating++
			default:
				c.Unrecorded++
				if len(c.Missing) < maxReported {
					c.Missing = append(c.Missing, r.Key.String())
				}
			}
		}
		if page.NextCursor == "" || len(page.Items) == 0 {
			break
		}
		f.Cursor = page.NextCursor
	}
	c.OK = c.Unrecorded == 0
	return c, nil
}

// registeredURI is the Capability of a version's "registered" event: its
// URI with @MAJOR.MINOR (registry.RegisterResult.URI).
func registeredURI(k registry.Key) string {
	v, err := capability.ParseVersion(k.Version)
	if err != nil {
		return k.String()
	}
	return capability.NewURI(k.Scheme, k.Domain, k.Name, v).String()
}

// registeredVersions returns, as "URI VERSION", the full versions that the
// "registered" events about uris name.
func (l *Log) registeredVersions(ctx context.Context, uris []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(uris) == 0 {
		return out, nil
	}
	distinct := slices.Clone(uris)
	slices.Sort(distinct)
	events, err := l.store.ListAudit(ctx, chain.Filter{Capabilities: slices.Compact(distinct), Kind: KindRegistered})
	if err != nil {
		return nil, fmt.Errorf("check registrations: list the registered events: %w", err)
	}
	for _, e := range events {
		var d registered
		if json.Unmarshal(e.Data, &d) == nil && d.Version != "" {
			out[e.Capability+" "+d.Version] = true
		}
	}
	return out, nil
}
