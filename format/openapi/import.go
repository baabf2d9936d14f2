package openapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caphub/caphub/capability"
)

// Provenance values of imported definitions (CCOS :discovery; the CCOS
// seed and corpus use these for capabilities read from an HTTP API's
// description).
const (
	provenanceMethod    = "api_introspection"
	capabilityType      = "specialized_http_api"
	introspectorVersion = "caphub-openapi/1"
)

// Keys of the http binding's Extra map that record what the binding's own
// fields cannot say.
const (
	// extraParameters maps every input field to where it goes in the
	// request: {"in": "path"|"query"|"header"|"cookie"|"body", "name": the
	// parameter or body property name} (no name for a field that is the
	// whole body), plus "style" and "explode" for array and object
	// parameters (OpenAPI 3 serialisation; Swagger 2 collectionFormat is
	// converted: csv → form/false, multi → form/true, ssv →
	// spaceDelimited, pipes → pipeDelimited, tsv → collection_format: tsv)
	// and "allow_reserved" when set.
	extraParameters = "x-parameters"
	// extraBody describes the request body: {"content_type": …, "fields":
	// [input fields whose object is the body]} when the body's properties
	// were merged into the input, or {"content_type": …, "field": "body"}
	// when the body is one input field; "alternatives" lists the other
	// content types the operation accepts.
	extraBody = "x-body"
)

// ErrNotOpenAPI is returned (wrapped) by Import when the bytes are not an
// OpenAPI 3.x or Swagger 2.0 document at all.
var ErrNotOpenAPI = errors.New("not an OpenAPI or Swagger document")

// DefaultMaxSchemaNodes is the default bound on the size of one
// definition's input plus output schema with their $defs: the bound
// registration applies (capability.MaxSchemaNodes), so an import does not
// produce what the registry refuses.
const DefaultMaxSchemaNodes = capability.MaxSchemaNodes

// Options tune an import.
type Options struct {
	// Domain of every capability (grammar [a-z][a-z0-9-]*); by default the
	// spec's info.title made a domain (see the package doc).
	Domain string
	// BaseURL replaces the spec's server URL (OpenAPI 3 servers, Swagger 2
	// schemes/host/basePath); needed when that URL is relative and the
	// document's location is not known (read from a file without
	// info.x-origin): without it those operations import with a binding
	// that refuses every call (see the package doc).
	BaseURL string
	// Version, when set, is the version of every capability (a full
	// MAJOR.MINOR.PATCH) instead of the one derived from info.version:
	// registered versions are immutable, so a changed spec that kept its
	// info.version needs a new one to be registered again.
	Version string
	// Now gives the provenance created_at time; time.Now by default.
	Now func() time.Time
	// MaxSchemaNodes bounds one definition's input plus output schema with
	// their $defs (DefaultMaxSchemaNodes when 0); a larger one is a failure.
	MaxSchemaNodes int
	// MaxSharedBytes bounds the JSON of the shared schemas (components)
	// that one input or output schema carries in its $defs
	// (DefaultMaxSharedBytes when 0, no bound when negative): the nearest
	// are carried whole, those beyond as stubs that accept any value of
	// the component's type (see the package doc).
	MaxSharedBytes int
}

// DefaultMaxSharedBytes is the default of Options.MaxSharedBytes.
const DefaultMaxSharedBytes = 16 << 10

// Result is what an import produced.
type Result struct {
	// Definitions are the imported capabilities, one per operation, in the
	// order of the sorted paths and then get, put, post, delete, options,
	// head, patch, trace. Each owns its schemas but for the components
	// under their $defs, which the definitions of one import share (a
	// densely connected document would otherwise hold one copy of each
	// component per operation: Microsoft Graph's 11,422 operations, 350 MB
	// of copies). Those are in canonical form (capability.Normalize only
	// reads them) and must not be changed: copy a definition's schema
	// (capability.CloneValue) before changing anything under its $defs.
	Definitions []capability.Definition
	// Failures are the operations that could not be imported, each with
	// its reason and position.
	Failures []capability.ImportFailure
	// Operations is the number of operations found, imported or failed (a
	// path item that cannot be read is one failure and no operation).
	Operations int
	// Title and Version are info.title and info.version as written.
	Title, Version string
	// SpecVersion is the document's openapi or swagger field ("3.0.3",
	// "3.1.0", "2.0").
	SpecVersion string
	// Domain is the domain the capabilities were given.
	Domain string
	// Warnings are things that were skipped or guessed, for the user to
	// check (webhooks ignored, a security scheme caphub cannot apply, an
	// unknown base URL, a parameter without a name), each given once.
	Warnings []string
}

var domainRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// methods are the operations of a path item, in import order.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Import reads an OpenAPI 3.0, 3.1 or Swagger 2.0 document (YAML or JSON)
// and returns one capability definition per operation. source names the
// document (a file path or URL) in provenance and failures; when it is an
// http(s) URL, relative server URLs are resolved against it (for a file,
// against its info.x-origin when it has one).
//
// An operation that cannot be imported becomes a Failure and the import goes
// on. Import returns an error only when the options are invalid, when ctx
// ends, when data is not an OpenAPI or Swagger document (ErrNotOpenAPI), or
// when its text is ambiguous: a key written twice in one object or mapping,
// invalid UTF-8 or a lone surrogate escape ("FILE:LINE:COL: PATH: what").
func Import(ctx context.Context, source string, data []byte, opts Options) (*Result, error) {
	if err := opts.Check(); err != nil {
		return nil, err
	}
	doc, err := decode(data)
	var te *textError
	if errors.As(err, &te) {
		return nil, fmt.Errorf("%s:%d:%d: %w", source, te.line, te.col, te)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", source, ErrNotOpenAPI, err)
	}
	version, specVer, err := detectVersion(doc.root)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", source, ErrNotOpenAPI, err)
	}
	im := newImporter(source, doc, version, len(data), opts)
	im.res.SpecVersion = specVer
	return im.run(ctx)
}

// Check reports the first invalid option: a Domain outside the grammar
// [a-z][a-z0-9-]*, a BaseURL that is not an absolute http(s) URL, a Version
// that is not a full semantic version.
func (o Options) Check() error {
	if o.Domain != "" && !domainRE.MatchString(o.Domain) {
		return fmt.Errorf("domain %q is not valid: use lower-case letters, digits and hyphens, starting with a letter (e.g. %s)", o.Domain, orDefault(domainFromTitle(o.Domain), "my-api"))
	}
	if o.BaseURL != "" {
		if u, err := url.Parse(o.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("base URL %q must be an absolute http(s) URL, e.g. https://api.example.com/v1", o.BaseURL)
		}
	}
	if o.Version != "" {
		v, err := capability.ParseVersion(o.Version)
		if err != nil {
			return err
		}
		if v.Parts < 3 {
			return fmt.Errorf("version %q is not a full semantic version: write MAJOR.MINOR.PATCH, e.g. %s", o.Version, v.Full())
		}
	}
	return nil
}

// detectVersion reads the openapi or swagger field.
func detectVersion(root map[string]any) (specVersion, string, error) {
	if v, ok := root["openapi"]; ok {
		s := scalarText(v)
		switch {
		case s == "3" || strings.HasPrefix(s, "3.0"):
			return oas30, s, nil
		case strings.HasPrefix(s, "3."):
			return oas31, s, nil
		}
		return 0, "", fmt.Errorf(`openapi is %q: caphub reads OpenAPI 3.0.x and 3.1.x (and Swagger "2.0")`, s)
	}
	if v, ok := root["swagger"]; ok {
		s := scalarText(v)
		if s == "2.0" || s == "2" {
			return swagger2, "2.0", nil
		}
		return 0, "", fmt.Errorf(`swagger is %q: caphub reads Swagger "2.0" (convert older specs with swagger-converter)`, s)
	}
	return 0, "", errors.New(`expected a top-level "openapi" field (3.0.x or 3.1.x) or "swagger": "2.0", found neither`)
}

// scalarText renders a scalar read from YAML or JSON as text (YAML reads
// openapi: 3.0 as a number).
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

