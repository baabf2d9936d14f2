package mcpgw

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of one tools/list answer.
const (
	// DefaultMaxListBytes bounds a tools/list answer when
	// Options.MaxListBytes is 0: GitHub's API in the tools mode is 8 MB
	// of tools, which some clients cannot take in one message.
	DefaultMaxListBytes = 256 << 10
	// MinMaxListBytes is the smallest bound New accepts (a smaller one is
	// raised to it): room for a tool with a sizeable schema.
	MinMaxListBytes = 8 << 10
	// listOverhead is what a page's answer holds besides its tools: the
	// JSON-RPC envelope, nextCursor and _meta (the request's id aside).
	listOverhead = 1 << 10
	// sdkPageSize makes the SDK answer every tool at once to listPager,
	// which pages them by size.
	sdkPageSize = 1 << 30
)

// listCursorKind starts every cursor listPager makes.
const listCursorKind = "caphub-tools\x00"

// listPager answers tools/list a page at a time, each page's JSON within
// max bytes: as many tools, in name order, as fit; nextCursor continues
// after the last one. A tool whose JSON alone passes the bound is listed
// without its output schema when that brings it within; otherwise it is
// left out of the list (and logged once): it can still be called.
type listPager struct {
	max int
	log *slog.Logger

	mu    sync.Mutex
	cache map[*mcp.Tool]listedTool // each tool's size, by the SDK's tool pointer
}

// listedTool is what a page lists for one tool: itself, a copy without
// its output schema, or nothing (tool nil); size is its JSON's.
type listedTool struct {
	tool *mcp.Tool
	size int
}

func newListPager(max int, log *slog.Logger) *listPager {
	return &listPager{max: max, log: log, cache: map[*mcp.Tool]listedTool{}}
}

// middleware pages the SDK's tools/list answer (the server's PageSize must
// be sdkPageSize, so that it holds every tool).
func (p *listPager) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		lr, ok := req.(*mcp.ListToolsRequest)
		if method != "tools/list" || !ok {
			return next(ctx, method, req)
		}
		after := ""
		if lr.Params != nil && lr.Params.Cursor != "" {
			var err error
			if after, err = cursorAfter(lr.Params.Cursor); err != nil {
				return nil, err
			}
			lr.Params.Cursor = ""
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		if all, ok := res.(*mcp.ListToolsResult); ok {
			p.page(all, after)
		}
		return res, nil
	}
}

// cursorAfter reads a tools/list cursor ("" none): the name of the tool
// its page starts after, or the invalid params error of a cursor this
// server did not make.
func cursorAfter(cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || !strings.HasPrefix(string(b), listCursorKind) {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "tools/list: the cursor " + quoteCut(cursor) + " was not made by this server: list again without a cursor"}
	}
	return strings.TrimPrefix(string(b), listCursorKind), nil
}

// page makes all, every tool in name order, the page after the tool named
// after, and returns the name its next page starts after ("" it is the
// last).
func (p *listPager) page(all *mcp.ListToolsResult, after string) (next string) {
	tools := all.Tools
	start := 0
	if after != "" {
		start = sort.Search(len(tools), func(i int) bool { return tools[i].Name > after })
	}
	budget := p.max - listOverhead
	page := []*mcp.Tool{}
	used := 0
	p.mu.Lock()
	for _, t := range tools[start:] {
		lt := p.sized(t, budget)
		if lt.tool == nil {
			continue
		}
		if used+lt.size+1 > budget && len(page) > 0 {
			next = page[len(page)-1].Name
			break
		}
		page = append(page, lt.tool)
		used += lt.size + 1
	}
	if len(p.cache) > 2*len(tools)+64 {
		p.prune(tools)
	}
	p.mu.Unlock()
	all.Tools = page
	all.NextCursor = ""
	if next != "" {
		all.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(listCursorKind + next))
	}
	return next
}

// sized returns what to list for t and its size (p.mu held).
func (p *listPager) sized(t *mcp.Tool, budget int) listedTool {
	if lt, ok := p.cache[t]; ok {
		return lt
	}
	lt := listedTool{tool: t, size: jsonSize(t)}
	if lt.size > budget && t.OutputSchema != nil {
		c := *t
		c.OutputSchema = nil
		if n := jsonSize(&c); n <= budget {
			p.log.Warn("mcp: tool listed without its output schema, which would make it larger than a tools/list page; its calls are unchanged",
				"tool", t.Name, "bytes", lt.size, "page_bytes", p.max)
			lt = listedTool{tool: &c, size: n}
		}
	}
	if lt.size > budget {
		p.log.Warn("mcp: tool left out of tools/list: its definition alone is larger than a page; it can still be called",
			"tool", t.Name, "bytes", lt.size, "page_bytes", p.max)
		lt.tool = nil
	}
	p.cache[t] = lt
	return lt
}

// prune forgets the tools the server no longer serves (p.mu held).
func (p *listPager) prune(current []*mcp.Tool) {
	keep := make(map[*mcp.Tool]listedTool, len(current))
	for _, t := range current {
		if lt, ok := p.cache[t]; ok {
			keep[t] = lt
		}
	}
	p.cache = keep
}

// jsonSize is the length of v's JSON, or more than any bound when it has
// none.
func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return int(^uint(0) >> 1)
	}
	return len(b)
}

// quoteCut quotes s, cut to 80 bytes.
func quoteCut(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.Quote(s)
}
