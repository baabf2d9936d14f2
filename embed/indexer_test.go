package embed_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/embed"
	"github.com/caphub/caphub/embed/embedtest"
	"github.com/caphub/caphub/registry"
)

// logBuffer is a log the tests read while the indexer writes it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// eventually waits up to 20s for cond, failing the test with what when it
// does not hold by then.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startIndexer starts an indexer of st embedded by srv, stopped by the
// returned stop or when the test ends.
func startIndexer(t *testing.T, st registry.Store, srv *embedtest.Server, log *logBuffer) (ix *embed.Indexer, stop func()) {
	t.Helper()
	ix = embed.NewIndexer(st, newClient(t, srv, embed.ClientOptions{Retries: -1}), embed.IndexerOptions{
		Log:      slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Batch:    2,
		MinRetry: 10 * time.Millisecond, MaxRetry: 50 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := ix.Start(ctx)
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return ix, stop
}

// idle waits until ix has loaded and embedded every version, n in all.
func idle(t *testing.T, ix *embed.Indexer, n int) {
	t.Helper()
	eventually(t, "the indexer to hold every vector", func() bool {
		s := ix.Status()
		return s.Loaded && s.Pending == 0 && !s.Scanning && s.Vectors == n
	})
}

func register(t *testing.T, svc *registry.Service, defs ...capability.Definition) []registry.Key {
	t.Helper()
	res, err := svc.RegisterBatch(context.Background(), defs)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]registry.Key, len(defs))
	for i := range defs {
		if !res[i].Created {
			t.Fatalf("%s was not created", res[i].URI)
		}
		keys[i], _ = registry.KeyOf(&defs[i])
	}
	return keys
}

func TestIndexer(t *testing.T) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			st := s.open(t)
			svc := registry.NewService(st, registry.WithLogger(slog.New(slog.DiscardHandler)))
			srv := embedtest.New(t, embedtest.Options{Dimensions: 128})

			// Five versions registered before the indexer starts, one of
			// them embedded by an earlier run.
			before := register(t, svc, catalog[:5]...)
			vecs, err := newClient(t, srv, embed.ClientOptions{}).Embed(ctx, []string{embed.Text(&catalog[0])})
			if err != nil {
				t.Fatal(err)
			}
			if err := embed.PutVectors(ctx, st, srv.Model(), []embed.Vector{{Key: before[0], Vector: vecs[0]}}); err != nil {
				t.Fatal(err)
			}
			base := srv.Inputs()

			var log logBuffer
			ix, stop := startIndexer(t, st, srv, &log)
			idle(t, ix, 5)
			if n := srv.Inputs() - base; n != 4 {
				t.Errorf("the backfill embedded %d texts, want the 4 without a vector", n)
			}
			if b := srv.Batches(); len(b) != 3 || b[1] != 2 || b[2] != 2 {
				t.Errorf("batches %v; want batches of 2", b)
			}
			if !strings.Contains(log.String(), "embedding index: backfill done") || !strings.Contains(log.String(), "embedded=4") {
				t.Errorf("the log does not report the backfill:\n%s", log.String())
			}
			for _, k := range before {
				if _, err := embed.GetVector(ctx, st, srv.Model(), k); err != nil {
					t.Errorf("after the backfill: %v", err)
				}
			}

			// A version registered now is embedded.
			added := register(t, svc, catalog[5])
			eventually(t, "the new version's vector", func() bool { return ix.Ranker().Has(added[0]) })
			if _, err := embed.GetVector(ctx, st, srv.Model(), added[0]); err != nil {
				t.Errorf("the new version's vector is not stored: %v", err)
			}
			got, err := ix.Ranker().Rank(ctx, "book an appointment", 1)
			if err != nil || len(got) != 1 || got[0].Key != added[0] {
				t.Errorf("Rank = %v, %v; want %s", got, err, added[0])
			}

			// With the provider down, a registration still succeeds at
			// once; its version is embedded when the provider is back.
			srv.Down(http.StatusServiceUnavailable)
			late := register(t, svc, definition("notes", "write_note", "1.0.0", "Write note", "Writes a note."))
			eventually(t, "the indexer to report the failure", func() bool { return strings.Contains(ix.Status().LastError, "HTTP 503") })
			if ix.Ranker().Has(late[0]) {
				t.Fatal("a version was embedded while the provider was down")
			}
			srv.Up()
			eventually(t, "the version registered while the provider was down", func() bool { return ix.Ranker().Has(late[0]) })
			idle(t, ix, 7)
			if s := ix.Status(); s.LastError != "" || s.Embedded != 6 {
				t.Errorf("status %+v; want no error and 6 embedded", s)
			}

			// A new indexer loads the stored vectors and embeds nothing.
			stop()
			inputs := srv.Inputs()
			again, _ := startIndexer(t, st, srv, &logBuffer{})
			idle(t, again, 7)
			if n := srv.Inputs() - inputs; n != 0 {
				t.Errorf("a restarted indexer embedded %d texts; want none", n)
			}
		})
	}
}

