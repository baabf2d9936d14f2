package registry

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
)

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// TestVersionKeyChain checks the precedence chain of Semantic Versioning
// 2.0.0 §11, plus hyphens in identifiers, long numbers and 1.9 < 1.10.
func TestVersionKeyChain(t *testing.T) {
	chains := [][]string{
		{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"},
		{"1.0.0", "2.0.0", "2.1.0", "2.1.1"},
		{"1.9.0", "1.10.0", "1.11.0", "10.0.0"},
		{"0.0.0-0", "0.0.0-1", "0.0.0-9", "0.0.0-10", "0.0.0-99999999999999999999", "0.0.0-100000000000000000000", "0.0.0-200000000000000000000", "0.0.0-1000000000000000000000", "0.0.0--", "0.0.0-0a", "0.0.0-A", "0.0.0-a"},
		// Hyphens: "-" (0x2D) sorts before digits and letters in ASCII.
		{"1.0.0-a", "1.0.0-a.b", "1.0.0-a-", "1.0.0-a-b", "1.0.0-a0", "1.0.0-aa", "1.0.0-b"},
		{"1.0.0-alpha", "1.0.0-alpha.0", "1.0.0-alpha-1", "1.0.0-alpha-1.x", "1.0.0-alpha-beta", "1.0.0-alphabet", "1.0.0"},
		{"1.0.0--", "1.0.0---", "1.0.0--1", "1.0.0--a", "1.0.0-0-"},
		{"18446744073709551614.0.0", "18446744073709551615.0.0-rc.1", "18446744073709551615.0.0", "18446744073709551615.18446744073709551615.18446744073709551615"},
	}
	for _, chain := range chains {
		for i := 1; i < len(chain); i++ {
			a, b := capability.MustParseVersion(chain[i-1]), capability.MustParseVersion(chain[i])
			if a.Compare(b) >= 0 {
				t.Fatalf("test chain is wrong: Compare(%s, %s) = %d, want -1", chain[i-1], chain[i], a.Compare(b))
			}
			if ka, kb := VersionKey(a), VersionKey(b); ka >= kb {
				t.Errorf("VersionKey(%s) = %q >= VersionKey(%s) = %q; want <", chain[i-1], ka, chain[i], kb)
			}
		}
	}
}

// TestVersionKeyEqual checks that versions of equal precedence get equal
// keys: build metadata is ignored, and missing components count as 0.
func TestVersionKeyEqual(t *testing.T) {
	tests := [][2]string{
		{"1.0.0", "1.0.0+build.5"},
		{"1.0.0-rc.1+a", "1.0.0-rc.1+b.c"},
		{"1.0", "1.0.0"},
		{"1", "1.0.0"},
	}
	for _, tt := range tests {
		a, b := capability.MustParseVersion(tt[0]), capability.MustParseVersion(tt[1])
		if ka, kb := VersionKey(a), VersionKey(b); ka != kb {
			t.Errorf("VersionKey(%s) = %q, VersionKey(%s) = %q; want equal", tt[0], ka, tt[1], kb)
		}
	}
}

func TestVersionKeyFormat(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1.0.0", "00000000000000000001.00000000000000000000.00000000000000000000~"},
		{"1.2.3-alpha.1", "00000000000000000001.00000000000000000002.00000000000000000003-_alpha,00000000000000000001,"},
		{"0.0.1-x-y.007a", "00000000000000000000.00000000000000000000.00000000000000000001-_x-y,_007a,"},
		{"0.0.0-123456789012345678901", "00000000000000000000.00000000000000000000.00000000000000000000-:00000000000000000021123456789012345678901,"},
	}
	for _, tt := range tests {
		if got := VersionKey(capability.MustParseVersion(tt.in)); got != tt.want {
			t.Errorf("VersionKey(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// randomVersion builds a valid version from parts chosen to collide often.
func randomVersion(r *rand.Rand) string {
	nums := []string{"0", "1", "2", "9", "10", "11", "100", "18446744073709551615"}
	ids := []string{"0", "1", "2", "9", "10", "11", "99999999999999999999", "100000000000000000000",
		"alpha", "beta", "rc", "a", "A", "Z", "z", "-", "--", "a-", "-a", "alpha-1", "alpha-beta", "x-1-y", "0a", "1-", "rc-1", "RC"}
	var b strings.Builder
	for i := 0; i < 3; i++ {
		if i > 0 {
			b.WriteByte('.')
		}
		// Small numbers mostly, so that pre-releases get compared.
		if r.Intn(4) == 0 {
			b.WriteString(nums[r.Intn(len(nums))])
		} else {
			b.WriteString(nums[r.Intn(2)])
		}
	}
	if n := r.Intn(5); n > 0 {
		b.WriteByte('-')
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(ids[r.Intn(len(ids))])
		}
	}
	if r.Intn(4) == 0 {
		b.WriteString("+build.")
		b.WriteString(nums[r.Intn(len(nums))])
	}
	return b.String()
}

// TestVersionKeyRandom checks VersionKey against capability.Version.Compare
// on random pairs, and that sorting by key sorts by precedence.
func TestVersionKeyRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var all []capability.Version
	for i := 0; i < 20000; i++ {
		sa, sb := randomVersion(r), randomVersion(r)
		a, err := capability.ParseVersion(sa)
		if err != nil {
			t.Fatalf("generator made an invalid version %q: %v", sa, err)
		}
		b, err := capability.ParseVersion(sb)
		if err != nil {
			t.Fatalf("generator made an invalid version %q: %v", sb, err)
		}
		want := a.Compare(b)
		if got := sign(strings.Compare(VersionKey(a), VersionKey(b))); got != want {
			t.Fatalf("compare keys of %s and %s = %d, Version.Compare = %d\n%q\n%q", sa, sb, got, want, VersionKey(a), VersionKey(b))
		}
		if i < 2000 {
			all = append(all, a, b)
		}
	}
	sort.Slice(all, func(i, j int) bool { return VersionKey(all[i]) < VersionKey(all[j]) })
	for i := 1; i < len(all); i++ {
		if all[i-1].Compare(all[i]) > 0 {
			t.Fatalf("sorted by key, %s comes before %s", all[i-1], all[i])
		}
	}
}

// TestVersionKeyHandBuilt checks that versions not made by ParseVersion
// (which a caller may build by hand) never panic.
func TestVersionKeyHandBuilt(t *testing.T) {
	for _, v := range []capability.Version{
		{},
		{Prerelease: []string{""}},
		{Prerelease: []string{"ünï", "", "007"}, Build: []string{""}},
		{Major: 1<<64 - 1, Prerelease: []string{strings.Repeat("9", 1000)}},
	} {
		if k := VersionKey(v); k == "" {
			t.Errorf("VersionKey(%#v) is empty", v)
		}
	}
}

func TestConflictError(t *testing.T) {
	k := Key{Scheme: "ossa", Domain: "security", Name: "scan", Version: "1.0.3"}
	if got := k.String(); got != "ossa:security/scan@1.0.3" {
		t.Errorf("Key.String() = %q", got)
	}
	var err error = fmt.Errorf("put: %w", &ConflictError{Key: k, ExistingDigest: strings.Repeat("a", 64), NewDigest: "b"})
	if !errors.Is(err, ErrConflict) {
		t.Error("errors.Is(err, ErrConflict) = false")
	}
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Key != k {
		t.Errorf("errors.As(err, *ConflictError) = %v, %v", ce, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "ossa:security/scan@1.0.3") || !strings.Contains(msg, "new version") {
		t.Errorf("message %q does not name the key and what to do", msg)
	}
}
