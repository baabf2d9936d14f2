// Package sign signs capability definitions with ed25519 keys, verifies
// their attestations against a ring of trusted public keys, and decides the
// trust tier a definition is registered with (CCOS: attestation, provenance,
// trust tiers).
//
// # What a signature covers
//
// A signature is an ed25519 signature (RFC 8032, pure Ed25519, no context or
// pre-hash) over the bytes Payload returns, and Payload is the RFC 8785
// canonical JSON (audit.Canonicalize) of the definition as its author wrote
// it, with these differences:
//
//   - attestation is left out: it holds the signature itself;
//   - the registry lifecycle fields are left out: stability, deprecated_by,
//     sunset_date, migration_guide and provenance.created_at. These are the
//     fields the registry's content digest (registry.Digest) ignores too: a
//     registry sets stability when it is absent, Deprecate sets the first
//     four after registration, and re-discovering or re-importing the same
//     thing changes only created_at. So a signed definition still verifies
//     after its version is deprecated. A provenance left empty by this is
//     left out as a whole;
//   - it is completed the way the registry completes a definition before
//     storing it: values in canonical form (capability.Definition.Normalize,
//     so YAML and JSON read the same), and domains and categories inferred
//     when they are empty (capability.Definition.ApplyInference, from the MCP
//     server for mcp: URIs and from the domain otherwise, as the registry
//     does). So the stored record verifies as the file did. Sign writes the
//     inferred values into the definition, so a file signed by caphub states
//     everything its signature covers.
//
// Everything else is covered: identity and version, title, description and
// documentation, input and output schemas, errors, every binding, permissions
// and effects, domains, categories, intents, keywords, display, prompts,
// tools, provenance (but created_at), metadata, examples and fields caphub
// does not model. Key order, whitespace, YAML or JSON, and number spelling
// (10, 10.0, 1e1) do not matter: canonical JSON removes them.
//
// # Attestation
//
//	attestation:
//	  key_id: ed25519:3f0c9a4e1b2d7c55   # KeyID of the public key
//	  algorithm: ed25519
//	  signature: <base64url of the 64-byte signature, unpadded>
//
// Keys are PEM files: "PRIVATE KEY" (PKCS#8) and "PUBLIC KEY" (PKIX), the
// forms OpenSSL writes, so `openssl pkeyutl -verify -rawin` checks a
// signature over Payload's bytes too. Use a key only for signing
// capabilities.
package sign

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/capability"
)

// Algorithm is the one signature algorithm caphub signs and verifies with.
const Algorithm = "ed25519"

// ErrUnsigned says a definition has no attestation. Verify wraps it with the
// definition's URI; test with errors.Is.
var ErrUnsigned = errors.New("not signed")

// UnknownKeyError says a definition is signed by a key that is not among the
// trusted keys. The signature was not checked.
type UnknownKeyError struct {
	Definition string // URI and version, for messages
	KeyID      string
}

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("%s is signed by key %s, which is not among the trusted keys: if you trust the signer, add their public key to the trusted keys; otherwise remove the attestation to register it unsigned", e.Definition, e.KeyID)
}

// BadSignatureError says a signature does not match the definition: the
// definition was changed after it was signed (or the attestation was copied
// from another definition).
type BadSignatureError struct {
	Definition string // URI and version, for messages
	KeyID      string
}

func (e *BadSignatureError) Error() string {
	return fmt.Sprintf("%s: the signature by key %s does not match the definition: it was changed after it was signed "+
		"(only stability, deprecated_by, sunset_date, migration_guide and provenance.created_at may change after signing); "+
		"restore the signed content, or if the change is intended have the key's owner sign it again",
		e.Definition, e.KeyID)
}

// UnsupportedAlgorithmError says an attestation names an algorithm other
// than ed25519.
type UnsupportedAlgorithmError struct {
	Definition string // URI and version, for messages
	Algorithm  string
}

func (e *UnsupportedAlgorithmError) Error() string {
	return fmt.Sprintf("%s: attestation algorithm %q is not supported: caphub verifies %s signatures only; sign it again with an ed25519 key", e.Definition, e.Algorithm, Algorithm)
}

