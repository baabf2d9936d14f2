package search

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
)

// fixture is a small catalog: a few operations of three APIs, as their
// importers name them.
func fixture() *Index {
	ix := NewIndex()
	for _, d := range fixtureDocs() {
		ix.Put(d)
	}
	return ix
}

// fixtureDocs is fixture's documents.
func fixtureDocs() []Doc {
	var docs []Doc
	for _, d := range []capability.Definition{
		httpOp("github", "issues_create", "Create an issue", "Any user with pull access to a repository can create an issue.", "POST", "https://api.github.com/repos/{owner}/{repo}/issues"),
		httpOp("github", "issues_create_milestone", "Create a milestone", "Creates a milestone in a repository.", "POST", "https://api.github.com/repos/{owner}/{repo}/milestones"),
		httpOp("github", "issues_list_for_repo", "List repository issues", "List issues in a repository. Only open issues will be listed.", "GET", "https://api.github.com/repos/{owner}/{repo}/issues"),
		httpOp("github", "users_get_authenticated", "Get the authenticated user", "Gets information about the signed-in user.", "GET", "https://api.github.com/user"),
		httpOp("github", "pulls_list", "List pull requests", "Lists pull requests in a specified repository.", "GET", "https://api.github.com/repos/{owner}/{repo}/pulls"),
		httpOp("github", "pulls_list_requested_reviewers", "Get all requested reviewers for a pull request", "Gets the users or teams whose review is requested for a pull request.", "GET", "https://api.github.com/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers"),
		{Name: "chat_post_message", Domain: "slack", Title: "Sends a message to a channel.", Keywords: []string{"chat"},
			Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "POST", URL: "https://slack.com/api/chat.postMessage"}}},
		httpOp("spotify", "skip_users_playback_to_next_track", "Skip To Next", "Skips to next track in the user's queue.", "POST", "https://api.spotify.com/v1/me/player/next"),
	} {
		docs = append(docs, DocOf(d.Domain+"/"+d.Name, &d, d.Domain))
	}
	return docs
}

// indexOf is an index of defs, each under domain/name with its domain as
// its API.
func indexOf(defs []capability.Definition) *Index {
	ix := NewIndex()
	for _, d := range defs {
		ix.Put(DocOf(d.Domain+"/"+d.Name, &d, d.Domain))
	}
	return ix
}

// wantFirst searches ix for q (the top 3, explained) and fails unless want
// ranks first, with each hit's score and its parts; it returns the result
// for further checks.
func wantFirst(t *testing.T, ix *Index, q, want string) Result {
	t.Helper()
	res := ix.Search(Query{Text: q, Limit: 3, Explain: true})
	if len(res.Hits) == 0 || res.Hits[0].ID != want {
		var why []string
		for _, h := range res.Hits {
			why = append(why, fmt.Sprintf("%s %.2f %s", h.ID, h.Score, strings.Join(h.Why, "; ")))
		}
		t.Errorf("%q: top 3 %q, want %s first:\n%s", q, ids(res), want, strings.Join(why, "\n"))
	}
	return res
}

func ids(res Result) []string {
	var out []string
	for _, h := range res.Hits {
		out = append(out, h.ID)
	}
	return out
}

func TestRankingOfPhrasesAgentsUse(t *testing.T) {
	ix := fixture()
	for q, want := range map[string]string{
		"create issue":                          "github/issues_create",
		"open a new bug report in a repository": "github/issues_create",
		"list pull requests":                    "github/pulls_list",
		"who am I":                              "github/users_get_authenticated",
		"play the next song":                    "spotify/skip_users_playback_to_next_track",
		"send a message to slack":               "slack/chat_post_message",
		"show the open issues of a repo":        "github/issues_list_for_repo",
	} {
		t.Run(q, func(t *testing.T) {
			wantFirst(t, ix, q, want)
		})
	}
}

func TestAnyWordMatchesAndUnknownWordsAreSaid(t *testing.T) {
	ix := fixture()
	res := ix.Search(Query{Text: "milestone zzyzx", Limit: 10})
	if !slices.Equal(ids(res), []string{"github/issues_create_milestone"}) {
		t.Errorf("one known word, one unknown: %q", ids(res))
	}
	if len(res.Unknown) != 1 || res.Unknown[0].Word != "zzyzx" {
		t.Errorf("unknown = %+v, want zzyzx", res.Unknown)
	}
	res = ix.Search(Query{Text: "mielstone"})
	if len(res.Unknown) != 1 || !slices.Contains(res.Unknown[0].DidYouMean, "mileston") || len(res.Hits) == 0 || res.Hits[0].ID != "github/issues_create_milestone" {
		t.Errorf("a misspelt word: unknown %+v, hits %q; want a suggestion and its hits", res.Unknown, ids(res))
	}
	res = ix.Search(Query{Text: "the of and"})
	if res.Total != 0 || len(res.Hits) != 0 {
		t.Errorf("stop words only: %q", ids(res))
	}
	// The last word is also a prefix while it is being typed.
	if res = ix.Search(Query{Text: "milest"}); len(res.Hits) == 0 || res.Hits[0].ID != "github/issues_create_milestone" {
		t.Errorf("prefix: %q", ids(res))
	}
}

