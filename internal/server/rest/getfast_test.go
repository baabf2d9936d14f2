package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/internal/metrics"
	"github.com/caphub/caphub/internal/server/guard"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

func fastDef(version string) capability.Definition {
	v := capability.MustParseVersion(version)
	return capability.Definition{
		URI: "ossa:fast/thing@" + v.Short(), Name: "thing", Domain: "fast", Version: version, Description: "a thing served from memory",
		Stability: capability.StabilityStable,
		Input:     capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "thing"}},
	}
}

// cachedServer is a REST server over a cached registry, and a second,
// uncached registry on the same SQLite database, whose writes reach the
// first one's cache only through the store's change notifications.
func cachedServer(t testing.TB) (srv *Server, svc, other *registry.Service) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "caphub.db")
	open := func(opts ...registry.Option) *registry.Service {
		st, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		s := registry.NewService(st, opts...)
		t.Cleanup(func() { s.Close() })
		return s
	}
	svc = open(registry.WithCache())
	other = open()
	if _, err := other.Register(t.Context(), fastDef("1.0.0")); err != nil {
		t.Fatal(err)
	}
	return New(svc, nil), svc, other
}

func get(h http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// A GET of one version is answered from the cache once read, with the
// same bytes and headers as from the store; If-None-Match with its ETag
// answers 304; a deprecation made through another Service reaches the
// cached answer once notified.
func TestGetVersionFromCache(t *testing.T) {
	srv, svc, other := cachedServer(t)
	const path = "/registry/capabilities/fast/thing@1.0.0"
	waitFor(t, "the cache's watch", func() bool {
		get(srv, path)
		_, ok := svc.CachedRaw("ossa", "fast", "thing", "1.0.0")
		return ok
	})
	stored, err := svc.Store().GetRaw(t.Context(), registry.Key{Scheme: "ossa", Domain: "fast", Name: "thing", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	a := get(srv, path)
	if a.Code != http.StatusOK || !bytes.Equal(a.Body.Bytes(), stored.Definition) {
		t.Fatalf("cached GET = %d %s; want 200 and the stored JSON %s", a.Code, a.Body, stored.Definition)
	}
	etag := a.Header().Get("ETag")
	if etag != registry.NewCachedVersion(stored).ETag || a.Header().Get(registry.DigestHeader) != stored.Digest || a.Header().Get("Content-Type") != "application/json" {
		t.Errorf("cached GET headers %v; want the ETag of the JSON, digest %s and JSON", a.Header(), stored.Digest)
	}
	for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
		if a := get(srv, path, "If-None-Match", inm); a.Code != http.StatusNotModified || a.Body.Len() != 0 || a.Header().Get("ETag") != etag {
			t.Errorf("If-None-Match %s: %d %q; want 304, no body, the ETag", inm, a.Code, a.Body)
		}
	}
	if a := get(srv, path, "If-None-Match", `"other"`); a.Code != http.StatusOK {
		t.Errorf("If-None-Match of another ETag: %d; want 200", a.Code)
	}
	// Another scheme is not the cached version.
	if a := get(srv, path+"?scheme=mcp"); a.Code != http.StatusNotFound {
		t.Errorf("GET ?scheme=mcp = %d %s; want 404", a.Code, a.Body)
	}

	if _, err := other.Deprecate(t.Context(), "ossa", "fast", "thing", "1.0.0", registry.DeprecateRequest{MigrationGuide: "stop"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deprecation", func() bool {
		return strings.Contains(get(srv, path).Body.String(), `"deprecated"`)
	})
	if a := get(srv, path, "If-None-Match", etag); a.Code != http.StatusOK || a.Header().Get("ETag") == etag {
		t.Errorf("after the deprecation, If-None-Match of the old ETag: %d, ETag %s; want 200 and a new ETag", a.Code, a.Header().Get("ETag"))
	}
	// MAJOR.MINOR answers the highest version of it, the same bytes and
	// ETag as the full version.
	b := get(srv, "/registry/capabilities/fast/thing@1.0")
	full := get(srv, path)
	if b.Code != http.StatusOK || !bytes.Equal(b.Body.Bytes(), full.Body.Bytes()) || b.Header().Get("ETag") != full.Header().Get("ETag") {
		t.Fatalf("GET @1.0 = %d %s; want the answer of @1.0.0: %s", b.Code, b.Body, full.Body)
	}
	if a := get(srv, "/registry/capabilities/fast/thing@1.0", "If-None-Match", b.Header().Get("ETag")); a.Code != http.StatusNotModified {
		t.Errorf("GET @1.0 with If-None-Match: %d; want 304", a.Code)
	}
}

// The cache never bypasses authentication: the token middleware wraps
// the REST server, so a cached version still needs a token with the read
// scope.
func TestCachedGetNeedsToken(t *testing.T) {
	srv, svc, _ := cachedServer(t)
	tokens := auth.New(svc.Store(), nil)
	h := tokens.Middleware(srv.ScopeOf, srv)
	const path = "/registry/capabilities/fast/thing@1.0.0"
	_, readSecret, err := tokens.Create(t.Context(), "reader", []auth.Scope{auth.ScopeRead}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, invokeSecret, err := tokens.Create(t.Context(), "invoker", []auth.Scope{auth.ScopeInvoke}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cache's watch", func() bool {
		get(h, path, "Authorization", "Bearer "+readSecret)
		_, ok := svc.CachedRaw("ossa", "fast", "thing", "1.0.0")
		return ok
	})
	if a := get(h, path); a.Code != http.StatusUnauthorized {
		t.Errorf("cached GET without a token: %d; want 401", a.Code)
	}
	if a := get(h, path, "Authorization", "Bearer "+invokeSecret); a.Code != http.StatusForbidden {
		t.Errorf("cached GET with a token without the read scope: %d; want 403", a.Code)
	}
	if a := get(h, path, "Authorization", "Bearer "+readSecret); a.Code != http.StatusOK {
		t.Errorf("cached GET with a read token: %d; want 200", a.Code)
	}
}

// waitFor waits until ok holds, at most 30 s; problem, when given, is
// what ok found last, for the failure's message.
func waitFor(t *testing.T, what string, ok func() bool, problem ...*string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			last := ""
			if len(problem) > 0 {
				last = ": " + *problem[0]
			}
			t.Fatalf("%s: not seen within 30s%s", what, last)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestNoneMatch(t *testing.T) {
	const etag = `"abc"`
	for _, tt := range []struct {
		header string
		want   bool
	}{
		{"", false}, {`"abc"`, true}, {`W/"abc"`, true}, {`*`, true}, {`"x", "abc"`, true}, {` "x" ,W/"abc"`, true},
		{`"abcd"`, false}, {`"ab"`, false}, {`abc`, false}, {`"abc`, false}, {`"x", abc`, false}, {`W/`, false}, {`,,`, false},
	} {
		if got := noneMatch(tt.header, etag); got != tt.want {
			t.Errorf("noneMatch(%q, %s) = %v; want %v", tt.header, etag, got, tt.want)
		}
	}
}

// FuzzNoneMatch: any header is read without a panic, and a list that
// ends with the ETag matches it as long as what precedes it is a
// well-formed list.
func FuzzNoneMatch(f *testing.F) {
	for _, s := range []string{"", `"a"`, `W/"a", "b"`, "*", `"`, `W/`, `"a" "b"`, "\t,\"x\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		noneMatch(header, `"etag"`)
		if !strings.Contains(header, `*`) && strings.Count(header, `"`)%2 == 0 && !strings.Contains(header, `"etag"`) && noneMatch(header, `"etag"`) {
			t.Errorf("noneMatch(%q) matched an ETag it does not contain", header)
		}
	})
}

// BenchmarkGetVersion measures the REST handler's GET of one version, in
// process (no network): from the cache, and read from the store.
func BenchmarkGetVersion(b *testing.B) {
	path := filepath.Join(b.TempDir(), "caphub.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	seed := registry.NewService(st)
	defer seed.Close()
	if _, err := seed.Register(context.Background(), fastDef("1.0.0")); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []registry.Option
	}{{"cached", []registry.Option{registry.WithCache()}}, {"store", nil}} {
		b.Run(tc.name, func(b *testing.B) {
			st, err := sqlite.Open(context.Background(), path)
			if err != nil {
				b.Fatal(err)
			}
			svc := registry.NewService(st, tc.opts...)
			defer svc.Close()
			srv := New(svc, nil)
			for range 1000 { // the watch starts asynchronously: warm until it caches
				if get(srv, "/registry/capabilities/fast/thing@1.0.0").Code != http.StatusOK {
					b.Fatal("GET failed")
				}
				if _, ok := svc.CachedRaw("ossa", "fast", "thing", "1.0.0"); ok {
					break
				}
				time.Sleep(time.Millisecond)
			}
			req := httptest.NewRequest(http.MethodGet, "/registry/capabilities/fast/thing@1.0.0", nil)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := &discardWriter{h: http.Header{}}
				for pb.Next() {
					clear(w.h)
					srv.ServeHTTP(w, req)
				}
			})
		})
	}
}

