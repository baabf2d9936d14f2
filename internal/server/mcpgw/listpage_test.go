package mcpgw

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pagerTools are 60 tools of about 1 KB each, in name order, as the SDK
// hands them to listPager.
func pagerTools() []*mcp.Tool {
	var tools []*mcp.Tool
	for i := range 60 {
		tools = append(tools, &mcp.Tool{Name: fmt.Sprintf("tool_%02d", i), Description: strings.Repeat("d", 1000), InputSchema: map[string]any{"type": "object"}})
	}
	return tools
}

// listPage runs the pager's middleware for one tools/list with cursor.
func listPage(p *listPager, tools []*mcp.Tool, cursor string) (*mcp.ListToolsResult, error) {
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.ListToolsResult{Tools: slices.Clone(tools)}, nil
	}
	res, err := p.middleware(next)(context.Background(), "tools/list", &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{Cursor: cursor}})
	if err != nil {
		return nil, err
	}
	return res.(*mcp.ListToolsResult), nil
}

// FuzzToolsListCursor checks that any cursor gives either the invalid
// params error or a page within the bound holding only tools after the
// one the cursor names, in order.
func FuzzToolsListCursor(f *testing.F) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []string{"", enc(listCursorKind + "tool_10"), enc(listCursorKind), enc(listCursorKind + "zzz"), enc("other\x00tool_10"), "!!", "bm90IG91cnM"} {
		f.Add(c)
	}
	p := newListPager(MinMaxListBytes, slog.New(slog.NewTextHandler(io.Discard, nil)))
	tools := pagerTools()
	f.Fuzz(func(t *testing.T, cursor string) {
		res, err := listPage(p, tools, cursor)
		if err != nil {
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "list again without a cursor") {
				t.Fatalf("cursor %q: %v, want invalid params saying what to do", cursor, err)
			}
			return
		}
		if n := jsonSize(res); n > MinMaxListBytes-listOverhead {
			t.Errorf("cursor %q: a page of %d bytes", cursor, n)
		}
		b, _ := base64.RawURLEncoding.DecodeString(cursor)
		after := strings.TrimPrefix(string(b), listCursorKind)
		for i, tool := range res.Tools {
			if cursor != "" && tool.Name <= after || i > 0 && tool.Name <= res.Tools[i-1].Name {
				t.Errorf("cursor %q: page holds %s out of order", cursor, tool.Name)
			}
		}
	})
}

// TestListPagerReachesEveryTool follows the cursors from the first page:
// every tool once, in order, each page within the bound.
func TestListPagerReachesEveryTool(t *testing.T) {
	p := newListPager(MinMaxListBytes, slog.New(slog.NewTextHandler(io.Discard, nil)))
	tools := pagerTools()
	var seen []string
	cursor := ""
	for pages := 1; ; pages++ {
		res, err := listPage(p, tools, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if n := jsonSize(res); n > MinMaxListBytes-listOverhead || len(res.Tools) == 0 {
			t.Fatalf("page %d: %d tools in %d bytes", pages, len(res.Tools), n)
		}
		for _, tool := range res.Tools {
			seen = append(seen, tool.Name)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
		if pages > len(tools) {
			t.Fatal("the cursors do not end")
		}
	}
	var want []string
	for _, tool := range tools {
		want = append(want, tool.Name)
	}
	if !slices.Equal(seen, want) {
		t.Errorf("the pages list %v, want %v", seen, want)
	}
}
