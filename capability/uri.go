package capability

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// URI schemes (OSSA §2): ossa for standard capabilities, mcp for tools
// imported from an MCP server (the domain is the server, the name the tool).
const (
	SchemeOSSA = "ossa"
	SchemeMCP  = "mcp"
)

// Patterns the components of a capability URI must match, as reported in a
// URIError.
const (
	uriSchemePattern   = "ossa|mcp"
	uriDomainPattern   = "[a-z][a-z0-9-]*"
	uriOSSANamePattern = "[a-z][a-z0-9_]*"
	uriMCPNamePattern  = "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
	uriVersionPattern  = "MAJOR[.MINOR]"
	uriMCPNameMaxLen   = 128
)

// URI is a capability URI, <scheme>:<domain>/<name>[@MAJOR[.MINOR]] (OSSA
// §2), e.g. ossa:security/scan_vulnerabilities@1.0 or mcp:filesystem/read_file.
//
// Only Version.Major and Version.Minor are meaningful; Version.Parts is 1 or 2
// and records how the version was written, so that String gives back "@1" for
// "@1". URI holds a Version, which holds slices, so compare URIs with
// SameCapability and Version.Compare, or reflect.DeepEqual, not ==.
type URI struct {
	Scheme, Domain, Name string
	Version              Version // only Major/Minor meaningful; Parts is 1 or 2
	HasVersion           bool
}

// URIError says which component of a capability URI is wrong, its value, the
// pattern it must match and, in Reason, what to do.
type URIError struct {
	Input     string // the string given to ParseURI
	Component string // "scheme", "domain", "name" or "version"
	Value     string // the offending component's text ("" when it is missing)
	Pattern   string // what the component must match, e.g. [a-z][a-z0-9-]*
	Reason    string // e.g. `domain "Security" must match [a-z][a-z0-9-]* (...)`
}

// Error returns e.g. `invalid capability URI "ossa:Security/scan@1.0": domain
// "Security" must match [a-z][a-z0-9-]* (lower-case letters, digits and
// hyphens, starting with a letter)`.
func (e *URIError) Error() string {
	return fmt.Sprintf("invalid capability URI %q: %s", e.Input, e.Reason)
}

// ParseURI parses a capability URI, <scheme>:<domain>/<name>[@MAJOR[.MINOR]].
//
// The scheme is ossa or mcp. The domain matches [a-z][a-z0-9-]* for both. An
// ossa name matches [a-z][a-z0-9_]*; an mcp name keeps the upstream tool name
// exactly, so it may use MCP tool-name characters:
// [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}. The version, if any, is MAJOR or
// MAJOR.MINOR: URIs never carry a patch, pre-release or build metadata
// (OSSA §6.1). Every error is a *URIError naming the wrong component. ParseURI
// never panics.
func ParseURI(s string) (URI, error) {
	fail := func(component, value, pattern, format string, args ...any) (URI, error) {
		return URI{}, &URIError{Input: s, Component: component, Value: value, Pattern: pattern, Reason: fmt.Sprintf(format, args...)}
	}

	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return fail("scheme", "", uriSchemePattern,
			`missing scheme: write "ossa:" or "mcp:" before the domain, as in ossa:security/scan@1.0`)
	}
	if reason := checkURIScheme(scheme); reason != "" {
		return fail("scheme", scheme, uriSchemePattern, "%s", reason)
	}

	path, version, hasVersion := strings.Cut(rest, "@")
	domain, name, ok := strings.Cut(path, "/")
	if !ok && hasVersion && strings.Contains(version, "/") {
		// "ossa:security@1.0/scan": the version is in the wrong place.
		return fail("version", version, uriVersionPattern,
			`version %q contains "/"; the version comes last: %s:<domain>/<name>@MAJOR[.MINOR]`, version, scheme)
	}
	if !ok {
		return fail("name", "", uriNamePattern(scheme),
			`missing "/" between domain and name: write %s:<domain>/<name>, as in %s:security/scan`, scheme, scheme)
	}
	if reason := checkURIDomain(domain); reason != "" {
		return fail("domain", domain, uriDomainPattern, "%s", reason)
	}
	if reason := checkURIName(scheme, name); reason != "" {
		return fail("name", name, uriNamePattern(scheme), "%s", reason)
	}

	u := URI{Scheme: scheme, Domain: domain, Name: name}
	if !hasVersion {
		return u, nil
	}
	v, reason := parseURIVersion(version)
	if reason != "" {
		return fail("version", version, uriVersionPattern, "%s", reason)
	}
	u.Version, u.HasVersion = v, true
	return u, nil
}

