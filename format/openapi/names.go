package openapi

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/format/internal/naming"
	"github.com/caphub/caphub/search"
)

// identRE is the grammar of a binding placeholder ({field}); an input field
// that a template names must match it.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// dateRE recognises an info.version that is a date.
var dateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}`)

// snakeName turns an operationId (or "method path") into a capability name
// of the grammar [a-z][a-z0-9_]*: camelCase boundaries become "_" (getPetById
// → get_pet_by_id, HTTPServer → http_server), every character other than an
// ASCII letter or digit becomes "_", runs of "_" collapse and are trimmed,
// and a name starting with a digit is prefixed with "op_". It returns "" when
// nothing usable is left.
func snakeName(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	prev := byte(0) // class of the previous byte (see charClass), 0 at the start
	for i := 0; i < len(s); i++ {
		c, class := s[i], charClass(s[i])
		next := byte(0)
		if i+1 < len(s) {
			next = s[i+1]
		}
		if separatorBefore(prev, class, next) {
			b.WriteByte('_')
		}
		if class != '_' {
			b.WriteByte(lowerASCII(c))
		}
		prev = class
	}
	out := squeezeUnderscores(b.String())
	if out != "" && naming.IsDigit(out[0]) {
		out = "op_" + out
	}
	return out
}

// charClass classifies a byte for snakeName: 'l' lower-case letter, 'u'
// upper-case letter, 'd' digit, '_' anything else (a separator).
func charClass(c byte) byte {
	switch {
	case c >= 'a' && c <= 'z':
		return 'l'
	case c >= 'A' && c <= 'Z':
		return 'u'
	case naming.IsDigit(c):
		return 'd'
	}
	return '_'
}

// separatorBefore reports whether snakeName writes "_" before a byte of the
// class, after one of class prev and before the byte next: a new word
// starts at an upper-case letter after a lower-case letter or digit, or at
// the last upper-case letter of an acronym that a lower-case letter follows
// (HTTPServer); a separator is written once per run, not at the start.
func separatorBefore(prev, class, next byte) bool {
	switch class {
	case 'u':
		return prev == 'l' || prev == 'd' || (prev == 'u' && next >= 'a' && next <= 'z')
	case '_':
		return prev != '_' && prev != 0
	}
	return false
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// squeezeUnderscores trims "_" from both ends and collapses runs of "_".
func squeezeUnderscores(s string) string {
	out := strings.Trim(s, "_")
	for strings.Contains(out, "__") {
		out = strings.ReplaceAll(out, "__", "_")
	}
	return out
}

func isWordByte(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || naming.IsDigit(c) || c == '_'
}

// domainFromTitle turns an API title into a domain of the grammar
// [a-z][a-z0-9-]*: lower-cased, apostrophes dropped ("GitHub's" → githubs),
// every other run of characters that are not ASCII letters or digits
// becomes one "-", leading and trailing "-" are trimmed, a leading digit is
// prefixed with "api-", and the result is cut to at most 63 characters at a
// "-" boundary when it can be. It returns "" when nothing usable is left.
func domainFromTitle(title string) string {
	title = strings.NewReplacer("'", "", "’", "").Replace(strings.ToLower(title))
	out := naming.JoinRuns(title, naming.IsLowerAlnum, '-')
	if out == "" {
		return ""
	}
	if naming.IsDigit(out[0]) {
		out = "api-" + out
	}
	if len(out) > 63 {
		if i := strings.LastIndexByte(out[:64], '-'); i > 0 {
			out = out[:i]
		} else {
			out = out[:63]
		}
	}
	return out
}

// fieldName returns the input field name of a parameter: its own name when
// it can appear in a {placeholder}, else the name with every run of other
// characters replaced by "_" (team-slug → team_slug, X-Request-ID →
// X_Request_ID), "param" when nothing is left.
func fieldName(name string) string {
	if identRE.MatchString(name) {
		return name
	}
	out := naming.JoinRuns(name, isWordByte, '_')
	if out == "" {
		return "param"
	}
	if naming.IsDigit(out[0]) {
		out = "_" + out
	}
	return out
}

// envName turns a domain into the prefix of an environment variable name:
// upper case, "-" → "_" (github-api → GITHUB_API).
func envName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
		case (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'):
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	out := squeezeUnderscores(b.String())
	if out == "" || naming.IsDigit(out[0]) {
		out = "API_" + out
	}
	return strings.TrimRight(out, "_")
}

// upperSnake turns free text into an UPPER_SNAKE error-code fragment.
func upperSnake(s string) string {
	s = strings.NewReplacer("'", "", "’", "").Replace(s)
	return strings.ToUpper(strings.TrimPrefix(snakeName(s), "op_"))
}

// errorCode returns the declared error code of a response key: HTTP_404_NOT_FOUND
// for a status with a standard reason phrase, HTTP_<status>_<first words of
// the description> (or HTTP_<status>) for another status, HTTP_4XX_CLIENT_ERROR
// and HTTP_5XX_SERVER_ERROR for ranges, HTTP_ERROR for default.
func errorCode(key, description string) string {
	switch strings.ToUpper(key) {
	case "DEFAULT":
		return "HTTP_ERROR"
	case "4XX":
		return "HTTP_4XX_CLIENT_ERROR"
	case "5XX":
		return "HTTP_5XX_SERVER_ERROR"
	}
	status, _ := strconv.Atoi(key)
	if text := http.StatusText(status); text != "" {
		return "HTTP_" + key + "_" + upperSnake(text)
	}
	words := strings.Fields(description)
	if len(words) > 4 {
		words = words[:4]
	}
	if frag := upperSnake(strings.Join(words, " ")); frag != "" {
		return "HTTP_" + key + "_" + frag
	}
	return "HTTP_" + key
}

// semverOf returns the capability version of an API's info.version: the
// version itself, padded to MAJOR.MINOR.PATCH, when it is a semantic version
// with one to three numeric components (a leading "v" is dropped: v2 →
// 2.0.0, 1.2 → 1.2.0, 3.0.1-beta → 3.0.1-beta); 1.0.0 for anything else:
// dates (2023-01-01, which semver would read as 2023.0.0-01-01), "latest",
// empty.
func semverOf(s string) string {
	s = strings.TrimSpace(s)
	if dateRE.MatchString(s) {
		return "1.0.0"
	}
	if len(s) > 1 && (s[0] == 'v' || s[0] == 'V') && s[1] >= '0' && s[1] <= '9' {
		s = s[1:]
	}
	v, err := capability.ParseVersion(s)
	if err != nil {
		return "1.0.0"
	}
	return v.Full()
}

// humanTitle turns an operationId (or "method path") into a title: its
// words as the search index splits identifiers (search.Words:
// reposCreateFork → repos create fork, issues/create → issues create), the
// first capitalised, the others in lower case except acronyms, which keep
// their capitals as written (getHTTPServer → Get HTTP server). It returns
// "" when s holds no word.
func humanTitle(s string) string {
	words := search.Words(s)
	if len(words) == 0 {
		return ""
	}
	lower := strings.ToLower(s)
	sameLen := len(lower) == len(s) // lower-casing kept every byte offset
	pos := 0
	for i, w := range words {
		if sameLen {
			if at := strings.Index(lower[pos:], w); at >= 0 {
				start := pos + at
				if orig := s[start : start+len(w)]; len(w) > 1 && orig == strings.ToUpper(orig) && orig != w {
					words[i] = orig
				}
				pos = start + len(w)
			}
		}
	}
	r, size := utf8.DecodeRuneInString(words[0])
	words[0] = string(unicode.ToUpper(r)) + words[0][size:]
	return strings.Join(words, " ")
}
