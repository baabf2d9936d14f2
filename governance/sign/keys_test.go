package sign_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/caphub/caphub/governance/sign"
)

func TestKeyFilesRoundTrip(t *testing.T) {
	pub, priv := sign.GenerateKey()
	dir := filepath.Join(t.TempDir(), "keys") // created by WriteKeyPair
	keyPath, pubPath, err := sign.WriteKeyPair(dir, "release", pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	if keyPath != filepath.Join(dir, "release.key") || pubPath != filepath.Join(dir, "release.pub") {
		t.Errorf("paths %s %s", keyPath, pubPath)
	}
	if runtime.GOOS != "windows" {
		for path, want := range map[string]os.FileMode{keyPath: 0o600, pubPath: 0o644, dir: 0o700} {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			// The umask may only take permissions away.
			if got := st.Mode().Perm(); got&^want != 0 || path == keyPath && got != 0o600 {
				t.Errorf("%s has mode %v, want %v", path, got, want)
			}
		}
	}
	keyPEM, _ := os.ReadFile(keyPath)
	pubPEM, _ := os.ReadFile(pubPath)
	if !bytes.HasPrefix(keyPEM, []byte("-----BEGIN PRIVATE KEY-----\n")) || !bytes.HasPrefix(pubPEM, []byte("-----BEGIN PUBLIC KEY-----\n")) {
		t.Errorf("not PKCS#8/PKIX PEM:\n%s\n%s", keyPEM, pubPEM)
	}
	got, err := sign.LoadPrivateKey(keyPath)
	if err != nil || !got.Equal(priv) {
		t.Fatalf("LoadPrivateKey: %v, equal %v", err, got.Equal(priv))
	}
	ring, err := sign.LoadKeyRing(pubPath)
	if err != nil || len(ring) != 1 || !ring[sign.KeyID(pub)].Equal(pub) {
		t.Fatalf("LoadKeyRing(file) = %v, %v", ring.IDs(), err)
	}
	// A directory: its .pub files, not the .key beside them.
	ring, err = sign.LoadKeyRing(dir)
	if err != nil || len(ring) != 1 {
		t.Fatalf("LoadKeyRing(dir) = %v, %v", ring.IDs(), err)
	}

	// Never overwrite.
	pub2, priv2 := sign.GenerateKey()
	if _, _, err := sign.WriteKeyPair(dir, "release", pub2, priv2); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("WriteKeyPair over an existing key = %v", err)
	}
	if again, _ := sign.LoadPrivateKey(keyPath); !again.Equal(priv) {
		t.Error("the existing private key was overwritten")
	}
	for _, bad := range []string{"", "../x", "a/b", ".hidden"} {
		if _, _, err := sign.WriteKeyPair(dir, bad, pub2, priv2); err == nil {
			t.Errorf("WriteKeyPair with name %q succeeded", bad)
		}
	}
}

func TestLoadKeyRingSeveral(t *testing.T) {
	dir := t.TempDir()
	var all []byte
	var ids []string
	for range 3 {
		pub, _ := sign.GenerateKey()
		b, err := sign.MarshalPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
		ids = append(ids, sign.KeyID(pub))
	}
	list := filepath.Join(dir, "trusted.pem")
	os.WriteFile(list, all, 0o644)
	ring, err := sign.LoadKeyRing(list)
	if err != nil || len(ring) != 3 {
		t.Fatalf("a file listing three keys: %v, %v", ring.IDs(), err)
	}
	for _, id := range ids {
		if _, ok := ring[id]; !ok {
			t.Errorf("key %s missing", id)
		}
	}
	// Several paths merge.
	pub, _ := sign.GenerateKey()
	one := filepath.Join(dir, "one.pub")
	b, _ := sign.MarshalPublicKey(pub)
	os.WriteFile(one, b, 0o644)
	ring, err = sign.LoadKeyRing(list, one)
	if err != nil || len(ring) != 4 {
		t.Errorf("two paths: %v, %v", ring.IDs(), err)
	}
}

