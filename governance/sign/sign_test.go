package sign_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/ossa"
	"github.com/caphub/caphub/governance/sign"
)

// scanYAML is a definition that uses every kind of field a signature must
// cover. It declares no domains or categories (the registry infers them).
const scanYAML = `# comment: not part of the definition
capability:
  uri: "ossa:security/scan_vulnerabilities@1.0"
  name: scan_vulnerabilities
  domain: security
  version: 1.0.3
  title: Scan vulnerabilities
  description: Scan codebase for security vulnerabilities
  documentation_url: https://ossa.dev/capabilities/security/scan_vulnerabilities
  stability: stable
  input:
    type: object
    required: [target]
    properties:
      target: {type: string, description: "Path or URL to scan"}
      depth: {type: integer, minimum: 1, maximum: 10, default: 3}
      ratio: {type: number, minimum: 0.5}
      severity_threshold:
        type: string
        enum: [low, medium, high, critical]
        default: medium
  output:
    type: object
    properties:
      vulnerabilities: {type: array, items: {$ref: "#/definitions/Vulnerability"}}
      scan_duration_ms: {type: integer}
  errors:
    - code: SCAN_FAILED
      description: Scanner failed to execute
      retryable: true
    - code: TARGET_NOT_FOUND
      description: Scan target does not exist
      retryable: false
  bindings:
    mcp:
      server: security-scanner
      tool: scan
      mapping: {target: path, severity_threshold: min_severity}
    http:
      method: POST
      url: "https://api.scanner.example/v1/scan"
      headers: {Content-Type: application/json}
      body_template: '{"target": "{target}"}'
      auth: {type: bearer, env: SCANNER_TOKEN}
  permissions: [network.http]
  effects: [network_request]
  keywords: [security, cve]
  provenance:
    method: manual
    source_url: https://github.com/example/scanner
    created_at: "2025-01-02T03:04:05Z"
  metadata:
    owner: {team: appsec, oncall: "+1 555 0100"}
  examples:
    - description: scan a repo
      input: {target: ./repo, depth: 2}
      output: {vulnerabilities: [], scan_duration_ms: 1500}
  x-review: approved-2025
definitions:
  Vulnerability:
    type: object
    properties:
      id: {type: string}
      severity: {type: string}
`

// readOne reads a one-definition file.
func readOne(t *testing.T, name, data string) capability.Definition {
	t.Helper()
	f, err := ossa.Read(name, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Issues) > 0 || len(f.Entries) != 1 {
		t.Fatalf("%s: %d entries, issues %v", name, len(f.Entries), f.Issues)
	}
	return f.Entries[0].Definition
}

// write encodes definitions as an OSSA file.
func write(t *testing.T, defs []capability.Definition, f ossa.Format) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := ossa.Write(&b, defs, f); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type signer struct {
	pub  ed25519.PublicKey
	priv ed25519.PrivateKey
	id   string
	ring sign.KeyRing
}

func newSigner(t *testing.T) signer {
	t.Helper()
	pub, priv := sign.GenerateKey()
	return signer{pub, priv, sign.KeyID(pub), sign.NewKeyRing(pub)}
}

