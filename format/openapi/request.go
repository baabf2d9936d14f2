package openapi

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/caphub/caphub/capability"
)

// withAnnotations returns s with the annotations added where s has none of
// its own; s itself (which may be shared) is not changed.
func withAnnotations(s any, ann map[string]any) any {
	if len(ann) == 0 {
		return s
	}
	switch x := s.(type) {
	case map[string]any:
		c := shallowCopy(x)
		for k, v := range ann {
			if _, has := c[k]; !has {
				c[k] = v
			}
		}
		return c
	case bool:
		c := shallowCopy(ann)
		if !x {
			c["not"] = map[string]any{}
		}
		return c
	}
	return s
}

// parameters returns the operation's parameters (path-level ones first,
// overridden by the operation's own with the same name and location),
// without those the spec says to ignore (header Accept, Content-Type and
// Authorization) or that the binding's auth supplies; and, for Swagger 2,
// the body and formData parameters apart.
func (im *importer) parameters(o *operation, auth *capability.HTTPAuth) ([]field, []map[string]any, error) {
	list, err := im.declaredParameters(o)
	if err != nil {
		return nil, nil, err
	}
	var out []field
	var bodies []map[string]any
	for _, e := range list {
		in := str(e.p["in"])
		if (in == "body" || in == "formData") && im.version == swagger2 {
			bodies = append(bodies, e.p)
			continue
		}
		f, err := im.parameterField(e, auth)
		if err != nil {
			return nil, nil, err
		}
		if f != nil {
			out = append(out, *f)
		}
	}
	return out, bodies, nil
}

// declaredParameter is a resolved parameter and where it was declared
// ("parameters[2]").
type declaredParameter struct {
	p     map[string]any
	where string
}

// declaredParameters returns the path item's parameters and then the
// operation's, one of them replacing a path-level one with the same name
// and location (header names compared case-insensitively). A parameter
// whose name is empty or missing is skipped with a warning: nothing can be
// sent for it (some specs hold placeholders such as {"in": "query", "name": ""}).
func (im *importer) declaredParameters(o *operation) ([]declaredParameter, error) {
	var list []declaredParameter
	index := map[[2]string]int{}
	for _, src := range []struct {
		v     any
		where string
	}{{o.item["parameters"], "path-level parameters"}, {o.op["parameters"], "parameters"}} {
		if src.v == nil {
			continue
		}
		arr, ok := src.v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is not a list", src.where)
		}
		for i, raw := range arr {
			e, key, err := im.declaredParameter(raw, fmt.Sprintf("%s[%d]", src.where, i))
			if err != nil {
				return nil, err
			}
			if key[1] == "" {
				im.warnf("%s %s: %s (in %s) has no name and was skipped: a parameter needs a name to be sent", strings.ToUpper(o.method), o.path, e.where, orDefault(key[0], "missing"))
				continue
			}
			if j, dup := index[key]; dup {
				list[j] = e
				continue
			}
			index[key] = len(list)
			list = append(list, e)
		}
	}
	return list, nil
}

// declaredParameter resolves one parameter and returns it with its key
// (location and name, a header's name lower-cased); a named parameter
// without in is an error.
func (im *importer) declaredParameter(raw any, where string) (declaredParameter, [2]string, error) {
	p, err := im.conv.resolve(raw, where)
	if err != nil {
		return declaredParameter{}, [2]string{}, fmt.Errorf("%s: %w", where, err)
	}
	name, in := str(p["name"]), str(p["in"])
	if in == "" && name != "" {
		return declaredParameter{}, [2]string{}, fmt.Errorf("%s (%s) has no in: say where the parameter goes (path, query, header or cookie)", where, name)
	}
	key := [2]string{in, name}
	if in == "header" {
		key[1] = strings.ToLower(name)
	}
	return declaredParameter{p, where}, key, nil
}

// ignoredHeaders are the header parameters OpenAPI says SHALL be ignored.
var ignoredHeaders = map[string]bool{"accept": true, "content-type": true, "authorization": true}

