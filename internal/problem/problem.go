// Package problem writes RFC 9457 problem documents: the one error format of
// caphub's HTTP API, whichever layer refuses the request (the request guard,
// the auth middleware, the REST handlers).
package problem

import (
	"encoding/json"
	"net/http"
)

// Base prefixes every problem type: Base + "not-found", and so on.
const Base = "https://caphub.dev/problems/"

// Document is a problem document with the members every layer uses; the
// REST API's own type adds its extension members (issues, changes, …).
type Document struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	// RequiredScope is the token scope a refused request needs.
	RequiredScope string `json:"required_scope,omitempty"`
	// Header names the request header a refusal is about (the guard's).
	Header string `json:"header,omitempty"`
}

// Write answers with doc, a problem document (a *Document or a type with
// the same members and more), under status.
func Write(w http.ResponseWriter, status int, doc any) error {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}