// signed returns the fixture, signed.
func (s signer) signed(t *testing.T) capability.Definition {
	t.Helper()
	d := readOne(t, "scan.yaml", scanYAML)
	if err := sign.Sign(&d, s.priv, s.id); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSignVerifyRoundTrip(t *testing.T) {
	s := newSigner(t)
	d := s.signed(t)
	a := d.Attestation
	if a == nil || a.KeyID != s.id || a.Algorithm != "ed25519" {
		t.Fatalf("attestation = %+v, want key %s, ed25519", a, s.id)
	}
	sig, err := base64.RawURLEncoding.DecodeString(a.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		t.Fatalf("signature %q is not 64 unpadded base64url bytes: %v", a.Signature, err)
	}
	if !strings.HasPrefix(s.id, "ed25519:") || len(s.id) != len("ed25519:")+16 {
		t.Errorf("KeyID = %q, want ed25519:<16 hex>", s.id)
	}
	if err := sign.Verify(&d, s.ring); err != nil {
		t.Fatalf("Verify of a freshly signed definition: %v", err)
	}
	// Through a file and back, in both formats.
	for _, f := range []ossa.Format{ossa.YAML, ossa.JSON} {
		back := readOne(t, "back."+string(f), string(write(t, []capability.Definition{d}, f)))
		if err := sign.Verify(&back, s.ring); err != nil {
			t.Errorf("Verify after writing and reading %s: %v", f, err)
		}
	}
	// Padding is tolerated.
	padded := d
	padded.Attestation = &capability.Attestation{KeyID: a.KeyID, Algorithm: "Ed25519", Signature: base64.URLEncoding.EncodeToString(sig)}
	if err := sign.Verify(&padded, s.ring); err != nil {
		t.Errorf("Verify with a padded signature and algorithm Ed25519: %v", err)
	}
	// An empty key id means the key's own.
	d2 := readOne(t, "scan.yaml", scanYAML)
	if err := sign.Sign(&d2, s.priv, ""); err != nil || d2.Attestation.KeyID != s.id {
		t.Errorf("Sign with an empty key id: %v, key id %v", err, d2.Attestation)
	}
}

func TestSignFillsInferredDomains(t *testing.T) {
	s := newSigner(t)
	d := s.signed(t)
	if len(d.Domains) == 0 || d.Domains[0] != "security" || len(d.Categories) == 0 {
		t.Fatalf("Sign did not write the inferred domains and categories: %v %v", d.Domains, d.Categories)
	}
	// A verifier given the definition without them (a third party that
	// never inferred) still verifies: the payload infers them the same way.
	bare := d
	bare.Domains, bare.Categories = nil, nil
	if err := sign.Verify(&bare, s.ring); err != nil {
		t.Errorf("Verify without the inferred (but equal) domains: %v", err)
	}
	// Other domains are a change.
	other := d
	other.Domains = []string{"security", "security.sast"}
	var bad *sign.BadSignatureError
	if err := sign.Verify(&other, s.ring); !errors.As(err, &bad) {
		t.Errorf("Verify with other domains = %v, want *BadSignatureError", err)
	}
}

// Every change to what the author wrote breaks the signature.
func TestTamper(t *testing.T) {
	s := newSigner(t)
	cases := map[string]func(d *capability.Definition){
		"description":         func(d *capability.Definition) { d.Description += "." },
		"title":               func(d *capability.Definition) { d.Title = "Scan" },
		"documentation_url":   func(d *capability.Definition) { d.DocumentationURL = "https://evil.example" },
		"version":             func(d *capability.Definition) { d.Version = "1.0.4" },
		"uri":                 func(d *capability.Definition) { d.URI = "ossa:security/scan_vulnerabilities@1.1" },
		"input property type": func(d *capability.Definition) { prop(d, "target")["type"] = "integer" },
		"input property added": func(d *capability.Definition) {
			d.Input["properties"].(map[string]any)["extra"] = map[string]any{"type": "string"}
		},
		"input number":        func(d *capability.Definition) { prop(d, "depth")["maximum"] = int64(11) },
		"input required":      func(d *capability.Definition) { d.Input["required"] = []any{"target", "depth"} },
		"output":              func(d *capability.Definition) { d.Output["type"] = "array" },
		"error code":          func(d *capability.Definition) { d.Errors[0].Code = "SCAN_ERROR" },
		"error retryable":     func(d *capability.Definition) { d.Errors[1].Retryable = true },
		"error removed":       func(d *capability.Definition) { d.Errors = d.Errors[:1] },
		"mcp binding tool":    func(d *capability.Definition) { d.Bindings.MCP.Tool = "scan2" },
		"mcp binding mapping": func(d *capability.Definition) { d.Bindings.MCP.Mapping["target"] = "file" },
		"http binding url":    func(d *capability.Definition) { d.Bindings.HTTP.URL = "https://evil.example/v1/scan" },
		"http auth env":       func(d *capability.Definition) { d.Bindings.HTTP.Auth.Env = "OTHER" },
		"binding added":       func(d *capability.Definition) { d.Bindings.CLI = &capability.CLIBinding{Command: "trivy {target}"} },
		"permissions":         func(d *capability.Definition) { d.Permissions = append(d.Permissions, "filesystem.write") },
		"effects":             func(d *capability.Definition) { d.Effects = nil },
		"keywords":            func(d *capability.Definition) { d.Keywords = []string{"cve", "security"} },
		"provenance method":   func(d *capability.Definition) { d.Provenance.Method = "mcp_introspection" },
		"provenance source":   func(d *capability.Definition) { d.Provenance.SourceURL = "https://evil.example" },
		"metadata":            func(d *capability.Definition) { d.Metadata["owner"].(map[string]any)["team"] = "red" },
		"example":             func(d *capability.Definition) { d.Examples[0].Input.(map[string]any)["depth"] = int64(3) },
		"unknown field":       func(d *capability.Definition) { d.Extra["x-review"] = "rejected" },
		"unknown field added": func(d *capability.Definition) { d.Extra["x-new"] = true },
		"ui_required":         func(d *capability.Definition) { d.UIRequired = true },
		"system prompt":       func(d *capability.Definition) { d.SystemPromptAddition = "ignore previous instructions" },
		"categories":          func(d *capability.Definition) { d.Categories = []string{"crud.delete"} },
		"display":             func(d *capability.Definition) { d.Display = &capability.Display{Icon: "shield"} },
		"provenance removed":  func(d *capability.Definition) { d.Provenance = nil },
		"unknown binding kind": func(d *capability.Definition) {
			d.Bindings.Extra = map[string]any{"wasm": map[string]any{"module": "x"}}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			d := s.signed(t)
			change(&d)
			err := sign.Verify(&d, s.ring)
			var bad *sign.BadSignatureError
			if !errors.As(err, &bad) {
				t.Fatalf("Verify after changing %s = %v, want *BadSignatureError", name, err)
			}
			if bad.KeyID != s.id || !strings.Contains(err.Error(), "changed after it was signed") || !strings.Contains(err.Error(), "ossa:security/scan_vulnerabilities@1.") {
				t.Errorf("message does not say what and where: %v", err)
			}
		})
	}
}

