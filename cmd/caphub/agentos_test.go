package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

const agentosTestdata = "../../format/agentos/testdata/"

// TestImportAgentOS imports the seed's WhatsApp manifest and a manifest with
// one broken capability, then finds both apps' capabilities by intent.
func TestImportAgentOS(t *testing.T) {
	db := filepath.Join(t.TempDir(), "caphub.db")

	code, out, errOut := caphub(t, "import", "agentos", agentosTestdata+"whatsapp.json", "--db", db)
	if code != 0 || !strings.Contains(out, "2 imported, 0 failed") ||
		!strings.Contains(out, "registered ossa:com-whatsapp/send_message@1.0 (1.0.0)") ||
		!strings.Contains(out, "registered ossa:com-whatsapp/start_call@1.0 (1.0.0)") {
		t.Fatalf("import whatsapp.json: exit %d\n%s%s", code, out, errOut)
	}

	code, out, errOut = caphub(t, "import", "agentos", agentosTestdata+"broken.json", "--db", db)
	wantFailure := "failed: " + agentosTestdata + "broken.json:54:19: capabilities[1] (schedule_message): inputs[2].type: \"integer\" is not an Agent OS DataType"
	if code != 1 || !strings.Contains(out, "2 imported, 1 failed") || !strings.Contains(out, wantFailure) {
		t.Fatalf("import broken.json: exit %d, want 1 with %q\n%s%s", code, wantFailure, out, errOut)
	}

	code, out, errOut = caphub(t, "capability", "search", "", "--intent", "messaging.send_text", "--db", db)
	if code != 0 || !strings.Contains(out, "ossa:com-whatsapp/send_message@1.0") ||
		!strings.Contains(out, "ossa:org-telegram-messenger/send_message@1.0") || !strings.Contains(out, "2 of 2") {
		t.Fatalf("search --intent messaging.send_text: exit %d\n%s%s", code, out, errOut)
	}

	// What was stored keeps the device handler and the vault key.
	code, out, errOut = caphub(t, "capability", "search", "", "--intent", "messaging.start_call", "--view", "full", "--db", db)
	if code != 0 {
		t.Fatalf("search --view full: exit %d\n%s%s", code, out, errOut)
	}
	var page struct {
		Items []struct {
			URI      string                    `json:"uri"`
			Bindings map[string]map[string]any `json:"bindings"`
			Input    struct {
				Properties map[string]map[string]any `json:"properties"`
			} `json:"input"`
			UIRequired bool `json:"ui_required"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(page.Items) != 2 {
		t.Fatalf("messaging.start_call: %d capabilities, want 2 (WhatsApp and Telegram)\n%s", len(page.Items), out)
	}
	for _, it := range page.Items {
		b, ok := it.Bindings["deeplink"]
		if !ok || b["executable_on_server"] != false || !strings.Contains(b["target"].(string), "{{recipient.") {
			t.Errorf("%s: bindings %v, want the deeplink handler marked executable_on_server: false", it.URI, it.Bindings)
		}
		if it.Input.Properties["recipient"]["x-vault-key"] != "contacts" || !it.UIRequired {
			t.Errorf("%s: recipient %v ui_required %v", it.URI, it.Input.Properties["recipient"], it.UIRequired)
		}
	}

	// A changed manifest goes in as a new version.
	code, out, errOut = caphub(t, "import", "agentos", agentosTestdata+"whatsapp.json", "--set-version", "1.1.0", "--db", db)
	if code != 0 || !strings.Contains(out, "registered ossa:com-whatsapp/send_message@1.1 (1.1.0)") {
		t.Fatalf("import --set-version 1.1.0: exit %d\n%s%s", code, out, errOut)
	}
}

func TestImportAgentOSUnreadable(t *testing.T) {
	db := filepath.Join(t.TempDir(), "caphub.db")
	bad := writeFile(t, "capabilities.json", "{\n  \"manifestVersion\": \"1.0\",\n  \"package\": \"com.example\"\n  \"capabilities\": []\n}\n")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"invalid JSON", []string{bad}, 1, bad + ":4:3: invalid JSON: invalid character '\"' after object key:value pair"},
		{"missing file", []string{filepath.Join(t.TempDir(), "none.json")}, 1, "none.json: no such file"},
		{"bad version", []string{agentosTestdata + "whatsapp.json", "--set-version", "one"}, 1, "the version to import as"},
		{"no file", nil, 2, "needs the manifest FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"import", "agentos"}, tt.args...)
			code, out, errOut := caphub(t, append(args, "--db", db)...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, want %d with %q\n%s%s", code, tt.code, tt.want, out, errOut)
			}
		})
	}
}
