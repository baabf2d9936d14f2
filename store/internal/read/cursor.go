package read

import "github.com/caphub/caphub/registry"

// Paging, as both stores do it (the cursor itself is registry.Cursor).

// DottedAncestors returns v and every dotted prefix of it: "a.b.c" gives
// "a.b.c", "a", "a.b".
func DottedAncestors(v string) []string {
	out := []string{v}
	for i := 0; i < len(v); i++ {
		if v[i] == '.' && i > 0 {
			out = append(out, v[:i])
		}
	}
	return out
}

// EndSearchPage cuts a search page read with one row more than limit
// (from offset) to limit, and sets its NextCursor when there is more.
func EndSearchPage(page *registry.Page, limit int, fp string, offset int) {
	if limit > 0 && len(page.Items) > limit {
		page.Items = page.Items[:limit]
		page.NextCursor = registry.Cursor{Kind: "search", Query: fp, Offset: offset + limit}.Encode()
	}
}
