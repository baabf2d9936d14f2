package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/caphub/caphub/store/storetest"
)

// scaleVersions is how many synthetic versions the scale benchmark loads:
// 300,000 versions are 99,976 capabilities (storetest.Synthetic gives one to
// five versions each), the catalog's "100k capabilities";
// CAPHUB_WEB_SCALE changes it.
func scaleVersions(b *testing.B) int {
	if v := os.Getenv("CAPHUB_WEB_SCALE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("CAPHUB_WEB_SCALE=%q: give a number of versions", v)
		}
		return n
	}
	return 300000
}

// scaleDB is a SQLite database holding n synthetic versions (the loader of
// bench/registry: storetest.Synthetic, seed 1), kept in .cache/web-scale so
// that the minute and a half of loading is paid once.
func scaleDB(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(testpeers.RepoRoot(b), ".cache", "web-scale")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	db := filepath.Join(dir, fmt.Sprintf("synthetic-%d.db", n))
	done := db + ".loaded"
	if _, err := os.Stat(done); err == nil {
		return db
	}
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		_ = os.Remove(p)
	}
	start := time.Now()
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		b.Fatal(err)
	}
	defs := storetest.Synthetic(n, 1)
	const batch = 5000
	for i := 0; i < len(defs); i += batch {
		recs := make([]registry.Record, 0, batch)
		for _, d := range defs[i:min(i+batch, len(defs))] {
			recs = append(recs, storetest.NewRecord(d))
		}
		if _, err := st.Put(context.Background(), recs); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d versions into %s in %s", n, db, time.Since(start).Round(time.Second))
	return db
}

// BenchmarkCatalogAtScale measures the first catalog page on a registry of
// about 100k capabilities, served by a real caphub serve: the server time
// of each request the page makes (its first page: the list; typing: a
// search), and, once, the time until headless Chromium shows the list.
//
//	go test -run '^$' -bench CatalogAtScale -benchtime 200x ./internal/server/web/e2e/
func BenchmarkCatalogAtScale(b *testing.B) {
	if testing.Short() {
		b.Skip("loads 300,000 versions")
	}
	n := scaleVersions(b)
	db := scaleDB(b, n)
	s := &site{tb: b, dir: b.TempDir(), db: db, logs: &bytes.Buffer{}}
	s.serve()
	// Searches are answered by the store until serve's search index is
	// built (in the background at start): measure the index, as it serves.
	start := time.Now()
	for !strings.Contains(s.logged(), "search index built") {
		if time.Since(start) > 5*time.Minute {
			b.Fatal("serve did not build its search index within 5 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Logf("serve built its search index %s after it answered /healthz", time.Since(start).Round(time.Millisecond))
	// A capability of the middle of the list, for the capability page's request.
	resp, err := http.Get(s.url + "/registry/capabilities?limit=1&domain=" + storetest.Synthetic(1, 1)[0].Domain)
	if err != nil {
		b.Fatal(err)
	}
	var first struct {
		Items []struct{ Domain, Name string } `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&first); err != nil || len(first.Items) == 0 {
		b.Fatalf("the first capability: %v %+v", err, first)
	}
	resp.Body.Close()
	for _, req := range []struct{ name, path string }{
		{"list", "/registry/capabilities?limit=25"},
		{"search", "/registry/search?q=create+invoice&view=compact&limit=25"},
		{"search-filtered", "/registry/search?q=report&view=compact&limit=25&stability=beta&binding=http"},
		{"capability-versions", "/registry/capabilities/" + first.Items[0].Domain + "/" + first.Items[0].Name + "?limit=1000"},
	} {
		// Warm up once (the search index is built in the background at start).
		deadline := time.Now().Add(2 * time.Minute)
		for {
			code, _ := get(b, s.url+req.path)
			if code == http.StatusOK || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		b.Run(req.name, func(b *testing.B) {
			var times []time.Duration
			bytes := 0
			for b.Loop() {
				start := time.Now()
				code, n := get(b, s.url+req.path)
				times = append(times, time.Since(start))
				if code != http.StatusOK {
					b.Fatalf("GET %s: %d", req.path, code)
				}
				bytes = n
			}
			slices.Sort(times)
			p50, p95 := times[len(times)/2], times[len(times)*95/100]
			b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
			b.ReportMetric(float64(bytes), "bytes")
			b.Logf("GET %s over %d versions: p50 %s, p95 %s, %d bytes", req.path, n, p50, p95, bytes)
		})
	}
	b.Run("browser", func(b *testing.B) {
		s.tb = b
		r := s.browse("measure", map[string]any{"runs": 5, "queries": []string{"create invoice", "report"}})
		var walls, shown []float64
		for _, run := range r.Checks["list"].([]any) {
			m := run.(map[string]any)
			walls = append(walls, m["wall"].(float64))
			shown = append(shown, m["shown"].(float64))
			b.Logf("first catalog page: list shown %.0f ms after navigation start (DOMContentLoaded %.0f ms; %.0f ms wall in the driver; %v items); its requests: %v", m["shown"], m["domContentLoaded"], m["wall"], m["count"], m["api"])
		}
		for _, q := range r.Checks["search"].([]any) {
			m := q.(map[string]any)
			b.Logf("typing %q: results shown %.0f ms after the text was filled (200 ms of it the debounce): %s", m["q"], m["ms"], m["status"])
		}
		slices.Sort(shown)
		slices.Sort(walls)
		b.ReportMetric(shown[len(shown)/2], "shown-ms")
		b.ReportMetric(walls[len(walls)/2], "wall-ms")
		for b.Loop() {
		}
	})
}

func get(tb testing.TB, url string) (int, int) {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, int(n)
}
