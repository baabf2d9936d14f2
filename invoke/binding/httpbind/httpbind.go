// Package httpbind invokes capabilities through their http binding: it fills
// the binding's URL, header and body templates from the call's input, sends
// the request to an allowed host, and returns the decoded response or a
// classified error.
//
//	bindings:
//	  http:
//	    method: POST
//	    url: https://api.example.com/v1/users/{user_id}/notes?lang={lang}
//	    headers: {X-Request-Source: caphub}
//	    body_template: '{"title": "{title}", "tags": {tags}}'
//	    auth: {type: bearer, env: EXAMPLE_TOKEN}
//
// Rules, and why:
//
// Destination. Definitions come from users and discovery, so the binding
// must not let them reach arbitrary hosts. Every request URL, and every
// redirect, is checked against Options.AllowedHosts before anything is
// dialled (see Options.AllowedHosts for the entry forms). An empty list
// allows loopback only, and the default client's dialer then also refuses
// any non-loopback address. Only http and https URLs are sent, and the
// scheme and host part of the URL template may not contain placeholders:
// the destination is fixed by the definition, never by the input. A refused
// destination is NO_BINDING (errors.Is ErrHostNotAllowed), with the entry to
// add in the message.
//
// URL. {field} placeholders (capability.Placeholders; a dotted {a.b} reads a
// nested field) in the path are filled with url.PathEscape of the value, so
// "/", "?", "#" and "%" arrive escaped inside one path segment and can never
// change the path or start a query; a filled segment that is exactly "." or
// ".." is refused (INVALID_INPUT), since servers would resolve it as a dot
// segment. Placeholders in the query are filled with url.QueryEscape, so "&",
// "=" and "#" cannot add parameters. Strings are used as they are, numbers
// and booleans in their JSON text, arrays as their elements joined by ","
// (each escaped), objects as compact JSON. A path placeholder whose field is
// absent (or null) is INVALID_INPUT; a query pair ("name={field}") whose
// field is absent is left out. Any fragment ("#…") of the template is not
// sent.
//
// Headers. Header templates are filled with the values' text; a header that
// names an absent field is left out, and a value containing CR, LF or NUL is
// refused (INVALID_INPUT) so no input can add a header or split the request.
//
// Body template. body_template is JSON with placeholders, and every filled
// value is JSON-escaped: a placeholder inside a JSON string receives the
// JSON-string-escaped text of the value (it can never close the string),
// and a placeholder standing alone as a JSON value receives the value's JSON
// encoding (an absent field is null there, and empty text inside a string).
// A placeholder right after a backslash inside a string is refused, and the
// rendered body must be valid JSON. It is sent as application/json unless
// the binding's headers set Content-Type.
//
// Other fields. Fields named by a URL, header or body template are consumed
// by it (a dotted placeholder consumes its top-level field). Where the
// others go is read from the binding's Extra["x-parameters"], the convention
// of caphub's OpenAPI importer (format/openapi): a map from input field to
// either a location string ("path", "query", "header", "cookie", "body") or
// an object {"in": location, "name": the parameter or body-property name
// (default: the field name), "style", "explode", "collection_format"} with
// OpenAPI serialisation for arrays and objects (query: form, spaceDelimited,
// pipeDelimited, deepObject; path: simple, label, matrix; header: simple;
// "allow_reserved" is ignored: values are always fully escaped, which every
// server decodes to the same value). Extra["x-body"] = {"content_type",
// "field"} makes one field the whole body. Fields with no recorded location
// go as query parameters for GET, HEAD, DELETE, OPTIONS and TRACE (arrays as
// repeated parameters, objects as compact JSON, null left out) and as
// members of a JSON object body otherwise (null kept). When a
// body_template is present it is the whole body and unconsumed body fields
// are not sent. A body built from fields is encoded by its content type
// (the binding's Content-Type header, else x-body's content_type, else
// JSON): JSON, application/x-www-form-urlencoded, multipart/form-data (text
// fields), or a string value sent as-is for any other type. Cookie values
// may not contain ";", CR, LF or NUL.
//
// Auth. The secret is read from the environment variable auth.env at call
// time (Options.Getenv) and never stored: api_key goes in the header or
// query parameter param_name (location header by default); bearer and
// oauth2 (the variable holds an access token) send "Authorization: Bearer
// <token>" (or the header param_name; or the query parameter param_name,
// default access_token, with location query); basic reads "user:password".
// A missing or empty variable is refused with NO_BINDING naming it, never
// sent empty. Secrets never appear in error messages (URLs in them lose
// their query); on a redirect to another host the header carrying the
// secret is removed.
//
// Response. A 2xx body with a JSON Content-Type (application/json or
// *+json) is decoded (invalid JSON is an error); a body of any other type is
// decoded as JSON too when it starts with "{" or "[" and parses, and is
// otherwise returned as {"text": body} ({"base64": …, "content_type": …}
// when it is not UTF-8); an empty body is a nil output. Numbers are
// normalised as capability.Normalize does. Outcome.Meta holds "status" and
// "content_type". A body larger than Options.MaxResponseBytes is an error,
// never silently truncated.
//
// Status. A non-2xx status becomes an *invoke.Error. Its code is the
// capability's declared error for the status, found in this order: an error
// whose Extra["x-http-status"] is the status (404, "404", or a list holding
// it), then one whose x-http-status is its class ("4XX"); an error coded
// HTTP_<status> or HTTP_<status>_<WORDS> (the OpenAPI importer's
// HTTP_404_NOT_FOUND); one coded HTTP_4XX or HTTP_4XX_<WORDS> (HTTP_5XX…)
// for the class; one coded HTTP_ERROR (the importer's "default" response).
// The declared error's retryable flag is used. Undeclared statuses get the
// code HTTP_<status>, retryable for 408, 429, 502, 503 and 504. Details
// carry "status", a body snippet (or the decoded JSON error body) and
// "retry_after" when the server sent Retry-After.
//
// Time. The call's context deadline bounds the whole exchange, body
// included (Options.Timeout when the context has none); expiring is TIMEOUT
// (retryable). Failures to connect are plain errors (BINDING_FAILED).
package httpbind

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/allowlist"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/internal/bindutil"
)