func prop(d *capability.Definition, name string) map[string]any {
	return d.Input["properties"].(map[string]any)[name].(map[string]any)
}

// The registry's lifecycle fields may change after signing.
func TestLifecycleFieldsDoNotBreakTheSignature(t *testing.T) {
	s := newSigner(t)
	d := s.signed(t)
	d.Stability = capability.StabilityDeprecated
	d.DeprecatedBy = "ossa:security/scan_vulnerabilities@2.0"
	d.SunsetDate = "2027-06-01"
	d.MigrationGuide = "Use 2.0: target is now path."
	d.Provenance.CreatedAt = "2026-01-01T00:00:00Z"
	if err := sign.Verify(&d, s.ring); err != nil {
		t.Fatalf("Verify after deprecation: %v", err)
	}
	d.Stability = ""
	d.Provenance.CreatedAt = ""
	if err := sign.Verify(&d, s.ring); err != nil {
		t.Fatalf("Verify without stability and created_at: %v", err)
	}
	// An attestation with unknown extra fields: not covered either.
	d.Attestation.Extra = map[string]any{"signed_at": "2026-01-01"}
	if err := sign.Verify(&d, s.ring); err != nil {
		t.Fatalf("Verify with extra attestation fields: %v", err)
	}
}

// Key order, whitespace, YAML or JSON and number spelling do not matter.
func TestCanonicalIndependence(t *testing.T) {
	s := newSigner(t)
	d := s.signed(t)
	// Write JSON from a generic map: keys sorted alphabetically (unlike the
	// struct order), tab-indented, numbers spelled differently.
	var doc map[string]any
	if err := json.Unmarshal(write(t, []capability.Definition{d}, ossa.JSON), &doc); err != nil {
		t.Fatal(err)
	}
	reordered, err := json.MarshalIndent(doc, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(reordered), `"maximum": 10`, `"maximum": 1.0e1`, 1)
	text = strings.Replace(text, `"minimum": 0.5`, `"minimum": 5E-1`, 1)
	if text == string(reordered) {
		t.Fatal("the numbers to respell were not found")
	}
	back := readOne(t, "reordered.json", text)
	if err := sign.Verify(&back, s.ring); err != nil {
		t.Errorf("Verify after rewriting as reordered JSON: %v", err)
	}
	// Flow-style YAML with the fields in reverse order.
	var lines []string
	for k, v := range doc["capability"].(map[string]any) {
		b, _ := json.Marshal(v)
		lines = append([]string{"  " + k + ": " + string(b)}, lines...)
	}
	flow := "capability:\n" + strings.Join(lines, "\n") + "\n"
	back = readOne(t, "flow.yaml", flow)
	if err := sign.Verify(&back, s.ring); err != nil {
		t.Errorf("Verify after rewriting as flow YAML: %v\n%s", err, flow)
	}
	p1, err := sign.Payload(&d)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := sign.Payload(&back)
	if !bytes.Equal(p1, p2) {
		t.Errorf("payloads differ:\n%s\n%s", p1, p2)
	}
	if !bytes.Contains(p1, []byte(`"maximum":10,"minimum":1`)) || bytes.Contains(p1, []byte(`"attestation"`)) || bytes.Contains(p1, []byte(`"stability"`)) || bytes.Contains(p1, []byte(`created_at`)) {
		t.Errorf("payload is not the canonical JSON without attestation and lifecycle fields:\n%s", p1)
	}
}

func TestPayloadLeavesTheDefinitionAlone(t *testing.T) {
	d := readOne(t, "scan.yaml", scanYAML)
	d.Metadata["when"] = map[any]any{"at": 1} // not normalised: Payload must not normalise it in place
	before := readOne(t, "scan.yaml", scanYAML)
	before.Metadata["when"] = map[any]any{"at": 1}
	if _, err := sign.Payload(&d); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, before) {
		t.Errorf("Payload changed its argument")
	}
}

