package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/server/mcpgw"
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
