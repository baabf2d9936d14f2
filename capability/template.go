package capability

import (
	"fmt"
	"regexp"
	"strings"
)

// placeholderRE matches a {field} placeholder in a binding template: a field
// name, optionally followed by dotted sub-fields. Braces around anything else
// (a JSON body's own braces, say) are left alone.
var placeholderRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}`)

// Placeholders returns the field names of the {placeholders} in a template, in
// order of appearance, without duplicates.
func Placeholders(template string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range placeholderRE.FindAllStringSubmatch(template, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

// SplitCommand splits a CLI binding's command template into argv the way a
// POSIX shell splits words, but without any expansion: single quotes keep
// everything literal, double quotes allow \" and \\ escapes, and a backslash
// outside quotes escapes the next character. Nothing else is special, so
// `;`, `|`, `$(…)` and backticks are ordinary characters. The template is
// split once, before placeholders are filled, so each placeholder stays
// within one argument.
func SplitCommand(s string) ([]string, error) {
	sp := &commandSplitter{runes: []rune(s)}
	for ; sp.i < len(sp.runes); sp.i++ {
		if sp.quote != 0 {
			sp.quoted(sp.runes[sp.i])
		} else if err := sp.unquoted(sp.runes[sp.i]); err != nil {
			return nil, err
		}
	}
	if sp.quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote starting at character %d: close it", sp.quote, sp.quoteAt+1)
	}
	sp.endWord()
	return sp.args, nil
}

// commandSplitter is SplitCommand's state: the words so far and the one
// being read.
type commandSplitter struct {
	runes   []rune
	i       int // the rune being read
	args    []string
	cur     strings.Builder
	inWord  bool
	quote   rune // the open quote, 0 outside quotes
	quoteAt int
}

// quoted reads r inside quotes: nothing is special inside '…'; inside "…"
// a backslash escapes " and \.
func (sp *commandSplitter) quoted(r rune) {
	switch {
	case r == sp.quote:
		sp.quote = 0
	case sp.quote == '"' && r == '\\' && sp.i+1 < len(sp.runes) && (sp.runes[sp.i+1] == '"' || sp.runes[sp.i+1] == '\\'):
		sp.i++
		sp.cur.WriteRune(sp.runes[sp.i])
	default:
		sp.cur.WriteRune(r)
	}
}

// unquoted reads r outside quotes: a quote opens, a backslash escapes the
// next character, blanks end the word.
func (sp *commandSplitter) unquoted(r rune) error {
	switch r {
	case '\'', '"':
		sp.quote, sp.quoteAt, sp.inWord = r, sp.i, true
	case '\\':
		if sp.i+1 >= len(sp.runes) {
			return fmt.Errorf("command ends with a lone backslash: remove it or escape it as \\\\")
		}
		sp.i++
		sp.cur.WriteRune(sp.runes[sp.i])
		sp.inWord = true
	case ' ', '\t', '\n', '\r':
		sp.endWord()
	default:
		sp.cur.WriteRune(r)
		sp.inWord = true
	}
	return nil
}

// endWord ends the word being read, if any.
func (sp *commandSplitter) endWord() {
	if sp.inWord {
		sp.args = append(sp.args, sp.cur.String())
		sp.cur.Reset()
		sp.inWord = false
	}
}