func TestKeepPagesAndExplain(t *testing.T) {
	ix := fixture()
	all := ix.Search(Query{Text: "issues repository pull"})
	if all.Total != len(all.Hits) || all.Total < 4 {
		t.Fatalf("no limit: %d hits of %d", len(all.Hits), all.Total)
	}
	for i := 1; i < len(all.Hits); i++ {
		a, b := all.Hits[i-1], all.Hits[i]
		if a.Score < b.Score || a.Score == b.Score && a.ID > b.ID {
			t.Errorf("hits out of order at %d: %v then %v", i, a, b)
		}
	}
	var paged []string
	for off := 0; off < all.Total; off += 2 {
		p := ix.Search(Query{Text: "issues repository pull", Offset: off, Limit: 2})
		if p.Total != all.Total {
			t.Errorf("page at %d: total %d, want %d", off, p.Total, all.Total)
		}
		paged = append(paged, ids(p)...)
	}
	if !slices.Equal(paged, ids(all)) {
		t.Errorf("pages %q, want %q", paged, ids(all))
	}
	only := ix.Search(Query{Text: "issues repository pull", Keep: func(m any) bool { return m == "slack" }})
	for _, h := range only.Hits {
		if h.Meta != "slack" {
			t.Errorf("Keep slack only: %q", ids(only))
		}
	}
	if only.Total >= all.Total {
		t.Errorf("Keep slack only: %d hits, as many as without it", only.Total)
	}
	ex := ix.Search(Query{Text: "create issue", Limit: 1, Explain: true})
	if len(ex.Hits) != 1 || !strings.Contains(strings.Join(ex.Hits[0].Why, "\n"), `"issu" in name, title`) || !strings.Contains(strings.Join(ex.Hits[0].Why, "\n"), "does what was asked (crud.create)") {
		t.Errorf("explain: %+v", ex.Hits)
	}
}

func TestPutReplacesAndDeleteForgets(t *testing.T) {
	ix := NewIndex()
	put := func(id, name string) {
		ix.Put(Doc{ID: id, Text: [numFields]string{FieldName: name}, Meta: name})
	}
	// Made-up words: they have no word vectors, so only the words
	// themselves match.
	put("a", "quorble zintex")
	put("b", "zintex gravlot")
	put("a", "plumvek")
	if got := ids(ix.Search(Query{Text: "quorble"})); len(got) != 0 {
		t.Errorf("replaced text still found: %q", got)
	}
	if got := ids(ix.Search(Query{Text: "plumvek"})); !slices.Equal(got, []string{"a"}) {
		t.Errorf("new text: %q", got)
	}
	ix.Delete("b")
	if got := ids(ix.Search(Query{Text: "zintex gravlot"})); len(got) != 0 || ix.Len() != 1 {
		t.Errorf("deleted: %q, len %d", got, ix.Len())
	}
	// Enough deletions compact the postings; what is left is still found.
	for i := range 5000 {
		put(fmt.Sprint("x", i), "filler words")
	}
	for i := range 4000 {
		ix.Delete(fmt.Sprint("x", i))
	}
	res := ix.Search(Query{Text: "filler plumvek"})
	if res.Total != 1001 || ix.Len() != 1001 {
		t.Errorf("after compaction: total %d, len %d, want 1001", res.Total, ix.Len())
	}
	if m, _, ok := ix.Lookup("a"); !ok || m != "plumvek" {
		t.Errorf("meta of a after compaction: %v %v", m, ok)
	}
}

// The same document put again (a write's own indexing, then its
// notification; a new version flipping an old one's Current) ranks as if
// put once: the replaced copies' postings used to count in their terms'
// document frequencies, so the ranking depended on how often each thing
// had been indexed (two stores importing the same catalog ranked it
// differently).
func TestPutAgainRanksAsPutOnce(t *testing.T) {
	once, again := fixture(), NewIndex()
	docs := fixtureDocs()
	for round := range 3 {
		for i := range docs {
			d := docs[(i+round)%len(docs)]
			d.Current = round == 2
			again.Put(d)
		}
	}
	for _, q := range []string{"create an issue", "list pull requests", "skip to the next song", "who am I", "send a message"} {
		a, b := once.Search(Query{Text: q}), again.Search(Query{Text: q})
		if len(a.Hits) == 0 || len(a.Hits) != len(b.Hits) {
			t.Fatalf("%q: %d hits put once, %d put again", q, len(a.Hits), len(b.Hits))
		}
		for i := range a.Hits {
			if a.Hits[i].ID != b.Hits[i].ID || a.Hits[i].Score != b.Hits[i].Score {
				t.Errorf("%q hit %d: %s %.6f put once, %s %.6f put again", q, i, a.Hits[i].ID, a.Hits[i].Score, b.Hits[i].ID, b.Hits[i].Score)
			}
		}
	}
	// Current and Meta still change on a put of the same text.
	d := docs[0]
	d.Current, d.Meta = false, "changed"
	again.Put(d)
	if m, cur, ok := again.Lookup(d.ID); !ok || cur || m != "changed" {
		t.Errorf("after a put of the same text: meta %v current %v", m, cur)
	}
}

