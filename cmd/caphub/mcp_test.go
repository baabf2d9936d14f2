package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeMCPLargeCatalogFlags runs caphub serve with the built-ins past
// --mcp-max-tools: /mcp serves the search tools, or with
// --mcp-large-catalog refuse answers tools/list with the refusal; 0 lifts
// the limit.
func TestServeMCPLargeCatalogFlags(t *testing.T) {
	list := func(t *testing.T, flags ...string) ([]string, error) {
		t.Helper()
		p := startServe(t, t.TempDir()+"/c.db", flags...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "cmd-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp"}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, p.logs)
		}
		defer cs.Close()
		var names []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return names, err
			}
			names = append(names, tool.Name)
		}
		return names, nil
	}
	t.Run("search", func(t *testing.T) {
		names, err := list(t, "--mcp-max-tools", "10")
		if err != nil || len(names) != 3 || !strings.Contains(strings.Join(names, " "), mcpgw.ToolDescribeCapability) {
			t.Errorf("past --mcp-max-tools 10: %v, %v; want the search tools", names, err)
		}
	})
	t.Run("refuse", func(t *testing.T) {
		t.Setenv(envMCPLargeCatalog, "refuse")
		_, err := list(t, "--mcp-max-tools", "10")
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != mcpgw.CodeCatalogTooLarge {
			t.Errorf("past --mcp-max-tools 10 with $%s=refuse: %v, want the refusal", envMCPLargeCatalog, err)
		}
	})
	t.Run("no limit", func(t *testing.T) {
		names, err := list(t, "--mcp-max-tools", "0")
		if err != nil || len(names) < 20 {
			t.Errorf("--mcp-max-tools 0: %d tools, %v; want every built-in", len(names), err)
		}
	})
}

// TestMCPServerBridges checks that caphub mcp with a server (--server or
// $CAPHUB_SERVER) serves that server's /mcp over stdio, never a local
// database: the official TypeScript SDK client and the MCP Inspector CLI,
// each starting the real binary, see a capability registered only on the
// server and call a tool through it; no database appears in the working
// directory; without the token a call gets an answer that says to set
// CAPHUB_TOKEN; flags that shape a local catalog are refused.
func TestMCPServerBridges(t *testing.T) {
	db := filepath.Join(t.TempDir(), "server.db")
	code, out, errOut := caphub(t, "token", "create", "bridge", "--scope", "read", "--scope", "invoke", "--db", db)
	if code != 0 {
		t.Fatalf("token create: exit %d\n%s", code, errOut)
	}
	secret := strings.TrimSpace(out)
	if code, _, errOut := caphub(t, "capability", "register", writeFile(t, "echo.yaml", echoYAML), "--db", db); code != 0 {
		t.Fatalf("register: exit %d\n%s", code, errOut)
	}
	p := startServe(t, db)
	bin := caphubBinary(t)
	cwd := t.TempDir() // each client starts caphub mcp here

	t.Run("TypeScript SDK client", func(t *testing.T) {
		t.Setenv("CAPHUB_TOKEN", secret)
		cmdJSON, _ := json.Marshal([]string{"sh", "-c", `cd "$1" && exec "$2" mcp --server "$3"`, "sh", cwd, bin, p.url})
		run := testpeers.TSClient(t, "stdio:"+string(cmdJSON), map[string]any{"name": "everruns_add", "arguments": map[string]any{"a": 2, "b": 3}})
		if !slices.Contains(run.Tools, "test_echo") || len(run.Calls) != 1 || !strings.Contains(string(run.Calls[0]), `"result":5`) {
			t.Fatalf("through caphub mcp --server: tools %v, calls %s; want the server's test_echo and 2+3=5\nserver:\n%s", run.Tools, run.Calls, p.logs)
		}
	})
	t.Run("MCP Inspector CLI", func(t *testing.T) {
		out, errOut, err := testpeers.Inspector(t, "-e", "CAPHUB_SERVER="+p.url, "-e", "CAPHUB_TOKEN="+secret, "--cwd", cwd, "--method", "tools/list", bin, "mcp")
		if err != nil || !strings.Contains(out, `"test_echo"`) {
			t.Fatalf("Inspector through caphub mcp with $CAPHUB_SERVER: %v\nstdout:\n%.2000s\nstderr:\n%.2000s", err, out, errOut)
		}
	})
	t.Run("no token", func(t *testing.T) {
		c := exec.Command(bin, "mcp", "--server", p.url)
		c.Env, c.Dir = append(os.Environ(), "CAPHUB_TOKEN="), cwd
		c.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
		got, err := c.Output()
		if err != nil || !strings.Contains(string(got), `"id":1,"error"`) || !strings.Contains(string(got), "401") || !strings.Contains(string(got), "CAPHUB_TOKEN") {
			t.Fatalf("initialize without a token: %v\n%s; want a JSON-RPC error naming 401 and CAPHUB_TOKEN", err, got)
		}
	})
	t.Run("local flags refused", func(t *testing.T) {
		code, _, errOut := caphub(t, "mcp", "--server", p.url, "--tool-mode", "search")
		if code != 2 || !strings.Contains(errOut, "--tool-mode") {
			t.Fatalf("mcp --server --tool-mode: exit %d %q; want a usage error naming --tool-mode", code, errOut)
		}
		code, _, errOut = caphub(t, "mcp", "--agent", "scanner")
		if code != 2 || !strings.Contains(errOut, "--server") {
			t.Fatalf("mcp --agent without --server: exit %d %q", code, errOut)
		}
	})
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Errorf("caphub mcp --server left %v in its working directory; it must not open a local database", entries)
	}
}
