package capability

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Version is a semantic version as written: 1, 1.0 or 1.0.3, with optional
// pre-release and build metadata (Semantic Versioning 2.0.0).
//
// Capability URIs carry only MAJOR.MINOR (OSSA §2.2, §6.1) while definitions
// carry a full version, so Version remembers how many numeric components were
// written (Parts) and String gives the text back exactly as it was parsed.
// Missing components count as 0 in every comparison.
//
// Version holds slices, so compare values with Compare (precedence) or
// reflect.DeepEqual (identity), not ==.
type Version struct {
	Major, Minor, Patch uint64
	Prerelease          []string // dot-separated identifiers, nil when absent
	Build               []string // dot-separated identifiers, nil when absent
	Parts               int      // how many numeric components were written: 1, 2 or 3
}

// Component names reported in a VersionError.
const (
	versionComponentMajor      = "major"
	versionComponentMinor      = "minor"
	versionComponentPatch      = "patch"
	versionComponentPrerelease = "prerelease"
	versionComponentBuild      = "build"
	versionComponentVersion    = "version"
)

// versionNumericNames names the numeric components by position.
var versionNumericNames = [3]string{versionComponentMajor, versionComponentMinor, versionComponentPatch}

// VersionError says what is wrong with a version string: which component
// (major, minor, patch, prerelease, build, or version for the string as a
// whole) and, in Reason, what is wrong and how to fix it.
type VersionError struct {
	Input     string // the string given to ParseVersion
	Component string // "major", "minor", "patch", "prerelease", "build" or "version"
	Reason    string // what is wrong and what to do, e.g. `minor component "01" has a leading zero; write 1.1`
}

// Error returns e.g. `invalid version "1.01": minor component "01" has a
// leading zero; write 1.1`.
func (e *VersionError) Error() string {
	return fmt.Sprintf("invalid version %q: %s", e.Input, e.Reason)
}

// ParseVersion parses a semantic version written with one, two or three
// numeric components ("1", "1.0", "1.0.3"), optionally followed by
// "-PRERELEASE" and/or "+BUILD" (also after one or two components:
// "1.0-rc.1", "1+b").
//
// It follows the Semantic Versioning 2.0.0 grammar: numeric components and
// numeric pre-release identifiers have no leading zeros; identifiers are
// non-empty and use only [0-9A-Za-z-]; build identifiers may have leading
// zeros. A leading "v", a negative number, a value above 2^64-1, whitespace
// and the empty string are rejected. Every error is a *VersionError.
func ParseVersion(s string) (Version, error) {
	fail := func(component, reason string) (Version, error) {
		return Version{}, &VersionError{Input: s, Component: component, Reason: reason}
	}
	if reason := versionShapeProblem(s); reason != "" {
		return fail(versionComponentVersion, reason)
	}
	// Split off build metadata at the first "+", then the pre-release at the
	// first "-" (pre-release identifiers may themselves contain hyphens).
	core, build, hasBuild := strings.Cut(s, "+")
	core, pre, hasPre := strings.Cut(core, "-")
	v, component, reason := parseVersionCore(s, core, pre, hasPre)
	if reason != "" {
		return fail(component, reason)
	}
	if hasPre {
		ids, reason := parseVersionIdentifiers(pre, "pre-release", true)
		if reason != "" {
			return fail(versionComponentPrerelease, reason+versionFixHint(s))
		}
		v.Prerelease = ids
	}
	if hasBuild {
		ids, reason := parseVersionIdentifiers(build, "build", false)
		if reason != "" {
			return fail(versionComponentBuild, reason)
		}
		v.Build = ids
	}
	return v, nil
}

// versionShapeProblem says why s cannot be a version before its parts are
// read: empty, holding whitespace, or starting with a "v".
func versionShapeProblem(s string) string {
	if s == "" {
		return "the version is empty; write MAJOR[.MINOR[.PATCH]], e.g. 1.0"
	}
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return fmt.Sprintf("the version contains whitespace at byte %d; remove it", i)
	}
	if s[0] != 'v' && s[0] != 'V' {
		return ""
	}
	if rest := s[1:]; rest != "" && rest[0] >= '0' && rest[0] <= '9' {
		if _, err := ParseVersion(rest); err == nil {
			return fmt.Sprintf("drop the leading %q; write %s", s[:1], rest)
		}
	}
	return fmt.Sprintf("drop the leading %q: a version starts with the major number, e.g. 1.0", s[:1])
}

