package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const echoYAML = `# an echo capability
capability:
  uri: ossa:test/echo@1.0
  name: echo
  domain: test
  version: 1.0.0
  description: Echo the input
  input:
    type: object
    properties:
      text: {type: string, maxLength: 100}
  output: {type: object}
  errors:
    - {code: TOO_LONG, description: text too long, retryable: false}
  bindings:
    native: {handler: echo}
`

// keygen makes a key pair in a new directory and returns its .key, .pub and id.
func keygen(t *testing.T, name string) (string, string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keys")
	code, out, errOut := caphub(t, "key", "generate", "--out", dir, "--name", name, "--format", "json")
	if code != 0 {
		t.Fatalf("key generate: exit %d\n%s%s", code, out, errOut)
	}
	var k struct{ KeyID, PrivateKey, PublicKey string }
	if err := json.Unmarshal([]byte(strings.ReplaceAll(out, "_", "")), &k); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if k.PrivateKey != filepath.Join(dir, name+".key") || k.PublicKey != filepath.Join(dir, name+".pub") || !strings.HasPrefix(k.KeyID, "ed25519:") {
		t.Fatalf("key generate --format json: %s", out)
	}
	return k.PrivateKey, k.PublicKey, k.KeyID
}

func TestKeyGenerate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	code, out, errOut := caphub(t, "key", "generate", "--out", dir)
	if code != 0 || !strings.Contains(out, "key id:      ed25519:") || !strings.Contains(out, filepath.Join(dir, "signing.key")) {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if runtime.GOOS != "windows" {
		if st, err := os.Stat(filepath.Join(dir, "signing.key")); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("private key mode: %v %v", st.Mode(), err)
		}
	}
	code, _, errOut = caphub(t, "key", "generate", "--out", dir)
	if code != 1 || !strings.Contains(errOut, "already exists") {
		t.Errorf("second generate: exit %d, %s", code, errOut)
	}
	code, _, errOut = caphub(t, "key", "generate")
	if code != 2 || !strings.Contains(errOut, "--out DIR is required") {
		t.Errorf("generate without --out: exit %d, %s", code, errOut)
	}
}

