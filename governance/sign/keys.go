package sign

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// PEM block types of key files: PKCS#8 for private keys and PKIX
// (SubjectPublicKeyInfo) for public keys, the forms `openssl genpkey
// -algorithm ed25519` and `openssl pkey -pubout` write, so keys move freely
// between caphub and other tools.
const (
	privateKeyPEMType = "PRIVATE KEY"
	publicKeyPEMType  = "PUBLIC KEY"
)

// Key file name extensions written by WriteKeyPair. A trusted-keys directory
// is read for its publicKeyExt files.
const (
	privateKeyExt = ".key"
	publicKeyExt  = ".pub"
)

// GenerateKey returns a new ed25519 key pair from crypto/rand.
func GenerateKey() (ed25519.PublicKey, ed25519.PrivateKey) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		// crypto/rand never fails since Go 1.24; it crashes the program
		// instead. Keep the check in case that ever changes.
		panic("sign: generate an ed25519 key: " + err.Error())
	}
	return pub, priv
}

// KeyID names a public key in attestations: "ed25519:" followed by the first
// 16 hex digits (64 bits) of the SHA-256 of the 32-byte raw public key, e.g.
// "ed25519:3f0c9a4e1b2d7c55". It is derived from the key itself, so a key
// ring never trusts a name a file chose, and the same key has the same id
// everywhere.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return Algorithm + ":" + hex.EncodeToString(sum[:8])
}

// MarshalPrivateKey encodes priv as a PEM "PRIVATE KEY" block (PKCS#8).
func MarshalPrivateKey(priv ed25519.PrivateKey) ([]byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("an ed25519 private key has %d bytes, not %d", ed25519.PrivateKeySize, len(priv))
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: privateKeyPEMType, Bytes: der}), nil
}

// MarshalPublicKey encodes pub as a PEM "PUBLIC KEY" block (PKIX).
func MarshalPublicKey(pub ed25519.PublicKey) ([]byte, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("an ed25519 public key has %d bytes, not %d", ed25519.PublicKeySize, len(pub))
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: publicKeyPEMType, Bytes: der}), nil
}

// ParsePrivateKey decodes the first PEM block of data, which must be an
// ed25519 "PRIVATE KEY" (PKCS#8). name is used in messages.
func ParsePrivateKey(name string, data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block found: a private key file starts with -----BEGIN %s----- (create one with `caphub key generate`)", name, privateKeyPEMType)
	}
	switch block.Type {
	case privateKeyPEMType:
	case "OPENSSH PRIVATE KEY":
		return nil, fmt.Errorf("%s: is an OpenSSH key: caphub reads PKCS#8 PEM keys (-----BEGIN %s-----), made by `caphub key generate` or `openssl genpkey -algorithm ed25519`", name, privateKeyPEMType)
	case publicKeyPEMType:
		return nil, fmt.Errorf("%s: is a public key: signing needs the private key (the .key file `caphub key generate` wrote)", name)
	default:
		return nil, fmt.Errorf("%s: holds a %q PEM block: expected an ed25519 %q block (PKCS#8), made by `caphub key generate`", name, block.Type, privateKeyPEMType)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid PKCS#8 private key: %v", name, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: is a %s key: caphub signs with ed25519 keys only (make one with `caphub key generate`)", name, keyKind(k))
	}
	return priv, nil
}

// parsePublicKeys decodes every PEM block of data; each must be an ed25519
// "PUBLIC KEY" (PKIX). A file may list several keys, one block after
// another. name is used in messages.
func parsePublicKeys(name string, data []byte) ([]ed25519.PublicKey, error) {
	var out []ed25519.PublicKey
	rest := data
	for n := 1; ; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch block.Type {
		case publicKeyPEMType:
		case privateKeyPEMType, "OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY":
			return nil, fmt.Errorf("%s: PEM block %d is a private key: trusted keys are public keys (the .pub file of `caphub key generate`); keep private keys out of the trusted keys", name, n)
		default:
			return nil, fmt.Errorf("%s: PEM block %d is a %q block: expected %q blocks (PKIX ed25519 public keys)", name, n, block.Type, publicKeyPEMType)
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: PEM block %d is not a valid PKIX public key: %v", name, n, err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("%s: PEM block %d is a %s key: caphub verifies ed25519 signatures only", name, n, keyKind(k))
		}
		out = append(out, pub)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no PEM block found: a public key file holds -----BEGIN %s----- blocks (the .pub file of `caphub key generate`)", name, publicKeyPEMType)
	}
	return out, nil
}

