// Package srcfile holds what the file readers of the format packages
// share: the error that stops a whole file, and reading a file within a
// size limit.
package srcfile

import (
	"fmt"
	"os"
	"strings"
)

// Error is a problem that stops a whole file from being read.
type Error struct {
	File         string
	Line, Column int
	Path         string // path of the offending value in the document, e.g. "package"; "" for the file
	Message      string // what is wrong and what to do
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// maxSize bounds what Read reads, so that a wrong path cannot exhaust
// memory (a real capability file or manifest is a few kilobytes).
const maxSize = 64 << 20

// Read reads the file at path. A directory is an *Error that says what to
// give instead (dirHint), and so is a file larger than maxSize (what names
// the kind of file, e.g. "a manifest").
func Read(path, dirHint, what string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if st.IsDir() {
		return nil, &Error{File: path, Message: "is a directory: " + dirHint}
	}
	if st.Size() > maxSize {
		return nil, &Error{File: path, Message: fmt.Sprintf("is %d bytes, larger than the %d-byte limit for %s", st.Size(), maxSize, what)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}
