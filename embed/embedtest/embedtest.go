// Package embedtest runs an embedding provider for tests: a real HTTP
// server speaking the OpenAI embeddings API (POST /v1/embeddings) whose
// vectors are deterministic. A text's vector hashes its words (lower-cased,
// common suffixes stripped, stop words dropped, a few synonyms mapped to
// one concept) into signed dimensions and is normalised, so texts sharing
// words or concepts are near and others are far, as with a real model. The
// server counts what it receives and can be told to fail.
package embedtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
)

// Options configure a Server; every field has a default.
type Options struct {
	// Dimensions is the length of the vectors (default 64). A request's
	// "dimensions" asks for another length.
	Dimensions int
	// Model is the model served (default "embedtest"); a request naming
	// another is answered 404.
	Model string
	// APIKey, when set, must come as "Authorization: Bearer APIKey", else
	// the request is answered 401.
	APIKey string
	// MaxBatch, when set, refuses a request of more inputs with 400.
	MaxBatch int
	// Reverse answers the vectors last first, each with its index, as the
	// API allows.
	Reverse bool
	// Delay holds each answer this long, as a slow provider would.
	Delay time.Duration
	// Concepts are groups of words that mean one thing: each word of a
	// group is hashed as the group's first (default DefaultConcepts).
	Concepts [][]string
}

// DefaultConcepts are the synonyms Options.Concepts defaults to.
func DefaultConcepts() [][]string {
	return [][]string{
		{"email", "mail", "inbox", "gmail", "mailbox"},
		{"message", "chat", "sms", "notify", "notification"},
		{"weather", "forecast", "temperature", "rain", "climate"},
		{"image", "picture", "photo", "png", "jpeg"},
		{"delete", "remove", "erase", "drop"},
		{"search", "find", "lookup", "locate", "query"},
		{"create", "make", "add", "new"},
		{"file", "document", "doc"},
		{"payment", "pay", "invoice", "billing", "charge"},
		{"calendar", "meeting", "appointment", "schedule"},
		{"summarize", "summary", "digest", "tldr"},
		{"vulnerability", "cve", "exploit", "insecure"},
		{"repository", "repo"},
		{"user", "person", "people", "contact", "customer"},
		{"read", "get", "fetch", "retrieve", "show", "view"},
	}
}

// Server is a running embedding provider.
type Server struct {
	// URL is the base URL: give it as the client's URL.
	URL string

	srv      *httptest.Server
	opts     Options
	concepts map[string]string

	mu       sync.Mutex
	requests int
	inputs   int
	batches  []int
	fail     []failure
	down     *failure
}

type failure struct {
	status     int
	retryAfter string
}

// maxBody bounds a request's body.
const maxBody = 8 << 20

// New starts a Server, closed when the test ends.
func New(tb testing.TB, o Options) *Server {
	tb.Helper()
	if o.Dimensions <= 0 {
		o.Dimensions = 64
	}
	if o.Model == "" {
		o.Model = "embedtest"
	}
	if o.Concepts == nil {
		o.Concepts = DefaultConcepts()
	}
	s := &Server{opts: o, concepts: map[string]string{}}
	for _, group := range o.Concepts {
		for _, w := range group {
			s.concepts[stem(strings.ToLower(w))] = stem(strings.ToLower(group[0]))
		}
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	return s
}

// Close stops the server: requests fail to connect from then on.
func (s *Server) Close() { s.srv.Close() }

// Model returns the model served.
func (s *Server) Model() string { return s.opts.Model }

// Requests returns how many embedding requests arrived, failed ones
// included.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Inputs returns how many texts were embedded.
func (s *Server) Inputs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inputs
}

// Batches returns the number of texts of each request answered with
// vectors, in order.
func (s *Server) Batches() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.batches...)
}

// Fail answers the next n requests with status (e.g. 429 or 500) and an
// OpenAI-shaped error, with a Retry-After header when retryAfter is set.
func (s *Server) Fail(n, status int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.fail = append(s.fail, failure{status, retryAfter})
	}
}

// Down answers every request with status until Up.
func (s *Server) Down(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = &failure{status: status}
}

// Up ends Down and the failures Fail queued.
func (s *Server) Up() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down, s.fail = nil, nil
}