type importer struct {
	source string
	// location is where the document was served from (documentLocation),
	// nil when unknown, and locationWhy then says why.
	location    *url.URL
	locationWhy string
	doc         *document
	root        map[string]any
	version     specVersion
	conv        *converter
	opts        Options
	domain      string
	semver      string
	uriVer      string
	created     string
	schemes     map[string]map[string]any // supported security schemes by name
	envs        map[string]string         // security scheme name → env variable
	// unsupported describes the security schemes caphub cannot apply, by
	// name; needs lists, by scheme, the operations left needing one.
	unsupported map[string]string
	needs       map[string][]string
	res         *Result
	maxNodes    int
	sharedBytes int // Options.MaxSharedBytes or its default
	// warned holds the warnings given, so each is given once.
	warned       map[string]bool
	unknownBases []*unknownBase
}

// workBudget bounds the schema and data nodes an import converts: one
// million plus one per byte of the document. Every referenced schema is
// converted once, so only data that YAML aliases expand reaches it.
func workBudget(docBytes int) int { return 1_000_000 + docBytes }

func newImporter(source string, doc *document, v specVersion, size int, opts Options) *importer {
	im := &importer{
		source:  source,
		doc:     doc,
		root:    doc.root,
		version: v,
		opts:    opts,
		res:     &Result{},
	}
	im.location, im.locationWhy = documentLocation(source, doc.root)
	info, _ := doc.root["info"].(map[string]any)
	im.res.Title = scalarText(info["title"])
	im.res.Version = scalarText(info["version"])
	im.domain = opts.Domain
	if im.domain == "" {
		im.domain = domainFromTitle(im.res.Title)
	}
	if im.domain == "" {
		base := path.Base(strings.TrimRight(source, "/"))
		im.domain = domainFromTitle(strings.TrimSuffix(base, path.Ext(base)))
	}
	if im.domain == "" {
		im.domain = "api"
	}
	im.res.Domain = im.domain
	im.semver = semverOf(im.res.Version)
	if opts.Version != "" {
		im.semver = opts.Version
	}
	v2, _ := capability.ParseVersion(im.semver)
	im.uriVer = v2.Short()
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	im.created = now().UTC().Format(time.RFC3339)
	im.maxNodes = opts.MaxSchemaNodes
	if im.maxNodes <= 0 {
		im.maxNodes = DefaultMaxSchemaNodes
	}
	im.sharedBytes = opts.MaxSharedBytes
	if im.sharedBytes == 0 {
		im.sharedBytes = DefaultMaxSharedBytes
	}
	im.conv = newConverter(doc.root, v, workBudget(size))
	im.securitySchemes()
	return im
}

// operation is one operation of the document.
type operation struct {
	path, method string
	item, op     map[string]any
	name         string
}

func (o *operation) label() string {
	l := strings.ToUpper(o.method) + " " + o.path
	if id, ok := o.op["operationId"].(string); ok && id != "" {
		l += " (" + id + ")"
	}
	return l
}

func (im *importer) run(ctx context.Context) (*Result, error) {
	if hooks, ok := im.root["webhooks"].(map[string]any); ok && len(hooks) > 0 {
		im.warnf("webhooks ignored (%d): they describe requests the API sends, not operations to call", len(hooks))
	}
	ops := im.operations()
	im.assignNames(ops)
	for _, o := range ops {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("import of %s stopped: %w", im.source, err)
		}
		d, err := im.build(o)
		if err != nil {
			im.fail(o, err.Error())
			continue
		}
		im.res.Definitions = append(im.res.Definitions, d)
	}
	im.warnUnknownBases()
	im.warnUnsupported()
	return im.res, nil
}

// operations returns the document's operations in import order (sorted
// paths, then methods), counting them in the result; a path item or an
// operation that is not an object is a failure.
func (im *importer) operations() []*operation {
	var ops []*operation
	paths, ok := im.root["paths"].(map[string]any)
	if !ok && im.root["paths"] != nil {
		im.fail(&operation{path: "paths"}, "paths is not an object: it must map each path (/pets) to its operations")
	}
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		if strings.HasPrefix(p, "x-") {
			continue
		}
		item, err := im.conv.resolve(paths[p], "the path item")
		if err != nil {
			im.fail(&operation{path: p}, err.Error())
			continue
		}
		ops = append(ops, im.pathOperations(p, item)...)
	}
	return ops
}