// parseVersionCore reads the numeric components of version s (core, before
// any pre-release pre); on failure it returns the component at fault and
// why.
func parseVersionCore(s, core, pre string, hasPre bool) (v Version, component, reason string) {
	n := strings.Count(core, ".") + 1
	if n > 3 {
		return Version{}, versionComponentVersion, fmt.Sprintf("has %d numeric components; at most three are allowed (MAJOR.MINOR.PATCH)", n)
	}
	var fb [3]string // the components, without strings.Split's allocation: a version is parsed on every resolve
	fields := fb[:0]
	for rest := core; ; {
		f, after, more := strings.Cut(rest, ".")
		fields = append(fields, f)
		if !more {
			break
		}
		rest = after
	}
	if hasPre && (core == "" || strings.HasSuffix(core, ".")) {
		// "-1" or "1.-2": a minus sign where a number belongs.
		name := versionNumericNames[min(len(fields)-1, 2)]
		return Version{}, name, fmt.Sprintf("%s component is negative (%q); version components are non-negative integers", name, "-"+versionFirstIdent(pre))
	}
	nums := [3]*uint64{&v.Major, &v.Minor, &v.Patch}
	for i, f := range fields {
		name := versionNumericNames[i]
		n, reason := parseVersionNumber(f, name)
		if reason != "" {
			return Version{}, name, reason + versionFixHint(s)
		}
		*nums[i] = n
	}
	v.Parts = len(fields)
	return v, "", ""
}

// MustParseVersion is ParseVersion for versions known to be valid (constants,
// tests); it panics on an invalid one.
func MustParseVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

// parseVersionNumber parses a numeric version component. It returns a non-empty
// reason (naming the component as what) when f is not a valid one.
func parseVersionNumber(f, name string) (uint64, string) {
	if f == "" {
		return 0, name + " component is empty; components are separated by single dots, e.g. 1.0.3"
	}
	for i := 0; i < len(f); i++ {
		if f[i] < '0' || f[i] > '9' {
			return 0, fmt.Sprintf("%s component %q must be a non-negative integer (digits 0-9 only)", name, f)
		}
	}
	if len(f) > 1 && f[0] == '0' {
		return 0, fmt.Sprintf("%s component %q has a leading zero", name, f)
	}
	n, err := strconv.ParseUint(f, 10, 64)
	if err != nil {
		return 0, fmt.Sprintf("%s component %q is larger than the maximum %d", name, f, uint64(1<<64-1))
	}
	return n, ""
}

// parseVersionIdentifiers splits dot-separated pre-release or build identifiers and
// checks each. Numeric pre-release identifiers may not have leading zeros
// (numeric says whether that rule applies); build identifiers may.
func parseVersionIdentifiers(s, what string, numeric bool) ([]string, string) {
	if s == "" {
		return nil, fmt.Sprintf("%s is empty after %q; write identifiers or drop the %q", what, versionSep(what), versionSep(what))
	}
	ids := strings.Split(s, ".")
	for i, id := range ids {
		if id == "" {
			return nil, fmt.Sprintf("%s identifier %d of %q is empty; identifiers are separated by single dots", what, i+1, s)
		}
		allDigits := true
		for j := 0; j < len(id); j++ {
			c := id[j]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-':
				allDigits = false
			default:
				_, size := utf8.DecodeRuneInString(id[j:])
				return nil, fmt.Sprintf("%s identifier %q contains %q; only ASCII letters, digits and hyphens [0-9A-Za-z-] are allowed", what, id, id[j:j+size])
			}
		}
		if numeric && allDigits && len(id) > 1 && id[0] == '0' {
			return nil, fmt.Sprintf("%s identifier %q is numeric and has a leading zero", what, id)
		}
	}
	return ids, ""
}

func versionSep(what string) string {
	if what == "build" {
		return "+"
	}
	return "-"
}

// versionFirstIdent returns s up to its first "." or "+".
func versionFirstIdent(s string) string {
	if i := strings.IndexAny(s, ".+"); i >= 0 {
		return s[:i]
	}
	return s
}