// MustParseURI is ParseURI for URIs known to be valid (constants, tests); it
// panics on an invalid one.
func MustParseURI(s string) URI {
	u, err := ParseURI(s)
	if err != nil {
		panic(err)
	}
	return u
}

// NewURI builds a versioned URI. It keeps only MAJOR.MINOR of v (the patch,
// pre-release and build are not part of a capability's identity in a URI) and
// writes it with two components.
func NewURI(scheme, domain, name string, v Version) URI {
	return URI{Scheme: scheme, Domain: domain, Name: name, Version: uriVersion(v), HasVersion: true}
}

// uriVersion keeps MAJOR.MINOR of v, written with two components.
func uriVersion(v Version) Version {
	return Version{Major: v.Major, Minor: v.Minor, Parts: 2}
}

// String returns the URI as written: "ossa:security/scan@1.0", "@1" when the
// version was written with one component, no "@" when there is no version.
func (u URI) String() string {
	if !u.HasVersion {
		return u.Base()
	}
	if u.Version.Parts == 1 {
		return u.Base() + "@" + strconv.FormatUint(u.Version.Major, 10)
	}
	return u.Base() + "@" + u.Version.Short()
}

// Base returns the URI without its version: "ossa:security/scan".
func (u URI) Base() string {
	return u.Scheme + ":" + u.Domain + "/" + u.Name
}

// WithVersion returns u at MAJOR.MINOR of v (written with two components).
func (u URI) WithVersion(v Version) URI {
	u.Version, u.HasVersion = uriVersion(v), true
	return u
}

// SameCapability reports whether u and o name the same capability: same
// scheme, domain and name, whatever their versions.
func (u URI) SameCapability(o URI) bool {
	return u.Scheme == o.Scheme && u.Domain == o.Domain && u.Name == o.Name
}

func uriNamePattern(scheme string) string {
	if scheme == SchemeMCP {
		return uriMCPNamePattern
	}
	return uriOSSANamePattern
}

// checkURIScheme returns why scheme is not a valid URI scheme, or "".
func checkURIScheme(scheme string) string {
	switch scheme {
	case SchemeOSSA, SchemeMCP:
		return ""
	case "":
		return `scheme is empty; write "ossa:" or "mcp:" before the domain`
	}
	reason := fmt.Sprintf(`scheme %q must be "ossa" (standard capabilities) or "mcp" (MCP tools)`, scheme)
	if uriHasSpace(scheme) {
		return reason + "; remove the whitespace"
	}
	if l := strings.ToLower(scheme); l == SchemeOSSA || l == SchemeMCP {
		return reason + fmt.Sprintf("; write %q", l)
	}
	return reason
}

// checkURIDomain returns why domain does not match [a-z][a-z0-9-]*, or "".
func checkURIDomain(domain string) string {
	if domain == "" {
		return fmt.Sprintf("domain is empty; it must match %s, e.g. security", uriDomainPattern)
	}
	if uriMatchesDomain(domain) {
		return ""
	}
	reason := fmt.Sprintf("domain %q must match %s (lower-case letters, digits and hyphens, starting with a letter)", domain, uriDomainPattern)
	return reason + uriFixSuggestion(domain, uriMatchesDomain)
}

