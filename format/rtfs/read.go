package rtfs

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/internal/naming"
)

// ReadCapabilities reads every capability of an RTFS file into a Definition.
// The error is a *SyntaxError when the file cannot be parsed at all; each
// capability form that cannot be turned into a Definition is an
// ImportFailure with its file, line and column, and the others are still
// read. Definitions are normalised (capability.Normalize); they are not
// validated (see capability.Validate). The package documentation gives the
// id → URI rule and where each key goes.
func ReadCapabilities(name string, data []byte) ([]capability.Definition, []capability.ImportFailure, error) {
	forms, err := Parse(name, data)
	if err != nil {
		return nil, nil, err
	}
	r := &reader{file: name, data: data}
	for _, f := range forms {
		r.top(f, 0)
	}
	if len(r.failures) > 0 {
		// A failure may come from a string that holds unescaped quotes and so
		// ended too early (CCOS writes such descriptions): read the file the
		// lenient way (see Parse) and keep that reading if it fails less.
		if lforms, lerr := parse(name, data, true); lerr == nil {
			l := &reader{file: name, data: data}
			for _, f := range lforms {
				l.top(f, 0)
			}
			if len(l.failures) < len(r.failures) {
				return l.defs, l.failures, nil
			}
		}
	}
	return r.defs, r.failures, nil
}

type reader struct {
	file     string
	data     []byte
	defs     []capability.Definition
	failures []capability.ImportFailure
}

// posError is a problem with one part of a capability form.
type posError struct {
	at  Value
	msg string
}

func (e *posError) Error() string { return e.at.Pos() + ": " + e.msg }

func failAt(v Value, format string, args ...any) error {
	return &posError{at: v, msg: fmt.Sprintf(format, args...)}
}

// top reads one top-level form: a capability, a capability map, or a (do …)
// module of them; anything else is not a capability and is passed over.
func (r *reader) top(f Value, depth int) {
	switch {
	case f.Kind == KindList && len(f.Items) > 0 && f.Items[0].IsSymbol("capability"):
		r.add(f, r.listForm(f))
	case f.Kind == KindList && len(f.Items) > 0 && f.Items[0].IsSymbol("do") && depth < MaxDepth:
		for _, g := range f.Items[1:] {
			r.top(g, depth+1)
		}
	case f.Kind == KindMap && isCapabilityMap(f):
		r.add(f, r.mapForm(f))
	}
}

// isCapabilityMap reports whether a map has :type "capability" (or :capability).
func isCapabilityMap(f Value) bool {
	for i := 0; i+1 < len(f.Items); i += 2 {
		if k, v := f.Items[i], f.Items[i+1]; k.IsKeyword("type") {
			return v.Kind == KindString && v.Str == "capability" || v.IsKeyword("capability")
		}
	}
	return false
}

// add records the result of reading one form.
func (r *reader) add(form Value, b *builder) {
	if b.err == nil {
		d, err := b.build()
		if err == nil {
			r.defs = append(r.defs, d)
			return
		}
		b.err = err
	}
	item := fmt.Sprintf("capability form at %s", form.Pos())
	if b.id != "" {
		item = fmt.Sprintf("capability %q", b.id)
	}
	f := capability.ImportFailure{Item: item, File: r.file, Line: form.Line, Column: form.Column, Reason: b.err.Error()}
	var pe *posError
	var te *TypeError
	switch {
	case errors.As(b.err, &pe):
		f.Line, f.Column, f.Reason = pe.at.Line, pe.at.Column, pe.msg
	case errors.As(b.err, &te):
		f.Line, f.Column, f.Reason = te.Line, te.Column, te.Message
	}
	r.failures = append(r.failures, f)
}

// field is one `:key value` of a capability form.
type field struct {
	key   string
	k, v  *Value // in the form's items
	debug *Value // the {…} or (…) after a Rust Debug name in v
}

// builder gathers one capability form.
type builder struct {
	r      *reader
	form   Value
	id     string
	idAt   Value
	fields []field
	err    error
}

func (r *reader) listForm(f Value) *builder {
	b := &builder{r: r, form: f}
	if len(f.Items) < 2 || f.Items[1].Kind != KindString {
		at := f
		if len(f.Items) >= 2 {
			at = f.Items[1]
		}
		b.err = failAt(at, "(capability …) needs the capability id as a string after `capability`, e.g. (capability \"demo.hello\" :name \"Hello\" …)")
		return b
	}
	b.id, b.idAt = f.Items[1].Str, f.Items[1]
	b.fields, b.err = keyValues(f.Items[2:], "(capability …) form")
	if b.err == nil {
		for _, fl := range b.fields {
			if fl.key == "id" {
				b.err = failAt(*fl.k, "the id is given twice, after `capability` and as :id: remove :id")
			}
		}
	}
	return b
}

