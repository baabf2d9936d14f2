package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolErrors is how every instruction ends.
const toolErrors = " Failures are tool errors whose structured content carries the capability's error code and whether retrying may help."

// serve makes the MCP server serve the tool table byName (refreshMu held):
// in the tools mode, its tools, or past MaxTools the search tools
// (LargeCatalogSearch) or its tools with tools/list refused
// (LargeCatalogRefuse). The SDK notifies the sessions of every change.
func (g *Gateway) serve(byName map[string]*toolEntry) {
	st := &catalogState{tools: len(byName), search: g.opts.Mode == ModeSearch}
	if g.opts.Mode == ModeTools {
		st.over = g.opts.MaxTools > 0 && len(byName) > g.opts.MaxTools
		st.refuse = st.over && g.opts.LargeCatalog == LargeCatalogRefuse
		st.search = st.over && !st.refuse
		if st.search {
			if len(g.served) > 0 {
				g.server.RemoveTools(slices.Collect(maps.Keys(g.served))...)
			}
			g.served = nil
			g.setSearchTools(true)
		} else {
			g.setSearchTools(false)
			g.updateTools(g.served, byName)
			g.served = byName
		}
	}
	served := g.served
	g.servedNow.Store(&served)
	g.listing.Store(g.newToolListing(st))
	if prev := g.catalog.Swap(st); st.over && (prev == nil || !prev.over) {
		what := "serving the search tools instead of one tool per capability"
		if st.refuse {
			what = "refusing tools/list (tools/call still works)"
		}
		g.log.Warn("mcp gateway: the registry holds more invocable capabilities than the tools mode lists; "+what, "tools", st.tools, "max_tools", g.opts.MaxTools)
	} else if prev != nil && prev.over && !st.over {
		g.log.Info("mcp gateway: the registry is back within the tools mode's limit; serving one tool per capability", "tools", st.tools, "max_tools", g.opts.MaxTools)
	}
}

// setSearchTools adds or removes the search tools (refreshMu held, or in
// New).
func (g *Gateway) setSearchTools(on bool) {
	switch {
	case on && !g.searching:
		g.addSearchTools()
	case !on && g.searching:
		g.server.RemoveTools(searchToolNames...)
	}
	g.searching = on
}

// Serving returns the tools the gateway serves now: ModeSearch when it
// serves the search tools (configured so, or past MaxTools with
// LargeCatalogSearch), else ModeTools.
func (g *Gateway) Serving() string {
	if st := g.catalog.Load(); st != nil && st.search || g.opts.Mode == ModeSearch {
		return ModeSearch
	}
	return ModeTools
}

// instructions are the server's instructions for what st says it serves
// (nil: nothing built yet, as configured).
func (g *Gateway) instructions(st *catalogState) string {
	search := g.opts.Mode == ModeSearch
	if st != nil {
		search = st.search
	}
	switch {
	case search && st != nil && st.over:
		return fmt.Sprintf("caphub is a capability registry. It holds %d invocable capabilities, more than the %d it lists as tools, so it serves three tools to reach them all. ", st.tools, g.opts.MaxTools) + searchFlow + toolErrors
	case search:
		return "caphub is a capability registry. " + searchFlow + toolErrors
	case st != nil && st.refuse:
		return fmt.Sprintf("caphub is a capability registry: each tool is the latest version of one registered capability. It holds %d invocable capabilities, more than the %d it lists as tools, so tools/list is refused with an error that says what to do.", st.tools, g.opts.MaxTools) + toolErrors
	}
	return "caphub is a capability registry: each tool is the latest version of one registered capability (its URI is in the tool's _meta under dev.caphub/uri)." + toolErrors
}

// catalogMiddleware gives initialize (and server/discover) the
// instructions of what the gateway serves now, and refuses tools/list
// when the catalog is too large and the operator chose so.
func (g *Gateway) catalogMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		st := g.catalog.Load()
		if method == "tools/list" && st != nil && st.refuse {
			return nil, g.refusal(st)
		}
		res, err := next(ctx, method, req)
		if err != nil || st == nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			r.Instructions = g.instructions(st)
		case *mcp.DiscoverResult:
			r.Instructions = g.instructions(st)
		}
		return res, err
	}
}

// refusal is the error of a refused tools/list.
func (g *Gateway) refusal(st *catalogState) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"tools": st.tools, "max_tools": g.opts.MaxTools})
	return &jsonrpc.Error{Code: CodeCatalogTooLarge, Data: data, Message: fmt.Sprintf(
		"tools/list refused: caphub's registry holds %d invocable capabilities, more than the %d this MCP endpoint lists as tools, and its operator chose to refuse the list rather than serve search tools. "+
			"Connect to an agent's endpoint (/mcp/agents/{id}), which lists only that agent's tools, or ask the operator to serve the search tools (find_capabilities, describe_capability, invoke_capability) or to raise the tool limit. "+
			"A tool whose name you know can still be called.", st.tools, g.opts.MaxTools)}
}
