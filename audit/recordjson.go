package audit

import (
	"bytes"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/caphub/caphub/invoke"
)

// recordJSON returns the Data of an invocation event, rec in canonical
// JSON, written directly: the same bytes as Canonicalize(json.Marshal(rec))
// without encoding the record by reflection and parsing it back, which
// cost the audit writer more than the rest of an event on the gateway's
// path (issue #14). ok is false when rec holds what only the general path
// encodes, or refuses, the same way: an attempt's error with Details (any
// value), a number that is NaN or infinite, a time outside years 0–9999.
// TestRecordJSON and FuzzRecordJSON hold it to the general path.
func recordJSON(rec invoke.Record) (_ []byte, ok bool) {
	if !finite(rec.DurationMS) || !jsonTime(rec.Time) {
		return nil, false
	}
	for _, a := range rec.Attempts {
		if !finite(a.DurationMS) || a.Error != nil && a.Error.Details != nil {
			return nil, false
		}
	}
	var b bytes.Buffer
	b.Grow(256 + len(rec.URI) + len(rec.Message) + len(rec.Caller))
	// Members in RFC 8785 order (by name; all ASCII): attempts, binding,
	// bindings_from, caller, code, credential, duration_ms, message, time,
	// uri, version; the omitempty ones only when set.
	b.WriteString(`{"attempts":`)
	if rec.Attempts == nil {
		b.WriteString("null")
	} else {
		b.WriteByte('[')
		for i, a := range rec.Attempts {
			if i > 0 {
				b.WriteByte(',')
			}
			writeAttempt(&b, a)
		}
		b.WriteByte(']')
	}
	optionalMember(&b, "binding", rec.Binding)
	optionalMember(&b, "bindings_from", rec.BindingsFrom)
	optionalMember(&b, "caller", rec.Caller)
	optionalMember(&b, "code", rec.Code)
	optionalMember(&b, "credential", rec.Credential)
	b.WriteString(`,"duration_ms":`)
	b.Write(appendNumber(b.AvailableBuffer(), rec.DurationMS))
	optionalMember(&b, "message", rec.Message)
	b.WriteString(`,"time":"`)
	b.Write(rec.Time.AppendFormat(b.AvailableBuffer(), time.RFC3339Nano))
	b.WriteString(`","uri":`)
	writeJSONString(&b, rec.URI)
	optionalMember(&b, "version", rec.Version)
	b.WriteByte('}')
	return b.Bytes(), true
}

// writeAttempt writes one invoke.Attempt: attempt, binding, duration_ms,
// error (when set: binding when set, code, message, retryable; never
// details, see recordJSON).
func writeAttempt(b *bytes.Buffer, a invoke.Attempt) {
	b.WriteString(`{"attempt":`)
	b.Write(appendNumber(b.AvailableBuffer(), float64(a.Attempt)))
	b.WriteString(`,"binding":`)
	writeJSONString(b, a.Binding)
	b.WriteString(`,"duration_ms":`)
	b.Write(appendNumber(b.AvailableBuffer(), a.DurationMS))
	if e := a.Error; e != nil {
		b.WriteString(`,"error":{`)
		if e.Binding != "" {
			b.WriteString(`"binding":`)
			writeJSONString(b, e.Binding)
			b.WriteByte(',')
		}
		b.WriteString(`"code":`)
		writeJSONString(b, e.Code)
		b.WriteString(`,"message":`)
		writeJSONString(b, e.Message)
		b.WriteString(`,"retryable":`)
		b.WriteString(strconv.FormatBool(e.Retryable))
		b.WriteByte('}')
	}
	b.WriteByte('}')
}

// optionalMember writes ,"name":value for an omitempty string member that
// is set.
func optionalMember(b *bytes.Buffer, name, value string) {
	if value == "" {
		return
	}
	b.WriteString(`,"`)
	b.WriteString(name)
	b.WriteString(`":`)
	writeJSONString(b, value)
}

// writeJSONString writes s as json.Marshal and then Canonicalize would:
// each byte that is not valid UTF-8 becomes U+FFFD (json.Marshal's
// replacement), the rest as writeString writes it.
func writeJSONString(b *bytes.Buffer, s string) {
	if utf8.ValidString(s) {
		writeString(b, s)
		return
	}
	valid := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			valid = utf8.AppendRune(valid, utf8.RuneError)
		} else {
			valid = append(valid, s[i:i+n]...)
		}
		i += n
	}
	writeString(b, string(valid))
}

// finite reports whether f is a number JSON can hold.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// jsonTime reports whether time.Time's MarshalJSON writes t (as
// RFC3339Nano) rather than failing: a year in 0–9999 and a zone offset
// within a day.
func jsonTime(t time.Time) bool {
	if y := t.Year(); y < 0 || y > 9999 {
		return false
	}
	_, off := t.Zone()
	return off > -24*3600 && off < 24*3600
}