func (r *reader) mapForm(f Value) *builder {
	b := &builder{r: r, form: f}
	fields, err := keyValues(f.Items, "capability map")
	if err != nil {
		b.err = err
		return b
	}
	for _, fl := range fields {
		switch fl.key {
		case "type":
		case "id":
			if fl.v.Kind != KindString {
				b.err = failAt(*fl.v, ":id must be a string, e.g. :id \"demo.hello\"; found %s", fl.v.Describe())
				return b
			}
			b.id, b.idAt = fl.v.Str, *fl.v
		default:
			b.fields = append(b.fields, fl)
		}
	}
	if b.id == "" {
		b.err = failAt(f, "the capability map has no :id: add :id \"<domain>.<name>\"")
	}
	return b
}

// keyValues reads `:key value` pairs.
func keyValues(items []Value, what string) ([]field, error) {
	out := make([]field, 0, len(items)/2)
	seen := make(map[string]*Value, len(items)/2)
	for i := 0; i < len(items); {
		k := &items[i]
		if k.Kind != KindKeyword {
			hint := ""
			if i > 0 && items[i-1].Kind == KindString && items[i-1].End == k.Offset {
				// "… If "event" parameter …": a quote inside a string, unescaped.
				hint = fmt.Sprintf("; the string at %s seems to end too early, at a quote inside it: escape such quotes as \\\"", items[i-1].Pos())
			}
			return nil, failAt(*k, "expected a keyword such as :name here, found %s: a %s holds :key value pairs%s", k.Describe(), what, hint)
		}
		if i+1 >= len(items) {
			return nil, failAt(*k, "%s has no value: write its value after it, or remove it", k.Describe())
		}
		fl := field{key: k.Str, k: &items[i], v: &items[i+1]}
		i += 2
		if (k.Str == "input-schema" || k.Str == "output-schema") && i < len(items) && isRustDebugStart(*fl.v, &items[i]) {
			fl.debug = &items[i]
			i++
		}
		if first, dup := seen[k.Str]; dup {
			return nil, failAt(*k, ":%s appears twice (first at %s): keep one", k.Str, first.Pos())
		}
		seen[k.Str] = k
		out = append(out, fl)
	}
	return out, nil
}

// Keys with a place in the Definition.
const (
	keyURI         = "uri"
	keyName        = "name"
	keyVersion     = "version"
	keyDescription = "description"
	keyMetadata    = "metadata"
	keyInput       = "input-schema"
	keyOutput      = "output-schema"
	keyImpl        = "implementation"
	keyBindings    = "bindings"
)

// stringKeys are the keys whose value is a string, with the Definition field
// each sets.
var stringKeys = map[string]func(d *capability.Definition) *string{
	keyName:                  func(d *capability.Definition) *string { return &d.Title },
	keyDescription:           func(d *capability.Definition) *string { return &d.Description },
	"documentation-url":      func(d *capability.Definition) *string { return &d.DocumentationURL },
	"stability":              func(d *capability.Definition) *string { return &d.Stability },
	"deprecated-by":          func(d *capability.Definition) *string { return &d.DeprecatedBy },
	"sunset-date":            func(d *capability.Definition) *string { return &d.SunsetDate },
	"migration-guide":        func(d *capability.Definition) *string { return &d.MigrationGuide },
	"system-prompt-addition": func(d *capability.Definition) *string { return &d.SystemPromptAddition },
}

// listKeys are the keys whose value is a vector of names.
var listKeys = map[string]func(d *capability.Definition) *[]string{
	"permissions": func(d *capability.Definition) *[]string { return &d.Permissions },
	"effects":     func(d *capability.Definition) *[]string { return &d.Effects },
	"domains":     func(d *capability.Definition) *[]string { return &d.Domains },
	"categories":  func(d *capability.Definition) *[]string { return &d.Categories },
	"intents":     func(d *capability.Definition) *[]string { return &d.Intents },
	"keywords":    func(d *capability.Definition) *[]string { return &d.Keywords },
	"tools":       func(d *capability.Definition) *[]string { return &d.Tools },
}

// structKeys are the keys whose value is data decoded into a model struct
// through its JSON form.
var structKeys = map[string]func(d *capability.Definition) any{
	"display":     func(d *capability.Definition) any { return &d.Display },
	"attestation": func(d *capability.Definition) any { return &d.Attestation },
	"errors":      func(d *capability.Definition) any { return &d.Errors },
	"examples":    func(d *capability.Definition) any { return &d.Examples },
	"extra":       func(d *capability.Definition) any { return &d.Extra },
	keyBindings:   func(d *capability.Definition) any { return &d.Bindings },
}

