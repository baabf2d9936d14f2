package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/caphub/caphub/store/storetest"
)

// BenchmarkRegisterHTTP posts one new definition a request to the handler
// (no network), from concurrent callers, with the audit recorder as
// caphub serve has it: what a registration costs beside the Service.
func BenchmarkRegisterHTTP(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	l := audit.New(st)
	quiet := slog.New(slog.DiscardHandler)
	svc := registry.NewService(st, registry.WithRecorder(l), registry.WithCache(), registry.WithLogger(quiet))
	b.Cleanup(func() { l.Close(); svc.Close() })
	h := New(svc, quiet)
	tmpl := storetest.Synthetic(200, 1)
	var seq atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1)
			d := tmpl[int(i)%len(tmpl)]
			d.Name = fmt.Sprintf("%s_h%d", d.Name, i)
			d.URI = capability.NewURI(capability.SchemeOSSA, d.Domain, d.Name, capability.MustParseVersion(d.Version)).String()
			body, _ := json.Marshal(map[string]any{"capability": d})
			req := httptest.NewRequest("POST", "/registry/capabilities", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusCreated {
				b.Errorf("%d %s", w.Code, w.Body)
				return
			}
		}
	})
}
