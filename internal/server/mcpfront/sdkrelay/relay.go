// Package sdkrelay is the front's SDK relay (see package mcpfront): a
// downstream mcp.Server per saved name, served by the SDK's streamable
// and SSE handlers, whose receiving middleware relays every request and
// notification through an SDK client session to the upstream (stdio, SSE,
// or streamable HTTP), and the upstream's traffic back the mirror way.
// An upstream serves one downstream session (per-client mode) or every
// downstream session of its saved server (shared mode, shared.go), routing
// what it sends to the session it belongs to (upstream.go).
package sdkrelay

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/caphub/caphub/internal/server/mcpfront/internal/relay"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Relay is the SDK relay of a front. It is safe for concurrent use.
type Relay struct {
	env *relay.Env

	// grace is how long a shared upstream outlives its last session.
	grace time.Duration

	mu     sync.Mutex
	fronts map[string]*front // by saved name, built on first use
	shared map[string]*sharedSlot
	live   map[*upstream]bool // the shared upstreams not ended
	closed bool
	wg     sync.WaitGroup // connections of shared upstreams and their watchers
}

// front is one saved server's downstream side: an mcp.Server whose
// middleware relays to the upstream session of each of its sessions, and
// the SDK's HTTP handlers over it.
type front struct {
	name       string
	server     *mcp.Server
	sendDown   mcp.MethodHandler // the server's own sending handler
	streamable *mcp.StreamableHTTPHandler
	sse        *mcp.SSEHandler
}

// New returns the SDK relay of a front.
func New(env *relay.Env) *Relay {
	grace := sharedGrace
	if env.IdleTimeout > 0 {
		grace = min(grace, env.IdleTimeout)
	}
	return &Relay{env: env, grace: grace, fronts: map[string]*front{}, shared: map[string]*sharedSlot{}, live: map[*upstream]bool{}}
}

// Knows reports whether the relay serves the saved server name (it has
// served a request for it).
func (rl *Relay) Knows(name string) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.fronts[name] != nil
}

// Serve serves a request for the saved server name: on its SSE endpoint
// (sse) or its streamable one. checked says whether the server was just
// found saved.
func (rl *Relay) Serve(w http.ResponseWriter, r *http.Request, name string, sse, checked bool) {
	fr, status, err := rl.frontFor(r, name, sse, checked)
	if err != nil {
		relay.WriteError(w, status, err.Error())
		return
	}
	if sse {
		fr.sse.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodDelete {
		// The relay ends the session itself: the SDK's DELETE would close
		// the downstream side first, which waits for what was sent down and
		// not yet answered.
		if s := rl.byID(fr, r.Header.Get("Mcp-Session-Id")); s != nil {
			s.close()
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	fr.streamable.ServeHTTP(w, r)
}

// byID returns the relayed session of fr whose downstream id is id, or nil.
func (rl *Relay) byID(fr *front, id string) *session {
	if id == "" {
		return nil
	}
	for ss := range fr.server.Sessions() {
		if ss.ID() == id {
			return rl.session(ss)
		}
	}
	return nil
}

// frontFor returns the downstream side of a saved server. A request that
// opens a session checks that the server is still saved (unless checked:
// it was just found saved); one that belongs to a session (it names one)
// does not touch the store.
func (rl *Relay) frontFor(r *http.Request, name string, sse, checked bool) (*front, int, error) {
	if rl.env.Sessions.Closed() {
		return nil, http.StatusServiceUnavailable, errors.New(relay.ShuttingDown)
	}
	inSession := r.Header.Get("Mcp-Session-Id") != ""
	if sse {
		inSession = r.Method == http.MethodPost
	}
	rl.mu.Lock()
	fr := rl.fronts[name]
	rl.mu.Unlock()
	if fr != nil && inSession {
		return fr, 0, nil
	}
	if !checked {
		if _, status, err := rl.env.SavedServer(r, name); err != nil {
			return nil, status, err
		}
	}
	if rl.env.Sessions.Closed() {
		return nil, http.StatusServiceUnavailable, errors.New(relay.ShuttingDown)
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if fr = rl.fronts[name]; fr == nil {
		fr = rl.newFront(name)
		rl.fronts[name] = fr
	}
	return fr, 0, nil
}

// legacyVersions are the protocol versions the front offers: every version
// of the SDK that negotiates sessions with initialize (before 2026-07-28).
var legacyVersions = func() []string {
	var vs []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v < "2026-07-28" {
			vs = append(vs, v)
		}
	}
	return vs
}()

// newFront builds the downstream side of a saved server.
func (rl *Relay) newFront(name string) *front {
	fr := &front{name: name}
	fr.server = mcp.NewServer(&mcp.Implementation{Name: "caphub/" + name, Version: rl.env.Version}, &mcp.ServerOptions{
		Logger:                    rl.env.SDKLog,
		SupportedProtocolVersions: legacyVersions,
		Capabilities:              &mcp.ServerCapabilities{}, // the upstream's are answered
	})
	// A pass-through sending middleware hands over the server's own sending
	// handler, which sends any client-bound method the SDK knows.
	fr.server.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		fr.sendDown = next
		return next
	})
	fr.server.AddReceivingMiddleware(tracing.MCPMethods, func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return rl.receive(ctx, fr, next, method, req)
		}
	})
	getServer := func(*http.Request) *mcp.Server { return fr.server }
	// The front's guard checks Host and Origin before the SDK's handlers see
	// a request; the SDK's own check (loopback address, loopback Host) would
	// refuse the hosts AllowedHosts lets through behind a local proxy.
	fr.streamable = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger: rl.env.SDKLog,
		// Idle sessions are closed by the relay (session.checkIdle).
		DisableLocalhostProtection: true,
	})
	fr.sse = mcp.NewSSEHandler(getServer, &mcp.SSEOptions{DisableLocalhostProtection: true})
	return fr
}
