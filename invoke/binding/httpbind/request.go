package httpbind

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke/binding/internal/bindutil"
)

// request is the HTTP request a binding and an input describe.
type request struct {
	method string
	url    *url.URL
	header http.Header
	body   []byte // nil: no body
	// secretHeader is the header holding an auth secret, removed on a
	// redirect to another host ("" when the secret is elsewhere).
	secretHeader string
}

func (r *request) bodyReader() io.Reader {
	if r.body == nil {
		return nil
	}
	return bytes.NewReader(r.body)
}

// Parameter locations.
const (
	inPath   = "path"
	inQuery  = "query"
	inHeader = "header"
	inCookie = "cookie"
	inBody   = "body"
)

// location is where one input field goes (an x-parameters entry).
type location struct {
	in      string
	name    string // parameter or body-property name; the field's own name by default
	style   string // OpenAPI style; "" when not recorded
	explode bool
	// collectionFormat is Swagger 2's tsv, the one format without an
	// OpenAPI 3 style.
	collectionFormat string
}

// bodylessMethods send unconsumed fields in the query by default.
var bodylessMethods = map[string]bool{http.MethodGet: true, http.MethodHead: true, http.MethodDelete: true, http.MethodOptions: true, http.MethodTrace: true}

// build fills the binding's templates with input and places the remaining
// fields, producing the request to send (not yet authenticated: see auth).
func (b *Binding) build(hb *capability.HTTPBinding, input map[string]any) (*request, error) {
	rb, err := newRequestBuilder(hb, input)
	if err != nil {
		return nil, err
	}
	origin, path, err := rb.destination(b)
	if err != nil {
		return nil, err
	}
	if err := rb.templateHeaders(); err != nil {
		return nil, err
	}
	if err := rb.templateBody(); err != nil {
		return nil, err
	}
	for _, field := range slices.Sorted(maps.Keys(input)) {
		if err := rb.place(field); err != nil {
			return nil, err
		}
	}
	if len(rb.cookies) > 0 {
		rb.r.header.Add("Cookie", strings.Join(rb.cookies, "; "))
	}
	if err := rb.encodeBody(); err != nil {
		return nil, err
	}
	// Auth, then the final URL.
	query, err := b.auth(hb.Auth, rb.r, rb.query)
	if err != nil {
		return nil, err
	}
	raw := origin + path
	if len(query) > 0 {
		raw += "?" + strings.Join(query, "&")
	}
	rb.r.url, err = url.Parse(raw)
	if err != nil {
		// Not quoted: the query may hold an api key.
		return nil, fmt.Errorf("http binding: the query built from url template %q and the input is not valid: check bindings.http.url", hb.URL)
	}
	return rb.r, nil
}

// requestBuilder holds a request while build fills it from a binding and
// an input: what each step has placed so far.
type requestBuilder struct {
	hb        *capability.HTTPBinding
	input     map[string]any
	locs      map[string]location
	bodyField string // x-body's field: the whole body
	bodyType  string // x-body's content_type
	r         *request
	consumed  map[string]bool // fields the templates used
	query     []string
	cookies   []string
	// bodyFields are the fields placed in the body; whole is the value of
	// bodyField when it is set.
	bodyFields map[string]any
	whole      any
	wholeSet   bool
}

// newRequestBuilder checks the method and reads the recorded parameter
// locations and body spec of hb.
func newRequestBuilder(hb *capability.HTTPBinding, input map[string]any) (*requestBuilder, error) {
	method := strings.ToUpper(strings.TrimSpace(hb.Method))
	if method == "" {
		method = http.MethodGet
	}
	if !isToken(method) {
		return nil, fmt.Errorf("http binding: method %q is not an HTTP method: set bindings.http.method to GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS or TRACE", hb.Method)
	}
	locs, err := parseLocations(hb.Extra[ExtraParameters])
	if err != nil {
		return nil, err
	}
	bodyField, bodyType, err := parseBodySpec(hb.Extra[ExtraBody])
	if err != nil {
		return nil, err
	}
	return &requestBuilder{hb: hb, input: input, locs: locs, bodyField: bodyField, bodyType: bodyType,
		r: &request{method: method, header: http.Header{}}, consumed: map[string]bool{}, bodyFields: map[string]any{}}, nil
}

