package mcpgw

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast path (fast.go) also answers ping and tools/list on an
// established session, as the SDK answers them through the gateway's
// middleware (the catalog's refusal, listPager's pages and their cursor
// error), as application/json. tools/list pages are encoded once per tool
// set: an agent paging through thousands of tools costs a copy, not the
// SDK's decoding and encoding of every page on every request.

// toolListing is what tools/list answers while the MCP server's tools stay
// as they are (Gateway.listing, replaced whenever serve changes them).
type toolListing struct {
	tools  []*mcp.Tool    // the tools the MCP server lists, in name order
	refuse *jsonrpc.Error // tools/list is refused with this (LargeCatalogRefuse), else nil

	mu sync.Mutex
	// pages are the encoded results by the name of the tool a page starts
	// after; only the chain of pages from the first is kept (bounds: where
	// its pages end), so that the cache holds the list once, whatever
	// cursors clients make up.
	pages  map[string][]byte
	bounds map[string]bool
}

// newToolListing is what tools/list answers once serve has set the MCP
// server's tools for st (refreshMu held): the previous listing when
// nothing it answers changed, so that its pages stay encoded.
func (g *Gateway) newToolListing(st *catalogState) *toolListing {
	var tools []*mcp.Tool
	if g.searching {
		tools = append(tools, g.searchTools...)
	}
	for _, e := range g.served {
		if !e.refused.Load() {
			tools = append(tools, e.tool)
		}
	}
	// The SDK lists its tools in the order of their names' bytes.
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	var refuse *jsonrpc.Error
	if st.refuse {
		refuse = g.refusal(st)
	}
	if prev := g.listing.Load(); prev != nil && slices.Equal(prev.tools, tools) && sameError(prev.refuse, refuse) {
		return prev
	}
	return &toolListing{tools: tools, refuse: refuse, pages: map[string][]byte{}, bounds: map[string]bool{}}
}

func sameError(a, b *jsonrpc.Error) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Code == b.Code && a.Message == b.Message && bytes.Equal(a.Data, b.Data)
}

// page returns the encoded result of the page after the tool named after
// ("" the first), as listPager makes it for the SDK's answer.
func (l *toolListing) page(p *listPager, after string) ([]byte, error) {
	l.mu.Lock()
	data, ok := l.pages[after]
	l.mu.Unlock()
	if ok {
		return data, nil
	}
	res := &mcp.ListToolsResult{Tools: l.tools}
	next := p.page(res, after)
	res.CacheScope = "public" // as the SDK normalises a result it lists
	data, err := marshalNoEscape(res)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	if after == "" || l.bounds[after] {
		l.pages[after] = data
		if next != "" {
			l.bounds[next] = true
		}
	}
	l.mu.Unlock()
	return data, nil
}

// fastListParams are the params of a tools/list.
type fastListParams struct {
	Meta   map[string]any `json:"_meta"`
	Cursor string         `json:"cursor"`
}

// fastPingParams are the params of a ping.
type fastPingParams struct {
	Meta map[string]any `json:"_meta"`
}

// readParams decodes a request's params into v, which has a Meta field:
// ok when they are absent, null or an object that decodes as the SDK
// decodes it.
func readParams(raw json.RawMessage, v any) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	return raw[0] == '{' && mcpconn.Decode(raw, v) == nil
}

// fastRequest checks the id of a request the fast path answers at once
// (ping, tools/list) and its params' _meta: ok is false for an id it would
// have to re-encode and for the newer protocol's per-request _meta, which
// the SDK serves; a duplicate of a call in progress is answered here, as
// the SDK answers it.
func fastRequest(w http.ResponseWriter, s *fastSession, m *fastMessage, meta map[string]any) (id json.RawMessage, answered, ok bool) {
	key, ok := idKey(m.ID)
	if !ok || meta[mcp.MetaKeyProtocolVersion] != nil {
		return nil, false, false
	}
	id = bytes.TrimSpace(m.ID)
	s.mu.Lock()
	_, dup := s.inflight[key]
	s.mu.Unlock()
	if dup {
		writeDuplicate(w, id)
		return id, true, true
	}
	return id, false, true
}

// fastList answers a tools/list, unless it is not plainly one or the
// tools it lists are not known yet.
func (g *Gateway) fastList(w http.ResponseWriter, r *http.Request, s *fastSession, m *fastMessage) bool {
	l := g.listing.Load()
	var p fastListParams
	if l == nil || !readParams(m.Params, &p) {
		return false
	}
	id, answered, ok := fastRequest(w, s, m, p.Meta)
	if !ok || answered {
		return ok
	}
	_, end := tracing.StartMCP(s.ctx, "tools/list", "", s.id, p.Meta, r.Header)
	rpcErr := l.refuse
	if rpcErr == nil {
		after, err := cursorAfter(p.Cursor)
		if err != nil {
			rpcErr = err.(*jsonrpc.Error)
		} else {
			data, err := l.page(g.pager, after)
			if err != nil {
				// Not expected (the SDK encoded these tools when they were
				// added): the SDK answers it, as before the fast path.
				end(err, false)
				return false
			}
			end(nil, false)
			writeAnswer(w, id, "result", data)
			return true
		}
	}
	end(rpcErr, false)
	data, _ := marshalNoEscape(rpcErr)
	writeAnswer(w, id, "error", data)
	return true
}

// fastPing answers a ping, unless it is not plainly one.
func (g *Gateway) fastPing(w http.ResponseWriter, r *http.Request, s *fastSession, m *fastMessage) bool {
	var p fastPingParams
	if !readParams(m.Params, &p) {
		return false
	}
	id, answered, ok := fastRequest(w, s, m, p.Meta)
	if !ok || answered {
		return ok
	}
	_, end := tracing.StartMCP(s.ctx, "ping", "", s.id, p.Meta, r.Header)
	end(nil, false)
	writeAnswer(w, id, "result", []byte("{}"))
	return true
}

// writeAnswer writes the JSON-RPC answer to the request id, its field
// ("result" or "error") data, as application/json with the SDK's headers,
// without copying data.
func writeAnswer(w http.ResponseWriter, id json.RawMessage, field string, data []byte) {
	head := make([]byte, 0, len(id)+40)
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, id...)
	head = append(head, `,"`...)
	head = append(head, field...)
	head = append(head, `":`...)
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(head)+len(data)+1))
	_, _ = w.Write(head)
	_, _ = w.Write(data)
	_, _ = w.Write([]byte{'}'})
}
