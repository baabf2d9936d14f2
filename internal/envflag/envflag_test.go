package envflag

import (
	"strings"
	"testing"
)

func TestBool(t *testing.T) {
	const name = "CAPHUB_ENVFLAG_TEST"
	for _, c := range []struct {
		value   string
		want    bool
		wantErr bool
	}{{"", false, false}, {"  ", false, false}, {"true", true, false}, {"1", true, false}, {" TRUE ", true, false},
		{"false", false, false}, {"0", false, false}, {"yes", false, true}, {"ture", false, true}} {
		t.Setenv(name, c.value)
		got, err := Bool(name)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%q: %v, %v; want %v, error %v", c.value, got, err, c.want, c.wantErr)
		}
		if err != nil && (!strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "use true or false")) {
			t.Errorf("%q: error %q does not name the variable and the fix", c.value, err)
		}
	}
}
