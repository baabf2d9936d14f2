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

// NextListCursor is the NextCursor of a list page whose last item has key
// last and version key versionKey (the keyset of the stable order).
func NextListCursor(fp string, last registry.Key, versionKey string) string {
	return registry.Cursor{Kind: "list", Query: fp, After: []string{last.Scheme, last.Domain, last.Name, versionKey, last.Version}}.Encode()
}

// DecodePage decodes the definitions of a raw list page.
func DecodePage(raw registry.RawPage) (registry.Page, error) {
	page := registry.Page{Total: raw.Total, NextCursor: raw.NextCursor, Items: make([]registry.Record, len(raw.Items))}
	for i, r := range raw.Items {
		rec, err := r.Decode()
		if err != nil {
			return registry.Page{}, err
		}
		page.Items[i] = rec
	}
	return page, nil
}
