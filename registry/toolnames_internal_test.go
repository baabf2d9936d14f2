package registry

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
)

// matches reports whether p selects k, as Store.KeysWithPrefix does.
func (p KeyPrefix) matches(k Key) bool {
	if k.Scheme != p.Scheme {
		return false
	}
	if p.DomainPrefix {
		return strings.HasPrefix(k.Domain, p.Domain)
	}
	return k.Domain == p.Domain && strings.HasPrefix(k.Name, p.Name)
}

// Every capability is selected by the prefixes of its own tool name, so
// the check finds every capability that has a given tool name: plain or
// hashed, any scheme, long domains and mcp names with "." and "_".
func TestToolNamePrefixesCoverEveryCapability(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	word := func(first, rest string, max int) string {
		b := []byte{first[r.Intn(len(first))]}
		for n := r.Intn(max); n > 0; n-- {
			b = append(b, rest[r.Intn(len(rest))])
		}
		return string(b)
	}
	const lower, digits = "abcdefghijklmnopqrstuvwxyz", "0123456789"
	keys := []Key{{Scheme: "ossa", Domain: strings.Repeat("d", 60), Name: "x"}, {Scheme: "mcp", Domain: strings.Repeat("d", 51), Name: "x"},
		{Scheme: "mcp", Domain: "s", Name: "_a.b_c"}, {Scheme: "mcp", Domain: "s", Name: "a"}, {Scheme: "ossa", Domain: "mcp", Name: "s_a_b_c"}}
	for range 20000 {
		k := Key{Scheme: "ossa", Domain: word(lower, lower+digits+"-", []int{3, 12, 70}[r.Intn(3)])}
		if r.Intn(2) == 0 {
			k.Scheme, k.Name = "mcp", word(lower+"ABC_"+digits, lower+"AB_.-"+digits, []int{4, 20, 127}[r.Intn(3)])
		} else {
			k.Name = word(lower, lower+digits+"_", []int{4, 20, 90}[r.Intn(3)])
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		base := k.Scheme + ":" + k.Domain + "/" + k.Name
		if _, err := capability.ParseURI(base); err != nil {
			t.Fatalf("the test made an invalid URI %s: %v", base, err)
		}
		name := capability.ToolName(base)
		found := false
		for _, p := range toolNamePrefixes(name) {
			found = found || p.matches(k)
		}
		if !found {
			t.Fatalf("%s (tool name %s) is not selected by %+v", base, name, toolNamePrefixes(name))
		}
	}
}