// destination fills the url template and checks the destination before
// anything else is read (secrets included); it returns the origin and path.
func (rb *requestBuilder) destination(b *Binding) (origin, path string, err error) {
	origin, path, rb.query, err = fillURL(rb.hb.URL, rb.input, rb.locs, rb.consumed)
	if err != nil {
		return "", "", err
	}
	// The URL parsed here holds no query, so no secret.
	dest, err := url.Parse(origin + path)
	if err != nil {
		return "", "", fmt.Errorf("http binding: url template %q does not make a valid URL (%v): fix bindings.http.url", rb.hb.URL, err)
	}
	if err := b.checkURL(dest); err != nil {
		e := bindutil.NoBinding(Kind, map[string]any{"url": redact(dest)}, "%v", err)
		e.Cause = err
		return "", "", e
	}
	return origin, path, nil
}

// templateHeaders fills the header templates; one naming an absent field
// is not sent.
func (rb *requestBuilder) templateHeaders() error {
	for _, name := range slices.Sorted(maps.Keys(rb.hb.Headers)) {
		if !isToken(name) {
			return fmt.Errorf("http binding: header name %q is not a valid HTTP header name: fix bindings.http.headers", name)
		}
		tmpl := rb.hb.Headers[name]
		value, ok, err := fillText(tmpl, rb.input, rb.consumed, nil)
		if err != nil {
			return err
		}
		if !ok {
			continue // names an absent field: not sent
		}
		if err := checkHeaderValue(value); err != nil {
			return bindutil.InvalidInput(Kind, "header %s (template %q): %v", name, tmpl, err)
		}
		rb.r.header.Set(name, value)
	}
	return nil
}

// templateBody renders the body template, JSON unless a header says
// otherwise.
func (rb *requestBuilder) templateBody() error {
	if rb.hb.BodyTemplate == "" {
		return nil
	}
	var err error
	rb.r.body, err = renderBody(rb.hb.BodyTemplate, rb.input, rb.consumed)
	if err != nil {
		return err
	}
	if rb.r.header.Get("Content-Type") == "" {
		rb.r.header.Set("Content-Type", "application/json")
	}
	return nil
}

// locationOf is where a field the templates did not use goes: the body
// when it is x-body's field, its recorded location, else the body (the
// query for methods without one).
func (rb *requestBuilder) locationOf(field string) location {
	loc, recorded := rb.locs[field]
	switch {
	case field == rb.bodyField && rb.bodyField != "":
		loc = location{in: inBody, name: field}
	case !recorded:
		loc = location{in: inBody, name: field, explode: true}
		if bodylessMethods[rb.r.method] {
			loc.in = inQuery
		}
	}
	return loc
}

// place puts a field the templates did not use where it goes.
func (rb *requestBuilder) place(field string) error {
	if rb.consumed[field] {
		return nil
	}
	v := rb.input[field]
	loc := rb.locationOf(field)
	switch loc.in {
	case inPath:
		return fmt.Errorf("http binding: bindings.http.%s puts field %s in the path, but the url template %q has no {%s} placeholder: add it to the url", ExtraParameters, field, rb.hb.URL, field)
	case inQuery:
		rb.query = appendQuery(rb.query, loc, v)
	case inHeader, inCookie:
		if v == nil {
			return nil
		}
		return rb.placeHeader(field, loc, v)
	case inBody:
		rb.placeBody(field, loc, v)
	}
	return nil
}

// placeHeader adds a field as a header or a cookie.
func (rb *requestBuilder) placeHeader(field string, loc location, v any) error {
	text, err := headerText(v, loc)
	if err != nil {
		return err
	}
	if loc.in == inCookie {
		if strings.ContainsAny(text, ";\r\n\x00") {
			return bindutil.InvalidInput(Kind, "cookie %s (input field %s) contains ';', CR, LF or NUL, which would change the Cookie header: remove them", loc.name, field)
		}
		rb.cookies = append(rb.cookies, loc.name+"="+text)
		return nil
	}
	if !isToken(loc.name) {
		return fmt.Errorf("http binding: bindings.http.%s names header %q for field %s, which is not a valid header name: fix the definition", ExtraParameters, loc.name, field)
	}
	if err := checkHeaderValue(text); err != nil {
		return bindutil.InvalidInput(Kind, "header %s (input field %s): %v", loc.name, field, err)
	}
	rb.r.header.Add(loc.name, text)
	return nil
}