// discardWriter is a ResponseWriter that keeps nothing but the header map.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

// A list writes each version's stored JSON as it is: the bytes a GET of
// the version answers, and what the Service's List decodes.
func TestListWritesStoredJSON(t *testing.T) {
	srv, svc, other := cachedServer(t)
	if _, err := other.Register(t.Context(), fastDef("1.1.0")); err != nil {
		t.Fatal(err)
	}
	a := get(srv, "/registry/capabilities?all_versions=true&total=true")
	if a.Code != http.StatusOK || a.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("list = %d %s", a.Code, a.Body)
	}
	var page struct {
		Items      []json.RawMessage `json:"items"`
		Total      int               `json:"total"`
		NextCursor *string           `json:"next_cursor"`
	}
	if err := json.Unmarshal(a.Body.Bytes(), &page); err != nil {
		t.Fatalf("list answer: %v\n%s", err, a.Body)
	}
	if len(page.Items) != 2 || page.Total != 2 || page.NextCursor != nil {
		t.Fatalf("list = %d items, total %d, cursor %v; want 2, 2, none", len(page.Items), page.Total, page.NextCursor)
	}
	want, err := svc.List(t.Context(), registry.ListFilter{AllVersions: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []string{"1.0.0", "1.1.0"} {
		g := get(srv, "/registry/capabilities/fast/thing@"+v)
		if !bytes.Equal(page.Items[i], g.Body.Bytes()) {
			t.Errorf("list item %d =\n%s\nGET @%s =\n%s", i, page.Items[i], v, g.Body)
		}
		var d capability.Definition
		if err := json.Unmarshal(page.Items[i], &d); err != nil || !reflect.DeepEqual(d, want.Items[i].Definition) {
			t.Errorf("list item %d decodes to %+v (%v); Service.List gave %+v", i, d, err, want.Items[i].Definition)
		}
	}
	// Paged: the cursor is a JSON string, and the Link header continues.
	a = get(srv, "/registry/capabilities?all_versions=true&limit=1")
	page.NextCursor = nil
	if err := json.Unmarshal(a.Body.Bytes(), &page); err != nil || page.NextCursor == nil || len(page.Items) != 1 || a.Header().Get("Link") == "" {
		t.Fatalf("first page of 1: %v %s", err, a.Body)
	}
}

// The Service's List takes a version's decoded definition from the cache
// when its stored JSON is the same, and decodes it again when it changed.
func TestListDecodesThroughCache(t *testing.T) {
	_, svc, other := cachedServer(t)
	ctx := t.Context()
	waitFor(t, "the cache's watch", func() bool {
		p, err := svc.List(ctx, registry.ListFilter{})
		if err != nil {
			t.Fatal(err)
		}
		q, _ := svc.List(ctx, registry.ListFilter{})
		// Shared once cached: the same Input map.
		return len(p.Items) == 1 && len(q.Items) == 1 && reflect.ValueOf(p.Items[0].Definition.Input).Pointer() == reflect.ValueOf(q.Items[0].Definition.Input).Pointer()
	})
	if _, err := other.Deprecate(ctx, "ossa", "fast", "thing", "1.0.0", registry.DeprecateRequest{MigrationGuide: "stop"}); err != nil {
		t.Fatal(err)
	}
	p, err := svc.List(ctx, registry.ListFilter{})
	if err != nil || len(p.Items) != 1 || p.Items[0].Definition.Stability != capability.StabilityDeprecated {
		t.Fatalf("List right after another store's deprecation = %+v, %v; want it deprecated", p.Items, err)
	}
}

// BenchmarkGetVersionHTTP measures a cached GET of one version over a
// loopback HTTP connection behind the request guard, as caphub serve
// answers it (client and server in this process).
func BenchmarkGetVersionHTTP(b *testing.B) {
	st := tempStore(b)
	svc := registry.NewService(st, registry.WithCache())
	defer svc.Close()
	if _, err := svc.Register(context.Background(), fastDef("1.0.0")); err != nil {
		b.Fatal(err)
	}
	api := New(svc, nil)
	srv := httptest.NewServer(guard.New(guard.Options{AcceptsYAML: api.AcceptsYAML}).Handler(api))
	defer srv.Close()
	url := srv.URL + "/registry/capabilities/fast/thing@1.0.0"
	for range 1000 {
		if _, ok := svc.CachedRaw("ossa", "fast", "thing", "1.0.0"); ok {
			break
		}
		get(api, "/registry/capabilities/fast/thing@1.0.0")
		time.Sleep(time.Millisecond)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	hc := &http.Client{Transport: tr}
	b.SetParallelism(16)
	b.ReportAllocs() // the client's and the server's
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := hc.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}

// An mcp: capability asked for without a scheme (ossa first, then mcp) is
// served from the cache too once ossa is known to have no such version.
func TestCachedGetOfMCPCapability(t *testing.T) {
	srv, svc, other := cachedServer(t)
	m := capability.Definition{URI: "mcp:tools/echo@1.0", Name: "echo", Domain: "tools", Version: "1.0.0",
		Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
		Bindings: capability.Bindings{MCP: &capability.MCPBinding{Server: "tools", Tool: "echo"}}}
	if _, err := other.Register(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	const path = "/registry/capabilities/tools/echo@1.0.0"
	// Until the cache's watch has seen the registration (another Service
	// made it), the event may drop what a GET just cached: the check is
	// repeated until both versions are known, and then it must hold.
	var problem string
	waitFor(t, "the fast path of the mcp capability without a scheme", func() bool {
		if a := get(srv, path); a.Code != http.StatusOK {
			t.Fatalf("GET = %d %s", a.Code, a.Body)
		}
		want := get(srv, path+"?scheme=mcp")
		_, cached := svc.CachedRaw("mcp", "tools", "echo", "1.0.0")
		if !cached || !svc.CachedAbsent("ossa", "tools", "echo", "1.0.0") {
			problem = fmt.Sprintf("mcp cached %v, ossa known absent %v", cached, svc.CachedAbsent("ossa", "tools", "echo", "1.0.0"))
			return false
		}
		// Served by the fast path (ossa known absent, mcp cached): the
		// same answer as with the scheme.
		req := httptest.NewRequest(http.MethodGet, path, nil)
		rec := httptest.NewRecorder()
		if !srv.serveVersion(rec, req) || !bytes.Equal(rec.Body.Bytes(), want.Body.Bytes()) || rec.Header().Get("ETag") != want.Header().Get("ETag") {
			problem = fmt.Sprintf("%d %s; want %s", rec.Code, rec.Body, want.Body)
			return false
		}
		return true
	}, &problem)
}

// A GET of one version answers with its length, not chunked, whether the
// version is read from the store or from the cache, however large it is
// (net/http chunks an answer of more than 2 KB whose length it is not
// told).
func TestGetVersionHasContentLength(t *testing.T) {
	st := tempStore(t)
	svc := registry.NewService(st, registry.WithCache())
	defer svc.Close()
	def := fastDef("1.0.0")
	def.Description = strings.Repeat("a thing served from memory; ", 200)
	if _, err := svc.Register(t.Context(), def); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(svc, nil))
	defer srv.Close()
	url := srv.URL + "/registry/capabilities/fast/thing@1.0.0"
	var first []byte
	waitFor(t, "the version cached", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET = %d %s, %v", resp.StatusCode, body, err)
		}
		if len(body) < 4096 || resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) > 0 {
			t.Fatalf("%d bytes answered with Content-Length %d, Transfer-Encoding %v; want the length, not chunked", len(body), resp.ContentLength, resp.TransferEncoding)
		}
		if first == nil {
			first = body
		} else if !bytes.Equal(body, first) {
			t.Fatalf("the cached answer differs from the first:\n%s\n%s", body, first)
		}
		_, ok := svc.CachedRaw("ossa", "fast", "thing", "1.0.0")
		return ok
	})
}

