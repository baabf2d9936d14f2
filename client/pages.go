package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// pageSize is the page the client asks for: the maximum every caphub
// server accepts (registry.MaxPageSize), so that a page of List or Search
// is one request and reading a big list takes few.
const pageSize = registry.MaxPageSize

// pagesOf reads a list endpoint from q's cursor on, following next_cursor,
// until it has limit items (0: every item). A limit above pageSize is read in several pages. It returns the
// items, the list's total (registry.NotCounted when the server did not
// count it) and the cursor after the last item read ("" at the end of the
// list). A ranked search also fills rank, when given: the
// first page's unknown words and action, and every page's hits.
func pagesOf[T any](ctx context.Context, c *Client, path string, q url.Values, limit int, rank *registry.Ranking) (items []T, total int, next string, err error) {
	items, total = []T{}, registry.NotCounted
	for first := true; ; first = false {
		size := pageSize
		if limit > 0 && limit-len(items) < size {
			size = limit - len(items)
		}
		q.Set("limit", strconv.Itoa(size))
		var a struct {
			Items      []T    `json:"items"`
			Total      *int   `json:"total"`
			NextCursor string `json:"next_cursor"`
			registry.Ranking
		}
		_, data, _, err := c.send(ctx, http.MethodGet, path+"?"+q.Encode(), nil, nil)
		if err != nil {
			return nil, 0, "", err
		}
		if err := json.Unmarshal(data, &a); err != nil {
			return nil, 0, "", fmt.Errorf("decode answer of GET %s: %w", path, err)
		}
		if rank != nil {
			if len(items) == 0 {
				rank.Unknown, rank.Action = a.Unknown, a.Action
			}
			rank.Hits = append(rank.Hits, a.Hits...)
		}
		items = append(items, a.Items...)
		if a.Total != nil && first {
			total = *a.Total
		}
		next = a.NextCursor
		if next == "" || len(a.Items) == 0 || limit > 0 && len(items) >= limit {
			return items, total, next, nil
		}
		if next == q.Get("cursor") {
			return nil, 0, "", fmt.Errorf("GET %s: the server returned the cursor %q twice", path, next)
		}
		q.Set("cursor", next)
	}
}

// listPages reads capability definitions from a list or search endpoint.
func (c *Client) listPages(ctx context.Context, path string, q url.Values, limit int, rank *registry.Ranking) (listAnswer, error) {
	items, total, next, err := pagesOf[capability.Definition](ctx, c, path, q, limit, rank)
	return listAnswer{Items: items, Total: total, NextCursor: next}, err
}
