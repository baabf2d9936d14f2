// Package client is a REST client of `caphub serve` that implements
// registry.API, so the CLI's --server mode runs the same code paths as its
// local-database mode.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
)

// Client talks to one caphub server.
type Client struct {
	base    string
	http    *http.Client
	timeout time.Duration // of each request, answer included; 0: none
	token   string        // bearer token sent on every request; "" for none
}

var _ registry.API = (*Client)(nil)

// DefaultTimeout is how long a Client waits for an answer unless
// WithTimeout says otherwise.
const DefaultTimeout = 60 * time.Second

// Option configures a Client.
type Option func(*Client)

// WithTimeout bounds how long the client waits for each answer, reading it
// included; 0 waits as long as the server works on it (a server that dies
// closes the connection). Give long work — a large import — the time it
// needs: a client that gives up on a change does not stop the server from
// making it (see GaveUpError).
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithToken authenticates the client to a server that enforces API tokens
// (caphub token create): the token is sent only as a bearer header, never
// logged. Empty sends none.
func WithToken(token string) Option {
	return func(c *Client) { c.token = strings.TrimSpace(token) }
}

// New returns a client of the server at baseURL (e.g. http://127.0.0.1:8750).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q must be an absolute http(s) URL, e.g. http://127.0.0.1:8750", baseURL)
	}
	c := &Client{base: strings.TrimRight(baseURL, "/"), timeout: DefaultTimeout}
	for _, o := range opts {
		o(c)
	}
	c.http = &http.Client{Timeout: c.timeout}
	return c, nil
}

// GaveUpError says the client stopped waiting for the answer to a request
// that changes something (any method but GET and HEAD) after the server had
// received all of it: the timeout passed, ctx ended or the connection broke.
// The server may still complete the change — or may have completed it:
// whether it did is unknown here, so never report it as failed. A request
// that never reached the server (it refused the connection) is an ordinary
// error instead.
type GaveUpError struct {
	Method, Path string
	Server       string
	// Status is the answer's status when the server answered but its body
	// could not be read (the change is then done when it is 2xx); 0 when
	// no answer came.
	Status int
	After  time.Duration // how long the client waited
	Err    error
}

func (e *GaveUpError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("caphub server %s answered %s %s with %d %s, but its answer could not be read after %s (%v): the server made the change when that status is 2xx",
			e.Server, e.Method, e.Path, e.Status, http.StatusText(e.Status), e.After.Round(time.Millisecond), e.Err)
	}
	return fmt.Sprintf("gave up waiting for caphub server %s to answer %s %s after %s (%v): the server may still complete the request",
		e.Server, e.Method, e.Path, e.After.Round(time.Millisecond), e.Err)
}

// Unwrap returns the cause (a timeout, context.Canceled, a broken
// connection).
func (e *GaveUpError) Unwrap() error { return e.Err }

// Close releases nothing; it satisfies registry.API.
func (c *Client) Close() error { return nil }

// ProblemError is an RFC 9457 problem the server answered with. It unwraps
// to the registry sentinel its status stands for (and to a
// *capability.ValidationError when it lists issues), so callers test it as
// they would a local error.
type ProblemError struct {
	Status    int                `json:"status"`
	Title     string             `json:"title"`
	Detail    string             `json:"detail"`
	Issues    []capability.Issue `json:"issues"`
	Code      string             `json:"code"` // an invocation's error code
	Retryable bool               `json:"retryable"`
	Binding   string             `json:"binding"`
	Details   map[string]any     `json:"details"`
}

func (e *ProblemError) Error() string {
	if e.Detail != "" {
		return e.Detail
	}
	return fmt.Sprintf("%s (HTTP %d)", e.Title, e.Status)
}

func (e *ProblemError) Unwrap() []error {
	var out []error
	switch e.Status {
	case http.StatusNotFound, http.StatusGone:
		out = append(out, registry.ErrNotFound)
	case http.StatusConflict:
		out = append(out, registry.ErrConflict)
	case http.StatusBadRequest:
		out = append(out, registry.ErrInvalid)
	}
	if len(e.Issues) > 0 {
		out = append(out, &capability.ValidationError{Issues: e.Issues})
	}
	if e.Code != "" {
		out = append(out, &invoke.Error{Code: e.Code, Message: e.Detail, Retryable: e.Retryable, Binding: e.Binding, Details: e.Details})
	}
	return out
}