// pathOperations returns the operations of one path item.
func (im *importer) pathOperations(p string, item map[string]any) []*operation {
	var ops []*operation
	for _, m := range methods {
		raw, ok := item[m]
		if !ok {
			continue
		}
		im.res.Operations++
		o := &operation{path: p, method: m, item: item}
		if o.op, ok = raw.(map[string]any); !ok {
			im.fail(o, "the operation is not an object")
			continue
		}
		ops = append(ops, o)
	}
	return ops
}

func (im *importer) fail(o *operation, reason string) {
	item := o.path
	if o.method != "" && o.op != nil {
		item = o.label()
	} else if o.method != "" {
		item = strings.ToUpper(o.method) + " " + o.path
	}
	f := capability.ImportFailure{Item: item, Reason: reason, File: im.source}
	if o.path != "paths" {
		f.Line, f.Column = im.doc.position(o.path, o.method)
	}
	im.res.Failures = append(im.res.Failures, f)
}

// warnf adds a warning to the result, once: an identical one is dropped.
func (im *importer) warnf(format string, args ...any) {
	w := fmt.Sprintf(format, args...)
	if im.warned[w] {
		return
	}
	if im.warned == nil {
		im.warned = map[string]bool{}
	}
	im.warned[w] = true
	im.res.Warnings = append(im.res.Warnings, w)
}

// assignNames gives every operation a unique capability name: its
// operationId (else "method path") made snake_case (see snakeName); the
// first operation with a name keeps it, and later ones get the smallest
// suffix _2, _3, … that no operation's own name uses, in import order.
func (im *importer) assignNames(ops []*operation) {
	base := make([]string, len(ops))
	taken := map[string]bool{}
	for i, o := range ops {
		n := ""
		if id, ok := o.op["operationId"].(string); ok {
			n = snakeName(id)
		}
		if n == "" {
			n = snakeName(o.method + " " + o.path)
		}
		if n == "" {
			n = "operation"
		}
		base[i] = n
		taken[n] = true
	}
	used := map[string]bool{}
	for i, o := range ops {
		n := base[i]
		if used[n] {
			for k := 2; ; k++ {
				c := n + "_" + strconv.Itoa(k)
				if !used[c] && !taken[c] {
					n = c
					break
				}
			}
		}
		used[n] = true
		o.name = n
	}
}

// field is one input field and where it goes.
type field struct {
	name     string // input field name
	in       string // path, query, header, cookie, body
	param    string // parameter or body property name ("" for the whole body)
	schema   any
	size     int
	required bool
	extra    map[string]any // style, explode, …
}

// build turns one operation into a definition: its input fields (the
// parameters, undeclared path variables and the body), its output and
// errors, its http binding, and the definition with its metadata.
func (im *importer) build(o *operation) (capability.Definition, error) {
	method := strings.ToUpper(o.method)
	if !validMethod[method] {
		return capability.Definition{}, fmt.Errorf("method %s is not supported by caphub's http binding (GET, PUT, POST, DELETE, OPTIONS, HEAD, PATCH, TRACE)", method)
	}
	auth, authMeta := im.auth(o)
	params, bodyParams, err := im.parameters(o, auth)
	if err != nil {
		return capability.Definition{}, err
	}
	in := newInputFields(params, o.path)
	b, err := im.body(o, bodyParams)
	if err != nil {
		return capability.Definition{}, err
	}
	bodyExtra := in.addBody(b, im.conv)
	input, xparams, headers := in.schema()
	output, outSize, respCT, errs, err := im.responses(o)
	if err != nil {
		return capability.Definition{}, err
	}
	input, inDefs, err := im.conv.withDefs(input, im.sharedBytes)
	if err != nil {
		return capability.Definition{}, fmt.Errorf("input: %w", err)
	}
	output, outDefs, err := im.conv.withDefs(output, im.sharedBytes)
	if err != nil {
		return capability.Definition{}, fmt.Errorf("output: %w", err)
	}
	if err := im.checkSize(input, output, addSize(addSize(in.size, outSize), addSize(inDefs, outDefs))); err != nil {
		return capability.Definition{}, err
	}
	binding, base, err := im.binding(o, method, in.pathFields)
	if err != nil {
		return capability.Definition{}, err
	}
	binding.Auth = auth
	setExtra(binding, extraParameters, xparams)
	setExtra(binding, extraBody, bodyExtra)
	if b != nil {
		headers["Content-Type"] = b.contentType
	}
	if len(headers) > 0 {
		binding.Headers = headers
	}
	d := im.definition(o, input, output, errs, binding)
	meta := im.metadata(o, base, binding.Method, respCT)
	maps.Copy(meta, authMeta)
	if b != nil {
		meta["request_content_type"] = b.contentType
	}
	d.Metadata = map[string]any{"openapi": meta}
	d.ApplyInference(im.domain)
	return d, nil
}

