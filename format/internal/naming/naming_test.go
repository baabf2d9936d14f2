package naming

import "testing"

func TestJoinRuns(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"--a--b--", "a-b"},
		{"com.whatsapp", "com-whatsapp"},
		{"Ünïcode x", "n-code-x"},
	} {
		if got := JoinRuns(c.in, IsLowerAlnum, '-'); got != c.want {
			t.Errorf("JoinRuns(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