// placeBody puts a field in the body: as the whole body when it is x-body's
// field, else as a property; with a body template, the template is the
// whole body and the field is dropped.
func (rb *requestBuilder) placeBody(field string, loc location, v any) {
	switch {
	case rb.hb.BodyTemplate != "":
		// The template is the whole body.
	case field == rb.bodyField:
		rb.whole, rb.wholeSet = v, v != nil
	default:
		rb.bodyFields[loc.name] = v
	}
}

// encodeBody encodes the fields placed in the body (or the whole-body
// field) and sets the Content-Type of any body.
func (rb *requestBuilder) encodeBody() error {
	r := rb.r
	var err error
	switch {
	case rb.wholeSet && len(rb.bodyFields) > 0:
		return fmt.Errorf("http binding: bindings.http.%s.field makes %s the whole body, but fields %s are placed in the body too: give them another location in %s", ExtraBody, rb.bodyField, strings.Join(slices.Sorted(maps.Keys(rb.bodyFields)), ", "), ExtraParameters)
	case rb.wholeSet:
		r.body, err = encodeWhole(rb.whole, rb.contentType())
		if err != nil {
			return fmt.Errorf("http binding: request body (input field %s): %w", rb.bodyField, err)
		}
	case len(rb.bodyFields) > 0:
		var ct string
		r.body, ct, err = encodeFields(rb.bodyFields, rb.contentType())
		if err != nil {
			return fmt.Errorf("http binding: request body: %w", err)
		}
		r.header.Set("Content-Type", ct)
	}
	if r.body != nil && r.header.Get("Content-Type") == "" {
		r.header.Set("Content-Type", rb.contentType())
	}
	return nil
}

// contentType is the request body's media type: the header the templates
// set, else x-body's content_type, else JSON.
func (rb *requestBuilder) contentType() string {
	if ct := rb.r.header.Get("Content-Type"); ct != "" {
		return ct
	}
	if rb.bodyType != "" {
		return rb.bodyType
	}
	return "application/json"
}

// fillURL fills the url template: placeholders in the path with
// url.PathEscape, in the query with url.QueryEscape. It returns the origin
// (scheme://host), the escaped path and the query pairs.
func fillURL(tmpl string, input map[string]any, locs map[string]location, consumed map[string]bool) (origin, path string, query []string, err error) {
	origin, rawPath, rawQuery, err := splitURLTemplate(tmpl)
	if err != nil {
		return "", "", nil, err
	}
	path, err = fillPath(rawPath, input, locs, consumed)
	if err != nil {
		return "", "", nil, err
	}
	query, err = fillQuery(rawQuery, input, consumed)
	if err != nil {
		return "", "", nil, err
	}
	return origin, path, query, nil
}

// splitURLTemplate splits an absolute url template into its origin (which
// must hold no placeholder), path and query, dropping any fragment.
func splitURLTemplate(tmpl string) (origin, rawPath, rawQuery string, err error) {
	t := strings.TrimSpace(tmpl)
	i := strings.Index(t, "://")
	if i <= 0 {
		return "", "", "", fmt.Errorf("http binding: url template %q is not an absolute URL: write bindings.http.url as http(s)://host/path", tmpl)
	}
	rest := t[i+3:]
	j := strings.IndexAny(rest, "/?#")
	if j < 0 {
		j = len(rest)
	}
	origin, tail := t[:i+3+j], rest[j:]
	if len(capability.Placeholders(origin)) > 0 {
		return "", "", "", fmt.Errorf("http binding: the scheme or host of url template %q holds a placeholder; the destination must be fixed by the definition: move the input into the path or query", tmpl)
	}
	tail, _, _ = strings.Cut(tail, "#")
	rawPath, rawQuery, _ = strings.Cut(tail, "?")
	return origin, rawPath, rawQuery, nil
}

