package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/governance/sign"
)

// A signature problem's library error says what to do without naming a
// command (REST and MCP clients read it); the CLI adds the command.
func TestSignatureHintsAtTheCLIEdge(t *testing.T) {
	d := capability.Definition{URI: "ossa:demo/thing@1.0", Version: "1.0.0"}
	unsigned := sign.Verify(&d, sign.NewKeyRing())
	d.Attestation = &capability.Attestation{KeyID: "k1", Algorithm: "rsa", Signature: "x"}
	algorithm := sign.Verify(&d, sign.NewKeyRing())
	for name, err := range map[string]error{"unsigned": unsigned, "algorithm": algorithm} {
		t.Run(name, func(t *testing.T) {
			if err == nil {
				t.Fatal("verified")
			}
			if strings.Contains(err.Error(), "`caphub") {
				t.Errorf("the library error names a command: %v", err)
			}
			if got := withHint(err); !strings.Contains(got, "`caphub capability sign FILE --key KEY`") {
				t.Errorf("no CLI hint: %s", got)
			}
		})
	}
	if h := hintFor(errors.New("something else")); h != "" {
		t.Errorf("hint for an unrelated error: %s", h)
	}
}
