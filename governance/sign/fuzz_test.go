package sign_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/governance/sign"
)

func signBytes(s signer, payload []byte) []byte { return ed25519.Sign(s.priv, payload) }

func encodeSig(sig []byte) string { return base64.RawURLEncoding.EncodeToString(sig) }

// FuzzVerify: Verify never panics on any attestation, and accepts only the
// genuine signature by the genuine key.
func FuzzVerify(f *testing.F) {
	pub, priv := sign.GenerateKey()
	ring := sign.NewKeyRing(pub)
	d := capability.Definition{URI: "ossa:test/echo@1.0", Name: "echo", Domain: "test", Version: "1.0.0",
		Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "echo"}}}
	if err := sign.Sign(&d, priv, ""); err != nil {
		f.Fatal(err)
	}
	good := *d.Attestation
	genuine, _ := base64.RawURLEncoding.DecodeString(good.Signature)
	f.Add(good.KeyID, good.Algorithm, good.Signature, "")
	f.Add(good.KeyID, "ED25519", good.Signature+"==", "")
	f.Add(good.KeyID, good.Algorithm, good.Signature, "changed")
	f.Add("", "", "", "")
	f.Add(good.KeyID, "rsa", "!!!", "x")
	f.Add("ed25519:0000000000000000", good.Algorithm, strings.Repeat("A", 86), "")
	f.Add(good.KeyID, good.Algorithm, strings.Repeat("_", 86), "")
	f.Fuzz(func(t *testing.T, keyID, algorithm, signature, description string) {
		c := d
		c.Description = description
		c.Attestation = &capability.Attestation{KeyID: keyID, Algorithm: algorithm, Signature: signature}
		err := sign.Verify(&c, ring)
		if _, terr := sign.Tier(&c, ring, false); (terr == nil) != (err == nil) {
			t.Fatalf("Tier and Verify disagree: %v / %v", terr, err)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		sig, derr := base64.RawURLEncoding.DecodeString(strings.TrimRight(signature, "="))
		if derr != nil || !bytes.Equal(sig, genuine) || keyID != good.KeyID || description != "" {
			t.Fatalf("Verify accepted key %q signature %q description %q", keyID, signature, description)
		}
	})
}