// A word no document has finds the documents of the words nearest to it in
// meaning (by their word vectors), and says it is unknown only when nothing
// is near.
func TestRelatedWordsOfUnknownWords(t *testing.T) {
	ix := indexOf([]capability.Definition{
		{Name: "list_cars", Domain: "fleet", Title: "List cars", Description: "Returns the cars of a fleet."},
		{Name: "get_doctor", Domain: "clinic", Title: "Get a doctor", Description: "Returns a doctor's details."},
		{Name: "list_workers", Domain: "staff", Title: "List workers", Description: "Returns every worker on the payroll."},
	})
	for q, want := range map[string]string{
		"show the automobiles":    "fleet/list_cars",
		"find a physician":        "clinic/get_doctor",
		"employees on my payroll": "staff/list_workers",
	} {
		res := ix.Search(Query{Text: q, Explain: true})
		if len(res.Hits) == 0 || res.Hits[0].ID != want {
			t.Errorf("%q: hits %q, want %s first", q, ids(res), want)
			continue
		}
		if why := strings.Join(res.Hits[0].Why, "; "); !strings.Contains(why, "related to") {
			t.Errorf("%q: explain %q does not say the word was related", q, why)
		}
		if len(res.Unknown) != 0 {
			t.Errorf("%q: unknown %+v, want none: a related word was found", q, res.Unknown)
		}
	}
	// A related word weighs less than the word itself, and does not count
	// as naming the document.
	a := ix.Search(Query{Text: "list automobiles"})
	b := ix.Search(Query{Text: "list cars"})
	if len(a.Hits) == 0 || len(b.Hits) == 0 || a.Hits[0].Score >= b.Hits[0].Score/2 {
		t.Errorf("list automobiles scores %v, list cars %v: want the word itself to score more than twice as high", a.Hits, b.Hits)
	}
	if res := ix.Search(Query{Text: "zzyzx"}); len(res.Hits) != 0 || len(res.Unknown) != 1 {
		t.Errorf("a word with no vector and no neighbour: hits %q, unknown %+v", ids(res), res.Unknown)
	}
}

func BenchmarkRelatedScan(b *testing.B) {
	ix := fixture()
	ix.mu.RLock()
	v := ix.vectorVocabulary()
	ix.mu.RUnlock()
	words := []string{"song", "pictur", "bug", "compani", "employe", "websit"}
	i := 0
	for b.Loop() {
		w := words[i%len(words)]
		i++
		v.mu.Lock()
		clear(v.cache)
		v.mu.Unlock()
		v.related(w)
	}
}

func TestObjectIsThePathsLastResource(t *testing.T) {
	httpDef := func(method, u string) *capability.Definition {
		return &capability.Definition{Name: "op", Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: method, URL: u}}}
	}
	for _, c := range []struct {
		def  *capability.Definition
		want string
	}{
		{httpDef("POST", "https://api.github.com/repos/{owner}/{repo}/issues/{issue_number}/comments"), "comments"},
		{httpDef("DELETE", "https://api.github.com/repos/{owner}/{repo}"), "repos"},
		{httpDef("POST", "https://slack.com/api/chat.postMessage"), "message"},
		{httpDef("GET", "https://slack.com/api/conversations.list"), "conversations"},
		{httpDef("GET", "https://api.box.com/2.0/files/{file_id}/thumbnail.{extension}"), "thumbnail"},
		{httpDef("GET", "/api/v1/namespaces/{namespace}/pods"), "pods"},
		// Twilio's paths end in the answer's format, which is no thing.
		{httpDef("POST", "https://api.twilio.com/2010-04-01/Accounts/{AccountSid}/Calls.json"), "calls"},
		{httpDef("GET", "https://api.twilio.com/2010-04-01/Accounts/{AccountSid}/Calls/{Sid}.json"), "calls"},
		{&capability.Definition{Name: "create_entities", Bindings: capability.Bindings{MCP: &capability.MCPBinding{Tool: "create_entities"}}}, "entities"},
		{&capability.Definition{Name: "getSum"}, "sum"},
	} {
		if got := objectOf(c.def); got != c.want {
			t.Errorf("objectOf(%+v) = %q, want %q", c.def.Bindings, got, c.want)
		}
	}
}

func TestTheRequestsVerbSaysItsAction(t *testing.T) {
	ix := fixture()
	for q, want := range map[string]string{
		"permanently remove a repository":       ActionDelete,
		"which files did a pull request change": ActionRead, // a question asks to read
		"is this user online":                   ActionRead,
		"files I opened recently":               ActionRead, // the verb comes after the things, which are read
		"file size and last modified time":      "",         // nor is one named here
		"create issue":                          ActionCreate,
		"stop a running CI build":               ActionDelete, // as cancel does
	} {
		if got := ix.Search(Query{Text: q}).Action; got != want {
			t.Errorf("%q: action %q, want %q", q, got, want)
		}
	}
	// Closing is deleting, or updating a state.
	ix.mu.RLock()
	p := ix.analyse("close a bug ticket")
	ix.mu.RUnlock()
	if !p.does(ActionDelete) || !p.does(ActionUpdate) || p.does(ActionCreate) {
		t.Errorf("close: action %q, also %q", p.action, p.also)
	}
}

// The thing a request names is what the operation acts on (its path's last
// resource), not the thing that holds it: "comments of an issue" asks for
// comments.
func TestTheThingNamedIsWhatTheOperationActsOn(t *testing.T) {
	ix := indexOf([]capability.Definition{
		httpOp("github", "issues_list_comments", "List issue comments", "You can use the REST API to list comments on issues and pull requests.", "GET", "https://api.github.com/repos/{owner}/{repo}/issues/{issue_number}/comments"),
		httpOp("github", "issues_get", "Get an issue and its comments", "Returns an issue with its comments (comments of pull requests too).", "GET", "https://api.github.com/repos/{owner}/{repo}/issues/{issue_number}"),
		httpOp("github", "issues_update", "Update an issue", "Issue owners and users with push access can edit an issue.", "PATCH", "https://api.github.com/repos/{owner}/{repo}/issues/{issue_number}"),
	})
	ix.mu.RLock()
	p := ix.analyse("the comments of an issue")
	ix.mu.RUnlock()
	comments, issue := &doc{object: "comment"}, &doc{object: "issu"}
	if p.objectMatch(comments) != 1 || p.objectMatch(issue) != 0 {
		t.Errorf("object match: comments %.2f, issue %.2f; want 1 and 0 (an issue qualifies what is asked for)", p.objectMatch(comments), p.objectMatch(issue))
	}
	wantFirst(t, ix, "the comments of an issue", "github/issues_list_comments")
}

