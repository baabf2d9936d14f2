package capability

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseVersionAccepts(t *testing.T) {
	tests := []struct {
		in   string
		want Version
	}{
		{"0", Version{Parts: 1}},
		{"1", Version{Major: 1, Parts: 1}},
		{"1.0", Version{Major: 1, Parts: 2}},
		{"1.2.3", Version{Major: 1, Minor: 2, Patch: 3, Parts: 3}},
		{"0.0.0", Version{Parts: 3}},
		{"10.20.30", Version{Major: 10, Minor: 20, Patch: 30, Parts: 3}},
		{"1.0.3-rc.1+build.5", Version{Major: 1, Patch: 3, Prerelease: []string{"rc", "1"}, Build: []string{"build", "5"}, Parts: 3}},
		{"1.0.0-alpha", Version{Major: 1, Prerelease: []string{"alpha"}, Parts: 3}},
		{"1.0+b", Version{Major: 1, Build: []string{"b"}, Parts: 2}},
		{"1-rc.1", Version{Major: 1, Prerelease: []string{"rc", "1"}, Parts: 1}},
		{"2.1-beta", Version{Major: 2, Minor: 1, Prerelease: []string{"beta"}, Parts: 2}},
		// Alphanumeric pre-release identifiers may have leading zeros; only
		// numeric ones may not.
		{"1.0.0-0A.is.legal", Version{Major: 1, Prerelease: []string{"0A", "is", "legal"}, Parts: 3}},
		{"1.0.0-0", Version{Major: 1, Prerelease: []string{"0"}, Parts: 3}},
		{"1.0.0-x-y-z.--", Version{Major: 1, Prerelease: []string{"x-y-z", "--"}, Parts: 3}},
		{"1.0.0-alpha-a.b-c-somethinglong+build.1-aef.1-its-okay", Version{Major: 1, Prerelease: []string{"alpha-a", "b-c-somethinglong"}, Build: []string{"build", "1-aef", "1-its-okay"}, Parts: 3}},
		// Build identifiers may have leading zeros.
		{"1.0.0+0.build.1-rc.10000aaa-kk-0.1", Version{Major: 1, Build: []string{"0", "build", "1-rc", "10000aaa-kk-0", "1"}, Parts: 3}},
		{"1.0.0+001", Version{Major: 1, Build: []string{"001"}, Parts: 3}},
		{"18446744073709551615.0.0", Version{Major: 18446744073709551615, Parts: 3}},
		{"1.0.0-99999999999999999999999", Version{Major: 1, Prerelease: []string{"99999999999999999999999"}, Parts: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseVersion(tt.in)
			if err != nil {
				t.Fatalf("ParseVersion(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseVersion(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			if s := got.String(); s != tt.in {
				t.Errorf("String() = %q, want %q", s, tt.in)
			}
		})
	}
}

func TestParseVersionRejects(t *testing.T) {
	tests := []struct {
		in        string
		component string
		contains  string // a fragment the message must hold
	}{
		{"", "version", "empty"},
		{"v1.0", "version", `drop the leading "v"; write 1.0`},
		{"V2", "version", `drop the leading "V"; write 2`},
		{"v", "version", "drop the leading"},
		{"1.01", "minor", `invalid version "1.01": minor component "01" has a leading zero; write 1.1`},
		{"01", "major", `major component "01" has a leading zero; write 1`},
		{"1.0.00", "patch", `patch component "00" has a leading zero; write 1.0.0`},
		{"1.0.0-01", "prerelease", `pre-release identifier "01" is numeric and has a leading zero; write 1.0.0-1`},
		{"1.0.0-rc.007", "prerelease", "leading zero"},
		{"-1", "major", "negative"},
		{"1.-2", "minor", "negative"},
		{"1.0.-3", "patch", "negative"},
		{"18446744073709551616", "major", "larger than the maximum 18446744073709551615"},
		{"1.99999999999999999999", "minor", "larger than the maximum"},
		{"1.2.3.4", "version", "at most three"},
		{"1.", "minor", "empty"},
		{".1", "major", "empty"},
		{"1..2", "minor", "empty"},
		{"1.x", "minor", "non-negative integer"},
		{"a", "major", "non-negative integer"},
		{"1.0-", "prerelease", "empty"},
		{"1.0+", "build", "empty"},
		{"1.0.0-rc..1", "prerelease", "identifier 2"},
		{"1.0.0-rc.", "prerelease", "empty"},
		{"1.0.0+b..1", "build", "empty"},
		{"1.0.0-rc_1", "prerelease", `contains "_"`},
		{"1.0.0+b+c", "build", `contains "+"`},
		{"1.0.0-é", "prerelease", "[0-9A-Za-z-]"},
		{" 1.0", "version", "whitespace"},
		{"1.0 ", "version", "whitespace"},
		{"1.0\n", "version", "whitespace"},
		{"1.0.0-", "prerelease", "empty"},
		{"1.2.3-0123", "prerelease", "leading zero"},
		{"+b", "major", "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, err := ParseVersion(tt.in)
			if err == nil {
				t.Fatalf("ParseVersion(%q) = %v, want an error", tt.in, v)
			}
			var ve *VersionError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v is %T, want *VersionError", err, err)
			}
			if ve.Input != tt.in {
				t.Errorf("Input = %q, want %q", ve.Input, tt.in)
			}
			if ve.Component != tt.component {
				t.Errorf("Component = %q, want %q (%v)", ve.Component, tt.component, err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

func TestMustParseVersion(t *testing.T) {
	if v := MustParseVersion("1.2"); v.Major != 1 || v.Minor != 2 {
		t.Errorf("MustParseVersion(1.2) = %v", v)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustParseVersion(1.01) did not panic")
		}
	}()
	MustParseVersion("1.01")
}

func TestVersionPrecedenceChain(t *testing.T) {
	// Semantic Versioning 2.0.0 §11, in increasing precedence.
	chain := []string{
		"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
		"1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0",
		"1.0.1", "1.1.0-0", "1.1.0", "1.2", "2.0.0-rc.1", "2", "10.0.0",
	}
	for i := range chain {
		for j := range chain {
			a, b := MustParseVersion(chain[i]), MustParseVersion(chain[j])
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", chain[i], chain[j], got, want)
			}
			if got := a.Less(b); got != (i < j) {
				t.Errorf("Less(%s, %s) = %v, want %v", chain[i], chain[j], got, i < j)
			}
		}
	}
}

func TestVersionCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1.0.0-alpha.10", "1.0.0-alpha.9", 1}, // numeric, not string, order
		{"1.0.0-alpha.9", "1.0.0-alpha.10", -1},
		{"1.0.0-1", "1.0.0-a", -1},                                        // numeric < alphanumeric
		{"1.0.0-A", "1.0.0-a", -1},                                        // ASCII order
		{"1.0.0-alpha.1", "1.0.0-alpha.1.0", -1},                          // more fields wins
		{"1.0.0-99999999999999999999", "1.0.0-100000000000000000000", -1}, // beyond uint64
		{"1.0.0+build.1", "1.0.0+build.2", 0},                             // build metadata ignored
		{"1.0.0-rc.1+a", "1.0.0-rc.1", 0},
		{"1", "1.0", 0},
		{"1", "1.0.0", 0},
		{"1.0", "1.0.0", 0},
		{"1-rc.1", "1.0.0-rc.1", 0},
		{"1.1", "1.0.9", 1},
		{"0.9", "1.0", -1},
		{"2.0", "1.99.99", 1},
	}
	for _, tt := range tests {
		t.Run(tt.a+"_vs_"+tt.b, func(t *testing.T) {
			a, b := MustParseVersion(tt.a), MustParseVersion(tt.b)
			if got := a.Compare(b); got != tt.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := b.Compare(a); got != -tt.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", tt.b, tt.a, got, -tt.want)
			}
		})
	}
}

