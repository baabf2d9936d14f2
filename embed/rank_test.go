package embed_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/embed"
	"github.com/caphub/caphub/embed/embedtest"
	"github.com/caphub/caphub/registry"
)

// definition returns a valid definition of ossa:domain/name at version.
func definition(domain, name, version, title, description string, keywords ...string) capability.Definition {
	v, err := capability.ParseVersion(version)
	if err != nil {
		panic(err)
	}
	return capability.Definition{
		URI: "ossa:" + domain + "/" + name + "@" + v.Short(), Name: name, Domain: domain, Version: version,
		Title: title, Description: description, Keywords: keywords,
		Input:    capability.Schema{"type": "object"},
		Output:   capability.Schema{"type": "object"},
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: name}},
	}
}

// catalog is a few capabilities that share no words with the queries of
// TestRankSemantic, only concepts.
var catalog = []capability.Definition{
	definition("messaging", "send_email", "1.0.0", "Send an email", "Sends an email to a recipient through SMTP.", "smtp"),
	definition("weather", "get_forecast", "1.0.0", "Weather forecast", "Returns the weather forecast of a city for the coming days."),
	definition("images", "resize_image", "1.0.0", "Resize image", "Scales an image to the given width and height."),
	definition("files", "delete_file", "1.0.0", "Delete file", "Deletes a file from the disk."),
	definition("payments", "create_invoice", "1.0.0", "Create invoice", "Bills a customer for an order."),
	definition("calendar", "schedule_meeting", "1.0.0", "Schedule meeting", "Books a meeting in a calendar."),
}