// setExtra sets a key of the binding's Extra when the value is not empty.
func setExtra(binding *capability.HTTPBinding, key string, v map[string]any) {
	if len(v) > 0 {
		binding.Extra[key] = v
	}
}

// inputFields are an operation's input fields in order, by name, and the
// field of each path template variable; size counts the input schema's
// nodes outside the fields' own schemas.
type inputFields struct {
	byName     map[string]*field
	order      []*field
	pathFields map[string]string // path template name → field
	size       int
}

// newInputFields makes the fields of the parameters, then of the path
// template variables the parameters do not declare, which still need a
// value: they become required string fields.
func newInputFields(params []field, path string) *inputFields {
	in := &inputFields{byName: map[string]*field{}, pathFields: map[string]string{}, size: 2}
	for _, p := range params {
		f := p
		f.name = uniqueField(in.byName, fieldName(p.param), p.in)
		if p.in == "path" {
			in.pathFields[p.param] = f.name
		}
		in.add(&f)
	}
	for _, m := range pathParamRE.FindAllStringSubmatch(path, -1) {
		if _, ok := in.pathFields[m[1]]; ok {
			continue
		}
		f := &field{in: "path", param: m[1], required: true, size: 2,
			schema: map[string]any{"type": "string", "description": "path parameter " + m[1] + " (not declared by the operation)"}}
		f.name = uniqueField(in.byName, fieldName(m[1]), "path")
		in.pathFields[m[1]] = f.name
		in.add(f)
	}
	return in
}

func (in *inputFields) add(f *field) {
	in.byName[f.name] = f
	in.order = append(in.order, f)
}

// addBody adds the body's fields: its properties when they can be merged
// into the input (see mergeable; conv looks through a $ref to the body's
// schema), else one field "body". It returns the binding's extraBody, nil
// without a body.
func (in *inputFields) addBody(b *requestBody, conv *converter) map[string]any {
	if b == nil {
		return nil
	}
	extra := map[string]any{"content_type": b.contentType}
	if len(b.alternatives) > 0 {
		extra["alternatives"] = b.alternatives
	}
	if props, req, ok := mergeable(b, conv.shape(b.schema), in.byName); ok {
		var names []any
		for _, pn := range slices.Sorted(maps.Keys(props)) {
			in.add(&field{name: pn, in: "body", param: pn, schema: props[pn], required: req[pn]})
			names = append(names, pn)
		}
		extra["fields"] = names
		in.size = addSize(in.size, b.size)
		return extra
	}
	name := "body"
	if _, taken := in.byName[name]; taken {
		name = uniqueField(in.byName, "request_body", "body")
	}
	s := b.schema
	if b.description != "" {
		s = withAnnotations(s, map[string]any{"description": b.description})
	}
	in.add(&field{name: name, in: "body", schema: s, size: b.size, required: b.required})
	extra["field"] = name
	return extra
}

// schema returns the input schema, the binding's extraParameters (where
// each field goes) and the header templates of the header fields; it adds
// the fields' sizes to in.size.
func (in *inputFields) schema() (input, xparams map[string]any, headers map[string]string) {
	props := make(map[string]any, len(in.order))
	var required []any
	xparams = make(map[string]any, len(in.order))
	headers = map[string]string{}
	for _, f := range in.order {
		props[f.name] = f.schema
		in.size = addSize(in.size, f.size+1)
		if f.required {
			required = append(required, f.name)
		}
		xparams[f.name] = f.location()
		if f.in == "header" {
			headers[f.param] = "{" + f.name + "}"
		}
	}
	input = map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		input["required"] = required
	}
	return input, xparams, headers
}