// serve answers POST /v1/embeddings.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/embeddings" {
		apiError(w, http.StatusNotFound, "invalid_request_error", "no route "+r.URL.Path+": the API is at /v1/embeddings")
		return
	}
	if r.Method != http.MethodPost {
		apiError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
		return
	}
	if s.opts.Delay > 0 {
		select {
		case <-time.After(s.opts.Delay):
		case <-r.Context().Done():
			return
		}
	}
	s.mu.Lock()
	s.requests++
	f := s.down
	if f == nil && len(s.fail) > 0 {
		f, s.fail = &s.fail[0], s.fail[1:]
	}
	s.mu.Unlock()
	if f != nil {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		apiError(w, f.status, "server_error", fmt.Sprintf("embedtest: simulated failure (HTTP %d)", f.status))
		return
	}
	if s.opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
		apiError(w, http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided")
		return
	}
	inputs, dims, status, bad := s.readRequest(w, r)
	if bad != "" {
		apiError(w, status, "invalid_request_error", bad)
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(inputs))
	for i, in := range inputs {
		at := i
		if s.opts.Reverse {
			at = len(inputs) - 1 - i
		}
		data[at] = item{Object: "embedding", Index: i, Embedding: s.vector(in, dims)}
	}
	s.mu.Lock()
	s.inputs += len(inputs)
	s.batches = append(s.batches, len(inputs))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": s.opts.Model,
		"usage": map[string]int{"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
	})
}

// readRequest reads an embeddings request: its inputs and the dimensions
// asked for, or why it is refused (bad) and with which status.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request) (inputs []string, dims, status int, bad string) {
	var req struct {
		Model      string          `json:"model"`
		Input      json.RawMessage `json:"input"`
		Dimensions int             `json:"dimensions"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		return nil, 0, http.StatusBadRequest, "the body is not a JSON request: " + err.Error()
	}
	if req.Model != s.opts.Model {
		return nil, 0, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist", req.Model)
	}
	if err := json.Unmarshal(req.Input, &inputs); err != nil {
		var one string
		if json.Unmarshal(req.Input, &one) != nil {
			return nil, 0, http.StatusBadRequest, "input must be a string or an array of strings"
		}
		inputs = []string{one}
	}
	switch {
	case len(inputs) == 0:
		return nil, 0, http.StatusBadRequest, "input is empty"
	case s.opts.MaxBatch > 0 && len(inputs) > s.opts.MaxBatch:
		return nil, 0, http.StatusBadRequest, fmt.Sprintf("too many inputs: %d, at most %d", len(inputs), s.opts.MaxBatch)
	case req.Dimensions < 0 || req.Dimensions > 8192:
		return nil, 0, http.StatusBadRequest, "dimensions must be between 1 and 8192"
	}
	for i, in := range inputs {
		if in == "" {
			return nil, 0, http.StatusBadRequest, fmt.Sprintf("input[%d] is empty", i)
		}
	}
	dims = s.opts.Dimensions
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	return inputs, dims, 0, ""
}

// apiError answers an error in the OpenAI shape.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}})
}

// Vector returns the vector the server answers for text, of
// Options.Dimensions.
func (s *Server) Vector(text string) []float32 { return s.vector(text, s.opts.Dimensions) }

// stopWords are not hashed.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"for": true, "from": true, "in": true, "into": true, "is": true, "it": true, "its": true, "of": true,
	"on": true, "or": true, "the": true, "this": true, "to": true, "with": true, "my": true, "me": true,
	"i": true, "you": true, "your": true, "can": true, "that": true, "some": true, "all": true,
	"keywords": true, "intents": true, "categories": true, "parameters": true, // embed.Text's labels
}

// vector hashes the words of text into dims signed dimensions, normalised;
// a text without words gets the first unit vector.
func (s *Server) vector(text string, dims int) []float32 {
	v := make([]float32, dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if stopWords[w] {
			continue
		}
		w = stem(w)
		if c, ok := s.concepts[w]; ok {
			w = c
		}
		h := fnv.New64a()
		h.Write([]byte(w))
		sum := h.Sum64()
		sign := float32(1)
		if sum>>63 == 1 {
			sign = -1
		}
		v[sum%uint64(dims)] += sign
	}
	var norm float64
	for _, f := range v {
		norm += float64(f) * float64(f)
	}
	if norm == 0 {
		v[0] = 1
		return v
	}
	scale := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= scale
	}
	return v
}

// stem strips the commonest English suffixes, enough for "sends",
// "sending" and "sent"-less tests to meet: plural s/es, ing, ed, then a
// final e.
func stem(w string) string {
	cut := func(suffix string) bool {
		if len(w) > len(suffix)+2 && strings.HasSuffix(w, suffix) {
			w = strings.TrimSuffix(w, suffix)
			return true
		}
		return false
	}
	switch {
	case cut("ies"):
		w += "y"
	case strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"):
		cut("es")
	case cut("ing"), cut("ed"):
	case !strings.HasSuffix(w, "ss"):
		cut("s")
	}
	if len(w) > 3 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}