// A word found only among an operation's parameters counts for half of one
// found in its name or description.
func TestAWordOnlyInParametersIsHalfFound(t *testing.T) {
	ix := NewIndex()
	ix.Put(Doc{ID: "list", Text: [numFields]string{FieldName: "quorble list", FieldParams: "zintex the zintex to filter by"}})
	ix.Put(Doc{ID: "add", Text: [numFields]string{FieldName: "quorble add zintex"}})
	ix.mu.RLock()
	p := ix.analyse("quorble zintex")
	full, half := ix.coverage(p, ix.byID["add"]), ix.coverage(p, ix.byID["list"])
	ix.mu.RUnlock()
	if full != 1 || half >= full || half <= coverageOf(2, 2) {
		t.Errorf("coverage: name %.2f, parameters %.2f; want 1, and less than 1 but more than for one word of two", full, half)
	}
}

// TestScoresFiniteAfterDeletes checks that a term whose postings still
// hold deleted documents (before compaction) scores as a finite number:
// its document frequency could exceed the live count, and the flattened
// IDF's power of a negative logarithm was NaN (a search answer JSON cannot
// encode).
func TestScoresFiniteAfterDeletes(t *testing.T) {
	ix := NewIndex()
	for i := range 6 {
		d := capability.Definition{Name: fmt.Sprintf("issues_op_%d", i), Domain: "github", Description: "works on an issue"}
		ix.Put(DocOf(fmt.Sprint("github/", i), &d, "github"))
	}
	for i := range 5 {
		ix.Delete(fmt.Sprint("github/", i))
	}
	res := ix.Search(Query{Text: "issue", Explain: true})
	if len(res.Hits) == 0 {
		t.Fatal("no hit")
	}
	for _, h := range res.Hits {
		if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) || h.Score <= 0 {
			t.Errorf("score %v for %s", h.Score, h.ID)
		}
	}
}

// followIndex holds real operations whose titles start with "Follow"
// (GitHub's and Spotify's, all PUTs), and one that lists followers.
func followIndex() *Index {
	ix := NewIndex()
	put := func(domain, name, title, method, u string) {
		d := capability.Definition{Name: name, Domain: domain, Title: title, Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: method, URL: u}}}
		ix.Put(DocOf(domain+"/"+name, &d, domain))
	}
	put("github", "users_follow", "Follow a user", "PUT", "https://api.github.com/user/following/{username}")
	put("github", "users_list_followers_for_user", "List followers of a user", "GET", "https://api.github.com/users/{username}/followers")
	put("spotify", "follow_artists_users", "Follow Artists or Users", "PUT", "https://api.spotify.com/v1/me/following")
	put("spotify", "follow_playlist", "Follow Playlist", "PUT", "https://api.spotify.com/v1/playlists/{playlist_id}/followers")
	return ix
}

func TestAVerbTheLexiconLacksTakesTheActionOfTheTitlesItStarts(t *testing.T) {
	ix := followIndex()
	for q, want := range map[string]string{
		"follow a developer":       ActionUpdate, // the three titles that start with Follow are PUTs
		"who follows me on github": ActionRead,   // a question asks to read, whatever its verb
		"followers of a user":      ActionRead,   // no title starts with "followers": things to read
	} {
		if got := ix.Search(Query{Text: q}).Action; got != want {
			t.Errorf("%q: action %q, want %q", q, got, want)
		}
	}
	// Two titles are too few to teach a verb.
	ix.Delete("spotify/follow_playlist")
	if got := ix.Search(Query{Text: "follow developers"}).Action; got != "" {
		t.Errorf("with two titles that start with Follow: action %q, want none", got)
	}
}

func TestExplainSaysWhereTheActionWasLearned(t *testing.T) {
	res := followIndex().Search(Query{Text: "follow a developer", Explain: true, Limit: 1})
	if len(res.Hits) == 0 || res.Hits[0].ID != "github/users_follow" {
		t.Fatalf("top hit %v, want github/users_follow", ids(res))
	}
	why := strings.Join(res.Hits[0].Why, "; ")
	if !strings.Contains(why, `does what was asked (crud.update), as the titles that start with "follow" do`) {
		t.Errorf("explain %q does not say the action was learned from the titles", why)
	}
}

func TestAReadOfAsManyThingsAsAskedForRanksFirst(t *testing.T) {
	ix := indexOf([]capability.Definition{
		httpOp("github", "repos_get_commit", "Get a commit", "Returns the contents of a single commit reference.", "GET", "https://api.github.com/repos/{owner}/{repo}/commits/{ref}"),
		httpOp("github", "repos_list_commits", "List commits", "The response will include a verification object that describes the result of verifying the commit's signature.", "GET", "https://api.github.com/repos/{owner}/{repo}/commits"),
	})
	for q, want := range map[string]string{
		"the commits of a repository": "github/repos_list_commits", // a plural asks for a list
		"all the commit":              "github/repos_list_commits",
		"a commit of a repository":    "github/repos_get_commit", // "a" asks for one
	} {
		res := ix.Search(Query{Text: q, Explain: true})
		if len(res.Hits) == 0 || res.Hits[0].ID != want {
			t.Errorf("%q: %v, want %s first", q, ids(res), want)
			continue
		}
		if why := strings.Join(res.Hits[0].Why, "; "); !strings.Contains(why, "reads as many as were asked for") {
			t.Errorf("%q: explain %q does not say it reads as many as asked for", q, why)
		}
	}
}

