package sdkrelay

import (
	"encoding/json"
	"testing"
)

func TestTokenKey(t *testing.T) {
	for _, tc := range []struct {
		tok  any
		want string
	}{{"a", "s:a"}, {float64(1), "n:1"}, {int64(1), "n:1"}, {json.Number("1"), "n:1"}, {nil, ""}} {
		if got := tokenKey(tc.tok); got != tc.want {
			t.Errorf("tokenKey(%#v) = %q, want %q", tc.tok, got, tc.want)
		}
	}
}
