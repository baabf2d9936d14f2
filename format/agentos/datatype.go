package agentos

import (
	"sort"

	"github.com/caphub/caphub/capability"
)

// dataTypes lists the Agent OS DataType values (the seed's DataType enum), in
// the seed's order. An input or output whose type is not one of them makes
// its capability fail to import.
var dataTypes = []string{
	"string", "number", "boolean", "date", "datetime",
	"contact", "contacts", "media", "location", "address",
	"currency", "phone", "email", "url", "file", "object", "array",
}

// dataTypeSchema returns the JSON Schema (2020-12) of a property of Agent OS
// DataType t, or false when t is not a DataType. Each call returns a new
// schema that the caller may change.
//
// The mapping, and why:
//
//	string    {type: string}
//	number    {type: number}                 (Agent OS has no integer type)
//	boolean   {type: boolean}
//	date      {type: string, format: date}       (RFC 3339 full-date)
//	datetime  {type: string, format: date-time}  (RFC 3339 date-time)
//	phone     {type: string}                 (no JSON Schema format exists; numbers come
//	                                          local or international, so no pattern)
//	email     {type: string, format: email}
//	url       {type: string, format: uri}
//	contact   {type: object, properties: {id, name, phone, email}}
//	          (an object, because the seed's deeplink template reads
//	          {{recipient.phone}} from a contact)
//	contacts  {type: array, items: <contact>}
//	media     {anyOf: [<media item>, {type: array, items: <media item>}]}
//	          media item = {type: object, properties: {uri, mime_type, name}}
//	          (the seed's "media" input takes "photos or videos", one or several)
//	file      {type: object, properties: {uri, name, mime_type, size}}
//	          (on a device a file travels as a content:// or file:// URI)
//	location  {type: object, properties: {latitude, longitude, accuracy, name}}
//	          (WGS 84 degrees, accuracy in metres)
//	address   {type: object, properties: {formatted, street, city, region,
//	          postal_code, country}}   (a postal address, as Android's StructuredPostal)
//	currency  {type: object, properties: {amount, currency}}
//	          (an amount of money; currency is the ISO 4217 code, e.g. EUR)
//	object    {type: object}
//	array     {type: array}                  (the seed gives no item type)
//
// Every sub-property of the structured types is optional and other
// properties are allowed: the shapes guide a caller without refusing what a
// device would accept. The importer also records the DataType itself on the
// property as x-agentos-type, so that nothing of the manifest is lost (phone
// is told from string only by it).
func dataTypeSchema(t string) (capability.Schema, bool) {
	mk, ok := dataTypeSchemas[t]
	if !ok {
		return nil, false
	}
	return mk(), true
}

// dataTypeSchemas make the schema of each DataType (see dataTypeSchema).
var dataTypeSchemas = map[string]func() map[string]any{
	"string":   func() map[string]any { return strSchema() },
	"phone":    func() map[string]any { return strSchema() },
	"number":   func() map[string]any { return map[string]any{"type": "number"} },
	"boolean":  func() map[string]any { return map[string]any{"type": "boolean"} },
	"date":     func() map[string]any { return strSchema("format", "date") },
	"datetime": func() map[string]any { return strSchema("format", "date-time") },
	"email":    func() map[string]any { return strSchema("format", "email") },
	"url":      func() map[string]any { return strSchema("format", "uri") },
	"contact":  contactSchema,
	"contacts": func() map[string]any { return map[string]any{"type": "array", "items": contactSchema()} },
	"media": func() map[string]any {
		return map[string]any{"anyOf": []any{
			mediaItemSchema(),
			map[string]any{"type": "array", "items": mediaItemSchema()},
		}}
	},
	"file": func() map[string]any {
		return objectSchema(map[string]any{
			"uri":       strSchema("format", "uri", "description", "where the file is, e.g. a content:// URI"),
			"name":      strSchema(),
			"mime_type": strSchema(),
			"size":      map[string]any{"type": "integer", "minimum": int64(0), "description": "in bytes"},
		})
	},
	"location": func() map[string]any {
		return objectSchema(map[string]any{
			"latitude":  map[string]any{"type": "number", "minimum": int64(-90), "maximum": int64(90), "description": "WGS 84 degrees"},
			"longitude": map[string]any{"type": "number", "minimum": int64(-180), "maximum": int64(180), "description": "WGS 84 degrees"},
			"accuracy":  map[string]any{"type": "number", "minimum": int64(0), "description": "in metres"},
			"name":      strSchema("description", "a place name"),
		})
	},
	"address": func() map[string]any {
		return objectSchema(map[string]any{
			"formatted":   strSchema("description", "the whole address as one text"),
			"street":      strSchema(),
			"city":        strSchema(),
			"region":      strSchema(),
			"postal_code": strSchema(),
			"country":     strSchema(),
		})
	},
	"currency": func() map[string]any {
		return objectSchema(map[string]any{
			"amount":   map[string]any{"type": "number"},
			"currency": strSchema("pattern", "^[A-Z]{3}$", "description", "ISO 4217 currency code, e.g. EUR"),
		})
	},
	"object": func() map[string]any { return map[string]any{"type": "object"} },
	"array":  func() map[string]any { return map[string]any{"type": "array"} },
}

// strSchema is a string schema with the given keyword/value pairs.
func strSchema(extra ...string) map[string]any {
	s := map[string]any{"type": "string"}
	for i := 0; i+1 < len(extra); i += 2 {
		s[extra[i]] = extra[i+1]
	}
	return s
}

// objectSchema is an object schema with the given properties.
func objectSchema(props map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": props}
}

// contactSchema is the schema of a contact.
func contactSchema() map[string]any {
	return objectSchema(map[string]any{
		"id":    strSchema("description", "the contact's identifier on the device"),
		"name":  strSchema(),
		"phone": strSchema(),
		"email": strSchema("format", "email"),
	})
}

// mediaItemSchema is the schema of one photo or video.
func mediaItemSchema() map[string]any {
	return objectSchema(map[string]any{
		"uri":       strSchema("format", "uri", "description", "where the media is, e.g. a content:// URI"),
		"mime_type": strSchema("description", "e.g. image/jpeg or video/mp4"),
		"name":      strSchema(),
	})
}

// dataTypeHints suggest the DataType meant by common names that are not one.
var dataTypeHints = map[string]string{
	"int": "number", "integer": "number", "float": "number", "double": "number", "long": "number", "decimal": "number",
	"bool": "boolean", "text": "string", "time": "datetime", "timestamp": "datetime", "date-time": "datetime",
	"uri": "url", "link": "url", "image": "media", "photo": "media", "video": "media", "audio": "media",
	"list": "array", "map": "object", "dict": "object", "money": "currency", "price": "currency",
	"phone_number": "phone", "telephone": "phone", "person": "contact", "place": "location", "geo": "location",
}

// sortedDataTypes is dataTypes sorted, for error messages.
var sortedDataTypes = func() []string {
	s := append([]string(nil), dataTypes...)
	sort.Strings(s)
	return s
}()
