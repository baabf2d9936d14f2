package capability

import (
	"fmt"
	"slices"
	"strings"
)

// Compatible reports whether available satisfies requested (OSSA §7.2): same
// scheme, domain and name; same major; available minor >= requested minor.
// A requested URI without a version matches any version of the capability
// (and an available URI without one); a requested "@1" means minor 0. An
// available URI without a version satisfies no versioned request.
func Compatible(requested, available URI) bool {
	return incompatibility(requested, available) == ""
}

// CheckCompatible returns nil when available satisfies requested (see
// Compatible), else an *IncompatibleError naming the first rule that fails,
// in the order scheme, domain, name, version, major, minor.
func CheckCompatible(requested, available URI) error {
	rule := incompatibility(requested, available)
	if rule == "" {
		return nil
	}
	return &IncompatibleError{Requested: requested, Available: available, Rule: rule, Reason: incompatibleReason(rule, requested, available)}
}

// IncompatibleError says why an available capability does not satisfy a
// requested one.
type IncompatibleError struct {
	Requested, Available URI
	Rule                 string // "scheme", "domain", "name", "major", "minor", or "version" (available has no version)
	Reason               string // what differs and what to do
}

// Error returns e.g. `ossa:code/lint@2.0 does not satisfy ossa:code/lint@1.0:
// major version 2 differs from the requested 1; ...`.
func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("%s does not satisfy %s: %s", e.Available, e.Requested, e.Reason)
}

// incompatibility returns the first OSSA §7.2 rule that available breaks, or
// "" when it satisfies requested.
func incompatibility(requested, available URI) string {
	switch {
	case requested.Scheme != available.Scheme:
		return "scheme"
	case requested.Domain != available.Domain:
		return "domain"
	case requested.Name != available.Name:
		return "name"
	case !requested.HasVersion:
		return ""
	case !available.HasVersion:
		return "version"
	}
	return versionIncompatibility(requested.Version, available.Version)
}

// versionIncompatibility applies the version rules of OSSA §7.2 to two
// versions of the same capability: "major", "minor" or "".
func versionIncompatibility(requested, available Version) string {
	switch {
	case requested.Major != available.Major:
		return "major"
	case available.Minor < requested.Minor:
		return "minor"
	}
	return ""
}

func incompatibleReason(rule string, r, a URI) string {
	switch rule {
	case "scheme":
		return fmt.Sprintf("scheme %q is not the requested %q; a capability is identified by scheme, domain and name", a.Scheme, r.Scheme)
	case "domain":
		return fmt.Sprintf("domain %q is not the requested %q; a capability is identified by scheme, domain and name", a.Domain, r.Domain)
	case "name":
		return fmt.Sprintf("name %q is not the requested %q; a capability is identified by scheme, domain and name", a.Name, r.Name)
	case "version":
		return fmt.Sprintf("the available URI has no version, so it cannot be shown to provide %s; offer it with @MAJOR.MINOR", r.Version.Short())
	case "major":
		return fmt.Sprintf("major version %d differs from the requested %d; a major version change is breaking (OSSA §6.2), so request @%d.x or use a provider of major %d",
			a.Version.Major, r.Version.Major, a.Version.Major, r.Version.Major)
	case "minor":
		return fmt.Sprintf("version %s is older than the requested %s (same major, lower minor), so it may lack what %s added; use a provider of %s or later, or request @%s",
			a.Version.Short(), r.Version.Short(), r.Version.Short(), r.Version.Short(), a.Version.Short())
	}
	return rule
}

// Message types and statuses of the negotiation protocol (OSSA §7.1).
const (
	NegotiationRequestType  = "capability_request"
	NegotiationResponseType = "capability_response"

	StatusAvailable   = "available"
	StatusUnavailable = "unavailable"
)

