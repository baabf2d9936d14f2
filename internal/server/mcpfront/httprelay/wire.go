package httprelay

import (
	"bytes"
)

// maxEventData bounds the data of one SSE event that sseParser keeps to
// look at; a longer event is relayed all the same, unread.
const maxEventData = 64 << 20

// sseParser follows a text/event-stream as it is relayed, chunk by chunk
// however the bytes are split, and calls onEvent with the data of each
// complete event of type "message" (the only type MCP sends). It keeps one
// event's data at most. Lines end with CRLF, LF or CR, as the SSE format
// allows.
type sseParser struct {
	onEvent func(data []byte)

	line    []byte // the current line when it spans chunks
	afterCR bool   // the last chunk ended with CR: a LF that follows is part of it
	data    []byte // the current event's data lines, joined by LF
	hasData bool
	other   bool // the current event has a type other than "message"
	tooLong bool // the current event's data outgrew maxEventData
}

// feed reads the next bytes of the stream.
func (p *sseParser) feed(b []byte) {
	for len(b) > 0 {
		if p.afterCR {
			p.afterCR = false
			if b[0] == '\n' {
				b = b[1:]
				continue
			}
		}
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			p.line = appendBounded(p.line, b)
			return
		}
		if len(p.line) == 0 {
			p.endLine(b[:i])
		} else {
			p.line = appendBounded(p.line, b[:i])
			p.endLine(p.line)
			p.line = p.line[:0]
			if cap(p.line) > 1<<20 {
				p.line = nil // a long event passed; a stream may idle long after it
			}
		}
		if b[i] == '\r' {
			if i+1 == len(b) {
				p.afterCR = true
			} else if b[i+1] == '\n' {
				i++
			}
		}
		b = b[i+1:]
	}
}

// appendBounded appends to a line, dropping what goes beyond maxEventData
// (such a line's event is not read anyway).
func appendBounded(line, b []byte) []byte {
	if room := maxEventData + 16 - len(line); len(b) > room {
		b = b[:max(room, 0)]
	}
	return append(line, b...)
}

// endLine handles one complete line.
func (p *sseParser) endLine(line []byte) {
	if len(line) == 0 {
		p.endEvent()
		return
	}
	if line[0] == ':' {
		return // a comment
	}
	field, value, found := bytes.Cut(line, []byte{':'})
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(field) {
	case "data":
		p.addData(value)
	case "event":
		p.other = string(value) != "message" && len(value) > 0
	}
}

// endEvent ends the current event at a blank line, handing its data to
// onEvent when it is a message event whose data was kept.
func (p *sseParser) endEvent() {
	if p.hasData && !p.other && !p.tooLong && p.onEvent != nil {
		p.onEvent(p.data)
	}
	if cap(p.data) > 1<<20 {
		p.data = nil
	}
	p.data, p.hasData, p.other, p.tooLong = p.data[:0], false, false, false
}

// addData adds a data line to the current event, unless its data outgrows
// maxEventData (it is then dropped).
func (p *sseParser) addData(value []byte) {
	switch {
	case p.tooLong:
	case len(p.data)+len(value)+1 > maxEventData:
		p.tooLong = true
		p.data = p.data[:0]
	default:
		if p.hasData {
			p.data = append(p.data, '\n')
		}
		p.data = append(p.data, value...)
	}
	p.hasData = true
}