// versionFixHint returns "; write X" where X is s with leading zeros removed from its
// numeric components and numeric pre-release identifiers, when that makes a
// valid version; otherwise "; remove the leading zeros" if there are any, or
// "".
func versionFixHint(s string) string {
	core, build, hasBuild := strings.Cut(s, "+")
	core, pre, hasPre := strings.Cut(core, "-")
	fixed := versionTrimZeros(core)
	if hasPre {
		fixed += "-" + versionTrimZeros(pre)
	}
	if hasBuild {
		fixed += "+" + build
	}
	if fixed == s {
		return ""
	}
	if _, err := ParseVersion(fixed); err == nil {
		return "; write " + fixed
	}
	return "; remove the leading zeros"
}

// versionTrimZeros removes leading zeros from every all-digit dot-separated field.
func versionTrimZeros(s string) string {
	fields := strings.Split(s, ".")
	for i, f := range fields {
		if len(f) > 1 && strings.Trim(f, "0123456789") == "" {
			if t := strings.TrimLeft(f, "0"); t != "" {
				fields[i] = t
			} else {
				fields[i] = "0"
			}
		}
	}
	return strings.Join(fields, ".")
}

// parts returns how many numeric components to write: Parts when it is 1, 2
// or 3, else 3 (a Version built by hand).
func (v Version) parts() int {
	if v.Parts >= 1 && v.Parts <= 3 {
		return v.Parts
	}
	return 3
}

// String returns the version as written: Parts numeric components, then
// "-PRERELEASE" and "+BUILD" when present. For a parsed version it is exactly
// the string that was parsed. A Version built by hand with Parts outside 1..3
// is written with three components.
func (v Version) String() string {
	return v.format(v.parts())
}

// Full returns MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], filling missing
// components with 0: "1.0" gives "1.0.0".
func (v Version) Full() string {
	return v.format(3)
}

// Short returns MAJOR.MINOR, the form capability URIs carry.
func (v Version) Short() string {
	return strconv.FormatUint(v.Major, 10) + "." + strconv.FormatUint(v.Minor, 10)
}

func (v Version) format(parts int) string {
	var b strings.Builder
	b.WriteString(strconv.FormatUint(v.Major, 10))
	if parts >= 2 {
		b.WriteByte('.')
		b.WriteString(strconv.FormatUint(v.Minor, 10))
	}
	if parts >= 3 {
		b.WriteByte('.')
		b.WriteString(strconv.FormatUint(v.Patch, 10))
	}
	if len(v.Prerelease) > 0 {
		b.WriteByte('-')
		b.WriteString(strings.Join(v.Prerelease, "."))
	}
	if len(v.Build) > 0 {
		b.WriteByte('+')
		b.WriteString(strings.Join(v.Build, "."))
	}
	return b.String()
}

// IsPrerelease reports whether v has pre-release identifiers (1.0.0-rc.1).
func (v Version) IsPrerelease() bool { return len(v.Prerelease) > 0 }

// Compare returns -1, 0 or +1 as v has lower, equal or higher precedence than
// o (Semantic Versioning 2.0.0 §11). Missing components count as 0, so 1,
// 1.0 and 1.0.0 are equal; a pre-release sorts before its release;
// pre-release identifiers are compared dot by dot, numeric ones numerically,
// alphanumeric ones in ASCII order, numeric before alphanumeric, and a longer
// list wins when all preceding identifiers are equal. Build metadata is
// ignored.
func (v Version) Compare(o Version) int {
	if c := cmp.Compare(v.Major, o.Major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Minor, o.Minor); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Patch, o.Patch); c != 0 {
		return c
	}
	switch {
	case len(v.Prerelease) == 0 && len(o.Prerelease) == 0:
		return 0
	case len(v.Prerelease) == 0:
		return 1 // a release outranks its pre-releases
	case len(o.Prerelease) == 0:
		return -1
	}
	for i := 0; i < len(v.Prerelease) && i < len(o.Prerelease); i++ {
		if c := versionCmpIdentifier(v.Prerelease[i], o.Prerelease[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(v.Prerelease), len(o.Prerelease))
}

// Less reports whether v has lower precedence than o.
func (v Version) Less(o Version) bool { return v.Compare(o) < 0 }

// versionCmpIdentifier compares two pre-release identifiers. Numeric identifiers
// can be of any length, so they are compared by length and then by digits
// (valid ones have no leading zeros) instead of being converted to integers.
func versionCmpIdentifier(a, b string) int {
	an, bn := versionIsNumeric(a), versionIsNumeric(b)
	switch {
	case an && bn:
		if c := cmp.Compare(len(a), len(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}

func versionIsNumeric(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
