package embed

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/caphub/caphub/capability"
)

// MaxTextBytes bounds what Text returns: about a thousand tokens, far
// below what embedding models read, and enough for what a capability says
// about itself.
const MaxTextBytes = 4096

// Budgets of Text's parts, so that a long list cannot crowd out the rest.
const (
	maxListItems  = 32  // keywords, intents, categories, parameters each
	maxItemBytes  = 80  // one of them
	maxTitleBytes = 300 // the title
)

// Text returns the text of def that is embedded: its name and domain split
// into words, its title, description, keywords, intents, categories and the
// names of its input parameters, at most MaxTextBytes. The description gets
// what the other parts leave, and is cut at a word when it is longer.
func Text(def *capability.Definition) string {
	head := []string{words(def.Name)}
	if d := words(def.Domain); d != "" {
		head[0] += " (" + d + ")"
	}
	if t := clean(def.Title, maxTitleBytes); t != "" {
		head = append(head, t)
	}
	var tail []string
	add := func(label string, items []string) {
		if s := joinItems(items); s != "" {
			tail = append(tail, label+": "+s)
		}
	}
	add("Keywords", def.Keywords)
	add("Intents", def.Intents)
	categories := def.Categories
	if def.Display != nil && def.Display.Category != "" {
		categories = append([]string{def.Display.Category}, categories...)
	}
	add("Categories", categories)
	add("Parameters", parameterNames(def.Input))

	text := sentences(head...)
	rest := sentences(tail...)
	room := MaxTextBytes - len(text) - len(rest) - 4
	return cut(sentences(text, clean(def.Description, max(room, 0)), rest), MaxTextBytes)
}

// sentences joins the non-empty parts as sentences: ". " between them,
// or a space after one that already ends in a full stop.
func sentences(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			if s := b.String(); !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "!") && !strings.HasSuffix(s, "?") {
				b.WriteByte('.')
			}
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

// words turns an identifier into lower-case words: scan_vulnerabilities,
// github.issues, send-text and getUserProfile become "scan
// vulnerabilities", "github issues", "send text" and "get user profile".
func words(id string) string {
	var b strings.Builder
	prev := rune(0)
	for i, r := range id {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			next, _ := utf8.DecodeRuneInString(id[i+utf8.RuneLen(r):])
			// A word starts at an upper-case letter after a lower-case one
			// or a digit (userProfile), or before a lower-case one in an
			// upper-case run (HTTPServer: HTTP, Server).
			if unicode.IsUpper(r) && b.Len() > 0 && (unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && unicode.IsLower(next)) {
				b.WriteByte(' ')
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			if b.Len() > 0 && prev != ' ' {
				b.WriteByte(' ')
			}
			r = ' '
		}
		prev = r
	}
	return strings.TrimSpace(b.String())
}

// joinItems joins the first maxListItems distinct items as words.
func joinItems(items []string) string {
	var out []string
	for _, it := range items {
		w := clean(words(it), maxItemBytes)
		if w != "" && !slices.Contains(out, w) {
			out = append(out, w)
		}
		if len(out) == maxListItems {
			break
		}
	}
	return strings.Join(out, ", ")
}

// parameterNames returns the property names of an input schema, required
// ones first, each group sorted.
func parameterNames(s capability.Schema) []string {
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		return nil
	}
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if required[a] != required[b] {
			if required[a] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}

// clean makes s one line of printable text of at most n bytes, cut at a
// word when it is longer.
func clean(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(strings.ToValidUTF8(s, " "), func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
	return cut(s, n)
}

// cut shortens s to at most n bytes, at the last space when there is one in
// its second half, else at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	if sp := strings.LastIndexByte(s[:i], ' '); sp > n/2 {
		i = sp
	}
	return strings.TrimRight(s[:i], " ,.;:")
}