func TestManyOfAnOperation(t *testing.T) {
	for u, want := range map[string]Many{
		"https://api.github.com/repos/{owner}/{repo}/commits":                      ManyMany,
		"https://api.github.com/repos/{owner}/{repo}/commits/{ref}":                ManyOne,
		"https://api.github.com/repos/{owner}/{repo}/readme":                       ManyUnknown, // one thing, not a parameter
		"https://api.twilio.com/2010-04-01/Accounts/{AccountSid}/Calls.json":       ManyMany,
		"https://api.twilio.com/2010-04-01/Accounts/{AccountSid}/Calls/{Sid}.json": ManyOne,
		"https://api.digitalocean.com/v2/customers/my/balance":                     ManyUnknown,
		"https://api.github.com/repos/{owner}/{repo}/actions/runs/{run_id}/logs/":  ManyMany,
	} {
		d := capability.Definition{Name: "op", Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: u}}}
		if got := manyOf(&d); got != want {
			t.Errorf("manyOf(GET %s) = %d, want %d", u, got, want)
		}
	}
	post := capability.Definition{Name: "op", Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "POST", URL: "https://api.github.com/repos/{owner}/{repo}/issues"}}}
	if got := manyOf(&post); got != ManyUnknown {
		t.Errorf("manyOf(POST …/issues) = %d, want ManyUnknown: only a read lists", got)
	}
}

func TestAnAdverbThatStartsTitlesDoesNotTakeTheVerbsPlace(t *testing.T) {
	ix := NewIndex()
	put := func(domain, name, title, u string) {
		d := capability.Definition{Name: name, Domain: domain, Title: title, Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "DELETE", URL: u}}}
		ix.Put(DocOf(domain+"/"+name, &d, domain))
	}
	// Box's titles start with "Permanently".
	put("box", "delete_files_id_trash", "Permanently remove file", "https://api.box.com/2.0/files/{file_id}/trash")
	put("box", "delete_folders_id_trash", "Permanently remove folder", "https://api.box.com/2.0/folders/{folder_id}/trash")
	put("box", "delete_web_links_id_trash", "Permanently remove web link", "https://api.box.com/2.0/web_links/{web_link_id}/trash")
	put("github", "repos_delete", "Delete a repository", "https://api.github.com/repos/{owner}/{repo}")
	res := ix.Search(Query{Text: "permanently remove a repository", Explain: true})
	for _, h := range res.Hits {
		if h.ID != "github/repos_delete" {
			continue
		}
		if why := strings.Join(h.Why, "; "); !strings.Contains(why, `"delet" in name, title ("remove" asks to delete)`) {
			t.Errorf("repos_delete: explain %q: the verb remove should look for delete", why)
		}
		return
	}
	t.Errorf("github/repos_delete not found: %v", ids(res))
}

func TestAnUnknownVerbBeforeItsObjectAsksToWrite(t *testing.T) {
	ix := NewIndex()
	for _, c := range []struct{ name, title, method, path, verb string }{
		{"issues_create_comment", "Create an issue comment", "POST", "{issue_number}/comments", "create"},
		{"issues_delete_comment", "Delete an issue comment", "DELETE", "comments/{comment_id}", "delete"},
		{"issues_get_comment", "Get an issue comment", "GET", "comments/{comment_id}", "get"},
		{"issues_list_comments", "List issue comments", "GET", "{issue_number}/comments", "list"},
		{"issues_update_comment", "Update an issue comment", "PATCH", "comments/{comment_id}", "update"},
	} {
		d := capability.Definition{Name: c.name, Domain: "github", Title: c.title,
			Description: "You can use the REST API to " + c.verb + " comments on issues and pull requests. Every pull request is an issue, but not every issue is a pull request.",
			Bindings:    capability.Bindings{HTTP: &capability.HTTPBinding{Method: c.method, URL: "https://api.github.com/repos/{owner}/{repo}/issues/" + c.path}}}
		ix.Put(DocOf("github/"+c.name, &d, "github"))
	}
	// "comment on": a word the lexicon lacks, then what starts its object.
	res := ix.Search(Query{Text: "comment on an issue", Explain: true})
	// It asks to write: to create, or else to update.
	top := ids(res)
	if res.Action != ActionCreate || len(top) < 2 || !slices.Contains(top[:2], "github/issues_create_comment") || !slices.Contains(top[:2], "github/issues_update_comment") {
		t.Fatalf("comment on an issue: action %q, %v; want crud.create and issues_create_comment and issues_update_comment first", res.Action, top)
	}
	if why := strings.Join(res.Hits[0].Why, "; "); !strings.Contains(why, `as "comment" before its object asks to write`) {
		t.Errorf("explain %q does not say why it asks to write", why)
	}
	// A noun phrase names no action.
	if got := ix.Search(Query{Text: "issue comments"}).Action; got != "" {
		t.Errorf("issue comments: action %q, want none", got)
	}
}

func TestExplainSaysAPluralWithoutAVerbAsksToRead(t *testing.T) {
	ix := followIndex()
	res := ix.Search(Query{Text: "followers of a user", Explain: true})
	for _, h := range res.Hits {
		if h.ID != "github/users_list_followers_for_user" {
			continue
		}
		if why := strings.Join(h.Why, "; "); !strings.Contains(why, `does what was asked (crud.read), as a request that starts with a plural ("followers") names things to read`) {
			t.Errorf("explain %q does not say why it asks to read", why)
		}
		return
	}
	t.Errorf("users_list_followers_for_user not found: %v", ids(res))
}