// NegotiationRequest asks for a capability (OSSA §7.1). Versions are MAJOR or
// MAJOR.MINOR. A version on Capability itself counts as the first preferred
// version.
type NegotiationRequest struct {
	Type              string   `json:"type" yaml:"type"`             // "capability_request"; empty is accepted
	Capability        string   `json:"capability" yaml:"capability"` // URI, version optional
	PreferredVersions []string `json:"preferred_versions,omitempty" yaml:"preferred_versions,omitempty"`
	MinimumVersion    string   `json:"minimum_version,omitempty" yaml:"minimum_version,omitempty"`
}

// NegotiationResponse answers a NegotiationRequest (OSSA §7.1).
type NegotiationResponse struct {
	Type              string   `json:"type" yaml:"type"`             // "capability_response"
	Capability        string   `json:"capability" yaml:"capability"` // chosen URI with @MAJOR.MINOR when available; the versionless URI otherwise
	Status            string   `json:"status" yaml:"status"`         // "available" | "unavailable"
	Reason            string   `json:"reason,omitempty" yaml:"reason,omitempty"`
	AvailableVersions []string `json:"available_versions,omitempty" yaml:"available_versions,omitempty"` // MAJOR.MINOR of every offered version, highest first, deduplicated; set when unavailable
}

// Negotiate chooses which of the available URIs answers req (OSSA §7.1).
//
// Only available URIs of the requested capability (SameCapability) are
// considered. For each preferred version in order (a version on
// req.Capability first, then PreferredVersions), the highest available
// version Compatible with it and, when MinimumVersion is set, not below the
// minimum wins. If no preferred version is given or none works, the highest
// available version Compatible with MinimumVersion wins. If neither is given,
// the highest available version wins (a versionless available URI only when
// no versioned one is offered).
//
// Otherwise the response is unavailable, with a reason saying why and the
// offered versions. A malformed request (a bad capability URI or version
// string, or a Type other than capability_request) is answered unavailable
// with the parse error as the reason. Each preferred version costs one pass
// over available.
func Negotiate(req NegotiationRequest, available []URI) NegotiationResponse {
	resp := NegotiationResponse{Type: NegotiationResponseType, Capability: req.Capability, Status: StatusUnavailable}

	if req.Type != "" && req.Type != NegotiationRequestType {
		resp.Reason = fmt.Sprintf("bad request: type %q must be %q", req.Type, NegotiationRequestType)
		return resp
	}
	want, err := ParseURI(req.Capability)
	if err != nil {
		resp.Reason = "bad request: " + err.Error()
		return resp
	}
	resp.Capability = want.Base()
	preferred, minimum, reason := negotiationVersions(req, want)
	if reason != "" {
		resp.Reason = reason
		resp.AvailableVersions = negotiationOfferedVersions(want, available)
		return resp
	}
	if u, ok := negotiationChoice(want, available, preferred, minimum); ok {
		resp.Status = StatusAvailable
		resp.Capability = u.String()
		return resp
	}
	if !offersCapability(want, available) {
		resp.Reason = fmt.Sprintf("capability %s is not available: no version of it is offered", want.Base())
		return resp
	}
	resp.AvailableVersions = negotiationOfferedVersions(want, available)
	resp.Reason = noCompatibleReason(resp.AvailableVersions, preferred, minimum)
	return resp
}

// negotiationVersions parses the preferred versions of a request (a version
// on its capability URI first) and its minimum version; reason says why
// one is malformed.
func negotiationVersions(req NegotiationRequest, want URI) (preferred []Version, minimum *Version, reason string) {
	if want.HasVersion {
		preferred = append(preferred, want.Version)
	}
	for i, s := range req.PreferredVersions {
		v, why := parseMajorMinorVersion(s, "")
		if why != "" {
			return nil, nil, fmt.Sprintf("bad request: preferred_versions[%d] %q is not a capability version (MAJOR[.MINOR]): %s", i, s, why)
		}
		preferred = append(preferred, v)
	}
	if req.MinimumVersion != "" {
		v, why := parseMajorMinorVersion(req.MinimumVersion, "")
		if why != "" {
			return nil, nil, fmt.Sprintf("bad request: minimum_version %q is not a capability version (MAJOR[.MINOR]): %s", req.MinimumVersion, why)
		}
		minimum = &v
	}
	return preferred, minimum, ""
}

