package capability

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseURIExamples(t *testing.T) {
	// OSSA §2.3, every example.
	examples := []struct {
		in                   string
		scheme, domain, name string
	}{
		{"ossa:security/scan_vulnerabilities@1.0", SchemeOSSA, "security", "scan_vulnerabilities"},
		{"ossa:security/apply_patches@1.0", SchemeOSSA, "security", "apply_patches"},
		{"ossa:code/lint@2.0", SchemeOSSA, "code", "lint"},
		{"ossa:code/test@1.0", SchemeOSSA, "code", "test"},
		{"ossa:content/publish@1.0", SchemeOSSA, "content", "publish"},
		{"ossa:a2a/send@1.0", SchemeOSSA, "a2a", "send"},
		{"mcp:filesystem/read_file@1.0", SchemeMCP, "filesystem", "read_file"},
		{"mcp:gitlab/create_issue@1.0", SchemeMCP, "gitlab", "create_issue"},
	}
	for _, tt := range examples {
		t.Run(tt.in, func(t *testing.T) {
			u, err := ParseURI(tt.in)
			if err != nil {
				t.Fatalf("ParseURI(%q): %v", tt.in, err)
			}
			if u.Scheme != tt.scheme || u.Domain != tt.domain || u.Name != tt.name {
				t.Errorf("ParseURI(%q) = %q %q %q, want %q %q %q", tt.in, u.Scheme, u.Domain, u.Name, tt.scheme, tt.domain, tt.name)
			}
			if !u.HasVersion || u.Version.Parts != 2 {
				t.Errorf("ParseURI(%q): HasVersion=%v Parts=%d, want true 2", tt.in, u.HasVersion, u.Version.Parts)
			}
			if got := u.String(); got != tt.in {
				t.Errorf("String() = %q, want %q", got, tt.in)
			}
		})
	}
}

func TestParseURIAccepts(t *testing.T) {
	tests := []struct {
		in   string
		want URI
	}{
		{"ossa:security/scan", URI{Scheme: "ossa", Domain: "security", Name: "scan"}},
		{"ossa:security/scan@1", URI{Scheme: "ossa", Domain: "security", Name: "scan", Version: Version{Major: 1, Parts: 1}, HasVersion: true}},
		{"ossa:security/scan@0.9", URI{Scheme: "ossa", Domain: "security", Name: "scan", Version: Version{Minor: 9, Parts: 2}, HasVersion: true}},
		{"ossa:my-domain2/a_1@10.20", URI{Scheme: "ossa", Domain: "my-domain2", Name: "a_1", Version: Version{Major: 10, Minor: 20, Parts: 2}, HasVersion: true}},
		// MCP tool names are kept exactly as the server spells them.
		{"mcp:calc/get-sum", URI{Scheme: "mcp", Domain: "calc", Name: "get-sum"}},
		{"mcp:everything/printEnv@1.0", URI{Scheme: "mcp", Domain: "everything", Name: "printEnv", Version: Version{Major: 1, Parts: 2}, HasVersion: true}},
		{"mcp:fs/read.file", URI{Scheme: "mcp", Domain: "fs", Name: "read.file"}},
		{"mcp:fs/_private", URI{Scheme: "mcp", Domain: "fs", Name: "_private"}},
		{"mcp:fs/2fa", URI{Scheme: "mcp", Domain: "fs", Name: "2fa"}},
		{"mcp:fs/" + strings.Repeat("x", 128), URI{Scheme: "mcp", Domain: "fs", Name: strings.Repeat("x", 128)}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := ParseURI(tt.in)
			if err != nil {
				t.Fatalf("ParseURI(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(u, tt.want) {
				t.Errorf("ParseURI(%q) = %#v, want %#v", tt.in, u, tt.want)
			}
			if got := u.String(); got != tt.in {
				t.Errorf("String() = %q, want %q", got, tt.in)
			}
		})
	}
}