// Invoke runs a capability on the server (POST /v1/invoke) for the agent
// of the caller ctx carries (identity.From; sent as X-Caphub-Agent),
// retrying with its approval (sent as X-Caphub-Approval). A call held for a human's
// approval (202) is an error too: an *invoke.Error APPROVAL_REQUIRED whose
// details carry the approval id.
func (c *Client) Invoke(ctx context.Context, req invoke.Request) (*invoke.Result, error) {
	hdr := http.Header{}
	who := identity.From(ctx)
	if who.Agent != "" {
		hdr.Set(identity.Header, who.Agent)
	}
	if who.Approval != "" {
		hdr.Set(invoke.ApprovalHeader, who.Approval)
	}
	var res invoke.Result
	status, data, _, err := c.send(ctx, http.MethodPost, "/v1/invoke", req, hdr)
	if err != nil {
		return nil, err
	}
	if status == http.StatusAccepted {
		return nil, problemOf(status, data)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("decode answer of POST /v1/invoke: %w", err)
	}
	return &res, nil
}

// do sends a request and decodes a JSON answer into out; any status >= 400
// becomes a *ProblemError.
func (c *Client) do(ctx context.Context, method, path string, body any, out any) (int, error) {
	status, data, _, err := c.send(ctx, method, path, body, nil)
	if err != nil {
		return status, err
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return status, fmt.Errorf("decode answer of %s %s: %w", method, path, err)
		}
	}
	return status, nil
}

// problemOf reads a problem document answered with status.
func problemOf(status int, data []byte) *ProblemError {
	p := &ProblemError{Status: status}
	if json.Unmarshal(data, p) != nil || p.Title == "" {
		p.Title = http.StatusText(status)
		p.Detail = strings.TrimSpace(string(data))
	}
	return p
}

// send sends a request with extra headers and returns the answer's status,
// body and headers; any status >= 400 becomes a *ProblemError.
func (c *Client) send(ctx context.Context, method, path string, body any, hdr http.Header) (int, []byte, http.Header, error) {
	var rd io.Reader
	contentType := "application/json"
	if rb, ok := body.(rawBody); ok {
		rd, contentType = bytes.NewReader(rb.data), rb.contentType
	} else if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	// sent is set once the whole request is written: from then on the
	// server may act on it whatever becomes of the answer.
	var sent atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(w httptrace.WroteRequestInfo) { sent.Store(w.Err == nil) },
	}))
	changes := method != http.MethodGet && method != http.MethodHead
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		if changes && sent.Load() {
			return 0, nil, nil, &GaveUpError{Method: method, Path: path, Server: c.base, After: time.Since(start), Err: err}
		}
		return 0, nil, nil, fmt.Errorf("caphub server %s: %w (is `caphub serve` running there?)", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		if changes {
			return resp.StatusCode, nil, resp.Header, &GaveUpError{Method: method, Path: path, Server: c.base, Status: resp.StatusCode, After: time.Since(start), Err: err}
		}
		return resp.StatusCode, nil, resp.Header, fmt.Errorf("read answer of %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		return resp.StatusCode, data, resp.Header, problemOf(resp.StatusCode, data)
	}
	return resp.StatusCode, data, resp.Header, nil
}

func recordOf(d capability.Definition) registry.Record {
	k, _ := registry.KeyOf(&d)
	return registry.Record{Key: k, Definition: d}
}

// RegisterBatch posts the definitions as one capabilities document. A
// document over the server's limit for registering while the client waits
// (4 MiB) is registered as a job, each definition on its own, which
// RegisterBatch follows to its end: refused definitions then make a
// *PartialError, the others being registered.
func (c *Client) RegisterBatch(ctx context.Context, defs []capability.Definition) ([]registry.RegisterResult, error) {
	if len(defs) == 1 {
		var res registry.RegisterResult
		if _, err := c.do(ctx, http.MethodPost, "/registry/capabilities", map[string]any{"capability": defs[0]}, &res); err != nil {
			return nil, err
		}
		res.Record = recordOf(defs[0])
		return []registry.RegisterResult{res}, nil
	}
	var res struct {
		Items []registry.RegisterResult `json:"items"`
	}
	status, data, _, err := c.send(ctx, http.MethodPost, "/registry/capabilities", map[string]any{"capabilities": defs}, nil)
	if err != nil {
		return nil, err
	}
	if status == http.StatusAccepted {
		// A large batch: the server registers it as a job.
		var st jobStatus
		if err := json.Unmarshal(data, &st); err != nil {
			return nil, fmt.Errorf("decode answer of POST /registry/capabilities: %w", err)
		}
		out, err := c.followJob(ctx, st, nil)
		if err == nil && len(out.Failures) > 0 {
			err = &PartialError{Registered: len(out.Results), Failures: out.Failures}
		}
		if err != nil {
			return nil, err
		}
		res.Items = out.Results
	} else if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("decode answer of POST /registry/capabilities: %w", err)
	}
	for i := range res.Items {
		if i < len(defs) {
			res.Items[i].Record = recordOf(defs[i])
		}
	}
	return res.Items, nil
}

