package discover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
	Listing *Listing       `json:"listing,omitempty"`
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
	docs registry.DocStore
}

var _ ServerAPI = (*Servers)(nil)

// NewServers returns the saved servers of a store.
func NewServers(docs registry.DocStore) *Servers { return &Servers{docs: docs} }

// SaveServer validates and saves (or replaces) a connection.
func (s *Servers) SaveServer(ctx context.Context, srv *mcpconn.Server) error {
	if err := srv.Validate(); err != nil {
		return fmt.Errorf("%w: %v", registry.ErrInvalid, err)
	}
	b, err := json.Marshal(SavedServer{Server: *srv, SavedAt: time.Now().UTC()})
	if err != nil {
		return err
	}
	return s.docs.PutDoc(ctx, kindServer, srv.Name, b)
}

// GetServer returns a saved server with its cached listing.
func (s *Servers) GetServer(ctx context.Context, name string) (*SavedServer, error) {
	doc, err := s.docs.GetDoc(ctx, kindServer, name)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, fmt.Errorf("no MCP server is saved as %q (save one with `caphub discover mcp %s --command …` or --url …): %w", name, name, registry.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	var saved SavedServer
	if err := json.Unmarshal(doc.Value, &saved); err != nil {
		return nil, fmt.Errorf("saved MCP server %q is unreadable: %w", name, err)
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
	return s.docs.ApplyDocs(ctx, []registry.DocOp{{Kind: kindServer, Key: name, Delete: true}, {Kind: kindListing, Key: name, Delete: true}})
}

// SaveListing caches the last listing of a server.
func (s *Servers) SaveListing(ctx context.Context, l *Listing) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return s.docs.PutDoc(ctx, kindListing, l.Server, b)
}