// location is the field's entry of extraParameters.
func (f *field) location() map[string]any {
	loc := map[string]any{"in": f.in}
	if f.param != "" {
		loc["name"] = f.param
	}
	maps.Copy(loc, f.extra)
	return loc
}

// checkSize refuses a definition whose schemas (with their $defs) are
// larger than Options.MaxSchemaNodes, or that registration would refuse
// (too deep, too many subschemas), with the path, before anything is
// copied.
func (im *importer) checkSize(input, output map[string]any, total int) error {
	if total > im.maxNodes {
		return fmt.Errorf("its input and output schemas, with the shared schemas they reference, have more than %d nodes: raise Options.MaxSchemaNodes or simplify the schemas", im.maxNodes)
	}
	if issues := capability.CheckSchemaBudget(input, output); len(issues) > 0 {
		return fmt.Errorf("%s: %s", issues[0].Path, issues[0].Message)
	}
	return nil
}

// binding returns the operation's http binding (method and URL, the path
// variables renamed to their fields) and its base URL, "" when that is
// unknown: the URL then starts with unknownOrigin and the binding's
// extraBaseUnknown says why (httpbind refuses it with what to configure).
func (im *importer) binding(o *operation, method string, pathFields map[string]string) (*capability.HTTPBinding, string, error) {
	b := im.baseURL(o)
	if !strings.HasPrefix(o.path, "/") {
		return nil, "", fmt.Errorf("the path %q does not start with \"/\": write it as /%s", o.path, o.path)
	}
	urlPath := pathParamRE.ReplaceAllStringFunc(o.path, func(m string) string {
		return "{" + pathFields[m[1:len(m)-1]] + "}"
	})
	prefix := b.url
	if prefix == "" {
		b.path = cleanBasePath(b.path)
		prefix = unknownOrigin + b.path
	}
	if _, err := checkBase(pathParamRE.ReplaceAllString(prefix+urlPath, "x")); err != nil {
		return nil, "", fmt.Errorf("the path %q does not make a valid URL with %s: fix the path", o.path, prefix)
	}
	hb := &capability.HTTPBinding{Method: method, URL: prefix + urlPath, Extra: map[string]any{}}
	switch {
	case b.url == "":
		hb.Extra[extraBaseUnknown] = map[string]any{"server": b.server, "path": b.path, "reason": b.why}
		im.noteUnknownBase(b)
	case b.guess != "":
		im.warnf("%s", b.guess)
	}
	return hb, b.url, nil
}

// cleanBasePath makes the path of an unknown base one that can follow a
// host: "" or "/segments" without a trailing "/", with only characters a
// URL path may hold as they are.
func cleanBasePath(p string) string {
	p = strings.Trim(p, "/")
	if p == "" {
		return ""
	}
	return "/" + (&url.URL{Path: p}).EscapedPath()
}

// unknownBase counts the operations imported with one unknown base, for
// the document's one warning about it.
type unknownBase struct {
	b     base
	count int
}

// noteUnknownBase counts an operation whose base is unknown.
func (im *importer) noteUnknownBase(b base) {
	key := b.server + "\x00" + b.why
	for _, u := range im.unknownBases {
		if u.b.server+"\x00"+u.b.why == key {
			u.count++
			return
		}
	}
	im.unknownBases = append(im.unknownBases, &unknownBase{b: b, count: 1})
}

// warnUnknownBases gives one warning per unknown base: which server, why,
// how many operations, and what to pass.
func (im *importer) warnUnknownBases() {
	for _, u := range im.unknownBases {
		ops := "1 operation was"
		if u.count != 1 {
			ops = fmt.Sprintf("%d operations were", u.count)
		}
		im.warnf("the API's address is unknown: server URL %q (%s); %s imported with an http binding that fails until the address is given: pass --base-url (Options.BaseURL) with the API's address, e.g. https://api.example.com%s",
			u.b.server, u.b.why, ops, u.b.path)
	}
}