// Kind is the binding type this package implements.
const Kind = capability.BindingHTTP

// Defaults for Options fields left zero.
const (
	DefaultMaxResponseBytes = 10 << 20
	DefaultTimeout          = 30 * time.Second
)

// Keys of the binding's and errors' Extra maps that this package reads.
const (
	// ExtraParameters maps input fields to request locations (see the
	// package doc); the OpenAPI importer writes it.
	ExtraParameters = "x-parameters"
	// ExtraBody describes the request body: {"content_type", "field"}.
	ExtraBody = "x-body"
	// ExtraHTTPStatus, on a declared error, names the HTTP status (404) or
	// class ("4XX") that maps to it.
	ExtraHTTPStatus = "x-http-status"
	// ExtraBaseUnknown marks a binding whose API address its source could
	// not give (the OpenAPI importer's, for a relative server URL in a spec
	// read from a file): {"server": the server URL as written, "path": the
	// path the address ends with, "reason": why it is unknown}. Every call
	// is refused (ErrBaseURLUnknown) before any request, saying what to
	// configure.
	ExtraBaseUnknown = "x-base-url-unknown"
)

// Sentinel causes, for errors.Is on the errors Invoke returns.
var (
	// ErrHostNotAllowed: the URL or a redirect leads to a host outside
	// Options.AllowedHosts.
	ErrHostNotAllowed = allowlist.ErrNotAllowed
	// ErrMissingSecret: the environment variable named by auth.env is unset
	// or empty.
	ErrMissingSecret = errors.New("auth secret not set")
	// ErrResponseTooLarge: the response body exceeds Options.MaxResponseBytes.
	ErrResponseTooLarge = errors.New("response too large")
	// ErrBaseURLUnknown: the binding is marked ExtraBaseUnknown.
	ErrBaseURLUnknown = errors.New("the API's base URL is not configured")
)

// Options configures a Binding.
type Options struct {
	// Client sends the requests. Nil means a client with its own transport
	// whose dialer, when AllowedHosts is empty, connects to loopback
	// addresses only. The client is copied per call to install the redirect
	// check, so its CheckRedirect is replaced.
	Client *http.Client
	// AllowedHosts lists where requests (and redirects) may go; anything
	// else is refused before a connection is made. EMPTY MEANS LOOPBACK ONLY
	// (localhost, 127.0.0.0/8, ::1): a definition must not reach arbitrary
	// hosts, so reaching the network is an explicit choice. Entries:
	//
	//	"*"                    any host (only for trusted definitions)
	//	"loopback"             localhost, 127.0.0.0/8 and ::1
	//	"host" or "host:port"  that name or IP on any port, or on that port
	//	                       (the URL's port, or 80/443 by scheme)
	//	"*.example.com[:port]" any subdomain of example.com, not example.com
	//	"10.0.0.0/8[:port]"    IP literals in that range ("[fd00::/8]:443")
	//
	// Names are compared as written in the URL (case-insensitively), not as
	// resolved: an allowed name is trusted to resolve where its owner says.
	AllowedHosts []string
	// Getenv reads auth secrets; nil means os.LookupEnv.
	Getenv func(string) (string, bool)
	// MaxResponseBytes bounds a response body; a larger body is an error.
	// Zero means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Timeout bounds a call whose context has no deadline (the pipeline
	// normally sets one per attempt). Zero means DefaultTimeout.
	Timeout time.Duration
}

// Binding invokes http bindings. It is safe for concurrent use.
type Binding struct {
	client  *http.Client
	hosts   []string
	getenv  func(string) (string, bool)
	maxBody int64
	timeout time.Duration
}