// slowStore is a store whose GetRaw waits until its context ends.
type slowStore struct{ registry.Store }

func (slowStore) GetRaw(ctx context.Context, _ registry.Key) (registry.RawRecord, error) {
	<-ctx.Done()
	return registry.RawRecord{}, ctx.Err()
}

// A GET of one version read from the store (not served by the route
// mux's budget) stays within the time budget: past it, the store's read
// is cancelled and the client gets the budget problem.
func TestGetVersionWithinBudget(t *testing.T) {
	st := tempStore(t)
	svc := registry.NewService(slowStore{st}, registry.WithCache())
	defer svc.Close()
	srv := New(svc, slog.New(slog.DiscardHandler), WithRequestTimeout(100*time.Millisecond))
	a := get(srv, "/registry/capabilities/fast/thing@1.0.0")
	if a.Code != http.StatusServiceUnavailable || !strings.Contains(a.Body.String(), "--request-timeout") {
		t.Errorf("GET = %d %s; want 503 naming the budget", a.Code, a.Body)
	}
}

// A GET of a cached version allocates nothing in the handler: the key is
// built on the stack and the header values are the version's own.
func TestCachedGetAllocatesNothing(t *testing.T) {
	srv, svc, _ := cachedServer(t)
	const path = "/registry/capabilities/fast/thing@1.0.0"
	waitFor(t, "the cache's watch", func() bool {
		get(srv, path)
		_, ok := svc.CachedRaw("ossa", "fast", "thing", "1.0.0")
		return ok
	})
	req := httptest.NewRequest(http.MethodGet, path, nil)
	w := &discardWriter{h: http.Header{}}
	if n := testing.AllocsPerRun(100, func() {
		clear(w.h)
		if !srv.serveVersion(w, req) {
			t.Fatal("the cached version was not served by the fast path")
		}
	}); n != 0 {
		t.Errorf("a cached GET allocates %v times; want 0", n)
	}
}