// isReservedKey reports whether k is a key read into the Definition itself
// (never into Metadata["rtfs"]).
func isReservedKey(k string) bool {
	if _, ok := stringKeys[k]; ok {
		return true
	}
	if _, ok := listKeys[k]; ok {
		return true
	}
	if _, ok := structKeys[k]; ok {
		return true
	}
	switch k {
	case keyURI, keyVersion, keyMetadata, keyInput, keyOutput, keyImpl, "ui-required", "id":
		return true
	}
	return false
}

// Namespaces of the hierarchical metadata.
const (
	nsMCP        = "mcp"
	nsOpenAPI    = "openapi"
	nsDiscovery  = "discovery"
	nsRTFS       = "rtfs"
	nsJSONSchema = "json-schema" // WriteCapability's carrier of JSON Schemas RTFS types cannot express
)

// flatTarget says where a key of the flat metadata layout goes in the
// hierarchical one: namespace and key, or ok false.
func flatTarget(k string) (ns, key string, ok bool) {
	switch k {
	case "source_url", "created_at", "capability_type", "introspector_version":
		return nsDiscovery, k, true
	case "discovery_method", "discovery_source":
		return nsDiscovery, "method", true
	case "mcp_server_endpoint":
		return nsMCP, "server_url", true
	}
	for _, ns := range []string{nsMCP, nsOpenAPI, nsDiscovery} {
		if rest, found := strings.CutPrefix(k, ns+"_"); found && rest != "" && rest != "metadata" {
			return ns, rest, true
		}
	}
	return "", "", false
}

// flatEntry is one value of the flat layout waiting to be migrated.
type flatEntry struct {
	ns, key string
	value   any
	from    string // the flat key
	top     bool   // a top-level key (else inside :metadata)
}

// build turns the gathered form into a Definition; the error is a *posError
// or *TypeError saying where the form is wrong.
func (b *builder) build() (capability.Definition, error) {
	st := &defState{
		version:  "1.0.0",
		meta:     map[string]any{},
		hier:     map[string]any{},
		rtfsNS:   map[string]any{},
		verbatim: map[string]any{},
	}
	for _, f := range b.fields {
		if err := b.readField(st, f); err != nil {
			return capability.Definition{}, err
		}
	}
	if err := b.migrateFlat(st); err != nil {
		return capability.Definition{}, err
	}
	if err := b.hoistHierarchy(st); err != nil {
		return capability.Definition{}, err
	}
	if err := b.identity(st); err != nil {
		return capability.Definition{}, err
	}
	// Schemas: the RTFS type, or the carried JSON Schema when the type is
	// the one written for it.
	d := &st.d
	var err error
	if d.Input, err = carried(st.carrier, "input", st.inType, b); err != nil {
		return capability.Definition{}, err
	}
	if d.Output, err = carried(st.carrier, "output", st.outType, b); err != nil {
		return capability.Definition{}, err
	}
	if len(st.verbatim) > 0 {
		st.rtfsNS["verbatim"] = st.verbatim
	}
	if len(st.rtfsNS) > 0 {
		st.meta[nsRTFS] = st.rtfsNS
	}
	if len(st.meta) > 0 {
		d.Metadata = st.meta
	}
	d.Normalize()
	return *d, nil
}

// defState is what build gathers from a form's fields before it makes the
// Definition.
type defState struct {
	d                capability.Definition
	version          string
	uri              string
	explicitBindings bool
	inType, outType  *capability.Schema
	meta             map[string]any // Definition.Metadata, without rtfs
	hier             map[string]any // mcp, openapi, discovery maps
	rtfsNS           map[string]any // Metadata["rtfs"]
	verbatim         map[string]any // Metadata["rtfs"]["verbatim"]
	carrier          map[string]any // metadata :json-schema
	flats            []flatEntry
	mcpMetadata      []flatEntry
}

// addMCPMetadata queues the entries of an :mcp_metadata map for migration
// into :metadata :mcp.
func (st *defState) addMCPMetadata(m map[string]any, from string, top bool) {
	for _, mk := range slices.Sorted(maps.Keys(m)) {
		st.mcpMetadata = append(st.mcpMetadata, flatEntry{ns: nsMCP, key: mk, value: m[mk], from: from, top: top})
	}
}

