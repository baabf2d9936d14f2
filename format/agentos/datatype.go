package agentos

import (
	"sort"

	"github.com/caphub/caphub/capability"
)

// DataTypes lists the Agent OS DataType values (the seed's DataType enum), in
// the seed's order. An input or output whose type is not one of them makes
// its capability fail to import.
var DataTypes = []string{
	"string", "number", "boolean", "date", "datetime",
	"contact", "contacts", "media", "location", "address",
	"currency", "phone", "email", "url", "file", "object", "array",
}

// DataTypeSchema returns the JSON Schema (2020-12) of a property of Agent OS
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
func DataTypeSchema(t string) (capability.Schema, bool) {
	str := func(extra ...string) map[string]any {
		s := map[string]any{"type": "string"}
		for i := 0; i+1 < len(extra); i += 2 {
			s[extra[i]] = extra[i+1]
		}
		return s
	}
	object := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	contact := func() map[string]any {
		return object(map[string]any{
			"id":    str("description", "the contact's identifier on the device"),
			"name":  str(),
			"phone": str(),
			"email": str("format", "email"),
		})
	}
	mediaItem := func() map[string]any {
		return object(map[string]any{
			"uri":       str("format", "uri", "description", "where the media is, e.g. a content:// URI"),
			"mime_type": str("description", "e.g. image/jpeg or video/mp4"),
			"name":      str(),
		})
	}
	switch t {
	case "string", "phone":
		return str(), true
	case "number":
		return map[string]any{"type": "number"}, true
	case "boolean":
		return map[string]any{"type": "boolean"}, true
	case "date":
		return str("format", "date"), true
	case "datetime":
		return str("format", "date-time"), true
	case "email":
		return str("format", "email"), true
	case "url":
		return str("format", "uri"), true
	case "contact":
		return contact(), true
	case "contacts":
		return map[string]any{"type": "array", "items": contact()}, true
	case "media":
		return map[string]any{"anyOf": []any{
			mediaItem(),
			map[string]any{"type": "array", "items": mediaItem()},
		}}, true
	case "file":
		return object(map[string]any{
			"uri":       str("format", "uri", "description", "where the file is, e.g. a content:// URI"),
			"name":      str(),
			"mime_type": str(),
			"size":      map[string]any{"type": "integer", "minimum": int64(0), "description": "in bytes"},
		}), true
	case "location":
		return object(map[string]any{
			"latitude":  map[string]any{"type": "number", "minimum": int64(-90), "maximum": int64(90), "description": "WGS 84 degrees"},
			"longitude": map[string]any{"type": "number", "minimum": int64(-180), "maximum": int64(180), "description": "WGS 84 degrees"},
			"accuracy":  map[string]any{"type": "number", "minimum": int64(0), "description": "in metres"},
			"name":      str("description", "a place name"),
		}), true
	case "address":
		return object(map[string]any{
			"formatted":   str("description", "the whole address as one text"),
			"street":      str(),
			"city":        str(),
			"region":      str(),
			"postal_code": str(),
			"country":     str(),
		}), true
	case "currency":
		return object(map[string]any{
			"amount":   map[string]any{"type": "number"},
			"currency": str("pattern", "^[A-Z]{3}$", "description", "ISO 4217 currency code, e.g. EUR"),
		}), true
	case "object":
		return map[string]any{"type": "object"}, true
	case "array":
		return map[string]any{"type": "array"}, true
	}
	return nil, false
}

// dataTypeHints suggest the DataType meant by common names that are not one.
var dataTypeHints = map[string]string{
	"int": "number", "integer": "number", "float": "number", "double": "number", "long": "number", "decimal": "number",
	"bool": "boolean", "text": "string", "time": "datetime", "timestamp": "datetime", "date-time": "datetime",
	"uri": "url", "link": "url", "image": "media", "photo": "media", "video": "media", "audio": "media",
	"list": "array", "map": "object", "dict": "object", "money": "currency", "price": "currency",
	"phone_number": "phone", "telephone": "phone", "person": "contact", "place": "location", "geo": "location",
}

// sortedDataTypes is DataTypes sorted, for error messages.
var sortedDataTypes = func() []string {
	s := append([]string(nil), DataTypes...)
	sort.Strings(s)
	return s
}()
