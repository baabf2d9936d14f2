package search

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWordsSplitsIdentifiers(t *testing.T) {
	for in, want := range map[string]string{
		"reposCreateFork":             "repos create fork",
		"issues/create":               "issues create",
		"pulls_list":                  "pulls list",
		"get-current-users-profile":   "get current users profile",
		"/repos/{owner}/{repo}/forks": "repos owner repo forks",
		"HTTPServer parseURL":         "http server parse url",
		"oauth2Token":                 "oauth 2 token",
		"chat.postMessage":            "chat post message",
		"Créer un problème":           "créer un problème",
		"  ":                          "",
		"users.getAuthenticated(v1)":  "users get authenticated v 1",
	} {
		if got := strings.Join(Words(in), " "); got != want {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTermsStemAndWriteOutAbbreviations(t *testing.T) {
	got := Terms("Listing the repos of my orgs, and their PRs")
	want := []string{"list", "repositori", "organ", "pull", "request"}
	if !slices.Equal(got, want) {
		t.Errorf("Terms = %q, want %q", got, want)
	}
	if a, b := Terms("repository")[0], Terms("repositories")[0]; a != b {
		t.Errorf("repository and repositories stem apart: %q, %q", a, b)
	}
}

func FuzzWords(f *testing.F) {
	for _, s := range []string{"reposCreateFork", "/a/{b}/c", "ÀÉÎõü", "\xff\xfe", strings.Repeat("A", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range Words(s) {
			if w == "" || len(w) > maxWordBytes || !utf8.ValidString(w) && utf8.ValidString(s) {
				t.Fatalf("Words(%q) gave the word %q", s, w)
			}
		}
		ix := NewIndex()
		ix.Put(Doc{ID: "a", Text: [numFields]string{FieldName: s, FieldDescription: s}})
		res := ix.Search(Query{Text: s, Limit: 3, Explain: true})
		if res.Total > 1 || len(res.Hits) > 1 {
			t.Fatalf("one document, %d hits", res.Total)
		}
	})
}

// A person named for what is done to them stems as the verb: "assign"
// finds assignees, "invite" invitees; short words ending in -ee are kept.
func TestAPersonEndingInEeStemsAsTheVerb(t *testing.T) {
	for word, verb := range map[string]string{"assignees": "assign", "assignee": "assigning", "invitees": "invite", "trustee": "trust"} {
		if a, b := Stem(word), Stem(verb); a != b {
			t.Errorf("Stem(%q) = %q, Stem(%q) = %q: want the same", word, a, verb, b)
		}
	}
	for _, w := range []string{"three", "agree", "free"} {
		if got := Stem(w); len(got) < len(w)-1 {
			t.Errorf("Stem(%q) = %q: a short word ending in -ee lost its ending", w, got)
		}
	}
}