// fillPath fills the path placeholders: every one required, each value
// within one segment and no dot segment made.
func fillPath(rawPath string, input map[string]any, locs map[string]location, consumed map[string]bool) (string, error) {
	var pairs []string
	for _, name := range capability.Placeholders(rawPath) {
		top := topField(name)
		consumed[top] = true
		v, ok := bindutil.Lookup(input, name)
		if !ok || v == nil {
			return "", bindutil.InvalidInput(Kind, "the url path %q needs {%s}, but input field %s is absent: supply it", rawPath, name, name)
		}
		loc, recorded := locs[top]
		if !recorded || name != top {
			loc = location{}
		}
		text, err := pathText(v, loc, name)
		if err != nil {
			return "", err
		}
		pairs = append(pairs, "{"+name+"}", text)
	}
	if len(pairs) == 0 {
		return rawPath, nil
	}
	path := strings.NewReplacer(pairs...).Replace(rawPath)
	return path, checkSegments(rawPath, path)
}

// checkSegments checks that filling the path template kept its segments
// and made none of them a dot segment.
func checkSegments(rawPath, path string) error {
	tsegs, fsegs := strings.Split(rawPath, "/"), strings.Split(path, "/")
	if len(tsegs) != len(fsegs) {
		return fmt.Errorf("http binding: filling url path %q changed its segments; this is a bug in caphub, please report it", rawPath)
	}
	for k := range fsegs {
		if fsegs[k] == tsegs[k] {
			continue
		}
		if seg, _ := url.PathUnescape(fsegs[k]); seg == "." || seg == ".." {
			return bindutil.InvalidInput(Kind, "the url path segment %q would be %q, a dot segment that servers resolve to another path: use another value", tsegs[k], seg)
		}
	}
	return nil
}

// fillQuery fills the query template's pairs; a pair naming an absent
// field is left out.
func fillQuery(rawQuery string, input map[string]any, consumed map[string]bool) ([]string, error) {
	if rawQuery == "" {
		return nil, nil
	}
	var query []string
	for _, pair := range strings.Split(rawQuery, "&") {
		filled, ok, err := fillText(pair, input, consumed, url.QueryEscape)
		if err != nil {
			return nil, err
		}
		if ok && filled != "" {
			query = append(query, filled)
		}
	}
	return query, nil
}

// fillText fills the placeholders of tmpl with the text of their values,
// passed through escape (each array element separately) when it is not nil.
// ok is false when a placeholder's field is absent or null.
func fillText(tmpl string, input map[string]any, consumed map[string]bool, escape func(string) string) (string, bool, error) {
	names := capability.Placeholders(tmpl)
	if len(names) == 0 {
		return tmpl, true, nil
	}
	pairs := make([]string, 0, 2*len(names))
	ok := true
	for _, name := range names {
		consumed[topField(name)] = true
		v, found := bindutil.Lookup(input, name)
		if !found || v == nil {
			ok = false
			continue
		}
		text, err := joinedText(v, escape)
		if err != nil {
			return "", false, fmt.Errorf("http binding: {%s}: %w", name, err)
		}
		pairs = append(pairs, "{"+name+"}", text)
	}
	if !ok {
		return "", false, nil
	}
	return strings.NewReplacer(pairs...).Replace(tmpl), true, nil
}

// joinedText is a value's text with escape applied: arrays as their elements
// joined by ",", each escaped; everything else as valueText.
func joinedText(v any, escape func(string) string) (string, error) {
	if escape == nil {
		escape = func(s string) string { return s }
	}
	if arr, ok := v.([]any); ok {
		parts := make([]string, len(arr))
		for i, e := range arr {
			t, err := valueText(e)
			if err != nil {
				return "", err
			}
			parts[i] = escape(t)
		}
		return strings.Join(parts, ","), nil
	}
	t, err := valueText(v)
	if err != nil {
		return "", err
	}
	return escape(t), nil
}