// MalformedAttestationError says an attestation cannot be checked at all: a
// field is missing or the signature is not 64 base64url-encoded bytes.
type MalformedAttestationError struct {
	Definition string // URI and version, for messages
	Field      string // "key_id", "signature", ...
	Reason     string
}

func (e *MalformedAttestationError) Error() string {
	return fmt.Sprintf("%s: attestation.%s %s: sign it again or remove the attestation", e.Definition, e.Field, e.Reason)
}

// Payload returns the bytes a signature covers: the canonical JSON of d
// completed as the registry completes it, without its attestation and its
// lifecycle fields (see the package documentation for the exact rules). d
// is not modified.
func Payload(d *capability.Definition) ([]byte, error) {
	c := clone(d)
	c.Normalize()
	c.ApplyInference(inferenceSource(&c))
	c.Attestation = nil
	c.Stability, c.DeprecatedBy, c.SunsetDate, c.MigrationGuide = "", "", "", ""
	if c.Provenance != nil {
		p := *c.Provenance
		p.CreatedAt = ""
		c.Provenance = &p
		if p.Method == "" && p.SourceURL == "" && p.CapabilityType == "" && p.IntrospectorVersion == "" && len(p.Extra) == 0 {
			c.Provenance = nil
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot encode the definition as JSON to sign or verify it: %w", describe(d), err)
	}
	canon, err := audit.Canonicalize(b)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot put the definition in canonical JSON to sign or verify it: %w", describe(d), err)
	}
	return canon, nil
}

// inferenceSource is where the registry starts domain inference from (see
// registry.RegisterBatch): for an mcp: URI the server of its MCP binding,
// otherwise the declared domain.
func inferenceSource(d *capability.Definition) string {
	if strings.HasPrefix(d.URI, capability.SchemeMCP+":") && d.Bindings.MCP != nil && d.Bindings.MCP.Server != "" {
		return d.Bindings.MCP.Server
	}
	return d.Domain
}

// Sign signs d with priv and sets d.Attestation to {keyID, "ed25519",
// base64url(signature)}, replacing any attestation d had. keyID must be
// KeyID of priv's public key, or empty for that. Sign also fills d.Domains
// and d.Categories when they are empty, with the values the registry would
// infer, so that the signed definition states all that is signed.
func Sign(d *capability.Definition, priv ed25519.PrivateKey, keyID string) error {
	if len(priv) != ed25519.PrivateKeySize {
		return fmt.Errorf("sign %s: an ed25519 private key has %d bytes, not %d", describe(d), ed25519.PrivateKeySize, len(priv))
	}
	own := KeyID(priv.Public().(ed25519.PublicKey))
	if keyID == "" {
		keyID = own
	}
	if keyID != own {
		return fmt.Errorf("sign %s: key id %q is not the id of this private key (%s): pass %s, or an empty id", describe(d), keyID, own, own)
	}
	payload, err := Payload(d)
	if err != nil {
		return err
	}
	d.ApplyInference(inferenceSource(d))
	sig := ed25519.Sign(priv, payload)
	d.Attestation = &capability.Attestation{KeyID: keyID, Algorithm: Algorithm, Signature: base64.RawURLEncoding.EncodeToString(sig)}
	return nil
}

// Verify checks d's attestation against the trusted keys. It returns nil
// when the signature is valid and made by a key of keys; otherwise an error
// wrapping ErrUnsigned (no attestation), or a *MalformedAttestationError,
// *UnsupportedAlgorithmError, *UnknownKeyError or *BadSignatureError.
func Verify(d *capability.Definition, keys KeyRing) error {
	a := d.Attestation
	if a == nil {
		return fmt.Errorf("%s: %w: it has no attestation", describe(d), ErrUnsigned)
	}
	if a.Algorithm == "" {
		return &MalformedAttestationError{Definition: describe(d), Field: "algorithm", Reason: "is missing: it must be " + Algorithm}
	}
	if !strings.EqualFold(a.Algorithm, Algorithm) {
		return &UnsupportedAlgorithmError{Definition: describe(d), Algorithm: a.Algorithm}
	}
	if a.KeyID == "" {
		return &MalformedAttestationError{Definition: describe(d), Field: "key_id", Reason: "is missing: it names the signing key (" + Algorithm + ":<16 hex digits>)"}
	}
	sig, err := decodeSignature(a.Signature)
	if err != nil {
		return &MalformedAttestationError{Definition: describe(d), Field: "signature", Reason: err.Error()}
	}
	pub, ok := keys[a.KeyID]
	if !ok {
		return &UnknownKeyError{Definition: describe(d), KeyID: a.KeyID}
	}
	payload, err := Payload(d)
	if err != nil {
		return err
	}
	if len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, payload, sig) {
		return &BadSignatureError{Definition: describe(d), KeyID: a.KeyID}
	}
	return nil
}

