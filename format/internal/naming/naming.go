// Package naming holds the character rules the format readers share to
// make identifiers (domains, names, fields) of free text.
package naming

import "strings"

// JoinRuns keeps the bytes of s that keep accepts, and puts one sep where
// a run of other bytes separated two kept ones (none at either end).
func JoinRuns(s string, keep func(byte) bool, sep byte) string {
	var b strings.Builder
	gap := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !keep(c) {
			gap = true
			continue
		}
		if gap && b.Len() > 0 {
			b.WriteByte(sep)
		}
		gap = false
		b.WriteByte(c)
	}
	return b.String()
}

// IsLowerAlnum reports whether c is an ASCII lower-case letter or digit.
func IsLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || IsDigit(c) }

// IsDigit reports whether c is an ASCII digit.
func IsDigit(c byte) bool { return c >= '0' && c <= '9' }