// checkURIName returns why name is not a valid name for scheme, or "".
func checkURIName(scheme, name string) string {
	if name == "" {
		return fmt.Sprintf("name is empty; it must match %s", uriNamePattern(scheme))
	}
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return fmt.Sprintf(`name %q contains "/"; a capability URI has exactly one "/", between domain and name`, name)
	}
	if scheme == SchemeMCP {
		if uriMatchesMCPName(name) {
			return ""
		}
		if len(name) > uriMCPNameMaxLen && uriMCPNameChars(name) {
			return fmt.Sprintf("name is %d bytes long; MCP tool names are at most %d characters (%s)", len(name), uriMCPNameMaxLen, uriMCPNamePattern)
		}
		reason := fmt.Sprintf("name %q must match %s (letters, digits and _ . -, not starting with . or -, at most %d characters)", name, uriMCPNamePattern, uriMCPNameMaxLen)
		if uriHasSpace(name) {
			return reason + "; remove the whitespace"
		}
		return reason
	}
	if uriMatchesOSSAName(name) {
		return ""
	}
	reason := fmt.Sprintf("name %q must match %s (lower-case letters, digits and underscores, starting with a letter)", name, uriOSSANamePattern)
	return reason + uriFixSuggestion(name, uriMatchesOSSAName)
}

// uriFixSuggestion suggests the likely intended value: without whitespace, or in
// lower case, with "-" and "_" swapped if need be, when that would be valid.
func uriFixSuggestion(value string, valid func(string) bool) string {
	if uriHasSpace(value) {
		return "; remove the whitespace"
	}
	l := strings.ToLower(value)
	if valid(l) {
		return fmt.Sprintf("; write %q", l)
	}
	for _, r := range []*strings.Replacer{strings.NewReplacer("-", "_"), strings.NewReplacer("_", "-")} {
		if u := r.Replace(l); valid(u) {
			return fmt.Sprintf("; write %q", u)
		}
	}
	return ""
}

// parseURIVersion parses the text after "@": MAJOR or MAJOR.MINOR. It returns
// the reason when it is not one.
func parseURIVersion(s string) (Version, string) {
	if s == "" {
		return Version{}, `version is empty after "@"; write @MAJOR[.MINOR], e.g. @1.0, or drop the "@"`
	}
	if strings.Contains(s, "@") {
		return Version{}, fmt.Sprintf(`version %q contains a second "@"; a capability URI has at most one "@", before the version`, s)
	}
	if strings.Contains(s, "/") {
		return Version{}, fmt.Sprintf(`version %q contains "/"; the version comes last: <scheme>:<domain>/<name>@MAJOR[.MINOR]`, s)
	}
	v, reason := parseMajorMinorVersion(s, "@")
	if reason != "" {
		return Version{}, fmt.Sprintf("version %q must match %s: %s", s, uriVersionPattern, reason)
	}
	return v, ""
}

// parseMajorMinorVersion parses a MAJOR or MAJOR.MINOR version, as URIs and
// negotiation requests carry. The reason says what is wrong and what to do;
// prefix is written before a suggested version ("@" in a URI).
func parseMajorMinorVersion(s, prefix string) (Version, string) {
	v, err := ParseVersion(s)
	if err != nil {
		if ve, ok := err.(*VersionError); ok {
			return Version{}, ve.Reason
		}
		return Version{}, err.Error()
	}
	switch {
	case v.IsPrerelease() || len(v.Build) > 0:
		return Version{}, fmt.Sprintf("capability versions carry no pre-release or build metadata; write %s%s", prefix, shortVersion(v))
	case v.Parts == 3:
		return Version{}, fmt.Sprintf("capability URIs carry MAJOR.MINOR only (the patch is not part of the contract, OSSA §6.1); drop the patch: write %s%s", prefix, shortVersion(v))
	}
	return v, ""
}

// shortVersion is v as a URI writes it, for an error's suggestion (made
// only then: a valid version is parsed on every resolve).
func shortVersion(v Version) string {
	if v.Parts == 1 {
		return strconv.FormatUint(v.Major, 10)
	}
	return v.Short()
}

func uriHasSpace(s string) bool { return strings.IndexFunc(s, unicode.IsSpace) >= 0 }

// uriMatchesDomain reports whether s matches [a-z][a-z0-9-]*.
func uriMatchesDomain(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// uriMatchesOSSAName reports whether s matches [a-z][a-z0-9_]*.
func uriMatchesOSSAName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// uriMatchesMCPName reports whether s matches [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
func uriMatchesMCPName(s string) bool {
	return s != "" && len(s) <= uriMCPNameMaxLen && uriMCPNameChars(s)
}

// uriMCPNameChars reports whether s matches [A-Za-z0-9_][A-Za-z0-9_.-]*,
// whatever its length.
func uriMCPNameChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case (c == '.' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}
