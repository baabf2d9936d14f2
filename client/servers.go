package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/mcpconn"
)

var _ discover.ServerAPI = (*Client)(nil)

func serverPath(name string) string { return "/v1/servers/" + url.PathEscape(name) }

// SaveServer saves a connection on the server.
func (c *Client) SaveServer(ctx context.Context, s *mcpconn.Server) error {
	_, err := c.do(ctx, http.MethodPut, serverPath(s.Name), s, nil)
	return err
}

// GetServer returns a saved server with its cached listing.
func (c *Client) GetServer(ctx context.Context, name string) (*discover.SavedServer, error) {
	var s discover.SavedServer
	if _, err := c.do(ctx, http.MethodGet, serverPath(name), nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListServers lists every saved server, page after page.
func (c *Client) ListServers(ctx context.Context) ([]discover.SavedServer, error) {
	items, _, _, err := pagesOf[discover.SavedServer](ctx, c, "/v1/servers", url.Values{}, 0, nil)
	return items, err
}

// RemoveServer forgets a saved server.
func (c *Client) RemoveServer(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodDelete, serverPath(name), nil, nil)
	return err
}

// SaveListing caches a listing on the server.
func (c *Client) SaveListing(ctx context.Context, l *discover.Listing) error {
	_, err := c.do(ctx, http.MethodPut, serverPath(l.Server)+"/listing", l, nil)
	return err
}

// Discover asks the server to discover (and, with register, register) an
// MCP server from where it runs.
func (c *Client) Discover(ctx context.Context, s *mcpconn.Server, register bool) (*discover.Report, error) {
	var rep discover.Report
	q := "?register=false"
	if register {
		q = "?register=true"
	}
	if _, err := c.do(ctx, http.MethodPost, serverPath(s.Name)+"/discover"+q, s, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}
