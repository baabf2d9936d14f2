package agentos

import (
	"sort"
	"strings"

	"github.com/caphub/caphub/capability"
)

// Intent resolution (the seed's "Capability Index: Intent Pattern →
// [Capability, ...]" and its first resolution step, "match intent to
// capabilities").
//
// The seed calls a capability's intents "patterns" but gives no pattern
// syntax; its examples are dotted names (messaging.send_text). caphub reads
// a pattern as dot-separated segments where a "*" segment matches any one
// segment, and a "*" as the last segment matches one or more: "messaging.*"
// matches messaging.send_text (and messaging.send.text), "*.send_text"
// matches messaging.send_text, and "*" matches every intent. Any other
// pattern matches only the identical intent (comparison is exact and
// case-sensitive).
//
// The seed's second step ranks by user preference, recency and AI
// confidence, none of which a registry knows; ResolveIntent ranks only by how
// specifically a capability declares the intent and leaves the rest to the
// caller, who keeps its own preference order in defs.

// MatchIntent reports whether an intent pattern declared by a capability
// matches a requested intent.
func MatchIntent(pattern, intent string) bool {
	_, ok := matchScore(pattern, intent)
	return ok
}

// matchScore matches pattern against intent and returns its specificity: the
// number of literal segments, plus one for an exact match (no wildcard).
func matchScore(pattern, intent string) (int, bool) {
	if pattern == "" || intent == "" {
		return 0, false
	}
	if pattern == intent && !strings.Contains(pattern, "*") {
		return strings.Count(pattern, ".") + 2, true
	}
	ps, is := strings.Split(pattern, "."), strings.Split(intent, ".")
	score := 0
	for i, p := range ps {
		last := i == len(ps)-1
		switch {
		case i >= len(is):
			return 0, false
		case p == "*" && last:
			return score, true // matches this segment and any after it
		case p == "*":
		case p == is[i]:
			score++
		default:
			return 0, false
		}
	}
	if len(ps) != len(is) {
		return 0, false
	}
	return score, true
}

// ResolveIntent returns the definitions that handle intent: those with an
// intent pattern matching it, the most specific first (an exact declaration
// before a wildcard one, a wildcard with more literal segments before one
// with fewer), and otherwise in the order of defs. Each definition is listed
// once, ranked by its most specific matching pattern.
func ResolveIntent(intent string, defs []capability.Definition) []capability.Definition {
	type hit struct {
		score, index int
	}
	var hits []hit
	for i := range defs {
		best, found := 0, false
		for _, p := range defs[i].Intents {
			if s, ok := matchScore(p, intent); ok && (!found || s > best) {
				best, found = s, true
			}
		}
		if found {
			hits = append(hits, hit{best, i})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	out := make([]capability.Definition, len(hits))
	for i, h := range hits {
		out[i] = defs[h.index]
	}
	return out
}