// parameterField returns the input field of a path, query, header or cookie
// parameter; nil for one that is ignored or that the binding's auth
// supplies from its env variable.
func (im *importer) parameterField(e declaredParameter, auth *capability.HTTPAuth) (*field, error) {
	p := e.p
	name, in := str(p["name"]), str(p["in"])
	switch in {
	case "path", "query", "cookie":
	case "header":
		if ignoredHeaders[strings.ToLower(name)] {
			return nil, nil
		}
		if !httpToken(name) {
			return nil, fmt.Errorf("%s: %q is not a valid HTTP header name: use letters, digits and - only", e.where, name)
		}
	default:
		return nil, fmt.Errorf("%s (%s): in %q is not a parameter location: use path, query, header or cookie", e.where, name, in)
	}
	if suppliedByAuth(auth, in, name) {
		return nil, nil
	}
	s, size, err := im.paramSchema(p)
	if err != nil {
		return nil, fmt.Errorf("%s (%s): %w", e.where, name, err)
	}
	return &field{in: in, param: name, schema: s, size: size, required: in == "path" || p["required"] == true,
		extra: serialization(p, im.conv.shape(s), im.version)}, nil
}

// suppliedByAuth reports whether the binding's auth sets the parameter.
func suppliedByAuth(auth *capability.HTTPAuth, in, name string) bool {
	return auth != nil && auth.Location == in && (auth.ParamName == name || (in == "header" && strings.EqualFold(auth.ParamName, name)))
}

// swagger2ParamKeys are the keywords a Swagger 2.0 non-body parameter
// carries itself instead of a schema.
var swagger2ParamKeys = []string{"type", "format", "items", "enum", "default", "minimum", "maximum",
	"exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems",
	"uniqueItems", "multipleOf", "x-nullable"}

// paramSchema returns a parameter's schema (its schema, else the schema of
// its preferred content type, else, in Swagger 2.0, the schema keywords on
// the parameter itself), with the parameter's description, deprecated and
// example added.
func (im *importer) paramSchema(p map[string]any) (any, int, error) {
	s, size, err := im.conv.schema(im.rawParamSchema(p), 0)
	if err != nil {
		return nil, 0, err
	}
	ann := map[string]any{}
	if d := str(p["description"]); d != "" {
		ann["description"] = d
	}
	if p["deprecated"] == true {
		ann["deprecated"] = true
	}
	if ex, ok := p["example"]; ok && ex != nil {
		if cv, n, err := im.conv.copyValue(ex, 0); err == nil {
			ann["examples"] = []any{cv}
			size = addSize(size, n)
		}
	}
	return withAnnotations(s, ann), addSize(size, len(ann)), nil
}

// rawParamSchema is a parameter's unconverted schema (see paramSchema).
func (im *importer) rawParamSchema(p map[string]any) any {
	if s, ok := p["schema"]; ok {
		return s
	}
	if content, ok := p["content"].(map[string]any); ok && len(content) > 0 {
		_, media := pickMedia(content)
		if s, ok := media["schema"]; ok {
			return s
		}
		return map[string]any{}
	}
	if im.version != swagger2 {
		return map[string]any{}
	}
	m := map[string]any{}
	for _, k := range swagger2ParamKeys {
		if v, ok := p[k]; ok {
			m[k] = v
		}
	}
	return m
}

// serialization returns how an array or object parameter (whose converted
// schema, a $ref looked through, is s) is serialised:
// OpenAPI 3 style and explode (defaults filled in), or Swagger 2
// collectionFormat converted; nil for other parameters.
func serialization(p map[string]any, s any, v specVersion) map[string]any {
	t := schemaType(s)
	allowReserved, _ := p["allowReserved"].(bool)
	if t != "array" && t != "object" {
		if allowReserved {
			return map[string]any{"allow_reserved": true}
		}
		return nil
	}
	in := str(p["in"])
	if v == swagger2 {
		return collectionFormat(str(p["collectionFormat"]), in)
	}
	style := orDefault(str(p["style"]), defaultStyle(in))
	explode, ok := p["explode"].(bool)
	if !ok {
		explode = style == "form"
	}
	out := map[string]any{"style": style, "explode": explode}
	if allowReserved {
		out["allow_reserved"] = true
	}
	return out
}