// pathText is a path parameter's escaped text: OpenAPI simple, label or
// matrix style when recorded, else joinedText (objects as compact JSON).
func pathText(v any, loc location, name string) (string, error) {
	esc := url.PathEscape
	if loc.style == "" {
		return joinedText(v, esc)
	}
	if loc.name != "" {
		name = loc.name
	}
	items, err := styleItems(v, loc.explode, esc)
	if err != nil {
		return "", err
	}
	_, isObj := v.(map[string]any)
	switch loc.style {
	case "label":
		sep := ","
		if loc.explode {
			sep = "."
		}
		return "." + strings.Join(items, sep), nil
	case "matrix":
		if loc.explode && isObj {
			return ";" + strings.Join(items, ";"), nil
		}
		if loc.explode {
			parts := make([]string, len(items))
			for i, it := range items {
				parts[i] = esc(name) + "=" + it
			}
			return ";" + strings.Join(parts, ";"), nil
		}
		return ";" + esc(name) + "=" + strings.Join(items, ","), nil
	default: // simple
		return strings.Join(items, ","), nil
	}
}

// styleItems lists a value's escaped parts for OpenAPI serialisation: an
// array's elements; an object's "k=v" (explode) or "k", "v" pairs, keys
// sorted; a scalar itself.
func styleItems(v any, explode bool, esc func(string) string) ([]string, error) {
	switch x := v.(type) {
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			t, err := valueText(e)
			if err != nil {
				return nil, err
			}
			out = append(out, esc(t))
		}
		return out, nil
	case map[string]any:
		var out []string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			t, err := valueText(x[k])
			if err != nil {
				return nil, err
			}
			if explode {
				out = append(out, esc(k)+"="+esc(t))
			} else {
				out = append(out, esc(k), esc(t))
			}
		}
		return out, nil
	}
	t, err := valueText(v)
	if err != nil {
		return nil, err
	}
	return []string{esc(t)}, nil
}

// appendQuery adds a query parameter (escaped "name=value" pairs) for v
// serialised as loc says. A null value adds nothing.
func appendQuery(query []string, loc location, v any) []string {
	if v == nil {
		return query
	}
	name := url.QueryEscape(loc.name)
	style, explode := loc.style, loc.explode
	if style == "" && loc.collectionFormat == "" {
		style = "form"
		if _, ok := v.(map[string]any); ok {
			return append(query, name+"="+url.QueryEscape(queryText(v))) // no recorded style: objects as compact JSON
		}
	}
	sep := ","
	switch {
	case loc.collectionFormat == "tsv":
		sep, explode = "\t", false
	case style == "spaceDelimited":
		sep, explode = " ", false
	case style == "pipeDelimited":
		sep, explode = "|", false
	}
	switch x := v.(type) {
	case []any:
		return appendQueryArray(query, name, x, sep, explode)
	case map[string]any:
		return appendQueryObject(query, loc.name, x, style, sep, explode)
	}
	return append(query, name+"="+url.QueryEscape(queryText(v)))
}

// queryText is the text of a query value (valueText, errors aside).
func queryText(v any) string {
	t, _ := valueText(v)
	return t
}

// appendQueryArray adds an array: one pair per element when exploded,
// else one pair of the elements joined with sep.
func appendQueryArray(query []string, name string, x []any, sep string, explode bool) []string {
	if explode {
		for _, e := range x {
			query = append(query, name+"="+url.QueryEscape(queryText(e)))
		}
		return query
	}
	parts := make([]string, len(x))
	for i, e := range x {
		parts[i] = url.QueryEscape(queryText(e))
	}
	return append(query, name+"="+strings.Join(parts, url.QueryEscape(sep)))
}

// appendQueryObject adds an object of the parameter name: name[key]=value
// pairs (deepObject), key=value pairs (exploded), else one pair of keys and
// values joined with sep.
func appendQueryObject(query []string, name string, x map[string]any, style, sep string, explode bool) []string {
	keys := slices.Sorted(maps.Keys(x))
	switch {
	case style == "deepObject":
		for _, k := range keys {
			query = append(query, url.QueryEscape(name+"["+k+"]")+"="+url.QueryEscape(queryText(x[k])))
		}
	case explode:
		for _, k := range keys {
			query = append(query, url.QueryEscape(k)+"="+url.QueryEscape(queryText(x[k])))
		}
	default:
		parts := make([]string, 0, 2*len(keys))
		for _, k := range keys {
			parts = append(parts, url.QueryEscape(k), url.QueryEscape(queryText(x[k])))
		}
		query = append(query, url.QueryEscape(name)+"="+strings.Join(parts, url.QueryEscape(sep)))
	}
	return query
}

