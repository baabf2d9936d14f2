package registry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

func searchDef(domain, name, version, title string) capability.Definition {
	v := capability.MustParseVersion(version)
	return capability.Definition{
		URI: "ossa:" + domain + "/" + name + "@" + v.Short(), Name: name, Domain: domain, Version: version, Title: title, Description: title,
		Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: name}},
	}
}

func uris(p registry.Page) []string {
	var out []string
	for _, r := range p.Items {
		out = append(out, r.Key.String())
	}
	return out
}

// The index answers searches: any word matches, the latest version only
// unless all versions are asked for, filters as List applies them, pages
// with a cursor of its own; another store's writes reach it through the
// notifications, this Service's own at once.
func TestSearchIndexFollowsTheStore(t *testing.T) {
	ctx := context.Background()
	stA, stB := twoStores(t)
	other := registry.NewService(stB)
	defer other.Close()
	for _, d := range []capability.Definition{
		searchDef("github", "issues_create", "1.0.0", "Create an issue"),
		searchDef("github", "issues_create", "1.1.0", "Create an issue"),
		searchDef("github", "pulls_list", "1.0.0", "List pull requests"),
		searchDef("slack", "chat_post_message", "1.0.0", "Sends a message to a channel"),
	} {
		if _, err := other.Register(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	svc := registry.NewService(stA, registry.WithSearchIndex(true), registry.WithCache())
	defer svc.Close()

	page, err := svc.Search(ctx, registry.SearchQuery{Text: "open a new bug report", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	// "report" is no capability's word: its related words may find others,
	// ranked below the issue.
	if got := uris(page); len(got) == 0 || got[0] != "ossa:github/issues_create@1.1.0" || page.Action != "crud.create" || len(page.Hits) != len(got) || len(page.Hits[0].Why) == 0 || page.Hits[0].Score <= page.Hits[len(got)-1].Score && len(got) > 1 {
		t.Fatalf("a phrase: %q, action %q, hits %+v", got, page.Action, page.Hits)
	}
	all, err := svc.Search(ctx, registry.SearchQuery{Text: "create issue", Filter: registry.ListFilter{AllVersions: true}})
	if err != nil || len(all.Items) != 2 {
		t.Fatalf("all versions: %q %v", uris(all), err)
	}
	slack, err := svc.Search(ctx, registry.SearchQuery{Text: "create issue message", Filter: registry.ListFilter{Domain: "slack"}})
	if err != nil || len(slack.Items) != 1 || slack.Items[0].Key.Domain != "slack" {
		t.Fatalf("domain filter: %q %v", uris(slack), err)
	}

	// Pages: the cursor continues the same search, and only it.
	q := registry.SearchQuery{Text: "issue pull message", Filter: registry.ListFilter{Limit: 2}}
	first, err := svc.Search(ctx, q)
	if err != nil || len(first.Items) != 2 || first.Total != 3 || first.NextCursor == "" {
		t.Fatalf("first page: %q total %d cursor %q %v", uris(first), first.Total, first.NextCursor, err)
	}
	q.Filter.Cursor = first.NextCursor
	second, err := svc.Search(ctx, q)
	if err != nil || len(second.Items) != 1 || second.NextCursor != "" {
		t.Fatalf("second page: %q %v", uris(second), err)
	}
	q.Text = "something else"
	if _, err := svc.Search(ctx, q); !errors.Is(err, registry.ErrInvalidCursor) {
		t.Errorf("a cursor of another search: %v", err)
	}

	// Unknown words are said, with the nearest known ones.
	typo, err := svc.Search(ctx, registry.SearchQuery{Text: "mesage"})
	if err != nil || len(typo.Unknown) != 1 || len(typo.Unknown[0].DidYouMean) == 0 || len(typo.Items) != 1 {
		t.Errorf("a misspelt word: %+v %q %v", typo.Unknown, uris(typo), err)
	}

	// Its own write: found at once.
	if _, err := svc.Register(ctx, searchDef("github", "repos_create_fork", "1.0.0", "Create a fork")); err != nil {
		t.Fatal(err)
	}
	if p, err := svc.Search(ctx, registry.SearchQuery{Text: "fork a repository"}); err != nil || len(p.Items) == 0 || p.Items[0].Key.Name != "repos_create_fork" {
		t.Errorf("own write: %q %v", uris(p), err)
	}
	// Another store's write, and a newer version: found once notified.
	if _, err := other.Register(ctx, searchDef("github", "pulls_list", "2.0.0", "List pull requests of a repository")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, err := svc.Search(ctx, registry.SearchQuery{Text: "list pull requests"})
		if err != nil {
			t.Fatal(err)
		}
		if got := uris(p); len(got) > 0 && got[0] == "ossa:github/pulls_list@2.0.0" && len(got) == 1 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the other store's new version never reached the index: %q", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A batch too big to index before the write returns (an import of GitHub's
// API: 1,223 capabilities) is found whole by the next search on the same
// Service, as a small write is: the search waits for the index to take it
// in. It found a part of it (a loaded CI machine paged 370 of 450).
func TestSearchIndexSeesItsOwnBigBatch(t *testing.T) {
	ctx := context.Background()
	st, _ := twoStores(t)
	svc := registry.NewService(st, registry.WithSearchIndex(true))
	defer svc.Close()
	if _, err := svc.Search(ctx, registry.SearchQuery{Text: "anything"}); err != nil {
		t.Fatal(err) // waits for the first build
	}
	for round, n := range []int{300, 500} {
		defs := make([]capability.Definition, n)
		for i := range defs {
			defs[i] = searchDef("bulk", fmt.Sprintf("r%d_cap_%04d", round, i), "1.0.0", fmt.Sprintf("Paged capability %d of round %d", i, round))
		}
		if _, err := svc.RegisterBatch(ctx, defs); err != nil {
			t.Fatal(err)
		}
		p, err := svc.Search(ctx, registry.SearchQuery{Text: fmt.Sprintf("paged round r%d", round), Filter: registry.ListFilter{Limit: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if p.Total < n {
			t.Errorf("round %d: a search right after a batch of %d counts %d hits", round, n, p.Total)
		}
	}
}