// negotiationChoice is the available URI that answers want: the highest
// compatible with the first preferred version that has one (not below the
// minimum), else with the minimum, else, with neither given, the highest
// offered (want itself when only versionless URIs of it are offered).
func negotiationChoice(want URI, available []URI, preferred []Version, minimum *Version) (URI, bool) {
	for i := range preferred {
		if u, ok := highestCompatible(want, available, &preferred[i], minimum); ok {
			return u.WithVersion(u.Version), true
		}
	}
	if minimum != nil {
		if u, ok := highestCompatible(want, available, minimum, nil); ok {
			return u.WithVersion(u.Version), true
		}
	}
	if len(preferred) > 0 || minimum != nil || !offersCapability(want, available) {
		return URI{}, false
	}
	if u, ok := highestCompatible(want, available, nil, nil); ok {
		return u.WithVersion(u.Version), true
	}
	return want, true // only versionless URIs of it are offered
}

// offersCapability reports whether any available URI names want's
// capability.
func offersCapability(want URI, available []URI) bool {
	return slices.ContainsFunc(available, want.SameCapability)
}

// noCompatibleReason says that none of the offered versions is compatible
// with the preferred or minimum versions.
func noCompatibleReason(offered []string, preferred []Version, minimum *Version) string {
	var wanted []string
	if len(preferred) > 0 {
		names := make([]string, len(preferred))
		for i, v := range preferred {
			names[i] = v.String()
		}
		wanted = append(wanted, "preferred version "+negotiationOrList(names))
		if minimum != nil {
			wanted[0] += " at or above minimum " + minimum.String()
		}
	}
	if minimum != nil {
		wanted = append(wanted, "minimum version "+minimum.String())
	}
	offeredText := strings.Join(offered, ", ")
	if offeredText == "" {
		offeredText = "only versionless URIs"
	}
	return fmt.Sprintf("No compatible version available: none of the offered versions (%s) is compatible with %s (same major, minor at least as high, OSSA §7.2)",
		offeredText, strings.Join(wanted, " or with "))
}

// highestCompatible returns the highest versioned URI in available that is the
// same capability as want, is compatible with version req (any version when
// req is nil) and is not below minimum (when not nil). One pass, no
// allocation.
func highestCompatible(want URI, available []URI, req, minimum *Version) (URI, bool) {
	best, found := -1, false
	for i := range available {
		a := &available[i]
		if !a.HasVersion || !a.SameCapability(want) {
			continue
		}
		if req != nil && versionIncompatibility(*req, a.Version) != "" {
			continue
		}
		if minimum != nil && a.Version.Compare(*minimum) < 0 {
			continue
		}
		if !found || available[best].Version.Compare(a.Version) < 0 {
			best, found = i, true
		}
	}
	if !found {
		return URI{}, false
	}
	return available[best], true
}

// negotiationOfferedVersions returns MAJOR.MINOR of every versioned URI of want's
// capability in available, highest first, without duplicates.
func negotiationOfferedVersions(want URI, available []URI) []string {
	var vs []Version
	for _, a := range available {
		if a.HasVersion && a.SameCapability(want) {
			vs = append(vs, uriVersion(a.Version))
		}
	}
	slices.SortFunc(vs, func(a, b Version) int { return b.Compare(a) })
	var out []string
	for i, v := range vs {
		if i > 0 && v.Compare(vs[i-1]) == 0 {
			continue
		}
		out = append(out, v.Short())
	}
	return out
}

// negotiationOrList joins items as "a", "a or b", "a, b or c".
func negotiationOrList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