// headerText is a header or cookie parameter's text: OpenAPI simple style
// when recorded (arrays "a,b"; objects "k,v" or "k=v"), else joinedText.
func headerText(v any, loc location) (string, error) {
	if loc.style == "" {
		return joinedText(v, nil)
	}
	items, err := styleItems(v, loc.explode, func(s string) string { return s })
	if err != nil {
		return "", err
	}
	return strings.Join(items, ","), nil
}

// checkHeaderValue refuses a value that would end the header line.
func checkHeaderValue(v string) error {
	if strings.ContainsAny(v, "\r\n\x00") {
		return fmt.Errorf("the value contains CR, LF or NUL, which would add headers or split the request: remove them")
	}
	return nil
}

// encodeWhole encodes the value of the field that is the whole body.
func encodeWhole(v any, ct string) ([]byte, error) {
	if m, ok := v.(map[string]any); ok && !isJSONType(mediaType(ct)) {
		body, _, err := encodeFields(m, ct)
		return body, err
	}
	mt := mediaType(ct)
	if s, ok := v.(string); ok && !isJSONType(mt) {
		return []byte(s), nil
	}
	if !isJSONType(mt) && !strings.HasPrefix(mt, "text/") {
		return nil, fmt.Errorf("content type %s needs a string value (got %s): pass the body as text", ct, typeName(v))
	}
	return jsonEncode(v)
}

// encodeFields encodes body fields by content type and returns the body and
// its Content-Type (multipart's carries the boundary).
func encodeFields(fields map[string]any, ct string) ([]byte, string, error) {
	mt := mediaType(ct)
	switch {
	case isJSONType(mt):
		b, err := jsonEncode(fields)
		return b, ct, err
	case mt == "application/x-www-form-urlencoded":
		var q []string
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			q = appendQuery(q, location{name: k, style: "form", explode: true}, fields[k])
		}
		return []byte(strings.Join(q, "&")), ct, nil
	case mt == "multipart/form-data":
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			vals := []any{fields[k]}
			if arr, ok := fields[k].([]any); ok {
				vals = arr
			}
			for _, e := range vals {
				if e == nil {
					continue
				}
				t, err := valueText(e)
				if err != nil {
					return nil, "", err
				}
				if err := w.WriteField(k, t); err != nil {
					return nil, "", err
				}
			}
		}
		if err := w.Close(); err != nil {
			return nil, "", err
		}
		return buf.Bytes(), w.FormDataContentType(), nil
	}
	return nil, "", fmt.Errorf("content type %s cannot carry separate fields (%s): use JSON, form-urlencoded or multipart, or make one field the whole body (x-body.field)", ct, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
}

// parseLocations reads bindings.http.x-parameters.
func parseLocations(v any) (map[string]location, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("http binding: bindings.http.%s is %s, not a map from input field to location: fix the definition", ExtraParameters, typeName(v))
	}
	out := make(map[string]location, len(m))
	for field, raw := range m {
		loc := location{name: field}
		switch x := raw.(type) {
		case string:
			loc.in, loc.explode = x, true
		case map[string]any:
			loc.in, _ = x["in"].(string)
			if n, _ := x["name"].(string); n != "" {
				loc.name = n
			}
			loc.style, _ = x["style"].(string)
			if e, set := x["explode"].(bool); set {
				loc.explode = e
			} else {
				loc.explode = loc.style == "form" || loc.style == ""
			}
			loc.collectionFormat, _ = x["collection_format"].(string)
			if loc.collectionFormat != "" && loc.style == "" {
				loc.style = "form"
			}
		default:
			return nil, fmt.Errorf("http binding: bindings.http.%s.%s is %s: write a location (path, query, header, cookie, body) or {in, name}", ExtraParameters, field, typeName(raw))
		}
		switch loc.in {
		case inPath, inQuery, inHeader, inCookie, inBody:
		default:
			return nil, fmt.Errorf("http binding: bindings.http.%s.%s has location %q: use path, query, header, cookie or body", ExtraParameters, field, loc.in)
		}
		out[field] = loc
	}
	return out, nil
}

