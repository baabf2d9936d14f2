package capability

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// EncodedSchemas are a definition's input and output schemas encoded as
// JSON (json.Marshal of each). Validation (the compiled schemas' cache key),
// the content digest and the stored document each need them, and they are
// most of a definition's bytes: encoding them once and splicing them in
// (MarshalEncoded, ValidateEncoded) spares a registration two encodings of
// them.
type EncodedSchemas struct {
	Input, Output []byte
}

// EncodeSchemas encodes d's input and output schemas.
func EncodeSchemas(d *Definition) (EncodedSchemas, error) {
	in, err := json.Marshal(d.Input)
	if err != nil {
		return EncodedSchemas{}, fmt.Errorf("encode the input schema as JSON: %w: a schema holds only JSON values", err)
	}
	out, err := json.Marshal(d.Output)
	if err != nil {
		return EncodedSchemas{}, fmt.Errorf("encode the output schema as JSON: %w: a schema holds only JSON values", err)
	}
	return EncodedSchemas{Input: in, Output: out}, nil
}

// schemasMarker is how a definition without schemas encodes them.
var schemasMarker = []byte(`"input":null,"output":null`)

// MarshalEncoded returns d's JSON encoding, the bytes json.Marshal(d)
// gives, with its schemas taken from enc (EncodeSchemas(&d)) rather than
// encoded again.
func MarshalEncoded(d Definition, enc EncodedSchemas) ([]byte, error) {
	if enc.Input == nil || enc.Output == nil {
		return json.Marshal(d)
	}
	d.Input, d.Output = nil, nil
	b, err := d.MarshalJSON()
	if err != nil {
		return nil, err
	}
	// Only strings come before the schemas (uri … migration_guide), whose
	// quotes are escaped: the first match is the definition's own fields.
	at := bytes.Index(b, schemasMarker)
	if at < 0 {
		return nil, fmt.Errorf("encode the definition %s: its schemas are not where they belong (a bug in caphub)", d.URI)
	}
	out := make([]byte, 0, len(b)+len(enc.Input)+len(enc.Output))
	out = append(out, b[:at]...)
	out = append(out, `"input":`...)
	out = append(out, enc.Input...)
	out = append(out, `,"output":`...)
	out = append(out, enc.Output...)
	return append(out, b[at+len(schemasMarker):]...), nil
}
