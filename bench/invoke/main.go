// Command invoke benchmarks invocation (issue: invocation):
//
//   - POST /v1/invoke of ossa:everruns/add@1.0 against `caphub serve` (the
//     real binary, built here, on a fresh SQLite file) from C concurrent
//     clients on loopback: throughput and p50/p99;
//   - the latency the mcp binding adds over a direct Go SDK call to the same
//     stdio upstream (server-everything's echo, from .cache/npm): p50 of
//     each and the difference.
//
// Run: go run ./bench/invoke [-clients 32] [-duration 10s] [-calls 2000]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/caphub/caphub/bench/internal/load"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/mcpbind"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	clients := flag.Int("clients", 32, "concurrent HTTP clients")
	duration := flag.Duration("duration", 10*time.Second, "HTTP load duration")
	calls := flag.Int("calls", 2000, "sequential MCP calls for each p50")
	npm := flag.String("npm", ".cache/npm/node_modules", "node_modules holding @modelcontextprotocol/server-everything")
	flag.Parse()
	dir, err := os.MkdirTemp("", "caphub-bench-invoke")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	fmt.Printf("## POST /v1/invoke ossa:everruns/add@1.0, %d clients, %s\n\n", *clients, *duration)
	httpLoad(dir, *clients, *duration)

	fmt.Printf("\n## mcp binding vs direct Go SDK call (server-everything echo over stdio, %d sequential calls each)\n\n", *calls)
	mcpOverhead(dir, *npm, *calls)
}

func httpLoad(dir string, clients int, duration time.Duration) {
	base, _, stop := load.Serve(dir, filepath.Join(dir, "caphub.db"))
	defer stop()
	body := []byte(`{"uri": "ossa:everruns/add@1.0", "input": {"a": 2, "b": 3}}`)
	load.Run(clients, duration, func(hc *http.Client, _ int) (*http.Response, error) {
		return hc.Post(base+"/v1/invoke", "application/json", bytes.NewReader(body))
	}).Print()
}

func mcpOverhead(dir, npm string, calls int) {
	pkg := filepath.Join(npm, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(pkg); err != nil {
		fmt.Printf("skipped: %s not found (run bash .ci/run to install the test peers)\n", pkg)
		return
	}
	node, err := exec.LookPath("node")
	if err != nil {
		fmt.Println("skipped: node not found")
		return
	}
	srv := &mcpconn.Server{Name: "everything", Command: node + " " + pkg, Args: []string{"stdio"}}
	ctx := context.Background()

	cs, err := mcpconn.Connect(ctx, srv, "bench")
	if err != nil {
		log.Fatal(err)
	}
	direct := make([]time.Duration, 0, calls)
	for i := 0; i < calls+100; i++ {
		t0 := time.Now()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
			log.Fatal(err)
		}
		if i >= 100 { // warm-up excluded
			direct = append(direct, time.Since(t0))
		}
	}
	cs.Close()

	st, err := sqlite.Open(ctx, filepath.Join(dir, "mcp.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	servers := discover.NewServers(st)
	if err := servers.SaveServer(ctx, srv); err != nil {
		log.Fatal(err)
	}
	b := mcpbind.New(servers, mcpbind.Options{ClientVersion: "bench", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer b.Close()
	call := &invoke.Call{URI: "mcp:everything/echo@1.0", Input: map[string]any{"message": "hi"},
		Definition: &capability.Definition{Bindings: capability.Bindings{MCP: &capability.MCPBinding{Server: "everything", Tool: "echo"}}}}
	bound := make([]time.Duration, 0, calls)
	for i := 0; i < calls+100; i++ {
		t0 := time.Now()
		if _, err := b.Invoke(ctx, call); err != nil {
			log.Fatal(err)
		}
		if i >= 100 {
			bound = append(bound, time.Since(t0))
		}
	}
	d50, b50 := load.Pct(direct, 50), load.Pct(bound, 50)
	fmt.Printf("| measure | value |\n|---|---|\n")
	fmt.Printf("| direct SDK call p50 / p99 | %s / %s |\n", d50.Round(time.Microsecond), load.Pct(direct, 99).Round(time.Microsecond))
	fmt.Printf("| mcp binding p50 / p99 | %s / %s |\n", b50.Round(time.Microsecond), load.Pct(bound, 99).Round(time.Microsecond))
	fmt.Printf("| added by the binding (p50) | %s |\n", (b50 - d50).Round(time.Microsecond))
}
