// Package bindutil holds what the bindings share: their invocation errors,
// placeholder lookup and the text helpers of their messages.
package bindutil

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/caphub/caphub/invoke"
)

// NoBinding is a CodeNoBinding error of the binding kind, with details.
func NoBinding(kind string, details map[string]any, format string, args ...any) *invoke.Error {
	e := invoke.Errorf(invoke.CodeNoBinding, false, format, args...)
	e.Binding = kind
	e.Details = details
	return e
}

// InvalidInput is a CodeInvalidInput error of the binding kind.
func InvalidInput(kind, format string, args ...any) *invoke.Error {
	e := invoke.Errorf(invoke.CodeInvalidInput, false, format, args...)
	e.Binding = kind
	return e
}

// CapabilityName names the capability of a call for messages: its URI,
// "(unnamed capability)" when it has none or there is no call.
func CapabilityName(call *invoke.Call) string {
	if call == nil || call.URI == "" {
		return "(unnamed capability)"
	}
	return call.URI
}

// Lookup finds a placeholder's value: "a.b" reads input["a"]["b"].
func Lookup(input map[string]any, name string) (any, bool) {
	var cur any = input
	for part := range strings.SplitSeq(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[part]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// Snippet is the start of a program's output or a body for messages:
// trimmed, valid UTF-8, at most max bytes, "…" when cut.
func Snippet(data []byte, max int) string {
	t := bytes.TrimSpace(data)
	cut, more := len(t), ""
	if cut > max {
		cut, more = max, "…"
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
	}
	if !utf8.Valid(t[:cut]) {
		return fmt.Sprintf("(%d bytes of binary data)", len(data))
	}
	return string(t[:cut]) + more
}
