package registry_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
	"github.com/caphub/caphub/store/storetest"
)

// TestRegisterBatchLargeRefusals checks a batch large enough to be
// prepared in parallel: every refused definition is reported, in batch
// order, and nothing is stored.
func TestRegisterBatchLargeRefusals(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	svc := registry.NewService(st)
	defer svc.Close()
	defs := storetest.Synthetic(200, 7)
	bad := []int{3, 77, 78, 150, 199}
	for _, i := range bad {
		defs[i].Input = nil // refused: the input schema is missing
	}
	_, err = svc.RegisterBatch(ctx, defs)
	var be *registry.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("RegisterBatch: %v, want a *BatchError", err)
	}
	if len(be.Failures) != len(bad) {
		t.Fatalf("%d failures, want %d: %v", len(be.Failures), len(bad), err)
	}
	for j, f := range be.Failures {
		if f.Index != bad[j] || f.URI != defs[bad[j]].URI {
			t.Errorf("failure %d: [%d] %s, want [%d] %s", j, f.Index, f.URI, bad[j], defs[bad[j]].URI)
		}
	}
	page, err := svc.Store().List(ctx, registry.ListFilter{AllVersions: true, Limit: 1})
	if err != nil || len(page.Items) != 0 {
		t.Errorf("after a refused batch the store holds %v (%v), want nothing", page.Items, err)
	}
}