// definition assembles the operation's definition (without metadata).
func (im *importer) definition(o *operation, input, output map[string]any, errs []capability.ErrorDef, binding *capability.HTTPBinding) capability.Definition {
	op := o.op
	summary := strings.TrimSpace(str(op["summary"]))
	description := strings.TrimSpace(str(op["description"]))
	d := capability.Definition{
		URI:         "ossa:" + im.domain + "/" + o.name + "@" + im.uriVer,
		Name:        o.name,
		Domain:      im.domain,
		Version:     im.semver,
		Title:       orDefault(firstLine(summary), orDefault(humanTitle(str(op["operationId"])), humanTitle(o.method+" "+o.path))),
		Description: orDefault(description, orDefault(summary, strings.ToUpper(o.method)+" "+o.path)),
		Stability:   capability.StabilityStable,
		Input:       ownSchema(input),
		Output:      ownSchema(output),
		Errors:      errs,
		Bindings:    capability.Bindings{HTTP: binding},
		Permissions: []string{"network.http"},
		Effects:     []string{"network_request"},
		Keywords:    keywords(op["tags"]),
		Provenance: &capability.Provenance{
			Method:              provenanceMethod,
			SourceURL:           im.source,
			CreatedAt:           im.created,
			CapabilityType:      capabilityType,
			IntrospectorVersion: introspectorVersion,
		},
		DocumentationURL: orDefault(docURL(op["externalDocs"]), docURL(im.root["externalDocs"])),
	}
	if op["deprecated"] == true {
		d.Stability = capability.StabilityDeprecated
		d.MigrationGuide = "The API's OpenAPI document marks this operation deprecated; its description and documentation say what replaces it."
	}
	if binding.Auth != nil {
		d.Effects = append(d.Effects, "auth_required")
	}
	return d
}

// ownSchema is a definition's copy of a converted input or output schema:
// its own keywords deep-copied, and under $defs the components it carries
// (see withDefs), shared with the other definitions of the import.
func ownSchema(s map[string]any) map[string]any {
	defs, ok := s["$defs"].(map[string]any)
	if !ok {
		return capability.CloneValue(s).(map[string]any)
	}
	rest := shallowCopy(s)
	delete(rest, "$defs")
	out := capability.CloneValue(rest).(map[string]any)
	out["$defs"] = maps.Clone(defs)
	return out
}

// metadata is the definition's metadata.openapi, without the auth and
// request content type.
func (im *importer) metadata(o *operation, base, method, respCT string) map[string]any {
	meta := map[string]any{
		"endpoint_method": method,
		"endpoint_path":   o.path,
		"api_version":     im.res.Version,
		"openapi_version": im.res.SpecVersion,
	}
	if base != "" {
		meta["base_url"] = base
	}
	if id := str(o.op["operationId"]); id != "" {
		meta["operation_id"] = id
	}
	if respCT != "" {
		meta["response_content_type"] = respCT
	}
	return meta
}

var validMethod = map[string]bool{"GET": true, "PUT": true, "POST": true, "DELETE": true, "OPTIONS": true, "HEAD": true, "PATCH": true, "TRACE": true}

// pathParamRE finds the {name} variables of a path template.
var pathParamRE = regexp.MustCompile(`\{([^{}/]+)\}`)

// uniqueField returns name when no field has it, else "<in>_<name>", else
// that with the smallest suffix _2, _3, … that is free.
func uniqueField(fields map[string]*field, name, in string) string {
	if _, taken := fields[name]; !taken {
		return name
	}
	n := in + "_" + name
	if _, taken := fields[n]; !taken {
		return n
	}
	for k := 2; ; k++ {
		c := n + "_" + strconv.Itoa(k)
		if _, taken := fields[c]; !taken {
			return c
		}
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// keywords returns an operation's tags, trimmed and without duplicates.
func keywords(v any) []string {
	tags, _ := v.([]any)
	var out []string
	seen := map[string]bool{}
	for _, t := range tags {
		s := strings.TrimSpace(str(t))
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// docURL returns externalDocs.url when it is an absolute http(s) URL.
func docURL(v any) string {
	m, _ := v.(map[string]any)
	s := str(m["url"])
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return s
}