// "assign" finds the operation that adds assignees (Snowball stems
// assignees to "assigne", apart from "assign").
func TestAssignFindsAssignees(t *testing.T) {
	ix := indexOf([]capability.Definition{
		httpOp("github", "issues_add_assignees", "Add assignees to an issue", "Adds up to 10 assignees to an issue.", "POST", "https://api.github.com/repos/{owner}/{repo}/issues/{issue_number}/assignees"),
		httpOp("github", "issues_add_labels", "Add labels to an issue", "Adds labels to an issue. An empty array of labels leaves the issue as it was.", "POST", "https://api.github.com/repos/{owner}/{repo}/issues/{issue_number}/labels"),
	})
	wantFirst(t, ix, "assign an issue to a developer", "github/issues_add_assignees")
}

// "set a goal" creates one as often as it changes one: an operation that
// creates it does what was asked, as one that updates it does.
func TestSettingAThingMayCreateIt(t *testing.T) {
	ix := indexOf([]capability.Definition{
		httpOp("asana", "create_goal", "Create a goal", "Creates a goal.", "POST", "https://app.asana.com/api/1.0/goals"),
		httpOp("asana", "replace_goal", "Replace a goal", "Replaces a goal in a workspace.", "PUT", "https://app.asana.com/api/1.0/goals/{gid}"),
	})
	wantFirst(t, ix, "set a goal", "asana/create_goal")
}

// A request that starts with a plural without an s ("people who …") names
// things to read, as one that starts with "users who …" does.
func TestAnIrregularPluralAsksToRead(t *testing.T) {
	ix := fixture()
	for _, q := range []string{"people who reported my mail as spam", "children of a page"} {
		if got := ix.Search(Query{Text: q}).Action; got != ActionRead {
			t.Errorf("%q: action %q, want %q", q, got, ActionRead)
		}
	}
}

// A hyphenated word of a query that the index or the synonyms know as one
// word is read as one: "to-do" is a todo (a task), not two stop words.
func TestAHyphenatedWordOfAQueryIsOneWord(t *testing.T) {
	ix := indexOf([]capability.Definition{
		httpOp("asana", "create_task", "Create a task", "Creating a new task is as easy as POSTing to the /tasks endpoint.", "POST", "https://app.asana.com/api/1.0/tasks"),
		httpOp("asana", "create_project", "Create a project", "Create a new project in a workspace or team.", "POST", "https://app.asana.com/api/1.0/projects"),
		{Name: "get-current-user", Domain: "asana", Title: "Get the current user",
			Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: "https://app.asana.com/api/1.0/users/me"}}},
	})
	wantFirst(t, ix, "add a to-do", "asana/create_task")
	// A hyphenated identifier the index does not know whole is its words.
	if res := ix.Search(Query{Text: "get-current-user", Limit: 1}); len(res.Hits) == 0 || res.Hits[0].ID != "asana/get-current-user" {
		t.Errorf("get-current-user: top %q, want asana/get-current-user", ids(res))
	}
}

// Archiving a thing is an update of its state in most APIs (Trello's
// closed cards, GitHub's archived repositories), before a deletion.
func TestArchivingIsAnUpdateFirst(t *testing.T) {
	ix := indexOf([]capability.Definition{
		{Name: "update_cards_closed_by_id_card", Domain: "trello", Title: "updateCardsClosedByIdCard()",
			Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "PUT", URL: "https://api.trello.com/1/cards/{idCard}/closed"}}},
		{Name: "delete_cards_by_id_card", Domain: "trello", Title: "deleteCardsByIdCard()",
			Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "DELETE", URL: "https://api.trello.com/1/cards/{idCard}"}}},
	})
	if res := wantFirst(t, ix, "archive a trello card", "trello/update_cards_closed_by_id_card"); res.Action != ActionUpdate {
		t.Errorf("archive a trello card: action %q, want %q", res.Action, ActionUpdate)
	}
}

// A word few documents have also looks for the words nearest in meaning:
// "small" finds the smaller image of a file, in a catalog where one link
// preview says "small".
func TestARareWordAlsoLooksForRelatedWords(t *testing.T) {
	ix := NewIndex()
	for i := range 300 {
		ix.Put(Doc{ID: fmt.Sprintf("box/get_folder_%d", i), Text: [numFields]string{FieldName: fmt.Sprintf("get folder %d", i), FieldTitle: "Get a folder", FieldDescription: "Returns a folder and the files in it."}})
	}
	for _, d := range []capability.Definition{
		httpOp("box", "get_files_id_thumbnail", "Get a file thumbnail", "Returns a smaller image of a file.", "GET", "https://api.box.com/2.0/files/{file_id}/thumbnail"),
		httpOp("box", "get_files_id_content", "Get a file content", "Returns the full image of a file.", "GET", "https://api.box.com/2.0/files/{file_id}/content"),
		httpOp("slack", "chat_unfurl", "Unfurl links", "Shows small previews of links.", "POST", "https://slack.com/api/chat.unfurl"),
	} {
		ix.Put(DocOf(d.Domain+"/"+d.Name, &d, d.Domain))
	}
	wantFirst(t, ix, "a small image of a file", "box/get_files_id_thumbnail")
	// A word many documents have does not.
	ix.mu.RLock()
	p := ix.analyse("a folder")
	ix.mu.RUnlock()
	for _, qt := range p.terms {
		if qt.related {
			t.Errorf("a folder: %q is looked for as a related word; a common word's related words are not", qt.term)
		}
	}
}