// defaultStyle is OpenAPI 3's default style of a parameter location.
func defaultStyle(in string) string {
	if in == "path" || in == "header" {
		return "simple"
	}
	return "form"
}

// collectionFormat converts a Swagger 2.0 collectionFormat (csv by
// default) to OpenAPI 3's style and explode.
func collectionFormat(cf, in string) map[string]any {
	switch cf {
	case "multi":
		return map[string]any{"style": "form", "explode": true}
	case "ssv":
		return map[string]any{"style": "spaceDelimited", "explode": false}
	case "pipes":
		return map[string]any{"style": "pipeDelimited", "explode": false}
	case "tsv":
		return map[string]any{"collection_format": "tsv"}
	}
	return map[string]any{"style": defaultStyle(in), "explode": false}
}

// schemaType returns the single non-null type of a converted schema.
func schemaType(s any) string {
	m, _ := s.(map[string]any)
	switch t := m["type"].(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if e != "null" {
				return str(e)
			}
		}
	}
	return ""
}

// requestBody is an operation's body.
type requestBody struct {
	contentType  string
	alternatives []any
	schema       any
	size         int
	required     bool
	description  string
}

// body returns the operation's request body: OpenAPI 3 requestBody (its
// preferred content type, see pickMedia), or Swagger 2.0 the body parameter,
// or the formData parameters as one object (multipart/form-data when a
// parameter is a file or consumes lists only multipart, else
// application/x-www-form-urlencoded). nil when there is none.
func (im *importer) body(o *operation, params []map[string]any) (*requestBody, error) {
	if im.version != swagger2 {
		return im.requestBody(o)
	}
	if len(params) == 0 {
		return nil, nil
	}
	consumes := im.listOf(o, "consumes")
	var form []map[string]any
	for _, p := range params {
		if str(p["in"]) == "body" {
			return im.bodyParameter(p, consumes)
		}
		form = append(form, p)
	}
	return im.formBody(form, consumes)
}

// requestBody converts an OpenAPI 3 requestBody.
func (im *importer) requestBody(o *operation) (*requestBody, error) {
	raw, ok := o.op["requestBody"]
	if !ok {
		return nil, nil
	}
	rb, err := im.conv.resolve(raw, "requestBody")
	if err != nil {
		return nil, fmt.Errorf("requestBody: %w", err)
	}
	content, _ := rb["content"].(map[string]any)
	if len(content) == 0 {
		return nil, nil
	}
	ct, media := pickMedia(content)
	b := &requestBody{contentType: ct, required: rb["required"] == true, description: str(rb["description"])}
	for _, k := range slices.Sorted(maps.Keys(content)) {
		if k != ct {
			b.alternatives = append(b.alternatives, k)
		}
	}
	var s any = map[string]any{}
	if ms, ok := media["schema"]; ok {
		s = ms
	}
	b.schema, b.size, err = im.conv.schema(s, 0)
	if err != nil {
		return nil, fmt.Errorf("requestBody (%s): %w", ct, err)
	}
	return b, nil
}

// bodyParameter converts a Swagger 2.0 body parameter.
func (im *importer) bodyParameter(p map[string]any, consumes []string) (*requestBody, error) {
	b := &requestBody{contentType: preferJSON(consumes), required: p["required"] == true, description: str(p["description"])}
	var err error
	b.schema, b.size, err = im.conv.schema(p["schema"], 0)
	if err != nil {
		return nil, fmt.Errorf("body parameter %s: %w", str(p["name"]), err)
	}
	return b, nil
}

