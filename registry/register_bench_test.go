package registry_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/caphub/caphub/store/storetest"
)

// benchService is a registry on a fresh SQLite file with the audit
// recorder, as caphub serve runs it, and the definitions a benchmark
// registers copies of.
func benchService(b *testing.B) (*registry.Service, []capability.Definition) {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	log := audit.New(st)
	svc := registry.NewService(st, registry.WithRecorder(log), registry.WithCache(), registry.WithLogger(slog.New(slog.DiscardHandler)))
	b.Cleanup(func() { log.Close(); svc.Close() })
	return svc, storetest.Synthetic(200, 1)
}

// fresh returns the i-th definition to register: a copy of one of tmpl
// under a new name, so every call creates a version.
func fresh(tmpl []capability.Definition, i int64) capability.Definition {
	d := tmpl[int(i)%len(tmpl)]
	return storetest.Renamed(d, fmt.Sprintf("%s_b%d", d.Name, i), d.Version)
}

// BenchmarkRegister registers one new capability a call, one caller.
func BenchmarkRegister(b *testing.B) {
	svc, tmpl := benchService(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if _, err := svc.Register(ctx, fresh(tmpl, int64(i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegisterParallel registers one new capability a call from 32
// concurrent callers per core: concurrent registrations share commits.
func BenchmarkRegisterParallel(b *testing.B) {
	svc, tmpl := benchService(b)
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := svc.Register(ctx, fresh(tmpl, seq.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
