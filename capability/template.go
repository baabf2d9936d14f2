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
	var (
		args    []string
		cur     strings.Builder
		inWord  bool
		quote   rune
		quoteAt int
	)
	runes := []rune(s)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(runes) && (runes[i+1] == '"' || runes[i+1] == '\\'):
				i++
				cur.WriteRune(runes[i])
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, quoteAt, inWord = r, i, true
		case r == '\\':
			if i+1 >= len(runes) {
				return nil, fmt.Errorf("command ends with a lone backslash: remove it or escape it as \\\\")
			}
			i++
			cur.WriteRune(runes[i])
			inWord = true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote starting at character %d: close it", quote, quoteAt+1)
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}
