package rest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// OpenAPI builds the server's OpenAPI 3.1 document from the same route table
// that feeds the mux, so the document cannot drift from what is served.
func (s *Server) OpenAPI() map[string]any {
	paths := map[string]any{}
	for _, rt := range s.routeTable() {
		path := strings.ReplaceAll(rt.path, "...}", "}")
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		var params []any
		for _, p := range rt.params {
			schema := p.schema
			if schema == nil {
				schema = map[string]any{"type": "string"}
			}
			params = append(params, map[string]any{
				"name": p.name, "in": p.in, "required": p.required || p.in == "path",
				"description": p.desc, "schema": schema,
			})
		}
		responses := map[string]any{}
		for code, desc := range rt.responses {
			resp := map[string]any{"description": desc}
			if code >= 400 {
				resp["content"] = map[string]any{"application/problem+json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Problem"}}}
			}
			responses[strconv.Itoa(code)] = resp
		}
		responses["default"] = map[string]any{"description": "an RFC 9457 problem document",
			"content": map[string]any{"application/problem+json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Problem"}}}}
		op := map[string]any{
			"summary":     rt.summary,
			"operationId": operationID(rt.method, path),
			"responses":   responses,
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		if rt.body != "" {
			op["requestBody"] = map[string]any{"description": rt.body, "required": true, "content": map[string]any{
				"application/json": map[string]any{"schema": map[string]any{"type": "object"}},
				"application/yaml": map[string]any{"schema": map[string]any{"type": "object"}},
			}}
		}
		item[strings.ToLower(rt.method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "caphub registry API",
			"version":     "1.0.0",
			"description": s.apiDescription(),
		},
		"paths": paths,
		"components": map[string]any{"schemas": map[string]any{
			"Problem": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"type": map[string]any{"type": "string"}, "title": map[string]any{"type": "string"},
					"status": map[string]any{"type": "integer"}, "detail": map[string]any{"type": "string"},
					"instance": map[string]any{"type": "string"},
					"issues":   map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
					"changes":  map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
				},
				"required": []any{"type", "title", "status"},
			},
		}},
	}
}

// apiDescription is the document's description, with the limits every
// request is held to.
func (s *Server) apiDescription() string {
	return "Capability registry for AI agents: the OSSA registry API (§5.2), registration under the versioning rules, deprecation, negotiation, search, and the everruns capability shape. " +
		fmt.Sprintf("Every list and search answers one page: %d items unless limit says otherwise, at most %d (a larger limit is refused with 400); next_cursor and a Link rel=\"next\" header continue; a list counts its matches into total only when asked with total=true (counting reads every match). ", DefaultPageSize, MaxPageSize) +
		"A GET of one version answers the stored JSON with an ETag of those bytes (If-None-Match answers 304), the registered content's digest in " + digestHeader + " and its trust tier in " + TrustTierHeader + "." +
		s.budgetDescription()
}

// budgetDescription documents the request time budget.
func (s *Server) budgetDescription() string {
	if s.budget <= 0 {
		return ""
	}
	return fmt.Sprintf(" Every request has a time budget of %s (caphub serve --request-timeout): past it the request is cancelled and answered 503 with a problem naming the budget.", s.budget)
}

func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(path, "/") {
		seg = strings.Trim(seg, "{}")
		seg = strings.NewReplacer(".", "_", "-", "_").Replace(seg)
		if seg == "" {
			continue
		}
		b.WriteString(strings.ToUpper(seg[:1]) + seg[1:])
	}
	return b.String()
}

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, s.OpenAPI(), s.log)
	return nil
}
