package ossa

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/caphub/caphub/capability"
)

// ErrNotStreamable says a document is not one Stream reads: read it whole
// with Read.
var ErrNotStreamable = errors.New("not a JSON document whose only member is a capabilities list")

// MaxStreamEntry bounds one definition of a streamed document.
const MaxStreamEntry = 8 << 20

// Count checks that r holds a JSON document Stream reads, {"capabilities":
// [...]} and nothing else, and counts its definitions without decoding
// them. It returns ErrNotStreamable (wrapped) when the document has another
// shape, and a syntax error naming the offset where the JSON breaks.
func Count(r io.Reader) (int, error) {
	n := 0
	err := scan(r, func(json.RawMessage) error { n++; return nil })
	return n, err
}

// Stream reads the definitions of a JSON capabilities document from r,
// chunk at a time, without holding the document: fn gets each chunk's
// definitions, read as Read reads them, and the entries that could not be
// read (their Item is the path in the whole document, capabilities[i]), and
// offset, the index of the chunk's first entry. An error from fn stops the
// stream and is returned. Check the document with Count first: Stream
// stops with an error at the first problem of shape, after fn has seen the
// chunks before it.
func Stream(name string, r io.Reader, chunk int, fn func(defs []capability.Definition, failed []capability.ImportFailure, offset int) error) error {
	chunk = max(chunk, 1)
	var raws []json.RawMessage
	offset := 0
	flush := func() error {
		if len(raws) == 0 {
			return nil
		}
		defs, failed := readChunk(name, raws, offset)
		if err := fn(defs, failed, offset); err != nil {
			return err
		}
		offset += len(raws)
		raws = raws[:0]
		return nil
	}
	err := scan(r, func(raw json.RawMessage) error {
		raws = append(raws, raw)
		if len(raws) == chunk {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// readChunk reads raws, entries offset… of a capabilities list, as Read
// reads a capabilities document.
func readChunk(name string, raws []json.RawMessage, offset int) ([]capability.Definition, []capability.ImportFailure) {
	var b bytes.Buffer
	b.WriteString(`{"capabilities":[`)
	for i, raw := range raws {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(raw)
	}
	b.WriteString("]}")
	f, err := Read(name, b.Bytes())
	if err != nil {
		// Each entry is valid JSON on its own, so this is unexpected; fail
		// the chunk's entries rather than lose them silently.
		out := make([]capability.ImportFailure, len(raws))
		for i := range raws {
			out[i] = capability.ImportFailure{Item: entryPath(offset + i), Reason: err.Error(), File: name}
		}
		return nil, out
	}
	var failed []capability.ImportFailure
	bad := map[int]bool{}
	for _, iss := range f.Issues {
		if iss.Severity != capability.SeverityError {
			continue
		}
		i, rest := entryIndex(iss.Path)
		bad[i] = true
		failed = append(failed, capability.ImportFailure{Item: entryPath(offset+i) + rest, Reason: iss.Message, File: name})
	}
	var defs []capability.Definition
	for _, e := range f.Entries {
		if i, _ := entryIndex(e.Path); !bad[i] {
			defs = append(defs, e.Definition)
		}
	}
	return defs, failed
}

func entryPath(i int) string { return "capabilities[" + strconv.Itoa(i) + "]" }

// entryIndex reads the entry index of a path capabilities[i]… and the rest
// of the path after it (-1 when the path names no entry).
func entryIndex(path string) (int, string) {
	rest, ok := strings.CutPrefix(path, "capabilities[")
	if !ok {
		return -1, path
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return -1, path
	}
	i, err := strconv.Atoi(rest[:end])
	if err != nil {
		return -1, path
	}
	return i, rest[end+1:]
}

// scan calls fn with each element of the document's capabilities list.
func scan(r io.Reader, fn func(json.RawMessage) error) error {
	dec := json.NewDecoder(r)
	shape := func(what string) error {
		return fmt.Errorf("%w: %s at offset %d", ErrNotStreamable, what, dec.InputOffset())
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return shape("the document is not a JSON object (YAML, or a list)")
	}
	if t, err := dec.Token(); err != nil {
		return syntax(dec, err)
	} else if t != "capabilities" {
		return shape(fmt.Sprintf("its first member is %v, not capabilities", t))
	}
	if t, err := dec.Token(); err != nil {
		return syntax(dec, err)
	} else if t != json.Delim('[') {
		return shape("capabilities is not a list")
	}
	for dec.More() {
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return syntax(dec, err)
		}
		if len(raw) > MaxStreamEntry {
			return fmt.Errorf("the definition at offset %d is %d bytes, over the %d a definition may have: split it or shrink its schemas", start, len(raw), MaxStreamEntry)
		}
		if err := fn(raw); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // ]
		return syntax(dec, err)
	}
	if t, err := dec.Token(); err != nil {
		return syntax(dec, err)
	} else if t != json.Delim('}') {
		return shape("the document has members besides capabilities")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return shape("more follows the document")
	}
	return nil
}

// syntax describes a JSON error of the stream at the decoder's offset.
func syntax(dec *json.Decoder, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("the JSON breaks at offset %d: %w: send one complete JSON document", dec.InputOffset(), err)
}
