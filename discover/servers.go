package discover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/permit"
	"github.com/caphub/caphub/mcpconn"
	"github.com/caphub/caphub/registry"
)

// Document kinds of saved servers in a registry.DocStore.
const (
	kindServer  = "mcp_server"
	kindListing = "mcp_listing"
)

// SavedServer is a saved connection with the cache of its last listing.
type SavedServer struct {
	Server  mcpconn.Server `json:"server"`
	SavedAt time.Time      `json:"saved_at"`
	// ViaAPI is set when the server was saved over caphub's API, or
	// imported from an MCP registry, rather than typed by the operator on
	// the machine: connecting to it is then bounded by the operator's
	// allow-lists (Server.Permits).
	ViaAPI  bool     `json:"via_api,omitempty"`
	Listing *Listing `json:"listing,omitempty"`
}

// ServerAPI keeps saved MCP servers. *Servers implements it on a local
// database, client.Client against a running caphub.
type ServerAPI interface {
	SaveServer(ctx context.Context, s *mcpconn.Server) error
	GetServer(ctx context.Context, name string) (*SavedServer, error)
	ListServers(ctx context.Context) ([]SavedServer, error)
	RemoveServer(ctx context.Context, name string) error
	SaveListing(ctx context.Context, l *Listing) error
}

// Servers keeps saved servers in a DocStore.
type Servers struct {
	docs     registry.DocStore
	permits  *permit.Permits         // what servers saved over the API may do
	viaAPI   bool                    // saves are marked ViaAPI
	recorder registry.ChangeRecorder // nil: changes are not recorded
}

var _ ServerAPI = (*Servers)(nil)

// ServersOption configures Servers.
type ServersOption func(*Servers)

// APIPermits sets what the servers saved over the API may do when caphub
// connects to them: the operator's allow-lists. Without it they may start
// no program, read no variable and reach loopback only.
func APIPermits(p *permit.Permits) ServersOption {
	return func(s *Servers) {
		if p != nil {
			s.permits = p
		}
	}
}

// SavedOverAPI marks every server this Servers saves as saved over the API
// (the REST API's handlers use one such, and so does caphub import
// mcp-registry: what a registry says to run is bounded like what an API
// caller saves).
func SavedOverAPI() ServersOption { return func(s *Servers) { s.viaAPI = true } }

// WithRecorder records every saved connection and every removal with an
// audit event that rec makes (audit.KindServerSaved, KindServerDeleted),
// naming the actor (identity.Caller.Actor) and the server, committed in the
// change's own transaction (registry.ApplyDocsRecorded, through the store's
// ApplyDocsAudited): a saved command or URL, which caphub will run or call,
// never changes unrecorded. A nil rec records nothing.
func WithRecorder(rec registry.ChangeRecorder) ServersOption {
	return func(s *Servers) { s.recorder = rec }
}

// NewServers returns the saved servers of a store.
func NewServers(docs registry.DocStore, opts ...ServersOption) *Servers {
	s := &Servers{docs: docs, permits: &permit.Permits{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Bound returns srv with the Permits that apply to a server saved by this
// Servers: the API's for one saved over the API, the operator's (nil)
// otherwise.
func (s *Servers) Bound(srv *mcpconn.Server) *mcpconn.Server {
	if s.viaAPI {
		srv.Permits = s.permits
	}
	return srv
}

// SaveServer validates and saves (or replaces) a connection.
func (s *Servers) SaveServer(ctx context.Context, srv *mcpconn.Server) error {
	if err := srv.Validate(); err != nil {
		return fmt.Errorf("%w: %v", registry.ErrInvalid, err)
	}
	b, err := json.Marshal(SavedServer{Server: *srv, SavedAt: time.Now().UTC(), ViaAPI: s.viaAPI})
	if err != nil {
		return err
	}
	ops := []registry.DocOp{{Kind: kindServer, Key: srv.Name, Value: b}}
	return registry.ApplyDocsRecorded(ctx, s.docs, s.recorder, ops, audit.KindServerSaved, identity.From(ctx).Actor, "", savedEvent(srv))
}

// savedEvent is the Data of a "server_saved" event: how caphub connects
// (the command and arguments it runs, or the URL it calls), the names, not
// the values, of the environment variables and headers it sets, and its
// session mode when one is set.
func savedEvent(srv *mcpconn.Server) map[string]any {
	d := map[string]any{"server": srv.Name, "transport": srv.Transport}
	if srv.Command != "" {
		d["command"] = srv.Command
	}
	if len(srv.Args) > 0 {
		d["args"] = srv.Args
	}
	if srv.URL != "" {
		d["url"] = srv.URL
	}
	if len(srv.Env) > 0 {
		d["env"] = slices.Sorted(maps.Keys(srv.Env))
	}
	if len(srv.Headers) > 0 {
		d["headers"] = slices.Sorted(maps.Keys(srv.Headers))
	}
	if srv.Sessions != "" {
		d["sessions"] = srv.Sessions
	}
	return d
}

// GetServer returns a saved server with its cached listing.
func (s *Servers) GetServer(ctx context.Context, name string) (*SavedServer, error) {
	doc, err := s.docs.GetDoc(ctx, kindServer, name)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, &registry.NotFoundError{Kind: kindServer, Name: name, Message: fmt.Sprintf("no MCP server is saved as %q (save one with PUT /v1/servers/%s)", name, name)}
	}
	if err != nil {
		return nil, err
	}
	var saved SavedServer
	if err := json.Unmarshal(doc.Value, &saved); err != nil {
		return nil, fmt.Errorf("saved MCP server %q is unreadable: %w", name, err)
	}
	if saved.ViaAPI {
		saved.Server.Permits = s.permits
	}
	if l, err := s.docs.GetDoc(ctx, kindListing, name); err == nil {
		var listing Listing
		if json.Unmarshal(l.Value, &listing) == nil {
			saved.Listing = &listing
		}
	}
	return &saved, nil
}

// ListServers returns every saved server, by name, with cached listings.
func (s *Servers) ListServers(ctx context.Context) ([]SavedServer, error) {
	docs, err := s.docs.ListDocs(ctx, kindServer, "")
	if err != nil {
		return nil, err
	}
	out := make([]SavedServer, 0, len(docs))
	for _, d := range docs {
		saved, err := s.GetServer(ctx, d.Key)
		if err != nil {
			return nil, err
		}
		out = append(out, *saved)
	}
	return out, nil
}

// RemoveServer forgets a server and its cached listing. Its capabilities
// stay registered.
func (s *Servers) RemoveServer(ctx context.Context, name string) error {
	if _, err := s.docs.GetDoc(ctx, kindServer, name); err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			return fmt.Errorf("no MCP server is saved as %q: %w", name, registry.ErrNotFound)
		}
		return err
	}
	ops := []registry.DocOp{{Kind: kindServer, Key: name, Delete: true}, {Kind: kindListing, Key: name, Delete: true}}
	return registry.ApplyDocsRecorded(ctx, s.docs, s.recorder, ops, audit.KindServerDeleted, identity.From(ctx).Actor, "", map[string]any{"server": name})
}

// SaveListing caches the last listing of a server.
func (s *Servers) SaveListing(ctx context.Context, l *Listing) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return s.docs.PutDoc(ctx, kindListing, l.Server, b)
}
