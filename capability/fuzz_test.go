package capability

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParseURI checks that ParseURI never panics, that every error is a
// *URIError naming a component, and that an accepted URI is written back
// exactly as given and re-parses to the same value.
func FuzzParseURI(f *testing.F) {
	for _, s := range []string{
		"ossa:security/scan_vulnerabilities@1.0",
		"ossa:a2a/send@1.0",
		"mcp:filesystem/read_file@1.0",
		"mcp:calc/get-sum",
		"mcp:everything/printEnv@2",
		"mcp:fs/read.file@0.10",
		"ossa:security/scan",
		"ossa:Security/scan@1.0",
		"ossa:security/scan@1.0.3",
		"ossa:security/scan@1.0-rc.1",
		"ossa:security/scan@",
		"ossa:security/scan@1@2",
		"ossa:security/scan/x",
		"ossa:security@1.0/scan",
		"http:security/scan",
		"ossa:",
		":",
		"",
		" ossa:security/scan",
		"ossa:security/scan@01",
		"ossa:security/scan@v1",
		"ossa:security/scan@18446744073709551616",
		"mcp:fs/\xff",
	} {
		f.Add(s)
	}
	components := map[string]bool{"scheme": true, "domain": true, "name": true, "version": true}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseURI(s)
		if err != nil {
			var ue *URIError
			if !errors.As(err, &ue) {
				t.Fatalf("ParseURI(%q) error %v is %T, want *URIError", s, err, err)
			}
			if !components[ue.Component] || ue.Input != s || ue.Pattern == "" || ue.Reason == "" {
				t.Fatalf("ParseURI(%q): incomplete error %#v", s, ue)
			}
			_ = err.Error()
			return
		}
		out := u.String()
		if out != s {
			t.Fatalf("ParseURI(%q).String() = %q, want the input back", s, out)
		}
		again, err := ParseURI(out)
		if err != nil {
			t.Fatalf("ParseURI(%q) succeeded but its String %q does not re-parse: %v", s, out, err)
		}
		if !reflect.DeepEqual(u, again) {
			t.Fatalf("ParseURI(%q) = %#v, but re-parsing %q gives %#v", s, u, out, again)
		}
		if u.HasVersion && (u.Version.Parts < 1 || u.Version.Parts > 2 || u.Version.IsPrerelease() || u.Version.Build != nil) {
			t.Fatalf("ParseURI(%q): version %#v is not MAJOR[.MINOR]", s, u.Version)
		}
		if !Compatible(u, u) {
			t.Fatalf("%s is not compatible with itself", s)
		}
	})
}

// FuzzParseVersion checks that ParseVersion never panics, that every error
// is a *VersionError naming a component, and that an accepted version is
// written back exactly as given, re-parses to the same value and compares
// equal to itself and to its Full form.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{
		"1", "1.0", "1.0.3", "0.0.0", "1.0.3-rc.1+build.5", "1.0.0-alpha", "1.0+b",
		"1.0.0-0A.is.legal", "1.0.0-alpha.10", "1.0.0+001", "1-x-y.--",
		"", "v1.0", "1.01", "01", "-1", "1.-2", "1.2.3.4", "1.0-", "1.0+", "1.0.0-01",
		"1.0.0-rc..1", "1.0.0-rc_1", "18446744073709551616", " 1", "1.0.0-é", "+", "-", ".",
	} {
		f.Add(s)
	}
	components := map[string]bool{"major": true, "minor": true, "patch": true, "prerelease": true, "build": true, "version": true}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			var ve *VersionError
			if !errors.As(err, &ve) {
				t.Fatalf("ParseVersion(%q) error %v is %T, want *VersionError", s, err, err)
			}
			if !components[ve.Component] || ve.Input != s || ve.Reason == "" {
				t.Fatalf("ParseVersion(%q): incomplete error %#v", s, ve)
			}
			_ = err.Error()
			return
		}
		out := v.String()
		if out != s {
			t.Fatalf("ParseVersion(%q).String() = %q, want the input back", s, out)
		}
		again, err := ParseVersion(out)
		if err != nil {
			t.Fatalf("ParseVersion(%q) succeeded but its String %q does not re-parse: %v", s, out, err)
		}
		if !reflect.DeepEqual(v, again) {
			t.Fatalf("ParseVersion(%q) = %#v, but re-parsing %q gives %#v", s, v, out, again)
		}
		full, err := ParseVersion(v.Full())
		if err != nil {
			t.Fatalf("Full() of %q is %q, which does not parse: %v", s, v.Full(), err)
		}
		if v.Compare(v) != 0 || v.Compare(full) != 0 || full.Compare(v) != 0 || v.Less(v) {
			t.Fatalf("%q does not compare equal to itself and to its Full form %q", s, v.Full())
		}
	})
}