func TestParseURIRejects(t *testing.T) {
	tests := []struct {
		in        string
		component string
		value     string
		contains  string
	}{
		{"", "scheme", "", "missing scheme"},
		{"security/scan@1.0", "scheme", "", "missing scheme"},
		{":security/scan", "scheme", "", "scheme is empty"},
		{"http:security/scan", "scheme", "http", `"ossa" (standard capabilities) or "mcp"`},
		{"OSSA:security/scan", "scheme", "OSSA", `write "ossa"`},
		{" ossa:security/scan", "scheme", " ossa", "whitespace"},
		{"ossa:Security/scan@1.0", "domain", "Security",
			`invalid capability URI "ossa:Security/scan@1.0": domain "Security" must match [a-z][a-z0-9-]* (lower-case letters, digits and hyphens, starting with a letter)`},
		{"ossa:/scan", "domain", "", "domain is empty"},
		{"ossa:1sec/scan", "domain", "1sec", "[a-z][a-z0-9-]*"},
		{"ossa:sec_urity/scan", "domain", "sec_urity", "[a-z][a-z0-9-]*"},
		{"mcp:File_System/read", "domain", "File_System", `write "file-system"`},
		{"ossa:sec urity/scan", "domain", "sec urity", "whitespace"},
		{"ossa:security", "name", "", `missing "/"`},
		{"ossa:security@1.0", "name", "", `missing "/"`},
		{"ossa:security/", "name", "", "name is empty"},
		{"ossa:security/Scan", "name", "Scan", "[a-z][a-z0-9_]*"},
		{"ossa:security/scan-it", "name", "scan-it", `write "scan_it"`},
		{"ossa:security/_scan", "name", "_scan", "[a-z][a-z0-9_]*"},
		{"ossa:security/read.file", "name", "read.file", "[a-z][a-z0-9_]*"},
		{"ossa:security/scan/extra", "name", "scan/extra", `exactly one "/"`},
		{"ossa:security/scan @1.0", "name", "scan ", "whitespace"},
		{"mcp:fs/", "name", "", "name is empty"},
		{"mcp:fs/.hidden", "name", ".hidden", "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"},
		{"mcp:fs/-x", "name", "-x", "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"},
		{"mcp:fs/read file", "name", "read file", "whitespace"},
		{"mcp:fs/a:b", "name", "a:b", "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"},
		{"mcp:fs/" + strings.Repeat("x", 129), "name", strings.Repeat("x", 129), "at most 128"},
		{"ossa:security/scan@", "version", "", `empty after "@"`},
		{"ossa:security/scan@1.0.3", "version", "1.0.3", "drop the patch: write @1.0"},
		{"ossa:security/scan@1.0-rc.1", "version", "1.0-rc.1", "no pre-release or build"},
		{"ossa:security/scan@1+b", "version", "1+b", "no pre-release or build"},
		{"ossa:security/scan@v1.0", "version", "v1.0", `drop the leading "v"`},
		{"ossa:security/scan@01.0", "version", "01.0", "leading zero"},
		{"ossa:security/scan@1.00", "version", "1.00", "leading zero"},
		{"ossa:security/scan@-1", "version", "-1", "negative"},
		{"ossa:security/scan@1.x", "version", "1.x", "MAJOR[.MINOR]"},
		{"ossa:security/scan@99999999999999999999", "version", "99999999999999999999", "larger than the maximum"},
		{"ossa:security/scan@1@2", "version", "1@2", `second "@"`},
		{"ossa:security/scan@1.0 ", "version", "1.0 ", "whitespace"},
		{"ossa:security@1.0/scan", "version", "1.0/scan", "the version comes last"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := ParseURI(tt.in)
			if err == nil {
				t.Fatalf("ParseURI(%q) = %v, want an error", tt.in, u)
			}
			var ue *URIError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v is %T, want *URIError", err, err)
			}
			if ue.Input != tt.in {
				t.Errorf("Input = %q, want %q", ue.Input, tt.in)
			}
			if ue.Component != tt.component {
				t.Errorf("Component = %q, want %q (%v)", ue.Component, tt.component, err)
			}
			if ue.Value != tt.value {
				t.Errorf("Value = %q, want %q (%v)", ue.Value, tt.value, err)
			}
			if ue.Pattern == "" {
				t.Errorf("Pattern is empty (%v)", err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

func TestMustParseURI(t *testing.T) {
	if u := MustParseURI("ossa:code/lint@2.0"); u.Name != "lint" {
		t.Errorf("MustParseURI = %v", u)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustParseURI of a bad URI did not panic")
		}
	}()
	MustParseURI("ossa:Code/lint")
}

func TestURIConstructors(t *testing.T) {
	v := MustParseVersion("1.3.7-rc.1+b.2")
	u := NewURI(SchemeOSSA, "security", "scan", v)
	if got, want := u.String(), "ossa:security/scan@1.3"; got != want {
		t.Errorf("NewURI(...).String() = %q, want %q", got, want)
	}
	want := Version{Major: 1, Minor: 3, Parts: 2}
	if !u.HasVersion || !reflect.DeepEqual(u.Version, want) {
		t.Errorf("NewURI version = %#v (HasVersion %v), want %#v", u.Version, u.HasVersion, want)
	}
	if got := u.Base(); got != "ossa:security/scan" {
		t.Errorf("Base() = %q", got)
	}

	bare := MustParseURI("mcp:fs/read.file")
	if got := bare.String(); got != "mcp:fs/read.file" {
		t.Errorf("versionless String() = %q", got)
	}
	w := bare.WithVersion(MustParseVersion("2"))
	if got := w.String(); got != "mcp:fs/read.file@2.0" {
		t.Errorf("WithVersion(2).String() = %q, want mcp:fs/read.file@2.0", got)
	}
	if bare.HasVersion {
		t.Error("WithVersion changed its receiver")
	}
	if got := MustParseURI("ossa:a/b@1").WithVersion(MustParseVersion("1.4.2")).String(); got != "ossa:a/b@1.4" {
		t.Errorf("WithVersion(1.4.2) = %q, want ossa:a/b@1.4", got)
	}
}

func TestSameCapability(t *testing.T) {
	a := MustParseURI("ossa:security/scan@1.0")
	tests := []struct {
		other string
		want  bool
	}{
		{"ossa:security/scan@1.0", true},
		{"ossa:security/scan@2.5", true},
		{"ossa:security/scan", true},
		{"mcp:security/scan@1.0", false},
		{"ossa:code/scan@1.0", false},
		{"ossa:security/lint@1.0", false},
	}
	for _, tt := range tests {
		t.Run(tt.other, func(t *testing.T) {
			if got := a.SameCapability(MustParseURI(tt.other)); got != tt.want {
				t.Errorf("SameCapability(%s, %s) = %v, want %v", a, tt.other, got, tt.want)
			}
		})
	}
}

// TestParseAllocs: a valid URI or version parses without allocating: the
// registry parses the URI and every registered version of a capability on
// each resolve (each tools/call on /mcp); only the errors build strings.
func TestParseAllocs(t *testing.T) {
	for _, s := range []string{"mcp:everything/test_simple_text@1.0", "ossa:security/scan@2", "ossa:code/lint"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = ParseURI(s) }); n > 0 {
			t.Errorf("ParseURI(%q): %.0f allocations, want none", s, n)
		}
	}
	for _, s := range []string{"1.2.3", "10.0", "7"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = ParseVersion(s) }); n > 0 {
			t.Errorf("ParseVersion(%q): %.0f allocations, want none", s, n)
		}
	}
}