// BenchmarkGetVersionChain measures a cached GET of one version through
// what caphub serve puts in front of the REST API (tracing, off; metrics;
// the request guard; the route table the API is mounted in), in process:
// caphub's own share of a GET, without net/http's.
func BenchmarkGetVersionChain(b *testing.B) {
	srv, svc, _ := cachedServer(b)
	const path = "/registry/capabilities/fast/thing@1.0.0"
	for range 1000 {
		if _, ok := svc.CachedRaw("ossa", "fast", "thing", "1.0.0"); ok {
			break
		}
		get(srv, path)
		time.Sleep(time.Millisecond)
	}
	routes := auth.NewRoutes()
	routes.Mount("/", srv)
	chain := tracing.Middleware(routes.Route, metrics.New().Instrument(guard.New(guard.Options{AcceptsYAML: srv.AcceptsYAML}).Handler(routes)))
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1:8080" // a Host the guard serves
	w := &discardWriter{h: http.Header{}}
	if chain.ServeHTTP(w, req); w.h.Get("ETag") == "" {
		b.Fatalf("the chain did not answer with the version: %v", w.h)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			clear(w.h)
			chain.ServeHTTP(w, req)
		}
	})
}

// tempStore is a SQLite store in a temporary directory of tb's.
func tempStore(tb testing.TB) *sqlite.Store {
	tb.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "caphub.db"))
	if err != nil {
		tb.Fatal(err)
	}
	return st
}
