package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/caphub/caphub/discover"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/mcpconn"
)

// serverRoutes are the saved MCP server endpoints.
func (s *Server) serverRoutes() []route {
	name := []param{{name: "name", in: "path", required: true, desc: "saved server name"}}
	return []route{
		{method: "GET", path: "/v1/servers", scope: auth.ScopeRead, summary: "List saved MCP servers by name, a page at a time", params: pageParams, handler: s.listServers, responses: map[int]string{200: "items, total and next_cursor", 400: pageRefused}},
		{method: "GET", path: "/v1/servers/{name}", scope: auth.ScopeRead, summary: "A saved MCP server with its last listing", params: name, handler: s.getServer, responses: map[int]string{200: "server", 404: "not saved"}},
		{method: "PUT", path: "/v1/servers/{name}", scope: auth.ScopePublish, summary: "Save an MCP server connection (secrets only as ${VAR} references)", params: name, body: "connection", handler: s.putServer, responses: map[int]string{200: "saved", 400: "invalid"}},
		{method: "DELETE", path: "/v1/servers/{name}", scope: auth.ScopePublish, summary: "Forget a saved MCP server", params: name, handler: s.deleteServer, responses: map[int]string{204: "removed", 404: "not saved"}},
		{method: "PUT", path: "/v1/servers/{name}/listing", scope: auth.ScopePublish, summary: "Cache a server's tool listing", params: name, body: "listing", handler: s.putListing, responses: map[int]string{200: "saved"}},
		{method: "POST", path: "/v1/servers/{name}/discover", scope: auth.ScopePublish, summary: "Discover an MCP server from this caphub and (register=true) register its tools; without a body, re-discover the saved server (its new, changed, unchanged and vanished tools in plan)", params: append(name, param{name: "register", in: "query", desc: "true (default) or false"}), body: "connection (optional: none re-discovers the saved server)", handler: s.discoverServer, responses: map[int]string{200: "report", 403: "the server runs a program and the token lacks admin", 404: "no body and no saved server of that name"}},
	}
}

// ServerList is the answer of GET /v1/servers: a page of saved servers.
type ServerList struct {
	Items      []discover.SavedServer `json:"items"`
	Total      int                    `json:"total"`
	NextCursor string                 `json:"next_cursor,omitempty"`
}

func (s *Server) listServers(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageQuery(r)
	if err != nil {
		return err
	}
	all, err := s.servers.ListServers(r.Context()) // by name
	if err != nil {
		return err
	}
	page, next, err := pageOf(all, func(sv discover.SavedServer) string { return sv.Server.Name }, "servers", limit, cursor)
	if err != nil {
		return err
	}
	setNextLink(w, r, next)
	writeJSON(w, http.StatusOK, ServerList{Items: page, Total: len(all), NextCursor: next}, s.log)
	return nil
}

func (s *Server) getServer(w http.ResponseWriter, r *http.Request) error {
	saved, err := s.servers.GetServer(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, saved, s.log)
	return nil
}

func (s *Server) readServer(r *http.Request) (*mcpconn.Server, error) {
	var srv mcpconn.Server
	if err := decodeJSON(r, &srv); err != nil {
		return nil, err
	}
	return s.checkServer(r, srv)
}

// checkServer checks a connection given for the path's server: its name,
// its validity, admin scope when it runs a program; and binds it to the
// API's allow-lists.
func (s *Server) checkServer(r *http.Request, srv mcpconn.Server) (*mcpconn.Server, error) {
	if srv.Name == "" {
		srv.Name = r.PathValue("name")
	}
	if srv.Name != r.PathValue("name") {
		return nil, badRequest(fmt.Sprintf("the body names the server %q but the path %q", srv.Name, r.PathValue("name")))
	}
	if err := srv.Validate(); err != nil {
		return nil, badRequest(err.Error())
	}
	if srv.Command != "" {
		if err := requireAdmin(r, fmt.Sprintf("the server %q runs a program (%s)", srv.Name, srv.Command)); err != nil {
			return nil, err
		}
	}
	return s.servers.Bound(&srv), nil
}

func (s *Server) putServer(w http.ResponseWriter, r *http.Request) error {
	srv, err := s.readServer(r)
	if err != nil {
		return err
	}
	if err := s.servers.SaveServer(r.Context(), srv); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, srv, s.log)
	return nil
}

func (s *Server) deleteServer(w http.ResponseWriter, r *http.Request) error {
	if err := s.servers.RemoveServer(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) putListing(w http.ResponseWriter, r *http.Request) error {
	var l discover.Listing
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, MaxBodySize))
	if err := dec.Decode(&l); err != nil {
		return badRequest("the body is not a tool listing: " + err.Error())
	}
	l.Server = r.PathValue("name")
	if err := s.servers.SaveListing(r.Context(), &l); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"server": l.Server, "tools": len(l.Tools)}, s.log)
	return nil
}

// discoverServer discovers the server the body describes or, without a
// body, the saved one (re-discovery: the new, changed and vanished tools
// since its last listing), checked as if its connection had been sent.
func (s *Server) discoverServer(w http.ResponseWriter, r *http.Request) error {
	var srv *mcpconn.Server
	var err error
	if r.ContentLength == 0 {
		saved, err := s.servers.GetServer(r.Context(), r.PathValue("name"))
		if err != nil {
			return err
		}
		srv, err = s.checkServer(r, saved.Server)
		if err != nil {
			return err
		}
	} else if srv, err = s.readServer(r); err != nil {
		return err
	}
	register := true
	if v := r.URL.Query().Get("register"); v != "" {
		if register, err = strconv.ParseBool(v); err != nil {
			return badRequest(fmt.Sprintf("register=%q: use true or false", v))
		}
	}
	rep, err := discover.Run(r.Context(), s.svc, s.servers, srv, discover.Options{Register: register, Version: s.version})
	if err != nil && rep == nil {
		return err
	}
	if err != nil {
		rep.Error = err.Error()
	}
	writeJSON(w, http.StatusOK, rep, s.log)
	return nil
}