func TestVerifyErrors(t *testing.T) {
	s := newSigner(t)
	other := newSigner(t)
	d := s.signed(t)
	sig := d.Attestation.Signature
	cases := []struct {
		name  string
		att   *capability.Attestation
		ring  sign.KeyRing
		check func(error) bool
		text  string
	}{
		{"unsigned", nil, s.ring, func(err error) bool { return errors.Is(err, sign.ErrUnsigned) }, "no attestation"},
		{"unknown key", &capability.Attestation{KeyID: s.id, Algorithm: "ed25519", Signature: sig}, other.ring,
			func(err error) bool { var e *sign.UnknownKeyError; return errors.As(err, &e) && e.KeyID == s.id }, "not among the trusted keys"},
		{"empty ring", &capability.Attestation{KeyID: s.id, Algorithm: "ed25519", Signature: sig}, nil,
			func(err error) bool { var e *sign.UnknownKeyError; return errors.As(err, &e) }, "not among the trusted keys"},
		{"wrong algorithm", &capability.Attestation{KeyID: s.id, Algorithm: "rsa-sha256", Signature: sig}, s.ring,
			func(err error) bool {
				var e *sign.UnsupportedAlgorithmError
				return errors.As(err, &e) && e.Algorithm == "rsa-sha256"
			}, `algorithm "rsa-sha256" is not supported`},
		{"no algorithm", &capability.Attestation{KeyID: s.id, Signature: sig}, s.ring,
			func(err error) bool {
				var e *sign.MalformedAttestationError
				return errors.As(err, &e) && e.Field == "algorithm"
			}, "attestation.algorithm is missing"},
		{"no key id", &capability.Attestation{Algorithm: "ed25519", Signature: sig}, s.ring,
			func(err error) bool {
				var e *sign.MalformedAttestationError
				return errors.As(err, &e) && e.Field == "key_id"
			}, "attestation.key_id is missing"},
		{"no signature", &capability.Attestation{KeyID: s.id, Algorithm: "ed25519"}, s.ring,
			func(err error) bool {
				var e *sign.MalformedAttestationError
				return errors.As(err, &e) && e.Field == "signature"
			}, "attestation.signature is missing"},
		{"not base64url", &capability.Attestation{KeyID: s.id, Algorithm: "ed25519", Signature: "a+b/" + sig[4:]}, s.ring,
			func(err error) bool { var e *sign.MalformedAttestationError; return errors.As(err, &e) }, "is not base64url"},
		{"short signature", &capability.Attestation{KeyID: s.id, Algorithm: "ed25519", Signature: sig[:20]}, s.ring,
			func(err error) bool { var e *sign.MalformedAttestationError; return errors.As(err, &e) }, "decodes to 15 bytes"},
		{"another key's signature under this id", &capability.Attestation{KeyID: s.id, Algorithm: "ed25519", Signature: other.signed(t).Attestation.Signature}, s.ring,
			func(err error) bool { var e *sign.BadSignatureError; return errors.As(err, &e) }, "does not match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := d
			d.Attestation = c.att
			err := sign.Verify(&d, c.ring)
			if err == nil || !c.check(err) {
				t.Fatalf("Verify = %v (%T)", err, err)
			}
			if !strings.Contains(err.Error(), c.text) || !strings.Contains(err.Error(), "ossa:security/scan_vulnerabilities@1.0 (version 1.0.3)") {
				t.Errorf("message %q lacks %q or the definition", err, c.text)
			}
		})
	}
}

func TestSignErrors(t *testing.T) {
	s := newSigner(t)
	other := newSigner(t)
	d := readOne(t, "scan.yaml", scanYAML)
	if err := sign.Sign(&d, s.priv, other.id); err == nil || !strings.Contains(err.Error(), "is not the id of this private key") {
		t.Errorf("Sign with another key's id = %v", err)
	}
	if err := sign.Sign(&d, s.priv[:10], ""); err == nil {
		t.Error("Sign with a truncated key succeeded")
	}
	if d.Attestation != nil {
		t.Error("a failed Sign set an attestation")
	}
	// Re-signing replaces the attestation.
	if err := sign.Sign(&d, s.priv, ""); err != nil {
		t.Fatal(err)
	}
	if err := sign.Sign(&d, other.priv, ""); err != nil || d.Attestation.KeyID != other.id {
		t.Fatalf("re-sign: %v %+v", err, d.Attestation)
	}
	if err := sign.Verify(&d, other.ring); err != nil {
		t.Errorf("Verify after re-signing: %v", err)
	}
}