func TestKeyFileErrors(t *testing.T) {
	dir := t.TempDir()
	pub, priv := sign.GenerateKey()
	privPEM, _ := sign.MarshalPrivateKey(priv)
	pubPEM, _ := sign.MarshalPublicKey(pub)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	ecPub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecDER})
	ecPrivDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecPriv := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecPrivDER})
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, data, 0o600)
		return p
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o700)

	ringCases := map[string]struct {
		path string
		want string
	}{
		"private key among trusted": {file("mixed.pub", append(append([]byte{}, pubPEM...), privPEM...)), "is a private key"},
		"ECDSA key":                 {file("ec.pub", ecPub), "is a ECDSA key"},
		"not PEM":                   {file("junk.pub", []byte("ssh-ed25519 AAAA…")), "no PEM block"},
		"certificate":               {file("cert.pub", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}})), `"CERTIFICATE" block`},
		"missing":                   {filepath.Join(dir, "nope"), "no such file"},
		"directory without keys":    {empty, "has no .pub files"},
	}
	for name, c := range ringCases {
		t.Run(name, func(t *testing.T) {
			if _, err := sign.LoadKeyRing(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("LoadKeyRing %s = %v, want %q", name, err, c.want)
			}
		})
	}
	if _, err := sign.LoadKeyRing(); err == nil {
		t.Error("LoadKeyRing() with no path succeeded")
	}

	privCases := map[string]struct {
		data []byte
		want string
	}{
		"public key":  {pubPEM, "is a public key"},
		"ECDSA key":   {ecPriv, "is a ECDSA key"},
		"not PEM":     {[]byte("hello"), "no PEM block"},
		"openssh key": {pem.EncodeToMemory(&pem.Block{Type: "OPENSSH PRIVATE KEY", Bytes: []byte{1}}), "OpenSSH key"},
		"bad DER":     {pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2}}), "not a valid PKCS#8"},
	}
	for name, c := range privCases {
		t.Run(name, func(t *testing.T) {
			if _, err := sign.ParsePrivateKey("k.key", c.data); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "k.key: ") {
				t.Errorf("ParsePrivateKey %s = %v, want %q", name, err, c.want)
			}
		})
	}
}

// Keys and signatures interoperate with OpenSSL: caphub reads its keys, and
// `openssl pkeyutl -verify` accepts caphub's signature over the payload.
func TestOpenSSLInterop(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "o.key")
	pubPath := filepath.Join(dir, "o.pub")
	if out, err := exec.Command(openssl, "genpkey", "-algorithm", "ed25519", "-out", keyPath).CombinedOutput(); err != nil {
		t.Skipf("openssl cannot make ed25519 keys: %v\n%s", err, out)
	}
	if out, err := exec.Command(openssl, "pkey", "-in", keyPath, "-pubout", "-out", pubPath).CombinedOutput(); err != nil {
		t.Fatalf("openssl pkey -pubout: %v\n%s", err, out)
	}
	priv, err := sign.LoadPrivateKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := sign.LoadKeyRing(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	d := readOne(t, "scan.yaml", scanYAML)
	if err := sign.Sign(&d, priv, ""); err != nil {
		t.Fatal(err)
	}
	if err := sign.Verify(&d, ring); err != nil {
		t.Fatalf("Verify with the OpenSSL public key: %v", err)
	}
	payload, _ := sign.Payload(&d)
	sig, _ := decodeSig(d.Attestation.Signature)
	payloadPath, sigPath := filepath.Join(dir, "payload.json"), filepath.Join(dir, "sig.bin")
	os.WriteFile(payloadPath, payload, 0o644)
	os.WriteFile(sigPath, sig, 0o644)
	out, err := exec.Command(openssl, "pkeyutl", "-verify", "-pubin", "-inkey", pubPath, "-rawin", "-in", payloadPath, "-sigfile", sigPath).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Signature Verified Successfully") {
		t.Errorf("openssl pkeyutl -verify: %v\n%s", err, out)
	}
}