// fieldReaders read the keys with a place of their own in the Definition
// (besides stringKeys, listKeys and structKeys).
var fieldReaders = map[string]func(b *builder, st *defState, f field) error{
	keyURI:        (*builder).uriField,
	keyVersion:    (*builder).versionField,
	"ui-required": (*builder).uiRequiredField,
	keyInput:      (*builder).schemaField,
	keyOutput:     (*builder).schemaField,
	keyImpl:       (*builder).implField,
	keyMetadata:   (*builder).metadataField,
}

// readField reads one `:key value` of the form into st.
func (b *builder) readField(st *defState, f field) error {
	if read, ok := fieldReaders[f.key]; ok {
		return read(b, st, f)
	}
	if set, ok := stringKeys[f.key]; ok {
		if f.v.Kind != KindString {
			return failAt(*f.v, ":%s must be a string, not %s", f.key, f.v.Describe())
		}
		*set(&st.d) = f.v.Str
		return nil
	}
	if set, ok := listKeys[f.key]; ok {
		names, err := nameList(f)
		*set(&st.d) = names
		return err
	}
	if target, ok := structKeys[f.key]; ok {
		return b.structField(st, f, target(&st.d))
	}
	if isReservedKey(f.key) {
		return failAt(*f.k, ":%s cannot be used here", f.key)
	}
	return b.extraField(st, f)
}

func (b *builder) uriField(st *defState, f field) error {
	if f.v.Kind != KindString {
		return failAt(*f.v, ":uri must be a string such as \"ossa:demo/hello@1.0\", not %s", f.v.Describe())
	}
	st.uri = f.v.Str
	return nil
}

func (b *builder) versionField(st *defState, f field) error {
	if f.v.Kind != KindString {
		return failAt(*f.v, ":version must be a string such as \"1.0.0\", not %s: quote it", f.v.Describe())
	}
	ver, err := capability.ParseVersion(f.v.Str)
	if err != nil {
		return failAt(*f.v, "%v", err)
	}
	st.version = ver.Full()
	return nil
}

func (b *builder) uiRequiredField(st *defState, f field) error {
	if f.v.Kind != KindBool {
		return failAt(*f.v, ":ui-required must be true or false, not %s", f.v.Describe())
	}
	st.d.UIRequired = f.v.Bool
	return nil
}

// structField decodes data into a model struct through its JSON form.
func (b *builder) structField(st *defState, f field, target any) error {
	data, err := pureData(*f.v, ":"+f.key)
	if err != nil {
		return err
	}
	if err := decodeStruct(data, target); err != nil {
		return failAt(*f.v, ":%s does not hold what caphub expects: %v", f.key, err)
	}
	if f.key == keyBindings {
		st.explicitBindings = true
	}
	return nil
}

// schemaField reads :input-schema or :output-schema.
func (b *builder) schemaField(st *defState, f field) error {
	s, err := b.schema(f)
	if err != nil {
		return err
	}
	if f.key == keyInput {
		st.inType = &s
	} else {
		st.outType = &s
	}
	return nil
}

// implField keeps :implementation as written.
func (b *builder) implField(st *defState, f field) error {
	st.rtfsNS[keyImpl] = f.v.Text(b.r.data)
	return nil
}

