package registry_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/storetest"
)

// TestRegisterBatchLargeRefusals checks a batch large enough to be
// prepared in parallel: every refused definition is reported, in batch
// order, and nothing is stored.
func TestRegisterBatchLargeRefusals(t *testing.T) {
	ctx := context.Background()
	svc, _ := newSQLiteService(t)
	defs := storetest.Synthetic(200, 7)
	bad := []int{3, 77, 78, 150, 199}
	for _, i := range bad {
		defs[i].Input = nil // refused: the input schema is missing
	}
	_, err := svc.RegisterBatch(ctx, defs)
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

// TestRegisterEachConflicts checks that RegisterEach registers everything
// but the versions registered with other content, and names each of those.
func TestRegisterEachConflicts(t *testing.T) {
	ctx := context.Background()
	svc, _ := newSQLiteService(t)
	defs := storetest.Synthetic(120, 3)
	taken := map[int]bool{5: true, 6: true, 40: true, 77: true, 119: true}
	var first []capability.Definition
	for i := range taken {
		first = append(first, defs[i])
		defs[i].Description += " Changed."
	}
	if _, err := svc.RegisterBatch(ctx, first); err != nil {
		t.Fatal(err)
	}
	res, failures, err := registry.RegisterEach(ctx, svc, defs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(defs)-len(taken) || len(failures) != len(taken) {
		t.Fatalf("%d results and %d failures, want %d and %d: %v", len(res), len(failures), len(defs)-len(taken), len(taken), failures)
	}
	j := 0
	for i := range defs {
		if taken[i] {
			continue
		}
		if res[j].Version != defs[i].Version || !strings.HasPrefix(defs[i].URI, strings.Split(res[j].URI, "@")[0]+"@") {
			t.Errorf("result %d is %s %s, want definition %d, %s %s", j, res[j].URI, res[j].Version, i, defs[i].URI, defs[i].Version)
		}
		j++
	}
	for _, f := range failures {
		if !strings.Contains(f.Reason, "already registered with other content") {
			t.Errorf("failure %v", f)
		}
	}
}

// A registration stores each definition as json.Marshal encodes it, and
// its digest is the SHA-256 of its encoding without the lifecycle fields
// and provenance.created_at, as before the schemas were encoded once for
// both: digests already stored stay comparable.
func TestRegisterEncodesOnce(t *testing.T) {
	ctx := context.Background()
	svc, st := newSQLiteService(t)
	defs := storetest.Synthetic(40, 3)
	for i := range defs {
		defs[i].Provenance = &capability.Provenance{Method: "openapi", CreatedAt: "2026-01-01T00:00:00Z"}
		defs[i].Description += ` <"input":null,"output":null> & more`
	}
	res, err := svc.RegisterBatch(ctx, defs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		raw, err := st.GetRaw(ctx, r.Record.Key)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(r.Record.Definition)
		if !bytes.Equal(raw.Definition, want) {
			t.Fatalf("%s stored as\n%s\nwant json.Marshal's\n%s", r.URI, raw.Definition, want)
		}
		c := r.Record.Definition
		c.Stability, c.DeprecatedBy, c.SunsetDate, c.MigrationGuide = "", "", "", ""
		p := *c.Provenance
		p.CreatedAt = ""
		c.Provenance = &p
		b, _ := json.Marshal(c)
		if sum := sha256.Sum256(b); r.Digest != hex.EncodeToString(sum[:]) || raw.Digest != r.Digest {
			t.Fatalf("%s: digest %s (stored %s), want %x", r.URI, r.Digest, raw.Digest, sum)
		}
	}
}

// TestRegisterVersionRules checks that each new version is compared with
// the version just below it, registered or in the same batch, when
// versions above and below it are registered too.
func TestRegisterVersionRules(t *testing.T) {
	ctx := context.Background()
	svc, _ := newSQLiteService(t)
	def := func(version, desc string, fields ...string) capability.Definition {
		props := map[string]any{}
		for _, f := range fields {
			props[f] = map[string]any{"type": "string"}
		}
		v := capability.MustParseVersion(version)
		return capability.Definition{
			URI: capability.NewURI(capability.SchemeOSSA, "rules", "cap", v).String(), Name: "cap", Domain: "rules", Version: version,
			Description: "A capability " + desc + ".", Input: capability.Schema{"type": "object", "properties": props},
			Output: capability.Schema{"type": "object"}, Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "noop"}},
		}
	}
	// 1.1.0 adds b (minor), 2.0.0 removes a (major).
	for _, d := range []capability.Definition{def("1.0.0", "first", "a"), def("1.1.0", "first", "a", "b"), def("2.0.0", "first", "b")} {
		if _, err := svc.Register(ctx, d); err != nil {
			t.Fatalf("register %s: %v", d.Version, err)
		}
	}
	for _, c := range []struct {
		defs     []capability.Definition
		previous []string // per definition, the version it is refused against; "" accepted
	}{
		// Against 1.1.0: b removed. (Against 1.0.0 it would pass.)
		{[]capability.Definition{def("1.2.0", "second", "a")}, []string{"1.1.0"}},
		// Against 2.0.0: a patch. (Against 1.1.0 it would remove a.)
		{[]capability.Definition{def("2.0.1", "second", "b")}, []string{""}},
		// 1.1.2 against 1.1.1 of the same batch: b removed.
		{[]capability.Definition{def("1.1.2", "third", "a"), def("1.1.1", "third", "a", "b")}, []string{"1.1.1", ""}},
	} {
		_, err := svc.RegisterBatch(ctx, c.defs)
		refused := map[int]string{}
		var be *registry.BatchError
		if errors.As(err, &be) {
			for _, f := range be.Failures {
				var bce *registry.BreakingChangeError
				if !errors.As(f.Err, &bce) {
					t.Fatalf("register %s: %v, want a breaking change", f.URI, f.Err)
				}
				refused[f.Index] = bce.Previous
			}
		} else if err != nil {
			t.Fatal(err)
		}
		for i, d := range c.defs {
			if refused[i] != c.previous[i] {
				t.Errorf("register %s: refused against %q, want %q (%v)", d.Version, refused[i], c.previous[i], err)
			}
		}
	}
}