// parseBodySpec reads bindings.http.x-body: the field that is the whole
// body ("" when the body is built from fields) and the content type.
func parseBodySpec(v any) (field, contentType string, err error) {
	if v == nil {
		return "", "", nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", "", fmt.Errorf("http binding: bindings.http.%s is %s, not {content_type, field}: fix the definition", ExtraBody, typeName(v))
	}
	field, _ = m["field"].(string)
	contentType, _ = m["content_type"].(string)
	return field, contentType, nil
}

// renderBody fills a JSON body template: inside a JSON string a placeholder
// gets the JSON-string-escaped text of its value, elsewhere the value's JSON
// encoding. The result must be valid JSON.
func renderBody(tmpl string, input map[string]any, consumed map[string]bool) ([]byte, error) {
	names := map[string]bool{}
	for _, n := range capability.Placeholders(tmpl) {
		names[n] = true
	}
	var out bytes.Buffer
	out.Grow(len(tmpl) + 64)
	inString, escaped := false, false
	for i := 0; i < len(tmpl); {
		c := tmpl[i]
		if name, ok := placeholderAt(tmpl, i, names); ok {
			if escaped {
				return nil, fmt.Errorf("http binding: body_template has {%s} right after a backslash inside a JSON string, which would change how the value is read: remove the backslash", name)
			}
			consumed[topField(name)] = true
			v, _ := bindutil.Lookup(input, name)
			if err := writeBodyValue(&out, name, v, inString); err != nil {
				return nil, err
			}
			i += len(name) + 2
			continue
		}
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		}
		out.WriteByte(c)
		i++
	}
	body := out.Bytes()
	var probe any
	if err := json.Unmarshal(body, &probe); err != nil {
		return nil, fmt.Errorf("http binding: body_template does not render to valid JSON (%v): check its quotes, commas and that each standalone placeholder is a whole JSON value", err)
	}
	return body, nil
}

// placeholderAt returns the placeholder of names that starts at tmpl[i]
// ("{name}"), if one does.
func placeholderAt(tmpl string, i int, names map[string]bool) (string, bool) {
	if tmpl[i] != '{' || len(names) == 0 {
		return "", false
	}
	k := strings.IndexByte(tmpl[i+1:], '}')
	if k < 0 || !names[tmpl[i+1:i+1+k]] {
		return "", false
	}
	return tmpl[i+1 : i+1+k], true
}

// writeBodyValue writes the value of placeholder name into a body
// template: inside a JSON string as its escaped text (null as ""), else
// as a JSON value.
func writeBodyValue(out *bytes.Buffer, name string, v any, inString bool) error {
	if !inString {
		enc, err := jsonEncode(v)
		if err != nil {
			return fmt.Errorf("http binding: body_template {%s}: %w", name, err)
		}
		out.Write(enc)
		return nil
	}
	text := ""
	if v != nil {
		t, err := valueText(v)
		if err != nil {
			return fmt.Errorf("http binding: body_template {%s}: %w", name, err)
		}
		text = t
	}
	enc, err := jsonEncode(text)
	if err != nil {
		return err
	}
	out.Write(enc[1 : len(enc)-1])
	return nil
}

// topField is the input field a placeholder reads: "a" for "a.b".
func topField(name string) string {
	top, _, _ := strings.Cut(name, ".")
	return top
}

// valueText is a value as text: strings as they are, numbers and booleans
// in their JSON form, arrays and objects as compact JSON.
func valueText(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := jsonEncode(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// jsonEncode encodes v compactly without HTML escaping.
func jsonEncode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("cannot encode a %s value as JSON: %w", typeName(v), err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(ct))
	}
	return mt
}

// isJSONType reports application/json and the +json types.
func isJSONType(mt string) bool {
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// isToken reports whether s is an RFC 9110 token (methods, header names).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case float64, float32, int, int64, int32, json.Number:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}
