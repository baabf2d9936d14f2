package mcpregistry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Defaults of a Fetch.
const (
	DefaultMaxPages     = 50
	DefaultFetchTimeout = 30 * time.Second
)

// FetchOptions bound a Fetch.
type FetchOptions struct {
	// MaxPages bounds the pages followed by nextCursor (DefaultMaxPages
	// when 0); more pages are an error saying how to get them.
	MaxPages int
	// Timeout bounds each request (DefaultFetchTimeout when 0).
	Timeout time.Duration
	// Header is sent with each request (an Authorization, say).
	Header http.Header
	// Client makes the requests (http.DefaultClient when nil).
	Client *http.Client
}

// Fetched is what a Fetch read: the entries of every page, the invalid
// ones, and the pages read.
type Fetched struct {
	Entries []Entry
	Invalid []*InvalidError
	Pages   int
}

// Fetch reads a server.json or a server list from a file, or from an
// http(s) URL: a registry's list (…/v0/servers, …/v0.1/servers; a bare
// registry address gets /v0.1/servers), whose pages it follows by
// nextCursor, each page within opts.Timeout and MaxListBytes, at most
// opts.MaxPages of them; or one server.json. A list request without a
// version filter asks for the latest versions (version=latest).
func Fetch(ctx context.Context, src string, opts FetchOptions) (*Fetched, error) {
	if !isHTTPURL(src) {
		data, err := readFile(src)
		if err != nil {
			return nil, err
		}
		doc, err := Read(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		return &Fetched{Entries: doc.Entries, Invalid: doc.Invalid, Pages: 1}, nil
	}
	u, err := url.Parse(src)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", src)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v0.1/servers"
	}
	if strings.HasSuffix(u.Path, "/servers") {
		if q := u.Query(); q.Get("version") == "" {
			q.Set("version", "latest")
			u.RawQuery = q.Encode()
		}
	}
	maxPages := opts.MaxPages
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	out := &Fetched{}
	seen := map[string]bool{}
	for {
		doc, err := fetchPage(ctx, u.String(), opts)
		if err != nil {
			return nil, err
		}
		out.Pages++
		out.Entries = append(out.Entries, doc.Entries...)
		out.Invalid = append(out.Invalid, doc.Invalid...)
		if !doc.List || doc.NextCursor == "" {
			return out, nil
		}
		if seen[doc.NextCursor] {
			return nil, fmt.Errorf("%s: the registry gave the cursor %q twice: it pages in a loop", src, truncate(doc.NextCursor, 40))
		}
		seen[doc.NextCursor] = true
		if out.Pages >= maxPages {
			return nil, fmt.Errorf("%s: more than %d pages (%d servers so far): narrow the list (?search=…) or allow more pages (--max-pages)", src, maxPages, len(out.Entries))
		}
		q := u.Query()
		q.Set("cursor", doc.NextCursor)
		u.RawQuery = q.Encode()
	}
}

// fetchPage GETs one page or document.
func fetchPage(ctx context.Context, src string, opts FetchOptions) (*Document, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultFetchTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", src, err)
	}
	for k, v := range opts.Header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	client := opts.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("fetch %s: no answer within %s (raise --fetch-timeout)", src, timeout)
		}
		return nil, fmt.Errorf("fetch %s: %w (check the URL and your network)", src, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("fetch %s: the registry answered %s: %s", src, resp.Status, strings.TrimSpace(string(body)))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxListBytes+1))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("fetch %s: not read within %s (raise --fetch-timeout)", src, timeout)
		}
		return nil, fmt.Errorf("fetch %s: %w", src, err)
	}
	if len(data) > MaxListBytes {
		return nil, fmt.Errorf("fetch %s: the answer is larger than %d MiB: ask for fewer servers per page (limit=…)", src, MaxListBytes>>20)
	}
	doc, err := Read(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	return doc, nil
}

// readFile reads a file within MaxListBytes.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory: give a server.json or a saved page of a registry's server list", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxListBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxListBytes {
		return nil, fmt.Errorf("%s is larger than %d MiB, the limit of a registry document", path, MaxListBytes>>20)
	}
	return data, nil
}

func isHTTPURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// Latest keeps one entry per server name: the one the registry marks
// latest, else the last one listed. Entries the registry marks deleted are
// dropped; dropped names each one left out and why.
func Latest(entries []Entry) (kept []Entry, dropped []string) {
	index := map[string]int{}
	for _, e := range entries {
		if e.Official != nil && e.Official.Status == "deleted" {
			dropped = append(dropped, fmt.Sprintf("%s %s: the registry marks it deleted", e.Server.Name, e.Server.Version))
			continue
		}
		i, seen := index[e.Server.Name]
		if !seen {
			index[e.Server.Name] = len(kept)
			kept = append(kept, e)
			continue
		}
		prev := kept[i]
		if prev.Official != nil && prev.Official.IsLatest && (e.Official == nil || !e.Official.IsLatest) {
			dropped = append(dropped, fmt.Sprintf("%s %s: not the latest version (%s is)", e.Server.Name, e.Server.Version, prev.Server.Version))
			continue
		}
		dropped = append(dropped, fmt.Sprintf("%s %s: not the latest version (%s is)", prev.Server.Name, prev.Server.Version, e.Server.Version))
		kept[i] = e
	}
	return kept, dropped
}
