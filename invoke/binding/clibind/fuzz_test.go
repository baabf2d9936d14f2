package clibind

import (
	"testing"

	"github.com/caphub/caphub/capability"
)

// FuzzFillArgs checks that each placeholder fills exactly one argument with
// exactly the value, whatever the value holds.
func FuzzFillArgs(f *testing.F) {
	for _, s := range []string{"; rm -rf /", "$(id)", "`id`", `"'`, "a b", "line\nbreak", "{y}", "", "-x"} {
		f.Add(s, "y")
	}
	f.Fuzz(func(t *testing.T, x, y string) {
		tmpl, err := capability.SplitCommand(`prog --a {x} "lit {y}" --b={x}{y} {x}`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fillArgs(tmpl, map[string]any{"x": x, "y": y})
		hasNUL := func(s string) bool {
			for i := 0; i < len(s); i++ {
				if s[i] == 0 {
					return true
				}
			}
			return false
		}
		if hasNUL(x) || hasNUL(y) {
			if err == nil {
				t.Fatal("a NUL byte was accepted")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"prog", "--a", x, "lit " + y, "--b=" + x + y, x}
		if len(got) != len(want) {
			t.Fatalf("argv = %q, want %q", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("argv = %q, want %q", got, want)
			}
		}
	})
}
