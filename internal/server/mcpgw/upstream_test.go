package mcpgw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/internal/server/mcpfront"
	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/mcpbind"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// discovered is caphub assembled as caphub serve does it for saved MCP
// servers: a SQLite store, the servers discovered into the registry, the
// pipeline with the mcp binding, and both MCP endpoints on one HTTP
// server: the gateway (/mcp) and the transparent front
// (/mcp/servers/{name}).
type discovered struct {
	store   *sqlite.Store
	svc     *registry.Service
	servers *discover.Servers
	pipe    *invoke.Pipeline
	gw      *mcpgw.Gateway
	front   *mcpfront.Front
	base    string // the HTTP server's URL
	mcpURL  string // the gateway's streamable HTTP endpoint
}

// frontURL is the front's streamable HTTP endpoint of a saved server.
func (d *discovered) frontURL(server string) string { return d.base + "/mcp/servers/" + server }

// tool returns the gateway's tool name of the upstream tool discovered as
// mcp:server/name, or fails.
func (d *discovered) tool(t testing.TB, server, name string) string {
	t.Helper()
	want := capability.SchemeMCP + ":" + server + "/" + name + "@"
	for tool, uri := range d.gw.Tools() {
		if strings.HasPrefix(uri, want) {
			return tool
		}
	}
	t.Fatalf("the gateway serves no tool for %s*; it serves %v", want, d.gw.Tools())
	return ""
}

// newDiscovered discovers the servers into a fresh caphub and serves it.
func newDiscovered(t testing.TB, servers ...*mcpconn.Server) *discovered {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := quietLog()
	d := &discovered{store: st, svc: registry.NewService(st, registry.WithLogger(log), registry.WithCache()), servers: discover.NewServers(st)}
	for _, srv := range servers {
		rep, err := discover.Run(ctx, d.svc, d.servers, srv, discover.Options{Register: true, Version: "test"})
		if err != nil {
			t.Fatalf("discover %s: %v", srv.Name, err)
		}
		if len(rep.Failures) > 0 {
			t.Logf("discover %s: tools left out: %v", srv.Name, rep.Failures)
		}
	}
	mb := mcpbind.New(d.servers, mcpbind.Options{ClientVersion: "test", Log: log})
	t.Cleanup(func() { mb.Close() })
	d.pipe = invoke.New(d.svc, []invoke.Binding{mb}, invoke.Options{})
	d.gw = mcpgw.New(d.svc, st, d.pipe, mcpgw.Options{Version: "test", Log: log, MaxTools: -1})
	d.front = mcpfront.New(d.servers, d.pipe, mcpfront.Options{Version: "test", Log: log})
	mux := http.NewServeMux()
	h := d.gw.Handler()
	mux.Handle("/mcp", h)
	mux.Handle("/mcp/sse", h)
	mux.Handle("/mcp/servers/", d.front.Handler())
	srv := httptest.NewServer(mux)
	d.base, d.mcpURL = srv.URL, srv.URL+"/mcp"
	t.Cleanup(func() {
		srv.CloseClientConnections()
		d.gw.Close()
		d.front.Close()
		srv.Close()
	})
	return d
}

// serverEverything is npm @modelcontextprotocol/server-everything over
// stdio, or skips.
func serverEverything(t testing.TB) *mcpconn.Server {
	t.Helper()
	node := testpeers.Node(t)
	pkg := testpeers.NPMPackage(t, "@modelcontextprotocol/server-everything")
	return &mcpconn.Server{Name: "everything", Command: node + " " + filepath.Join(pkg, "dist", "index.js"), Args: []string{"stdio"}}
}

// goEverythingStdio is the Go SDK's everything-server saved as a stdio
// server named name.
func goEverythingStdio(t testing.TB, name string) *mcpconn.Server {
	return &mcpconn.Server{Name: name, Command: testpeers.GoEverything(t)}
}

// goEverythingHTTP starts the Go SDK's everything-server as a stateful
// streamable HTTP server (a process of its own) and returns it saved as
// name.
func goEverythingHTTP(t testing.TB, name string) *mcpconn.Server {
	t.Helper()
	return &mcpconn.Server{Name: name, Transport: mcpconn.TransportHTTP, URL: testpeers.GoEverythingHTTP(t)}
}