func TestVersionFormats(t *testing.T) {
	tests := []struct {
		in, str, full, short string
		pre                  bool
	}{
		{"1", "1", "1.0.0", "1.0", false},
		{"1.2", "1.2", "1.2.0", "1.2", false},
		{"1.2.3", "1.2.3", "1.2.3", "1.2", false},
		{"1.2-rc.1", "1.2-rc.1", "1.2.0-rc.1", "1.2", true},
		{"1+b.7", "1+b.7", "1.0.0+b.7", "1.0", false},
		{"3.4.5-beta+exp.sha.5114f85", "3.4.5-beta+exp.sha.5114f85", "3.4.5-beta+exp.sha.5114f85", "3.4", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v := MustParseVersion(tt.in)
			if got := v.String(); got != tt.str {
				t.Errorf("%s: String() = %q, want %q", tt.in, got, tt.str)
			}
			if got := v.Full(); got != tt.full {
				t.Errorf("%s: Full() = %q, want %q", tt.in, got, tt.full)
			}
			if got := v.Short(); got != tt.short {
				t.Errorf("%s: Short() = %q, want %q", tt.in, got, tt.short)
			}
			if got := v.IsPrerelease(); got != tt.pre {
				t.Errorf("%s: IsPrerelease() = %v, want %v", tt.in, got, tt.pre)
			}
		})
	}
	// A Version built by hand (Parts 0) is written in full.
	if got := (Version{Major: 2, Minor: 1}).String(); got != "2.1.0" {
		t.Errorf("Version{2,1}.String() = %q, want 2.1.0", got)
	}
}
