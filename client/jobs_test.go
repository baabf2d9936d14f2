package client_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/client"
	"github.com/caphub/caphub/internal/server/rest"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/caphub/caphub/store/storetest"
)

// TestImport imports through a real server's registration job, with a
// client timeout far shorter than the import: it follows the job to its
// end, reporting progress, and gets every result and failure.
func TestImport(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := registry.NewService(st, registry.WithLogger(quiet))
	srv := httptest.NewServer(rest.New(svc, quiet))
	t.Cleanup(func() { srv.Close(); svc.Close() })
	defs := storetest.Synthetic(1500, 11)
	defs[900].Input = nil // refused
	c, err := client.New(srv.URL, client.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var seen []registry.ImportProgress
	res, err := c.Import(t.Context(), defs, func(p registry.ImportProgress) { seen = append(seen, p) })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 1499 || len(res.Failures) != 1 || res.Failures[0].Item != defs[900].URI {
		t.Fatalf("%d results, failures %v", len(res.Results), res.Failures)
	}
	for i, r := range res.Results {
		d := defs[i]
		if i >= 900 {
			d = defs[i+1]
		}
		if r.Version != d.Version || !strings.HasPrefix(d.URI, strings.Split(r.URI, "@")[0]+"@") || !r.Created {
			t.Fatalf("result %d: %+v, want %s %s created", i, r, d.URI, d.Version)
		}
	}
	last := seen[len(seen)-1]
	if last.Total != 1500 || last.Done != 1500 || last.Registered != 1499 || last.Failed != 1 {
		t.Errorf("last progress %+v", last)
	}
	// Again: unchanged, and a refusal the registry decides alone.
	res, err = c.Import(t.Context(), defs[:10], nil)
	if err != nil || len(res.Results) != 10 || res.Results[3].Created {
		t.Errorf("again: %+v, %v", res, err)
	}
}

// TestRegisterBatchLarge registers a batch over the server's limit for
// waiting (4 MiB): the server makes it a job, which RegisterBatch follows;
// a refused definition is a *PartialError, the others registered.
func TestRegisterBatchLarge(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := registry.NewService(st, registry.WithLogger(quiet))
	srv := httptest.NewServer(rest.New(svc, quiet))
	t.Cleanup(func() { srv.Close(); svc.Close() })
	defs := storetest.Synthetic(300, 5)
	for i := range defs {
		defs[i].Description += strings.Repeat(" Padding words.", 1000)
	}
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.RegisterBatch(t.Context(), defs)
	if err != nil || len(res) != 300 || res[299].Record.Key.Version != defs[299].Version || !res[299].Created {
		t.Fatalf("RegisterBatch of a large batch: %d results, %v", len(res), err)
	}
	defs[10].Description += " Changed."
	_, err = c.RegisterBatch(t.Context(), defs)
	var pe *client.PartialError
	if !errors.As(err, &pe) || len(pe.Failures) != 1 || pe.Registered != 299 {
		t.Errorf("a large batch with a conflict: %v", err)
	}
}