// New returns a Binding with opts, zero fields taking their defaults.
func New(opts Options) *Binding {
	b := &Binding{
		client:  opts.Client,
		hosts:   append([]string(nil), opts.AllowedHosts...),
		getenv:  opts.Getenv,
		maxBody: opts.MaxResponseBytes,
		timeout: opts.Timeout,
	}
	if b.getenv == nil {
		b.getenv = os.LookupEnv
	}
	if b.maxBody <= 0 {
		b.maxBody = DefaultMaxResponseBytes
	}
	if b.timeout <= 0 {
		b.timeout = DefaultTimeout
	}
	if b.client == nil {
		b.client = allowlist.Client(len(b.hosts) == 0, hostsSetting)
	}
	return b
}

// Kind returns "http".
func (b *Binding) Kind() string { return Kind }

// Invoke sends the request described by call.Definition.Bindings.HTTP with
// call.Input and returns the decoded response.
func (b *Binding) Invoke(ctx context.Context, call *invoke.Call) (*invoke.Outcome, error) {
	if call == nil || call.Definition == nil || call.Definition.Bindings.HTTP == nil {
		return nil, bindutil.NoBinding(Kind, nil, "capability %s has no http binding; add bindings.http {method, url} to its definition", bindutil.CapabilityName(call))
	}
	hb := call.Definition.Bindings.HTTP
	if err := baseUnknown(hb, bindutil.CapabilityName(call)); err != nil {
		return nil, err
	}
	r, err := b.build(hb, call.Input)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url.String(), r.bodyReader())
	if err != nil {
		return nil, fmt.Errorf("http binding: building the request %s %s: %w", r.method, redact(r.url), err)
	}
	req.Header = r.header
	if r.body != nil {
		req.ContentLength = int64(len(r.body))
	}

	client := *b.client
	client.CheckRedirect = b.checkRedirect(r.secretHeader)
	end := tracing.StartClient(req, "http binding")
	resp, err := client.Do(req)
	end(resp, err)
	if err != nil {
		return nil, b.transportError(ctx, err, r)
	}
	defer resp.Body.Close()
	data, err := readCapped(resp.Body, b.maxBody)
	if err != nil {
		if errors.Is(err, ErrResponseTooLarge) {
			return nil, fmt.Errorf("http binding: the response to %s %s is larger than %d bytes (%w): raise httpbind Options.MaxResponseBytes or ask the API for less", r.method, redact(r.url), b.maxBody, err)
		}
		return nil, b.transportError(ctx, err, r)
	}
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(call.Definition, resp, data, r)
	}
	out, err := decodeBody(data, ct)
	if err != nil {
		return nil, fmt.Errorf("http binding: the response to %s %s (HTTP %d, %s): %w", r.method, redact(r.url), resp.StatusCode, orNone(ct), err)
	}
	return &invoke.Outcome{Output: out, Meta: map[string]any{"status": resp.StatusCode, "content_type": ct}}, nil
}

// transportError classifies a failure to exchange the request: the call's
// deadline is TIMEOUT, a refused host is NO_BINDING, anything else a plain
// error. The request URL is printed without its query (which may hold an
// api key).
func (b *Binding) transportError(ctx context.Context, err error, r *request) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		// *url.Error's message repeats the full URL; keep only its cause.
		err = ue.Err
	}
	where := r.method + " " + redact(r.url)
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return &invoke.Error{Code: invoke.CodeTimeout, Retryable: true, Binding: Kind, Cause: err,
			Message: fmt.Sprintf("%s did not complete before the call's deadline", where)}
	case errors.Is(err, ErrHostNotAllowed):
		e := bindutil.NoBinding(Kind, map[string]any{"url": redact(r.url)}, "%s: %v", where, err)
		e.Cause = err
		return e
	case ctx.Err() != nil:
		return fmt.Errorf("http binding: %s: %w", where, ctx.Err())
	}
	return fmt.Errorf("http binding: %s: %w: is the server running and reachable?", where, err)
}

func orNone(ct string) string {
	if ct == "" {
		return "no Content-Type"
	}
	return ct
}

// baseUnknown is the error of a binding marked ExtraBaseUnknown, nil for
// any other: NO_BINDING (errors.Is ErrBaseURLUnknown) saying which address
// is missing and the two ways to give it, a re-import with --base-url or
// the calling agent's own binding.
func baseUnknown(hb *capability.HTTPBinding, name string) error {
	raw, marked := hb.Extra[ExtraBaseUnknown]
	if !marked {
		return nil
	}
	m, _ := raw.(map[string]any)
	server, _ := m["server"].(string)
	path, _ := m["path"].(string)
	reason, _ := m["reason"].(string)
	e := bindutil.NoBinding(Kind, map[string]any{"server": server, "base_path": path},
		"%s has no API address, so no request was sent: its OpenAPI server URL %q could not give one (%s). "+
			"Re-import the spec with the address: caphub import openapi SPEC --base-url https://<api-host>%s --set-version <a new version>; "+
			"or give the calling agent its own binding for it (capability_bindings, with http.url https://<api-host>%s…)",
		name, server, orDefault(reason, "unknown"), path, path)
	e.Cause = ErrBaseURLUnknown
	return e
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