// A version registered during a long backfill does not wait for its end.
func TestIndexerNewVersionDuringBackfill(t *testing.T) {
	st := openSQLite(t)
	svc := registry.NewService(st, registry.WithLogger(slog.New(slog.DiscardHandler)))
	var defs []capability.Definition
	for i := range 100 {
		defs = append(defs, definition("bulk", fmt.Sprintf("tool_%d", i), "1.0.0", "Tool", "Does a thing."))
	}
	register(t, svc, defs...)
	srv := embedtest.New(t, embedtest.Options{Dimensions: 16, Delay: 20 * time.Millisecond})
	ix, _ := startIndexer(t, st, srv, &logBuffer{}) // 50 requests of 2: a second at least
	eventually(t, "the backfill to start", func() bool { return srv.Requests() > 0 })
	added := register(t, svc, catalog[0])
	eventually(t, "the new version's vector", func() bool { return ix.Ranker().Has(added[0]) })
	if s := ix.Status(); !s.Scanning || s.Vectors > 90 {
		t.Errorf("the new version was embedded after the backfill: %+v", s)
	}
	idle(t, ix, 101)
}

// When the provider's vectors change length (the model's setting changed)
// and no length is configured, the indexer notices at the next version it
// embeds, and embeds every version again.
func TestIndexerNewLength(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	svc := registry.NewService(st, registry.WithLogger(slog.New(slog.DiscardHandler)))
	keys := register(t, svc, catalog[:3]...)
	old := embedtest.New(t, embedtest.Options{Dimensions: 16})
	ix, stop := startIndexer(t, st, old, &logBuffer{})
	idle(t, ix, 3)
	stop()

	srv := embedtest.New(t, embedtest.Options{Dimensions: 32})
	var log logBuffer
	ix, stop = startIndexer(t, st, srv, &log)
	idle(t, ix, 3)
	if ix.Ranker().Dimensions() != 16 || srv.Inputs() != 0 {
		t.Fatalf("before a new version: %d dimensions, %d texts embedded; want the 16 stored, none", ix.Ranker().Dimensions(), srv.Inputs())
	}
	register(t, svc, catalog[3])
	idle(t, ix, 4)
	if ix.Ranker().Dimensions() != 32 || srv.Inputs() != 4 {
		t.Errorf("after the change: %d dimensions, %d texts embedded; want 32 and all 4", ix.Ranker().Dimensions(), srv.Inputs())
	}
	if !strings.Contains(log.String(), "embedding every version again") {
		t.Errorf("the log does not say why it embeds again:\n%s", log.String())
	}
	if v, err := embed.GetVector(ctx, st, srv.Model(), keys[0]); err != nil || len(v) != 32 {
		t.Errorf("stored vector: %d long, %v", len(v), err)
	}
	stop()

	// With the length configured, the stored vectors of another length
	// are not loaded but embedded again at start.
	ix = embed.NewIndexer(st, newClient(t, old, embed.ClientOptions{}), embed.IndexerOptions{
		Log: slog.New(slog.DiscardHandler), Ranker: embed.RankerOptions{Dimensions: 16},
	})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ix.Start(cctx)
	idle(t, ix, 4)
	if ix.Ranker().Dimensions() != 16 || old.Inputs() != 3+4 {
		t.Errorf("configured 16: %d dimensions, %d texts embedded; want 16 and 4 more", ix.Ranker().Dimensions(), old.Inputs())
	}
}
