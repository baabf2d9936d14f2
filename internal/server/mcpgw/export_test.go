package mcpgw

// FastServed is how many requests g answered on its fast path.
func FastServed(g *Gateway) int64 { return g.fast.served.Load() }

// SetFast turns g's fast path on or off (off: the SDK answers every
// request, as before the fast path).
func SetFast(g *Gateway, on bool) { g.fastOff.Store(!on) }

// EndSessionsBehindTheTable ends g's MCP sessions as the SDK alone would,
// without the gateway's table of sessions knowing, then sweeps the table.
func EndSessionsBehindTheTable(g *Gateway) {
	for ss := range g.server.Sessions() {
		_ = ss.Close()
	}
	g.sweepSessions()
}