// formBody makes Swagger 2.0 formData parameters one object body.
func (im *importer) formBody(form []map[string]any, consumes []string) (*requestBody, error) {
	props := map[string]any{}
	var required []any
	size := 2
	file := false
	for _, p := range form {
		name := str(p["name"])
		s, n, err := im.paramSchema(p)
		if err != nil {
			return nil, fmt.Errorf("formData parameter %s: %w", name, err)
		}
		props[name] = s
		size = addSize(size, n+1)
		if p["required"] == true {
			required = append(required, name)
		}
		file = file || p["type"] == "file"
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	ct := "application/x-www-form-urlencoded"
	if file || (contains(consumes, "multipart/form-data") && !contains(consumes, ct)) {
		ct = "multipart/form-data"
	}
	return &requestBody{contentType: ct, schema: schema, size: size, required: len(required) > 0}, nil
}

// mergeable reports whether the body's properties become top-level input
// fields, and returns them with which are required. They do when the body
// schema is a plain object (type object, or no type with properties; no
// allOf/anyOf/oneOf or other constraints; additionalProperties absent or
// false) with at least one property, none of whose names is already an
// input field, and when the body is required or has no required property
// (so that merging does not make an optional body's fields mandatory).
func mergeable(b *requestBody, shape any, fields map[string]*field) (map[string]any, map[string]bool, bool) {
	s, ok := shape.(map[string]any)
	if !ok || !plainObject(s) {
		return nil, nil, false
	}
	props, _ := s["properties"].(map[string]any)
	req := map[string]bool{}
	for _, r := range stringSet(s["required"]) {
		req[r.(string)] = true
	}
	if len(req) > 0 && !b.required {
		return nil, nil, false
	}
	out := maps.Clone(props)
	for k := range req {
		if _, ok := out[k]; !ok {
			out[k] = map[string]any{} // required but not described: any value
		}
	}
	for k := range out {
		if _, clash := fields[k]; clash {
			return nil, nil, false
		}
	}
	return out, req, true
}

// plainObjectKeys are the keywords a plain object body may have (see
// mergeable), besides additionalProperties: false.
var plainObjectKeys = map[string]bool{"type": true, "properties": true, "required": true, "title": true, "description": true,
	"examples": true, "readOnly": true, "writeOnly": true, "deprecated": true, "$comment": true}

// plainObject reports whether a body schema is a plain object with at
// least one property (see mergeable).
func plainObject(s map[string]any) bool {
	props, ok := s["properties"].(map[string]any)
	if !ok || len(props) == 0 {
		return false
	}
	if t, has := s["type"]; has && t != "object" {
		return false
	}
	for k, v := range s {
		if !plainObjectKeys[k] && (k != "additionalProperties" || v != false) {
			return false
		}
	}
	return true
}

// pickMedia chooses the content type to use from a content map:
// application/json, else the first (sorted) type that mentions json
// (application/vnd.api+json, application/problem+json, …), else
// application/x-www-form-urlencoded, else multipart/form-data, else the
// first type in sorted order.
func pickMedia(content map[string]any) (string, map[string]any) {
	keys := slices.Sorted(maps.Keys(content))
	pick := ""
	if _, ok := content["application/json"]; ok {
		pick = "application/json"
	}
	if pick == "" {
		for _, k := range keys {
			if strings.Contains(strings.ToLower(k), "json") {
				pick = k
				break
			}
		}
	}
	for _, k := range []string{"application/x-www-form-urlencoded", "multipart/form-data"} {
		if _, ok := content[k]; ok && pick == "" {
			pick = k
		}
	}
	if pick == "" && len(keys) > 0 {
		pick = keys[0]
	}
	m, _ := content[pick].(map[string]any)
	return pick, m
}

func preferJSON(types []string) string {
	if len(types) == 0 || contains(types, "application/json") {
		return "application/json"
	}
	for _, t := range types {
		if strings.Contains(strings.ToLower(t), "json") {
			return t
		}
	}
	return types[0]
}

func stringList(v any) []string {
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	out := []string{}
	for _, e := range arr {
		if s, ok := e.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if strings.EqualFold(e, s) {
			return true
		}
	}
	return false
}