// keyKind names the algorithm of a parsed key for messages.
func keyKind(k any) string {
	switch k.(type) {
	case *rsa.PublicKey, *rsa.PrivateKey:
		return "RSA"
	case *ecdsa.PublicKey, *ecdsa.PrivateKey:
		return "ECDSA"
	case *ecdh.PublicKey, *ecdh.PrivateKey:
		return "ECDH (X25519)"
	}
	return fmt.Sprintf("%T", k)
}

var keyNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// WriteKeyPair writes priv to DIR/NAME.key (mode 0600) and pub to
// DIR/NAME.pub (mode 0644), creating dir (mode 0700) when it is missing. It
// never overwrites: if either file exists nothing is written, so a key in use
// cannot be lost by generating another.
func WriteKeyPair(dir, name string, pub ed25519.PublicKey, priv ed25519.PrivateKey) (keyPath, pubPath string, err error) {
	if !keyNameRE.MatchString(name) {
		return "", "", fmt.Errorf("key name %q: use letters, digits, '.', '_' and '-' (no path separators), starting with a letter or digit", name)
	}
	privPEM, err := MarshalPrivateKey(priv)
	if err != nil {
		return "", "", err
	}
	pubPEM, err := MarshalPublicKey(pub)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("create the key directory: %w", err)
	}
	keyPath = filepath.Join(dir, name+privateKeyExt)
	pubPath = filepath.Join(dir, name+publicKeyExt)
	for _, p := range []string{keyPath, pubPath} {
		if _, err := os.Lstat(p); err == nil {
			return "", "", fmt.Errorf("%s already exists: choose another name (--name) or move the old key away; caphub never overwrites a key", p)
		}
	}
	if err := writeNew(keyPath, privPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := writeNew(pubPath, pubPEM, 0o644); err != nil {
		os.Remove(keyPath)
		return "", "", err
	}
	return keyPath, pubPath, nil
}

// writeNew creates path (failing if it exists) with mode perm and writes
// data to it.
func writeNew(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("write key %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("write key %s: %w", path, err)
	}
	return nil
}

// LoadPrivateKey reads a private key file (PEM, PKCS#8 ed25519).
func LoadPrivateKey(path string) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the private key: %w", err)
	}
	return ParsePrivateKey(path, data)
}

// KeyRing holds the public keys whose signatures are trusted, by KeyID.
// The zero value (nil) trusts no key.
type KeyRing map[string]ed25519.PublicKey

// NewKeyRing returns a key ring trusting pubs.
func NewKeyRing(pubs ...ed25519.PublicKey) KeyRing {
	r := KeyRing{}
	for _, p := range pubs {
		r.Add(p)
	}
	return r
}

// Add trusts pub and returns its KeyID.
func (r KeyRing) Add(pub ed25519.PublicKey) string {
	id := KeyID(pub)
	r[id] = pub
	return id
}

// IDs returns the key ids of the ring, sorted.
func (r KeyRing) IDs() []string {
	ids := make([]string, 0, len(r))
	for id := range r {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// maxKeyFile bounds what LoadKeyRing reads from one file.
const maxKeyFile = 1 << 20

// LoadKeyRing reads trusted public keys from each path: a file holding one
// or more PEM "PUBLIC KEY" blocks, or a directory whose *.pub files are read
// (other files, such as the .key files beside them, are ignored; a
// directory without any .pub file is an error, so a wrong path is not
// mistaken for "trust nothing").
func LoadKeyRing(paths ...string) (KeyRing, error) {
	if len(paths) == 0 {
		return nil, errors.New("no trusted keys given: name a public key file or a directory of .pub files")
	}
	ring := KeyRing{}
	for _, path := range paths {
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("trusted keys: %w", err)
		}
		files := []string{path}
		if st.IsDir() {
			matches, err := filepath.Glob(filepath.Join(path, "*"+publicKeyExt))
			if err != nil {
				return nil, err
			}
			if len(matches) == 0 {
				return nil, fmt.Errorf("trusted keys: directory %s has no %s files: put the public keys you trust there (NAME.pub, written by `caphub key generate`)", path, publicKeyExt)
			}
			files = matches
		}
		for _, f := range files {
			if err := ring.loadFile(f); err != nil {
				return nil, err
			}
		}
	}
	return ring, nil
}

func (r KeyRing) loadFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("trusted keys: %w", err)
	}
	if st.Size() > maxKeyFile {
		return fmt.Errorf("trusted keys: %s is %d bytes, more than the %d a key file may have: is it the right file?", path, st.Size(), maxKeyFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("trusted keys: %w", err)
	}
	pubs, err := parsePublicKeys(path, data)
	if err != nil {
		return fmt.Errorf("trusted keys: %w", err)
	}
	for _, p := range pubs {
		r.Add(p)
	}
	return nil
}