// A phrasal verb is read as the verb it means, its own verb kept as a word
// of the query: "kick off" starts, "get rid of" deletes, and its particle
// may follow a short object ("take a song off").
func TestPhrasalVerbs(t *testing.T) {
	for _, c := range []struct {
		q       string
		words   []string
		literal map[int]string
	}{
		{"kick off a workflow manually", []string{"start", "kick", "a", "workflow", "manually"}, map[int]string{1: "kick off"}},
		{"get rid of a project", []string{"delete", "get", "a", "project"}, map[int]string{1: "get rid of"}},
		{"take a song off my playlist", []string{"remove", "take", "a", "song", "my", "playlist"}, map[int]string{1: "take off"}},
		{"please kick someone out of the org", []string{"please", "remove", "kick", "someone", "of", "the", "org"}, map[int]string{2: "kick out"}},
		// A particle that does not follow the verb's short object is not
		// its particle: here "in" starts a place.
		{"log messages in a channel", []string{"log", "messages", "in", "a", "channel"}, nil},
		{"take the long road off", []string{"take", "the", "long", "road", "off"}, nil},
	} {
		words, literal := phrasal(Words(c.q))
		if !slices.Equal(words, c.words) || fmt.Sprint(literal) != fmt.Sprint(c.literal) {
			t.Errorf("%q: read as %q %v, want %q %v", c.q, words, literal, c.words, c.literal)
		}
	}
}

// Phrasal verbs rank the operation that does what they mean first, over
// real APIs' operations (the first two were not in the top 10 before).
func TestPhrasalVerbsRank(t *testing.T) {
	ix := indexOf([]capability.Definition{
		httpOp("asana", "create_project", "Create a project", "Create a new project in a workspace or team.", "POST", "https://app.asana.com/api/1.0/projects"),
		httpOp("asana", "delete_project", "Delete a project", "A specific, existing project can be deleted by making a DELETE request on the URL for that project. Returns an empty data record.", "DELETE", "https://app.asana.com/api/1.0/projects/{project_gid}"),
		httpOp("asana", "get_project", "Get a project", "Returns the complete project record for a single project.", "GET", "https://app.asana.com/api/1.0/projects/{project_gid}"),
		httpOp("asana", "get_projects", "Get multiple projects", "Returns the compact project records for some filtered set of projects.", "GET", "https://app.asana.com/api/1.0/projects"),
		httpOp("spotify", "add_tracks_to_playlist", "Add Items to Playlist", "Add one or more items to a user's playlist.", "POST", "https://api.spotify.com/v1/playlists/{playlist_id}/tracks"),
		httpOp("spotify", "get_playlists_tracks", "Get Playlist Items", "Get full details of the items of a playlist owned by a Spotify user.", "GET", "https://api.spotify.com/v1/playlists/{playlist_id}/tracks"),
		httpOp("spotify", "remove_tracks_playlist", "Remove Playlist Items", "Remove one or more items from a user's playlist.", "DELETE", "https://api.spotify.com/v1/playlists/{playlist_id}/tracks"),
		{Name: "conversations_kick", Domain: "slack", Title: "Removes a user from a conversation.",
			Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "POST", URL: "https://slack.com/api/conversations.kick"}}},
		httpOp("spotify", "save_tracks_user", "Save Tracks for Current User", "Save one or more tracks to the current user's 'Your Music' library.", "PUT", "https://api.spotify.com/v1/me/tracks"),
	})
	for q, want := range map[string]string{
		"get rid of a project":        "asana/delete_project",
		"take a song off my playlist": "spotify/remove_tracks_playlist",
	} {
		if res := wantFirst(t, ix, q, want); res.Action != ActionDelete {
			t.Errorf("%q: action %q, want %q", q, res.Action, ActionDelete)
		}
	}
	// Explain says where the words came from; an API that uses the
	// phrasal verb's own verb ranks first.
	res := ix.Search(Query{Text: "kick someone out of a conversation", Limit: 1, Explain: true})
	why := ""
	if len(res.Hits) > 0 {
		why = strings.Join(res.Hits[0].Why, "\n")
	}
	if len(res.Hits) == 0 || res.Hits[0].ID != "slack/conversations_kick" || !strings.Contains(why, `"kick" in name, path (the verb of "kick out")`) || res.Action != ActionDelete {
		t.Errorf("kick someone out of a conversation: top %q, explained:\n%s\naction %q; want slack/conversations_kick, its kick the verb of \"kick out\", which asks to delete", ids(res), why, res.Action)
	}
}

// TestVerbFoundInTheAction checks that an operation doing what the query's
// verb asks counts the verb as half found though it names the action
// otherwise ("Delete a repository" for "remove a repository"): half, as
// "remove" may also ask to take a thing out of another ("Remove a
// repository from a team"), which says it.
func TestVerbFoundInTheAction(t *testing.T) {
	ix := indexOf([]capability.Definition{
		httpOp("github", "repos_delete", "Delete a repository", "Deleting a repository requires admin access.", "DELETE", "https://api.github.com/repos/{owner}/{repo}"),
		httpOp("github", "teams_remove_repo_in_org", "Remove a repository from a team", "Team maintainers can remove any repositories from the team.", "DELETE", "https://api.github.com/orgs/{org}/teams/{team_slug}/repos/{owner}/{repo}"),
		httpOp("github", "repos_get", "Get a repository", "The parent and source objects are present when the repository is a fork.", "GET", "https://api.github.com/repos/{owner}/{repo}"),
	})
	wantCoverage(t, ix, "remove a repository", map[string]string{
		"github/repos_delete":             "×0.85: has only some of the words asked for",
		"github/teams_remove_repo_in_org": "all found",
		"github/repos_get":                "×0.70: has only some of the words asked for",
	})
}