func TestSignAndVerify(t *testing.T) {
	key, pub, id := keygen(t, "alice")
	_, otherPub, _ := keygen(t, "mallory")
	file := writeFile(t, "echo.yaml", echoYAML)

	code, out, errOut := caphub(t, "capability", "sign", file, "--key", key)
	if code != 0 || !strings.Contains(out, "signed    ossa:test/echo@1.0 (1.0.0) with key "+id) || !strings.Contains(out, "wrote "+file+" (1 capability, yaml)") {
		t.Fatalf("sign: exit %d\n%s%s", code, out, errOut)
	}
	data, _ := os.ReadFile(file)
	if !bytes.Contains(data, []byte("attestation:\n    key_id: "+id)) || !bytes.Contains(data, []byte("algorithm: ed25519")) || !bytes.Contains(data, []byte("domains:")) {
		t.Errorf("signed file:\n%s", data)
	}

	code, out, errOut = caphub(t, "capability", "verify", file, "--trusted", pub)
	if code != 0 || !strings.Contains(out, file+": ok: ossa:test/echo@1.0 (1.0.0) verified with key "+id) || !strings.Contains(out, "1 verified, 0 failed") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	// A trusted-keys directory, and the environment variable.
	t.Setenv(envTrustedKeys, filepath.Dir(pub))
	if code, out, _ = caphub(t, "capability", "verify", file); code != 0 {
		t.Errorf("verify with $%s: exit %d\n%s", envTrustedKeys, code, out)
	}
	t.Setenv(envTrustedKeys, "")

	// Not a trusted key.
	code, out, _ = caphub(t, "capability", "verify", file, "--trusted", otherPub)
	if code != 1 || !strings.Contains(out, "FAILED: ossa:test/echo@1.0 (version 1.0.0) is signed by key "+id+", which is not among the trusted keys") {
		t.Errorf("verify with another key: exit %d\n%s", code, out)
	}

	// Lifecycle fields may change; anything else may not.
	deprecated := strings.Replace(string(data), "  version: 1.0.0\n", "  version: 1.0.0\n  stability: deprecated\n  deprecated_by: ossa:test/echo@2.0\n  sunset_date: \"2027-01-01\"\n", 1)
	dep := writeFile(t, "deprecated.yaml", deprecated)
	if code, out, _ = caphub(t, "capability", "verify", dep, "--trusted", pub); code != 0 {
		t.Errorf("verify deprecated: exit %d\n%s", code, out)
	}
	for name, edit := range map[string][2]string{
		"description": {"Echo the input", "Echo the input loudly"},
		"schema":      {"maxLength: 100", "maxLength: 100000"},
		"binding":     {"handler: echo", "handler: shell"},
		"error code":  {"code: TOO_LONG", "code: LONG"},
	} {
		tampered := strings.Replace(string(data), edit[0], edit[1], 1)
		if tampered == string(data) {
			t.Fatalf("%s: %q not found in\n%s", name, edit[0], data)
		}
		p := writeFile(t, "tampered.yaml", tampered)
		code, out, _ = caphub(t, "capability", "verify", p, "--trusted", pub)
		if code != 1 || !strings.Contains(out, "does not match the definition: it was changed after it was signed") || !strings.Contains(out, "0 verified, 1 failed") {
			t.Errorf("verify after changing the %s: exit %d\n%s", name, code, out)
		}
	}

	// Unsigned, in JSON.
	unsigned := writeFile(t, "unsigned.yaml", echoYAML)
	code, out, _ = caphub(t, "capability", "verify", "--format", "json", file, unsigned, "--trusted", pub)
	var res struct {
		OK          bool
		TrustedKeys []string `json:"trusted_keys"`
		Results     []verifyResult
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 1 || res.OK || len(res.Results) != 2 ||
		!res.Results[0].Verified || res.Results[1].Verified || !strings.Contains(res.Results[1].Error, "not signed") || len(res.TrustedKeys) != 1 {
		t.Errorf("verify --format json: exit %d %v\n%s", code, err, out)
	}

	// Usage errors.
	if code, _, errOut = caphub(t, "capability", "verify", file); code != 2 || !strings.Contains(errOut, "--trusted DIR|FILE is required") {
		t.Errorf("verify without --trusted: exit %d %s", code, errOut)
	}
	if code, _, errOut = caphub(t, "capability", "sign", file); code != 2 || !strings.Contains(errOut, "--key PRIVATE.key is required") {
		t.Errorf("sign without --key: exit %d %s", code, errOut)
	}
}

// --out picks the format; re-signing with another key replaces the
// attestation; a JSON file stays JSON; the original is untouched.
func TestSignOutAndResign(t *testing.T) {
	key, pub, id := keygen(t, "alice")
	key2, pub2, id2 := keygen(t, "bob")
	file := writeFile(t, "echo.yaml", echoYAML)
	outJSON := filepath.Join(t.TempDir(), "echo.json")
	code, out, errOut := caphub(t, "capability", "sign", file, "--key", key, "--out", outJSON)
	if code != 0 || !strings.Contains(out, "(1 capability, json)") {
		t.Fatalf("sign --out: exit %d\n%s%s", code, out, errOut)
	}
	if data, _ := os.ReadFile(file); string(data) != echoYAML {
		t.Error("sign --out changed the input file")
	}
	data, _ := os.ReadFile(outJSON)
	if !bytes.HasPrefix(data, []byte("{")) {
		t.Fatalf("not JSON:\n%s", data)
	}
	code, out, errOut = caphub(t, "capability", "sign", outJSON, "--key", key2, "--format", "json")
	var res struct {
		File   string
		KeyID  string `json:"key_id"`
		Signed []signedEntry
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.KeyID != id2 || len(res.Signed) != 1 || res.Signed[0].PreviousBy != id {
		t.Fatalf("re-sign: exit %d %v\n%s%s", code, err, out, errOut)
	}
	if data, _ := os.ReadFile(outJSON); !bytes.HasPrefix(data, []byte("{")) {
		t.Errorf("a JSON file was not rewritten as JSON:\n%s", data)
	}
	if code, out, _ = caphub(t, "capability", "verify", outJSON, "--trusted", pub2); code != 0 {
		t.Errorf("verify with the new key: exit %d\n%s", code, out)
	}
	if code, _, _ = caphub(t, "capability", "verify", outJSON, "--trusted", pub); code != 1 {
		t.Errorf("verify with the replaced key: exit %d", code)
	}
}

func TestSignRefusesWhatItCannotWriteBack(t *testing.T) {
	key, _, _ := keygen(t, "alice")
	for name, c := range map[string]struct{ content, want string }{
		"invalid":    {strings.Replace(echoYAML, "handler: echo", "handler: ''", 1), "is not valid"},
		"unreadable": {"capabilities:\n  - {uri: ossa:test/echo@1.0, name: echo, domain: test, version: 1.0.0, input: {type: object}, output: {type: object}, bindings: {native: {handler: echo}}}\n  - 42\n", "cannot be read"},
		"index":      {"registry:\n  version: '1'\n  capabilities:\n    - uri: ossa:test/echo@1.0\n", "registry index"},
	} {
		p := writeFile(t, name+".yaml", c.content)
		code, _, errOut := caphub(t, "capability", "sign", p, "--key", key)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d\n%s", name, code, errOut)
		}
		if data, _ := os.ReadFile(p); string(data) != c.content {
			t.Errorf("%s: the file was changed", name)
		}
	}
	// A public key is not a signing key.
	_, pub, _ := keygen(t, "bob")
	p := writeFile(t, "echo.yaml", echoYAML)
	if code, _, errOut := caphub(t, "capability", "sign", p, "--key", pub); code != 1 || !strings.Contains(errOut, "is a public key") {
		t.Errorf("sign with a .pub: exit %d %s", code, errOut)
	}
	// A world-readable key signs, with a warning.
	if runtime.GOOS != "windows" {
		os.Chmod(key, 0o644)
		if code, _, errOut := caphub(t, "capability", "sign", p, "--key", key); code != 0 || !strings.Contains(errOut, "chmod 600 "+key) {
			t.Errorf("sign with an open key: exit %d %s", code, errOut)
		}
	}
}

// Signed OSSA corpus files register, and a deprecated registered version
// still verifies when exported back from the registry.
func TestSignCorpusAndRegister(t *testing.T) {
	needCorpus(t)
	key, pub, _ := keygen(t, "alice")
	data, err := os.ReadFile(memoryYAML)
	if err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, "memory.yaml", string(data))
	code, out, errOut := caphub(t, "capability", "sign", file, "--key", key)
	if code != 0 || strings.Count(out, "signed ") != 4 {
		t.Fatalf("sign memory.yaml: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ = caphub(t, "capability", "verify", file, "--trusted", pub); code != 0 || !strings.Contains(out, "4 verified, 0 failed") {
		t.Fatalf("verify memory.yaml: exit %d\n%s", code, out)
	}
	db := filepath.Join(t.TempDir(), "caphub.db")
	// Registration verifies attestations: an untrusted signer is refused,
	// a trusted one registers.
	if code, _, errOut = caphub(t, "capability", "register", file, "--db", db); code != 1 || !strings.Contains(errOut, "not among the trusted keys") {
		t.Fatalf("register with an untrusted signer: exit %d\n%s", code, errOut)
	}
	t.Setenv("CAPHUB_TRUSTED_KEYS", pub)
	if code, out, errOut = caphub(t, "capability", "register", file, "--db", db); code != 0 || strings.Count(out, "registered ") != 4 {
		t.Fatalf("register: exit %d\n%s%s", code, out, errOut)
	}
	// A signed definition changed after signing is refused.
	tampered := writeFile(t, "tampered.yaml", strings.Replace(mustRead(t, file), "Query the knowledge graph", "Query the knowledge GRAPH", 1))
	if code, _, errOut = caphub(t, "capability", "register", tampered, "--db", filepath.Join(t.TempDir(), "other.db")); code != 1 || !strings.Contains(errOut, "kg_query") {
		t.Fatalf("register a tampered signed definition: exit %d\n%s", code, errOut)
	}
	if code, out, errOut = caphub(t, "capability", "deprecate", "ossa:memory/kg_query@1.0", "--by", "ossa:memory/context_fusion@1.0", "--guide", "use context_fusion", "--db", db); code != 0 {
		t.Fatalf("deprecate: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = caphub(t, "capability", "show", "ossa:memory/kg_query@1.0", "--format", "json", "--db", db)
	if code != 0 {
		t.Fatalf("show: exit %d\n%s", code, out)
	}
	var shown map[string]any
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatal(err)
	}
	def := findDefinition(shown)
	if def == nil || def["stability"] != "deprecated" {
		t.Fatalf("no deprecated definition in show --format json:\n%s", out)
	}
	b, _ := json.Marshal(map[string]any{"capability": def})
	exported := writeFile(t, "exported.json", string(b))
	if code, out, _ = caphub(t, "capability", "verify", exported, "--trusted", pub); code != 0 {
		t.Errorf("verify the deprecated, registered version: exit %d\n%s", code, out)
	}
}

// findDefinition finds the first object with an attestation in decoded JSON.
func findDefinition(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["attestation"]; ok {
			return x
		}
		for _, e := range x {
			if d := findDefinition(e); d != nil {
				return d
			}
		}
	case []any:
		for _, e := range x {
			if d := findDefinition(e); d != nil {
				return d
			}
		}
	}
	return nil
}

func TestSigningHelp(t *testing.T) {
	for _, args := range [][]string{{"key"}, {"key", "generate"}, {"capability", "sign"}, {"capability", "verify"}} {
		code, out, _ := caphub(t, append(args, "--help")...)
		if code != 0 || !strings.Contains(out, "Examples:\n  caphub "+strings.Join(args, " ")) {
			t.Errorf("%v --help: exit %d\n%s", args, code, out)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
