package rest

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caphub/caphub/discover/mcpregistry"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/registry"
)

// Page sizes of the MCP Registry API, as the official registry has them.
const (
	registryDefaultLimit = 30
	registryMaxLimit     = 100
)

// mcpRegistryRoutes answer the official MCP Registry's read API (under
// /v0 and /v0.1, as it serves both) for the saved servers, so that a
// client that consumes a registry can use caphub as its subregistry: each
// saved server is one entry, in the registry's shapes, with caphub's front
// of it (/mcp/servers/NAME) as a remote.
func (s *Server) mcpRegistryRoutes() []route {
	name := param{name: "serverName", in: "path", required: true, desc: "the server's registry name, URL-encoded (io.github.owner%2Fserver)"}
	list := []param{
		{name: "cursor", in: "query", desc: "metadata.nextCursor of the previous page"},
		{name: "limit", in: "query", desc: fmt.Sprintf("page size, 1 to %d (default %d)", registryMaxLimit, registryDefaultLimit),
			schema: map[string]any{"type": "integer", "minimum": 1, "maximum": registryMaxLimit, "default": registryDefaultLimit}},
		{name: "search", in: "query", desc: "case-insensitive substring of the name or the description"},
		{name: "version", in: "query", desc: "latest, or one exact version"},
		{name: "updated_since", in: "query", desc: "only servers saved after this RFC 3339 time", schema: map[string]any{"type": "string", "format": "date-time"}},
	}
	var routes []route
	for _, v := range []string{"/v0", "/v0.1"} {
		routes = append(routes,
			route{method: "GET", path: v + "/servers", scope: auth.ScopeRead, summary: "MCP Registry API: the saved servers as registry entries, a page at a time", params: list, handler: s.registryList,
				responses: map[int]string{200: "servers (each {server, _meta}) and metadata {nextCursor, count}", 400: "limit, cursor or updated_since refused"}},
			route{method: "GET", path: v + "/servers/{serverName}/versions", scope: auth.ScopeRead, summary: "MCP Registry API: the versions of one server (caphub keeps one: the saved connection)", params: []param{name}, handler: s.registryVersions,
				responses: map[int]string{200: "servers and metadata", 404: "no saved server has this name"}},
			route{method: "GET", path: v + "/servers/{serverName}/versions/{version}", scope: auth.ScopeRead, summary: "MCP Registry API: one version of a server (latest for the newest)", params: []param{name, {name: "version", in: "path", required: true, desc: "the version, URL-encoded, or latest"}}, handler: s.registryGet,
				responses: map[int]string{200: "{server, _meta}", 404: "no saved server has this name and version"}},
		)
	}
	return routes
}

// registryEntries are the saved servers as registry entries, by name.
func (s *Server) registryEntries(r *http.Request) ([]*mcpregistry.Served, error) {
	saved, err := s.servers.ListServers(r.Context())
	if err != nil {
		return nil, err
	}
	opts := mcpregistry.ServeOptions{FrontURL: frontURL(r)}
	_, opts.TokenRequired = auth.FromContext(r.Context())
	out := make([]*mcpregistry.Served, 0, len(saved))
	seen := map[string]bool{}
	for i := range saved {
		e, err := mcpregistry.EntryOf(&saved[i], opts)
		if err != nil {
			return nil, err
		}
		if seen[e.Name] {
			continue // two saved servers imported from one entry: the first by caphub name
		}
		seen[e.Name] = true
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *mcpregistry.Served) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// frontURL is where this caphub fronts a saved server, as the request
// reached it.
func frontURL(r *http.Request) func(string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	base := scheme + "://" + r.Host + "/mcp/servers/"
	return func(name string) string { return base + url.PathEscape(name) }
}

// registryPage is GET /v0/servers's answer.
type registryPage struct {
	Servers  []mcpregistry.Response   `json:"servers"`
	Metadata mcpregistry.ListMetadata `json:"metadata"`
}

func (s *Server) registryList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := registryDefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > registryMaxLimit {
			return badRequest(fmt.Sprintf("limit=%q: use a whole number from 1 to %d (default %d), and follow metadata.nextCursor for more", v, registryMaxLimit, registryDefaultLimit))
		}
		limit = n
	}
	var since time.Time
	if v := q.Get("updated_since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return badRequest(fmt.Sprintf("updated_since=%q: give an RFC 3339 time, e.g. 2025-08-07T13:15:04Z", v))
		}
		since = t
	}
	all, err := s.registryEntries(r)
	if err != nil {
		return err
	}
	search, version := strings.ToLower(q.Get("search")), q.Get("version")
	var kept []*mcpregistry.Served
	for _, e := range all {
		switch {
		case search != "" && !strings.Contains(strings.ToLower(e.Name), search) && !strings.Contains(strings.ToLower(e.Description), search):
		case version != "" && version != "latest" && version != e.Version:
		case !since.IsZero() && !e.SavedAt.After(since):
		default:
			kept = append(kept, e)
		}
	}
	page, next, err := pageOf(kept, func(e *mcpregistry.Served) string { return e.Name }, "mcp-registry", limit, q.Get("cursor"))
	if err != nil {
		return err
	}
	out := registryPage{Servers: make([]mcpregistry.Response, len(page)), Metadata: mcpregistry.ListMetadata{NextCursor: next, Count: len(page)}}
	for i, e := range page {
		out.Servers[i] = e.Response
	}
	writeJSON(w, http.StatusOK, out, s.log)
	return nil
}

// registryServer finds the entry named by the path.
func (s *Server) registryServer(r *http.Request) (*mcpregistry.Served, error) {
	name := r.PathValue("serverName")
	all, err := s.registryEntries(r)
	if err != nil {
		return nil, err
	}
	for _, e := range all {
		if e.Name == name {
			return e, nil
		}
	}
	return nil, &registry.NotFoundError{Kind: "mcp_server", Name: name, Message: fmt.Sprintf("no saved server is served as %q: GET /v0/servers lists them (write the name's slash as %%2F)", name)}
}

func (s *Server) registryVersions(w http.ResponseWriter, r *http.Request) error {
	e, err := s.registryServer(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, registryPage{Servers: []mcpregistry.Response{e.Response}, Metadata: mcpregistry.ListMetadata{Count: 1}}, s.log)
	return nil
}

func (s *Server) registryGet(w http.ResponseWriter, r *http.Request) error {
	e, err := s.registryServer(r)
	if err != nil {
		return err
	}
	if v := r.PathValue("version"); v != "latest" && v != e.Version {
		return &registry.NotFoundError{Kind: "mcp_server", Name: e.Name, Message: fmt.Sprintf("%s has no version %q: caphub serves its saved connection as version %s (or ask for latest)", e.Name, v, e.Version)}
	}
	writeJSON(w, http.StatusOK, e.Response, s.log)
	return nil
}