// decodeSignature reads a base64url signature, with or without padding.
func decodeSignature(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("is missing")
	}
	sig, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, fmt.Errorf("is not base64url (RFC 4648 §5: A-Z a-z 0-9 - _): %v", err)
	}
	if len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("decodes to %d bytes: an %s signature has %d", len(sig), Algorithm, ed25519.SignatureSize)
	}
	return sig, nil
}

// describe names a definition in messages: its URI and full version.
func describe(d *capability.Definition) string {
	uri := d.URI
	if uri == "" {
		uri = "capability " + d.Domain + "/" + d.Name
	}
	if d.Version != "" {
		return uri + " (version " + d.Version + ")"
	}
	return uri
}

// clone returns a copy of d that shares no map or slice that Normalize
// writes to, so that Payload leaves its argument alone (and is safe to call
// on a definition other goroutines read).
func clone(d *capability.Definition) capability.Definition {
	c := *d
	c.Input = cloneMap(d.Input)
	c.Output = cloneMap(d.Output)
	c.Metadata = cloneMap(d.Metadata)
	c.Extra = cloneMap(d.Extra)
	if d.Errors != nil {
		c.Errors = make([]capability.ErrorDef, len(d.Errors))
		for i, e := range d.Errors {
			e.Extra = cloneMap(e.Extra)
			c.Errors[i] = e
		}
	}
	if d.Examples != nil {
		c.Examples = make([]capability.Example, len(d.Examples))
		for i, e := range d.Examples {
			e.Input, e.Output, e.Extra = capability.CloneValue(e.Input), capability.CloneValue(e.Output), cloneMap(e.Extra)
			c.Examples[i] = e
		}
	}
	b := &c.Bindings
	b.Extra = cloneMap(b.Extra)
	b.Native = clonePtr(b.Native, func(x *capability.NativeBinding) { x.Extra = cloneMap(x.Extra) })
	b.MCP = clonePtr(b.MCP, func(x *capability.MCPBinding) { x.Extra = cloneMap(x.Extra) })
	b.HTTP = clonePtr(b.HTTP, func(x *capability.HTTPBinding) {
		x.Extra = cloneMap(x.Extra)
		x.Auth = clonePtr(x.Auth, func(a *capability.HTTPAuth) { a.Extra = cloneMap(a.Extra) })
	})
	b.GRPC = clonePtr(b.GRPC, func(x *capability.GRPCBinding) { x.Extra = cloneMap(x.Extra) })
	b.CLI = clonePtr(b.CLI, func(x *capability.CLIBinding) { x.Extra = cloneMap(x.Extra) })
	b.Delegation = clonePtr(b.Delegation, func(x *capability.DelegationBinding) { x.Extra = cloneMap(x.Extra) })
	c.Display = clonePtr(c.Display, func(x *capability.Display) { x.Extra = cloneMap(x.Extra) })
	c.Attestation = clonePtr(c.Attestation, func(x *capability.Attestation) { x.Extra = cloneMap(x.Extra) })
	c.Provenance = clonePtr(c.Provenance, func(x *capability.Provenance) { x.Extra = cloneMap(x.Extra) })
	return c
}

// clonePtr copies *p (nil stays nil) and lets deep copy what it holds.
func clonePtr[T any](p *T, deep func(*T)) *T {
	if p == nil {
		return nil
	}
	c := *p
	deep(&c)
	return &c
}

// cloneMap deep-copies m (nil stays nil).
func cloneMap(m map[string]any) map[string]any {
	return capability.CloneValue(m).(map[string]any)
}