// newRanker returns a ranker of srv's vectors holding defs.
func newRanker(t *testing.T, srv *embedtest.Server, defs []capability.Definition) *embed.Ranker {
	t.Helper()
	c := newClient(t, srv, embed.ClientOptions{})
	r := embed.NewRanker(c, embed.RankerOptions{})
	for i := range defs {
		vs, err := c.Embed(context.Background(), []string{embed.Text(&defs[i])})
		if err != nil {
			t.Fatal(err)
		}
		k, err := registry.KeyOf(&defs[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Add(embed.Vector{Key: k, Vector: vs[0]}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// A query ranks first the capability that means what it asks, though they
// have no word in common.
func TestRankSemantic(t *testing.T) {
	srv := embedtest.New(t, embedtest.Options{Dimensions: 256})
	r := newRanker(t, srv, catalog)
	tests := map[string]string{
		"mail my colleague a note":        "messaging/send_email",
		"will it rain this weekend":       "weather/get_forecast",
		"shrink a photo":                  "images/resize_image",
		"erase a document":                "files/delete_file",
		"charge a person for an purchase": "payments/create_invoice",
		"book an appointment":             "calendar/schedule_meeting",
	}
	for query, want := range tests {
		got, err := r.Rank(context.Background(), query, 3)
		if err != nil {
			t.Fatalf("Rank(%q): %v", query, err)
		}
		if len(got) != 3 {
			t.Fatalf("Rank(%q, 3) = %d results", query, len(got))
		}
		if first := got[0].Key.Domain + "/" + got[0].Key.Name; first != want {
			t.Errorf("Rank(%q) first = %s (%.3f), want %s; all %v", query, first, got[0].Similarity, want, got)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Similarity > got[i-1].Similarity {
				t.Errorf("Rank(%q) is not in decreasing similarity: %v", query, got)
			}
		}
		if got[0].Similarity <= 0 || got[0].Similarity > 1.0001 {
			t.Errorf("Rank(%q) similarity %v outside (0, 1]", query, got[0].Similarity)
		}
	}
}

func TestRankVersions(t *testing.T) {
	srv := embedtest.New(t, embedtest.Options{Dimensions: 256})
	old := definition("misc", "tool", "1.0.0", "Weather forecast", "Returns the weather forecast.")
	cur := definition("misc", "tool", "2.0.0", "Resize image", "Scales an image.")
	pre := definition("misc", "tool", "2.0.0-rc.1", "Weather forecast", "Returns the weather forecast.")
	r := newRanker(t, srv, append([]capability.Definition{cur, old, pre}, catalog...))
	ctx := context.Background()

	// Only the highest version of a capability is ranked, as in List.
	got, err := r.Rank(ctx, "weather forecast", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got {
		if s.Key.Name == "tool" && s.Key.Version != "2.0.0" {
			t.Errorf("Rank ranked %s; want only the highest version, 2.0.0", s.Key)
		}
	}
	if len(got) != len(catalog)+1 {
		t.Errorf("Rank = %d results, want one per capability (%d)", len(got), len(catalog)+1)
	}

	got, err = r.RankWith(ctx, "weather forecast", 3, embed.RankOptions{AllVersions: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Key.Name != "get_forecast" || got[1].Key.Version != "1.0.0" || got[2].Key.Version != "2.0.0-rc.1" {
		t.Errorf("RankWith(AllVersions) = %v; want get_forecast, then the equally near tool 1.0.0 and 2.0.0-rc.1 in version order", got)
	}

	got, err = r.RankWith(ctx, "weather forecast", 2, embed.RankOptions{Keep: func(k registry.Key) bool { return k.Domain != "weather" }})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got {
		if s.Key.Domain == "weather" {
			t.Errorf("RankWith(Keep) kept %s", s.Key)
		}
	}
	if len(got) != 2 {
		t.Errorf("RankWith(Keep, 2) = %v", got)
	}

	forecast, _ := registry.KeyOf(&catalog[1])
	missing := registry.Key{Scheme: "ossa", Domain: "x", Name: "y", Version: "1.0.0"}
	scores, err := r.Scores(ctx, "weather forecast", []registry.Key{forecast, missing})
	if err != nil || len(scores) != 1 || scores[forecast] < 0.5 {
		t.Errorf("Scores = %v, %v; want the forecast's alone, high", scores, err)
	}
}

func TestRankQueries(t *testing.T) {
	srv := embedtest.New(t, embedtest.Options{Dimensions: 64})
	ctx := context.Background()
	c := newClient(t, srv, embed.ClientOptions{})
	empty := embed.NewRanker(c, embed.RankerOptions{})
	if got, err := empty.Rank(ctx, "anything", 5); err != nil || got != nil || srv.Requests() != 0 {
		t.Errorf("an empty ranker: %v, %v after %d requests; want nothing, no request", got, err, srv.Requests())
	}

	r := newRanker(t, srv, catalog)
	base := srv.Requests()
	for range 3 {
		if _, err := r.Rank(ctx, "  send   an email ", 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Rank(ctx, "send an email", 0); err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests() - base; n != 1 {
		t.Errorf("the same query four times (spaced differently): %d requests, want 1 (cached)", n)
	}
	if got, err := r.Rank(ctx, " \t", 5); err != nil || got != nil || srv.Requests()-base != 1 {
		t.Errorf("a blank query: %v, %v; want nothing without a request", got, err)
	}
	if got, _ := r.Rank(ctx, "send an email", 0); len(got) != embed.DefaultLimit && len(got) != len(catalog) {
		t.Errorf("limit 0 gave %d results", len(got))
	}

	srv.Down(http.StatusServiceUnavailable)
	if _, err := r.Rank(ctx, "a new query", 5); err == nil || !strings.Contains(err.Error(), "embed the query") || !strings.Contains(err.Error(), "HTTP 503") {
		t.Errorf("provider down: err = %v", err)
	}

	// A vector of another length than those held is refused, and so is a
	// query's.
	if err := r.Add(embed.Vector{Key: registry.Key{Scheme: "ossa", Domain: "d", Name: "n", Version: "1.0.0"}, Vector: make([]float32, 32)}); err == nil {
		t.Error("a 32-long vector was added to 64-long ones")
	}
	short := embedtest.New(t, embedtest.Options{Dimensions: 32})
	r2 := embed.NewRanker(newClient(t, short, embed.ClientOptions{Model: "embedtest"}), embed.RankerOptions{})
	if err := r2.Add(embed.Vector{Key: registry.Key{Scheme: "ossa", Domain: "d", Name: "n", Version: "1.0.0"}, Vector: make([]float32, 64)}); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Rank(ctx, "hello", 5); err == nil || !strings.Contains(err.Error(), "32 dimensions") {
		t.Errorf("a 32-long query against 64-long vectors: err = %v", err)
	}
}
