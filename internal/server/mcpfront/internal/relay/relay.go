// Package relay holds what the front's two relays share (see package
// mcpfront): the environment the front gives them, the policy and record
// of fronted tools/call requests, the one classification of a relayed
// call's outcome, and the table of relayed sessions that bounds them.
package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MCP methods both relays treat specially.
const (
	MethodInitialize = "initialize"
	MethodCallTool   = "tools/call"
	NotifyCancelled  = "notifications/cancelled"
)

// ShuttingDown is the message of a request the front refuses once closed.
const ShuttingDown = "caphub is shutting down: reconnect later"

// Servers finds saved upstream connections (mcpfront.ServerSource).
type Servers interface {
	GetServer(ctx context.Context, name string) (*discover.SavedServer, error)
}

// Hooks are the policy and the record of fronted calls (mcpfront.Hooks).
type Hooks interface {
	Authorize(ctx context.Context, call *invoke.Call) error
	Emit(ctx context.Context, rec invoke.Record)
}

// Env is what the front gives its relays.
type Env struct {
	// Ctx lives as long as the front; upstream sessions are bound to it.
	Ctx      context.Context
	Servers  Servers
	Hooks    Hooks // nil: every call is allowed and nothing is recorded
	Sessions *Sessions
	// Version is caphub's, sent upstream as the client's.
	Version string
	// IdleTimeout closes a session idle this long; <= 0: never.
	IdleTimeout time.Duration
	// Spawner bounds the stdio servers starting at once; StartTimeout
	// bounds each start (0: mcpconn's default).
	Spawner      *mcpconn.Spawner
	StartTimeout time.Duration
	Log          *slog.Logger
	SDKLog       *slog.Logger // for the MCP SDK: Warn and up
}

// SavedServer reads a saved server, with the HTTP status to answer when
// it cannot.
func (e *Env) SavedServer(r *http.Request, name string) (*discover.SavedServer, int, error) {
	if e.Sessions.Closed() {
		return nil, http.StatusServiceUnavailable, errors.New(ShuttingDown)
	}
	saved, err := e.Servers.GetServer(r.Context(), name)
	if err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			return nil, http.StatusNotFound, err
		}
		e.Log.Error("mcpfront: reading the saved server", "server", name, "error", err)
		return nil, http.StatusInternalServerError, fmt.Errorf("reading the saved MCP server %q: %v", name, err)
	}
	return saved, 0, nil
}

// WriteBadMethod answers a request whose method the streamable HTTP
// transport does not have.
func WriteBadMethod(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", "GET, POST, DELETE")
	WriteError(w, http.StatusMethodNotAllowed, r.Method+" is not a method of the streamable HTTP transport: use POST, GET or DELETE")
}

// WriteError answers an HTTP request that reached no session with a
// JSON-RPC error body, readable by MCP clients and people alike.
func WriteError(w http.ResponseWriter, status int, msg string) {
	code := jsonrpc.CodeInvalidRequest
	if status >= 500 {
		code = jsonrpc.CodeInternalError
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
