package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// peer is an HTTP registry already running (-peer-url), e.g. the official
// MCP Registry's in-memory build started by the operator: the harness
// never builds or starts it. Its entries are read from its list
// (-peer-list, following the cursor) and GET by -peer-get.
type peer struct {
	base  string
	paths []string // GET paths of its entries
}

// maxPeerPage bounds one list answer read from the peer.
const maxPeerPage = 64 << 20

// newPeer lists the peer's entries, up to -peer-ids of them.
func newPeer(cfg *config) (*peer, error) {
	p := &peer{base: strings.TrimRight(cfg.peerURL, "/")}
	hc := &http.Client{Timeout: 30 * time.Second}
	next := cfg.peerList
	for pages := 0; next != "" && len(p.paths) < cfg.peerIDs && pages < 10000; pages++ {
		entries, cursor, err := peerPage(hc, p.base+next)
		if err != nil {
			return nil, fmt.Errorf("-peer-url %s: list %s: %w", cfg.peerURL, next, err)
		}
		for _, e := range entries {
			if path, ok := expand(cfg.peerGet, e); ok && len(p.paths) < cfg.peerIDs {
				p.paths = append(p.paths, path)
			}
		}
		next = ""
		if cursor != "" && len(entries) > 0 {
			next = withQuery(cfg.peerList, "cursor", cursor)
		}
	}
	if len(p.paths) == 0 {
		return nil, fmt.Errorf("-peer-url %s: its list %s gave no entry whose fields fill -peer-get %q: check both paths (the list's items are read from \"servers\" or \"items\")", cfg.peerURL, cfg.peerList, cfg.peerGet)
	}
	cfg.progress.Printf("peer %s: %d entries to GET, e.g. %s", p.base, len(p.paths), p.paths[0])
	return p, nil
}

// peerPage reads one list answer: its entries' string fields and the
// cursor of the next page ("" at the end).
func peerPage(hc *http.Client, u string) (entries []map[string]string, cursor string, err error) {
	resp, err := hc.Get(u)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPeerPage))
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("%s: %.200s", resp.Status, body)
	}
	var page struct {
		Servers    []map[string]any `json:"servers"`
		Items      []map[string]any `json:"items"`
		NextCursor string           `json:"next_cursor"`
		Metadata   struct {
			NextCursor  string `json:"next_cursor"`
			NextCursor2 string `json:"nextCursor"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, "", fmt.Errorf("not a JSON list answer: %w", err)
	}
	for _, item := range append(page.Servers, page.Items...) {
		entries = append(entries, entryFields(item))
	}
	return entries, firstOf(page.Metadata.NextCursor, page.Metadata.NextCursor2, page.NextCursor), nil
}

// entryFields are the string fields of a listed entry, plus those of a
// nested "server" (the 2025-09 API's shape) and the official metadata's
// ids, without overriding the entry's own.
func entryFields(item map[string]any) map[string]string {
	out := map[string]string{}
	addStrings(out, item)
	if s, ok := item["server"].(map[string]any); ok {
		addStrings(out, s)
	}
	if vd, ok := item["version_detail"].(map[string]any); ok {
		addStrings(out, vd)
	}
	for _, meta := range []any{item["_meta"], nested(item, "server", "_meta")} {
		m, _ := meta.(map[string]any)
		if off, ok := m["io.modelcontextprotocol.registry/official"].(map[string]any); ok {
			addStrings(out, off)
			if id, ok := off["serverId"].(string); ok && out["id"] == "" {
				out["id"] = id
			}
		}
	}
	return out
}

// addStrings copies m's string values into out where out has none.
func addStrings(out map[string]string, m map[string]any) {
	for k, v := range m {
		if s, ok := v.(string); ok && out[k] == "" {
			out[k] = s
		}
	}
}

// nested is m[a][b], nil when absent.
func nested(m map[string]any, a, b string) any {
	if x, ok := m[a].(map[string]any); ok {
		return x[b]
	}
	return nil
}

func firstOf(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

// withQuery sets the query parameter k of path to v.
func withQuery(path, k, v string) string {
	u, err := url.Parse(path)
	if err != nil {
		return path
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}
