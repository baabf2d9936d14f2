package security

import (
	"net/http"
	"testing"
)

// TestHarnessServes checks the suite's harness: a site serves, a token is
// required once one exists.
func TestHarnessServes(t *testing.T) {
	s := newSite(t)
	tok := s.token("reader", "--scope", "read")
	s.serve()
	if code, body, _ := s.do(req{method: "GET", path: "/v1/capabilities?limit=1"}); code != http.StatusUnauthorized {
		t.Fatalf("without a token: %d %s", code, body)
	}
	if code, body, _ := s.do(req{method: "GET", path: "/v1/capabilities?limit=1", token: tok}); code != http.StatusOK {
		t.Fatalf("with a read token: %d %s", code, body)
	}
}