// wantCoverage fails unless the query q explains the coverage of each
// document of want as its value says ("all found" when it has every word).
func wantCoverage(t *testing.T, ix *Index, q string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, h := range ix.Search(Query{Text: q, Explain: true}).Hits {
		got[h.ID] = "all found"
		for _, w := range h.Why {
			if strings.HasSuffix(w, "has only some of the words asked for") {
				got[h.ID] = w
			}
		}
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%q for %s: %q, want %q", q, id, got[id], w)
		}
	}
}

// TestListWordFoundInAList checks that a word of the query that asks for a
// list ("the commit history", "recent messages") is found in an operation
// that reads a list, though its text does not say it: "show the commit
// history" lists the commits (in the whole catalog, it ranked second, under
// a repository's activity, whose description says "history").
func TestListWordFoundInAList(t *testing.T) {
	ix := indexOf([]capability.Definition{
		httpOp("github", "repos_list_commits", "List commits", "Signature verification object: the response includes a verification object that describes the result of verifying the commit's signature.", "GET", "https://api.github.com/repos/{owner}/{repo}/commits"),
		httpOp("github", "repos_get_commit", "Get a commit", "Returns the contents of a single commit reference.", "GET", "https://api.github.com/repos/{owner}/{repo}/commits/{ref}"),
		httpOp("github", "repos_list_activities", "List repository activities", "Lists a detailed history of changes to a repository, such as pushes, merges, force pushes, and branch changes, and associates these changes with commits and users.", "GET", "https://api.github.com/repos/{owner}/{repo}/activity"),
		httpOp("github", "issues_list_for_repo", "List repository issues", "List issues in a repository.", "GET", "https://api.github.com/repos/{owner}/{repo}/issues"),
	})
	wantCoverage(t, ix, "show the commit history", map[string]string{
		"github/repos_list_commits":    "all found",
		"github/repos_list_activities": "all found",
		"github/repos_get_commit":      "×0.70: has only some of the words asked for",
	})
}

// TestNamedAPINotRankedDown checks that a query naming an API does not rank
// that API's operations down for its other words being likelier in another
// API: "the columns of a trello board" asks for Trello, whose lists are its
// columns, though Jira says "columns".
func TestNamedAPINotRankedDown(t *testing.T) {
	var defs []capability.Definition
	for _, n := range []string{"get_columns", "get_board_columns", "update_column", "delete_column"} {
		defs = append(defs, capability.Definition{Name: n, Domain: "jira", Title: strings.ReplaceAll(n, "_", " "), Description: "Columns of a board.",
			Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: "https://jira.example/rest/agile/1.0/board/{id}/columns"}}})
	}
	defs = append(defs,
		capability.Definition{Name: "get_boards_lists_by_id_board", Domain: "trello", Title: "getBoardsListsByIdBoard()",
			Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: "https://api.trello.com/1/boards/{idBoard}/lists"}}},
		capability.Definition{Name: "get_cards_by_id_card", Domain: "trello", Title: "getCardsByIdCard()",
			Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: "https://api.trello.com/1/cards/{idCard}"}}},
	)
	ix := indexOf(defs)
	res := wantFirst(t, ix, "get the columns of a trello board", "trello/get_boards_lists_by_id_board")
	for _, h := range res.Hits {
		if h.ID == "trello/get_boards_lists_by_id_board" && slices.ContainsFunc(h.Why, func(w string) bool { return strings.Contains(w, "likelier in another API") }) {
			t.Errorf("%s is ranked down for its API, which the query names: %s", h.ID, strings.Join(h.Why, "; "))
		}
	}
}

// TestOppositeActionRankedDown checks that an operation doing the opposite
// of what the query asks (a read for a request to write, a write for a
// request to read) ranks below one doing it: "start a new branch from a
// commit sha" creates a reference, though listing the branches of a commit
// has more of its words.
func TestOppositeActionRankedDown(t *testing.T) {
	ix := indexOf([]capability.Definition{
		httpOp("github", "repos_list_branches_for_head_commit", "List branches for HEAD commit", "Returns all branches where the given commit SHA is the HEAD, or latest commit for the branch.", "GET", "https://api.github.com/repos/{owner}/{repo}/commits/{commit_sha}/branches-where-head"),
		httpOp("github", "git_create_ref", "Create a reference", "Creates a reference for your repository, such as a new branch pointing at a commit SHA.", "POST", "https://api.github.com/repos/{owner}/{repo}/git/refs"),
		httpOp("github", "repos_get_branch", "Get a branch", "Gets a branch of a repository.", "GET", "https://api.github.com/repos/{owner}/{repo}/branches/{branch}"),
	})
	wantFirst(t, ix, "start a new branch from a commit sha", "github/git_create_ref")
	res := ix.Search(Query{Text: "start a new branch from a commit sha", Explain: true})
	for _, h := range res.Hits {
		opposite := slices.ContainsFunc(h.Why, func(w string) bool { return strings.Contains(w, "does the opposite of what was asked") })
		if want := h.ID != "github/git_create_ref"; opposite != want {
			t.Errorf("%s: ranked down as doing the opposite: %v, want %v (%s)", h.ID, opposite, want, strings.Join(h.Why, "; "))
		}
	}
}

// httpOp is an operation of an HTTP API as an import makes it: a name,
// title and description, and its method and URL.
func httpOp(domain, name, title, description, method, url string) capability.Definition {
	return capability.Definition{Name: name, Domain: domain, Title: title, Description: description,
		Bindings: capability.Bindings{HTTP: &capability.HTTPBinding{Method: method, URL: url}}}
}