// Resolve asks the server which version a URI names.
func (c *Client) Resolve(ctx context.Context, uri string) (registry.Resolution, error) {
	var res struct {
		registry.Resolution
		Definition capability.Definition `json:"definition"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/registry/resolve?uri="+url.QueryEscape(uri), nil, &res); err != nil {
		return registry.Resolution{}, err
	}
	res.Resolution.Record = recordOf(res.Definition)
	return res.Resolution, nil
}

// Negotiate sends an OSSA §7.1 capability_request.
func (c *Client) Negotiate(ctx context.Context, req capability.NegotiationRequest) (capability.NegotiationResponse, error) {
	var res capability.NegotiationResponse
	_, err := c.do(ctx, http.MethodPost, "/registry/negotiate", req, &res)
	return res, err
}

func capPath(domain, name string) string {
	return "/registry/capabilities/" + url.PathEscape(domain) + "/" + url.PathEscape(name)
}

// Get fetches one version.
func (c *Client) Get(ctx context.Context, scheme, domain, name, version string) (registry.Record, error) {
	var d capability.Definition
	path := capPath(domain, name) + "@" + url.PathEscape(version) + "?scheme=" + url.QueryEscape(scheme)
	_, data, hdr, err := c.send(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return registry.Record{}, err
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return registry.Record{}, fmt.Errorf("decode answer of GET %s: %w", path, err)
	}
	rec := recordOf(d)
	rec.TrustTier = hdr.Get(registry.TrustTierHeader)
	rec.Digest = hdr.Get(registry.DigestHeader)
	return rec, nil
}

type listAnswer struct {
	Items      []capability.Definition `json:"items"`
	Total      int                     `json:"total"`
	NextCursor string                  `json:"next_cursor"`
}

func (a listAnswer) page() registry.Page {
	p := registry.Page{Total: a.Total, NextCursor: a.NextCursor, Items: make([]registry.Record, len(a.Items))}
	for i, d := range a.Items {
		p.Items[i] = recordOf(d)
	}
	return p
}

// Versions lists every version of a capability, page after page; none is
// not an error.
func (c *Client) Versions(ctx context.Context, scheme, domain, name string) ([]registry.Record, error) {
	a, err := c.listPages(ctx, capPath(domain, name), url.Values{"scheme": {scheme}}, 0, nil)
	if errors.Is(err, registry.ErrNotFound) {
		return []registry.Record{}, nil
	}
	if err != nil {
		return nil, err
	}
	return a.page().Items, nil
}

func filterQuery(f registry.ListFilter) url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("scheme", f.Scheme)
	set("name", f.Name)
	set("domain", f.Domain)
	set("category", f.Category)
	set("stability", f.Stability)
	set("binding", f.BindingType)
	set("source", f.Source)
	set("intent", f.Intent)
	set("trust", f.TrustTier)
	set("cursor", f.Cursor)
	if f.AllVersions {
		q.Set("all_versions", "true")
	}
	if f.CountTotal {
		q.Set("total", "true")
	}
	return q
}

// List reads one page of capabilities, as registry.Service.List: f.Limit
// of them (registry.DefaultPageSize when 0, at most registry.MaxPageSize)
// from f.Cursor on, with NextCursor to continue; Total when f.CountTotal
// asks.
func (c *Client) List(ctx context.Context, f registry.ListFilter) (registry.Page, error) {
	limit, err := registry.PageSize(f.Limit)
	if err != nil {
		return registry.Page{}, err
	}
	a, err := c.listPages(ctx, "/registry/capabilities", filterQuery(f), limit, nil)
	if err != nil {
		return registry.Page{}, err
	}
	return a.page(), nil
}

// Search runs a ranked search, one page as List reads one. It asks for whole
// definitions (view=full): the server answers summaries by default.
func (c *Client) Search(ctx context.Context, q registry.SearchQuery) (registry.Page, error) {
	v := filterQuery(q.Filter)
	v.Set("q", q.Text)
	v.Set("view", "full")
	if q.Explain {
		v.Set("explain", "true")
	}
	limit, err := registry.PageSize(q.Filter.Limit)
	if err != nil {
		return registry.Page{}, err
	}
	var rank registry.Ranking
	a, err := c.listPages(ctx, "/registry/search", v, limit, &rank)
	if err != nil {
		return registry.Page{}, err
	}
	p := a.page()
	p.Ranking = rank
	return p, nil
}

// Deprecate deprecates the versions a version string names.
func (c *Client) Deprecate(ctx context.Context, scheme, domain, name, version string, req registry.DeprecateRequest) (registry.DeprecateResult, error) {
	var res registry.DeprecateResult
	_, err := c.do(ctx, http.MethodPost, capPath(domain, name)+"@"+url.PathEscape(version)+"/deprecate?scheme="+url.QueryEscape(scheme), req, &res)
	return res, err
}
