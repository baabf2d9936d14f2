package relevance

import (
	"slices"
	"testing"

	"github.com/caphub/caphub/capability"
)

// FuzzParseQueries: any query file is refused with an error or gives
// queries that keep the rules the scoring relies on.
func FuzzParseQueries(f *testing.F) {
	// Small seeds: the fuzzer minimises each new input, which takes long on
	// a whole query file.
	f.Add([]byte("# comment\n- {q: \"who am I\", want: [\"ossa:github/users_get_authenticated\"], api: github}\n" +
		"- {q: \"echo\", want: [\"mcp:everything/echo\", \"mcp:everything/get-sum\"], api: everything}\n"))
	f.Add([]byte(`- {q: "send a message", want: ["ossa:slack/chat_post_message"], api: slack}`))
	f.Add([]byte(`- {q: "x", want: ["ossa:slack/a@1.0"], api: slack}`))
	f.Add([]byte(`- {q: "x", want: [], api: nowhere, extra: 1}`))
	f.Add([]byte("a: &a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		qs, err := parseQueries("fuzz.yaml", data)
		if err != nil {
			return
		}
		if len(qs) == 0 || len(qs) > maxQueries {
			t.Fatalf("%d queries accepted", len(qs))
		}
		for _, q := range qs {
			if q.Q == "" || len(q.Want) == 0 || !slices.Contains(apis(), q.API) {
				t.Fatalf("accepted %+v", q)
			}
			for _, w := range q.Want {
				u, err := capability.ParseURI(w)
				if err != nil || u.HasVersion || u.Domain != q.API {
					t.Fatalf("accepted want %q of %+v", w, q)
				}
			}
		}
	})
}