// metadataField reads the :metadata map, entry by entry.
func (b *builder) metadataField(st *defState, f field) error {
	if f.v.Kind != KindMap {
		return failAt(*f.v, ":metadata must be a map such as {:mcp {…} :discovery {…}}, not %s", f.v.Describe())
	}
	for i := 0; i+1 < len(f.v.Items); i += 2 {
		if err := b.metadataEntry(st, f.v.Items[i], f.v.Items[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// metadataEntry reads one `:key value` of :metadata: a namespace of the
// hierarchical layout, the :json-schema carrier, a key of the flat layout
// (queued for migration), or other metadata kept as it is.
func (b *builder) metadataEntry(st *defState, k, v Value) error {
	name, err := dataKey(k)
	if err != nil {
		return err
	}
	data, err := pureData(v, ":metadata "+k.Text(b.r.data))
	if err != nil {
		return err
	}
	m, isMap := data.(map[string]any)
	switch ns, key, isFlat := flatTarget(name); {
	case name == nsRTFS:
		return failAt(k, ":metadata :rtfs is caphub's record of the form itself: move its keys to the top level of the capability")
	case name == nsJSONSchema:
		if !isMap {
			return failAt(v, ":metadata :json-schema must be a map {:input {…} :output {…}} of JSON Schemas")
		}
		st.carrier = m
	case name == nsDiscovery:
		if !isMap {
			return failAt(v, ":metadata :discovery must be a map such as {:method \"mcp_introspection\" :source_url \"…\"}, not %s", v.Describe())
		}
		st.hier[name] = data
	case (name == nsMCP || name == nsOpenAPI) && isMap:
		st.hier[name] = data
	case name == "mcp_metadata" && isMap:
		st.addMCPMetadata(m, name, false)
	case isFlat:
		st.flats = append(st.flats, flatEntry{ns: ns, key: key, value: data, from: name})
	default:
		st.meta[name] = data
	}
	return nil
}

// extraField keeps a key the Definition does not model: in
// Metadata["rtfs"] (code as written, under "verbatim"), or, for a key of
// the flat metadata layout, queued for migration.
func (b *builder) extraField(st *defState, f field) error {
	if !isData(*f.v) {
		st.verbatim[f.key] = f.v.Text(b.r.data)
		return nil
	}
	data, err := pureData(*f.v, ":"+f.key)
	if err != nil {
		return err
	}
	if m, ok := data.(map[string]any); ok && f.key == "mcp_metadata" {
		st.addMCPMetadata(m, f.key, true)
		return nil
	}
	if ns, key, ok := flatTarget(f.key); ok {
		st.flats = append(st.flats, flatEntry{ns: ns, key: key, value: data, from: f.key, top: true})
		return nil
	}
	st.rtfsNS[f.key] = data
	return nil
}

// migrateFlat migrates the flat layout: :metadata's flat keys first, then
// top-level ones, each only where the hierarchical place is free or equal;
// elsewhere the flat key is kept.
func (b *builder) migrateFlat(st *defState) error {
	ordered := append(append([]flatEntry{}, st.mcpMetadata...), st.flats...)
	sort.SliceStable(ordered, func(i, j int) bool { return !ordered[i].top && ordered[j].top })
	for _, fe := range ordered {
		if st.placeFlat(fe) {
			continue
		}
		// The hierarchical place holds something else: keep the flat key.
		if fe.from == "mcp_metadata" {
			return failAt(b.form, ":mcp_metadata %s clashes with :metadata :mcp: merge them into :metadata {:mcp {…}}", fe.key)
		}
		if fe.top {
			st.rtfsNS[fe.from] = fe.value
		} else {
			st.meta[fe.from] = fe.value
		}
	}
	return nil
}

// placeFlat puts a flat entry at its hierarchical place and reports
// whether it could: the namespace is a map (or free, and then made one) and
// the key is free or holds the same value.
func (st *defState) placeFlat(fe flatEntry) bool {
	target, ok := st.hier[fe.ns].(map[string]any)
	if !ok {
		_, taken := st.hier[fe.ns]
		_, kept := st.meta[fe.ns]
		if taken || kept {
			return false
		}
		target = map[string]any{}
		st.hier[fe.ns] = target
	}
	old, exists := target[fe.key]
	if !exists {
		target[fe.key] = fe.value
		return true
	}
	return jsonEqual(old, fe.value)
}

// hoistHierarchy puts the :mcp and :openapi maps in the metadata and reads
// :discovery as the provenance.
func (b *builder) hoistHierarchy(st *defState) error {
	for _, ns := range []string{nsMCP, nsOpenAPI} {
		if m, ok := st.hier[ns].(map[string]any); ok {
			st.meta[ns] = m
		}
	}
	if disc, ok := st.hier[nsDiscovery].(map[string]any); ok {
		p, err := provenance(disc)
		if err != nil {
			return failAt(b.form, "%v", err)
		}
		st.d.Provenance = p
	}
	return nil
}

// identity sets the URI, domain, name and version, and the bindings the
// id → URI rule derives unless :bindings gave them; the id is kept when
// it is not the one the URI gives.
func (b *builder) identity(st *defState) error {
	d := &st.d
	d.Version = st.version
	_, hasImpl := st.rtfsNS[keyImpl]
	id, err := deriveIdentity(b.id, st.rtfsNS["provider"], st.meta, st.version, hasImpl)
	switch {
	case st.uri != "":
		u, perr := capability.ParseURI(st.uri)
		if perr != nil {
			return failAt(b.fieldAt(keyURI), "%v", perr)
		}
		d.URI, d.Domain, d.Name = st.uri, u.Domain, u.Name
	case err != nil:
		return failAt(b.idAt, "%v", err)
	default:
		d.URI, d.Domain, d.Name = id.uri, id.domain, id.name
	}
	if !st.explicitBindings && err == nil {
		d.Bindings = id.bindings
	}
	if b.id != canonicalID(d.URI) {
		st.rtfsNS["id"] = b.id
	}
	return nil
}

func (b *builder) fieldAt(key string) Value {
	for _, f := range b.fields {
		if f.key == key {
			return *f.v
		}
	}
	return b.form
}

// carried picks a schema: the carried JSON Schema when present and
// consistent with the RTFS type (its own RTFS type is the one in the file),
// else the RTFS type's schema. A carried schema whose type was edited since
// it was written is stale, and the type wins.
func carried(carrier map[string]any, which string, typ *capability.Schema, b *builder) (capability.Schema, error) {
	raw, ok := carrier[which]
	if !ok {
		if typ == nil {
			return nil, nil
		}
		return *typ, nil
	}
	s, isMap := raw.(map[string]any)
	if !isMap {
		return nil, failAt(b.fieldAt(keyMetadata), ":metadata :json-schema :%s must be a map holding a JSON Schema", which)
	}
	if typ == nil {
		return s, nil
	}
	if _, back := typeFor(s); back != nil && schemasEqual(back, *typ) {
		return s, nil
	}
	return *typ, nil
}

// parseType reads an RTFS type written by SchemaToType.
func parseType(text string) (Value, error) {
	forms, err := Parse("type", []byte(text))
	if err != nil {
		return Value{}, err
	}
	if len(forms) != 1 {
		return Value{}, fmt.Errorf("type %q is not one form", text)
	}
	return forms[0], nil
}

// schema reads :input-schema or :output-schema.
func (b *builder) schema(f field) (capability.Schema, error) {
	t := *f.v
	if f.debug != nil {
		n, _, err := rustExpr([]Value{*f.v, *f.debug}, 0)
		if err != nil {
			return nil, err
		}
		if t, err = rustType(n, 0); err != nil {
			return nil, err
		}
	}
	s, err := TypeToSchema(t)
	if err != nil {
		var te *TypeError
		if errors.As(err, &te) {
			return nil, &TypeError{Line: te.Line, Column: te.Column, Message: ":" + f.key + ": " + te.Message}
		}
		return nil, err
	}
	return s, nil
}

func provenance(disc map[string]any) (*capability.Provenance, error) {
	p := &capability.Provenance{}
	fields := map[string]*string{
		"method": &p.Method, "source_url": &p.SourceURL, "created_at": &p.CreatedAt,
		"capability_type": &p.CapabilityType, "introspector_version": &p.IntrospectorVersion,
	}
	for k, v := range disc {
		if dst, ok := fields[k]; ok {
			s, isString := v.(string)
			if !isString {
				return nil, fmt.Errorf("metadata :discovery :%s must be a string, not %v", k, v)
			}
			*dst = s
			continue
		}
		if p.Extra == nil {
			p.Extra = map[string]any{}
		}
		p.Extra[k] = v
	}
	return p, nil
}

// nameList reads a vector of keywords or strings.
func nameList(f field) ([]string, error) {
	if f.v.Kind != KindVector && f.v.Kind != KindList {
		return nil, failAt(*f.v, ":%s must be a vector such as [:network.http], not %s", f.key, f.v.Describe())
	}
	var out []string
	for _, it := range f.v.Items {
		switch it.Kind {
		case KindKeyword, KindString:
			out = append(out, it.Str)
		default:
			return nil, failAt(it, ":%s holds keywords or strings, not %s", f.key, it.Describe())
		}
	}
	return out, nil
}

// isData reports whether v is data: no lists, symbols or reader macros.
func isData(v Value) bool {
	switch v.Kind {
	case KindList, KindSymbol, KindPrefixed:
		return false
	case KindVector, KindMap:
		for _, it := range v.Items {
			if !isData(it) {
				return false
			}
		}
	}
	return true
}

// dataKey converts a map key to a Go map key.
func dataKey(k Value) (string, error) {
	switch k.Kind {
	case KindKeyword, KindString:
		return k.Str, nil
	case KindInt:
		return strconv.FormatInt(k.Int, 10), nil
	}
	return "", failAt(k, "a map key here is a keyword, a string or an integer, not %s", k.Describe())
}

// pureData converts a data value to decoded-JSON form: keywords become
// ":name" strings, timestamps and UUIDs strings. what names the value in
// errors.
func pureData(v Value, what string) (any, error) {
	return toData(v, what, 0)
}

func toData(v Value, what string, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, failAt(v, "%s is nested deeper than %d levels", what, MaxDepth)
	}
	switch v.Kind {
	case KindNil:
		return nil, nil
	case KindBool:
		return v.Bool, nil
	case KindInt:
		return v.Int, nil
	case KindFloat:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return nil, failAt(v, "%s holds %s, which JSON cannot store: use a finite number or a string", what, v.Describe())
		}
		return wholeToInt(v.Float), nil
	case KindString, KindTimestamp, KindUUID:
		return v.Str, nil
	case KindKeyword:
		return ":" + v.Str, nil
	case KindVector:
		return vectorData(v, what, depth)
	case KindMap:
		return mapData(v, what, depth)
	}
	return nil, failAt(v, "%s must be data (strings, numbers, keywords, vectors, maps), not %s", what, v.Describe())
}

// vectorData converts a vector to a list.
func vectorData(v Value, what string, depth int) ([]any, error) {
	out := make([]any, 0, len(v.Items))
	for _, it := range v.Items {
		x, err := toData(it, what, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// mapData converts a map to an object; a key written twice is an error.
func mapData(v Value, what string, depth int) (map[string]any, error) {
	out := make(map[string]any, len(v.Items)/2)
	seen := map[string]Value{}
	for i := 0; i+1 < len(v.Items); i += 2 {
		k, err := dataKey(v.Items[i])
		if err != nil {
			return nil, err
		}
		if first, dup := seen[k]; dup {
			return nil, failAt(v.Items[i], "%s: key %q appears twice in the map (first at %s): keep one", what, k, first.Pos())
		}
		seen[k] = v.Items[i]
		if out[k], err = toData(v.Items[i+1], what, depth+1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// wholeToInt returns a whole float as an int64 (when it fits), as JSON
// reads the number back: 2.0 and 1e18 are integers once stored.
func wholeToInt(f float64) any {
	if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		return int64(f)
	}
	return f
}

// decodeStruct decodes data into a model value (dst points to it) through
// its JSON form, canonically: what the model's JSON leaves out (empty
// mappings, an empty list) is left out here too, so that writing the value
// and reading it back gives the same.
func decodeStruct(data any, dst any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return err
	}
	if raw, err = json.Marshal(dst); err != nil {
		return err
	}
	v := reflect.ValueOf(dst).Elem()
	v.Set(reflect.Zero(v.Type()))
	if err := json.Unmarshal(raw, dst); err != nil {
		return err
	}
	if (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.Len() == 0 {
		v.Set(reflect.Zero(v.Type()))
	}
	return nil
}

func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// identity is what the id rule derives.
type identity struct {
	uri, domain, name string
	bindings          capability.Bindings
}

// str returns v as a string: strings as they are, keywords (":name") by
// name; "" for anything else.
func str(v any) string {
	s, _ := v.(string)
	return s
}

func bareName(v any) string {
	return strings.TrimPrefix(str(v), ":")
}

// deriveIdentity applies the id → URI rule (see the package comment
// above); hasImpl says whether the form has an :implementation.
func deriveIdentity(id string, provider any, meta map[string]any, version string, hasImpl bool) (identity, error) {
	ver, err := capability.ParseVersion(version)
	if err != nil {
		return identity{}, err
	}
	mcpMeta, _ := meta[nsMCP].(map[string]any)
	provMap, _ := provider.(map[string]any)
	provType := strings.ToLower(bareName(provider))
	if provMap != nil {
		provType = strings.ToLower(bareName(provMap["type"]))
	}
	if mcpMeta != nil || provType == "mcp" || strings.HasPrefix(id, "mcp.") {
		return mcpIdentity(id, mcpMeta, provMap, ver)
	}
	return ossaIdentity(id, meta, ver, hasImpl)
}

// mcpIdentity is the identity of an MCP tool: its tool and server from the
// :mcp metadata, the provider, else the id (see the package doc).
func mcpIdentity(id string, mcpMeta, provMap map[string]any, ver capability.Version) (identity, error) {
	rest := strings.TrimPrefix(id, "mcp.")
	tool := orDefault(str(mcpMeta["tool_name"]), str(provMap["tool_name"]))
	if tool == "" {
		tool = rest[strings.LastIndex(rest, ".")+1:]
	}
	server := str(mcpMeta["server_name"])
	if server == "" {
		server = serverOf(rest, tool)
	}
	domain := domainSlug(server)
	if domain == "" {
		return identity{}, fmt.Errorf("cannot tell the MCP server of %q (tool %q): name it with :metadata {:mcp {:server_name \"github\"}}, or write the id as mcp.<server>.<tool>", id, tool)
	}
	uri := capability.SchemeMCP + ":" + domain + "/" + tool + "@" + ver.Short()
	if _, err := capability.ParseURI(uri); err != nil {
		return identity{}, fmt.Errorf("the capability cannot be named from id %q: %v; add :uri", id, err)
	}
	return identity{uri: uri, domain: domain, name: tool,
		bindings: capability.Bindings{MCP: &capability.MCPBinding{Server: domain, Tool: tool}}}, nil
}

// serverOf is the server part of an MCP id without "mcp.": what comes
// before ".<tool>", else before its last dot, else "".
func serverOf(rest, tool string) string {
	if s, ok := strings.CutSuffix(rest, "."+tool); ok {
		return s
	}
	if i := strings.LastIndex(rest, "."); i > 0 {
		return rest[:i]
	}
	return ""
}

// ossaIdentity is the identity of any other capability: the id split at
// its last dot, with an http binding when :openapi metadata has a base URL,
// else the rtfs binding (RTFSBinding) when it has an :implementation.
func ossaIdentity(id string, meta map[string]any, ver capability.Version, hasImpl bool) (identity, error) {
	i := strings.LastIndex(id, ".")
	if i <= 0 || i == len(id)-1 {
		return identity{}, fmt.Errorf("capability id %q has no domain: write it as <domain>.<name>, e.g. demo.hello, or add :uri \"ossa:<domain>/<name>@1.0\"", id)
	}
	domain, name := domainSlug(id[:i]), nameSlug(id[i+1:])
	if domain == "" || name == "" {
		return identity{}, fmt.Errorf("capability id %q does not give a domain and a name starting with a letter: rename it, or add :uri \"ossa:<domain>/<name>@1.0\"", id)
	}
	uri := capability.SchemeOSSA + ":" + domain + "/" + name + "@" + ver.Short()
	oa, _ := meta[nsOpenAPI].(map[string]any)
	bindings := capability.Bindings{HTTP: openAPIBinding(oa)}
	if bindings.HTTP == nil && hasImpl {
		bindings.Extra = map[string]any{RTFSBinding: map[string]any{"implementation": "metadata." + nsRTFS + "." + keyImpl}}
	}
	return identity{uri: uri, domain: domain, name: name, bindings: bindings}, nil
}

// RTFSBinding is the binding kind (a key of Bindings.Extra) of a
// capability whose only body is its RTFS :implementation, kept verbatim in
// Metadata["rtfs"]["implementation"]: {"implementation":
// "metadata.rtfs.implementation"}. caphub keeps it and does not evaluate
// RTFS, so such a capability registers (capability.Validate warns of the
// unknown kind) and invoking it is NOT_EXECUTABLE, saying what to bind it
// to.
const RTFSBinding = "rtfs"

// openAPIBinding is the http binding :openapi metadata describes, nil
// without a base URL.
func openAPIBinding(oa map[string]any) *capability.HTTPBinding {
	if str(oa["base_url"]) == "" {
		return nil
	}
	path := orDefault(str(oa["endpoint_path"]), str(oa["endpoint"]))
	method := orDefault(strings.ToUpper(str(oa["endpoint_method"])), "GET")
	h := &capability.HTTPBinding{Method: method, URL: joinURL(str(oa["base_url"]), path)}
	if t := str(oa["auth_type"]); t != "" {
		h.Auth = &capability.HTTPAuth{Type: t, Location: str(oa["auth_location"]), ParamName: str(oa["auth_param_name"]), Env: str(oa["auth_env_var"])}
	}
	return h
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func joinURL(base, path string) string {
	if path == "" {
		return base
	}
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}

// slug lower-cases s and turns each run of characters outside a-z, 0-9 (and
// keep) into sep, trimming sep at both ends; "" unless it starts with a letter.
func slug(s string, sep byte, keep string) string {
	out := naming.JoinRuns(strings.ToLower(s), func(c byte) bool {
		return naming.IsLowerAlnum(c) || strings.IndexByte(keep, c) >= 0
	}, sep)
	if out == "" || out[0] < 'a' || out[0] > 'z' {
		return ""
	}
	return out
}

// domainSlug makes a URI domain ([a-z][a-z0-9-]*) of a server or id prefix.
func domainSlug(s string) string { return slug(s, '-', "") }

// nameSlug makes an ossa name ([a-z][a-z0-9_]*) of an id's last part.
func nameSlug(s string) string { return slug(s, '_', "_") }

// canonicalID is the id WriteCapability writes for a URI without a kept id:
// "mcp.<domain>.<name>" or "<domain>.<name>".
func canonicalID(uri string) string {
	u, err := capability.ParseURI(uri)
	if err != nil {
		return ""
	}
	if u.Scheme == capability.SchemeMCP {
		return "mcp." + u.Domain + "." + u.Name
	}
	return u.Domain + "." + u.Name
}
