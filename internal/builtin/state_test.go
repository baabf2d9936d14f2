package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
)

const (
	stRead       = "ossa:state/read@1.0"
	stWrite      = "ossa:state/write@1.0"
	stList       = "ossa:state/list@1.0"
	stDelete     = "ossa:state/delete@1.0"
	stCheckpoint = "ossa:state/checkpoint@1.0"
	stRollback   = "ossa:state/rollback@1.0"
)

// spyDocs wraps a DocStore, counting the writes and letting a test hook
// into ListDocs and fail ApplyDocs.
type spyDocs struct {
	registry.DocStore
	mu        sync.Mutex
	puts      int
	deletes   int
	applies   [][]registry.DocOp
	onList    func(kind, prefix string) // called before ListDocs answers
	failApply error
}

func (s *spyDocs) PutDoc(ctx context.Context, kind, key string, value []byte) error {
	s.mu.Lock()
	s.puts++
	s.mu.Unlock()
	return s.DocStore.PutDoc(ctx, kind, key, value)
}

func (s *spyDocs) DeleteDoc(ctx context.Context, kind, key string) error {
	s.mu.Lock()
	s.deletes++
	s.mu.Unlock()
	return s.DocStore.DeleteDoc(ctx, kind, key)
}

func (s *spyDocs) ListDocs(ctx context.Context, kind, prefix string) ([]registry.Doc, error) {
	docs, err := s.DocStore.ListDocs(ctx, kind, prefix)
	if s.onList != nil {
		s.onList(kind, prefix)
	}
	return docs, err
}

func (s *spyDocs) ApplyDocs(ctx context.Context, ops []registry.DocOp) error {
	s.mu.Lock()
	s.applies = append(s.applies, ops)
	fail := s.failApply
	s.mu.Unlock()
	if fail != nil {
		return fail
	}
	return s.DocStore.ApplyDocs(ctx, ops)
}

func (s *spyDocs) reset() {
	s.mu.Lock()
	s.puts, s.deletes, s.applies = 0, 0, nil
	s.mu.Unlock()
}

// stateHarness returns a harness over a real SQLite document store (spied).
func stateHarness(t *testing.T) (*harness, *spyDocs) {
	t.Helper()
	spy := &spyDocs{DocStore: openStore(t)}
	return newHarness(t, Env{Docs: spy, Now: fixedClock(exampleNow)}), spy
}

// keysOf lists caller's keys through ossa:state/list.
func keysOf(h *harness, caller, prefix string) []any {
	h.t.Helper()
	in := map[string]any{}
	if prefix != "" {
		in["prefix"] = prefix
	}
	out := h.ok(stList, caller, in)
	keys := out["keys"].([]any)
	if out["count"] != int64(len(keys)) {
		h.t.Errorf("list count %v for %d keys", out["count"], len(keys))
	}
	return keys
}

// stateOf reads every key of caller into a map.
func stateOf(h *harness, caller string) map[string]any {
	h.t.Helper()
	m := map[string]any{}
	for _, k := range keysOf(h, caller, "") {
		m[k.(string)] = h.ok(stRead, caller, map[string]any{"key": k})["value"]
	}
	return m
}

func TestStateReadWrite(t *testing.T) {
	h, _ := stateHarness(t)
	tests := []struct {
		key   string
		value any
	}{
		{"string", "hello <world> & co"},
		{"int", int64(42)},
		{"float", 2.5},
		{"negative", int64(-7)},
		{"big", json.Number("123456789012345678901234567890")},
		{"bool", true},
		{"null", nil},
		{"object", map[string]any{"a": []any{int64(1), "two", map[string]any{"three": 3.5}}, "b": nil}},
		{"array", []any{}},
		{"unicode ключ 🔑", "значення"},
		{"a/b:c %2F", "keys may hold any text"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			h := h.in(t)
			out := h.ok(stWrite, "agent-1", map[string]any{"key": tt.key, "value": tt.value})
			if !reflect.DeepEqual(out, map[string]any{"key": tt.key, "written": true}) {
				t.Errorf("write %q = %v", tt.key, out)
			}
		})
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			h := h.in(t)
			out := h.ok(stRead, "agent-1", map[string]any{"key": tt.key})
			if !reflect.DeepEqual(out["value"], tt.value) {
				t.Errorf("read %q = %#v, want %#v", tt.key, out["value"], tt.value)
			}
			if _, err := time.Parse(time.RFC3339Nano, out["updated_at"].(string)); err != nil {
				t.Errorf("read %q: updated_at %v: %v", tt.key, out["updated_at"], err)
			}
		})
	}
	// Overwrite.
	h.ok(stWrite, "agent-1", map[string]any{"key": "int", "value": "now a string"})
	if v := h.ok(stRead, "agent-1", map[string]any{"key": "int"})["value"]; v != "now a string" {
		t.Errorf("after overwrite: %v", v)
	}
	_, err := h.call(stRead, "agent-1", map[string]any{"key": "missing"})
	wantCode(t, err, "KEY_NOT_FOUND", `"missing"`, `agent "agent-1"`)
}

func TestStateListAndDelete(t *testing.T) {
	h, _ := stateHarness(t)
	for _, k := range []string{"plan/b", "plan/a", "plan", "plan0", "task:1", "Plan/x", "plan/a/deep"} {
		h.ok(stWrite, "a", map[string]any{"key": k, "value": k})
	}
	tests := []struct {
		prefix string
		want   []any
	}{
		{"", []any{"Plan/x", "plan", "plan/a", "plan/a/deep", "plan/b", "plan0", "task:1"}}, // byte order
		{"plan/", []any{"plan/a", "plan/a/deep", "plan/b"}},
		{"plan", []any{"plan", "plan/a", "plan/a/deep", "plan/b", "plan0"}},
		{"task:", []any{"task:1"}},
		{"nothing", []any{}},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			h := h.in(t)
			if got := keysOf(h, "a", tt.prefix); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("list %q = %v, want %v", tt.prefix, got, tt.want)
			}
		})
	}
	out := h.ok(stDelete, "a", map[string]any{"key": "plan/a"})
	if !reflect.DeepEqual(out, map[string]any{"key": "plan/a", "deleted": true}) {
		t.Errorf("delete = %v", out)
	}
	_, err := h.call(stRead, "a", map[string]any{"key": "plan/a"})
	wantCode(t, err, "KEY_NOT_FOUND")
	_, err = h.call(stDelete, "a", map[string]any{"key": "plan/a"})
	wantCode(t, err, "KEY_NOT_FOUND", `"plan/a"`)
	if got := keysOf(h, "a", "plan/"); !reflect.DeepEqual(got, []any{"plan/a/deep", "plan/b"}) {
		t.Errorf("after delete: %v", got)
	}
}

func TestStateInvalidInput(t *testing.T) {
	h, _ := stateHarness(t)
	long := strings.Repeat("k", 513)
	tests := []struct {
		uri  string
		in   map[string]any
		code string
	}{
		{stWrite, map[string]any{"key": "", "value": 1.0}, "INVALID_KEY"},
		{stWrite, map[string]any{"key": long, "value": 1.0}, "INVALID_KEY"},
		{stWrite, map[string]any{"key": "a\x00b", "value": 1.0}, "INVALID_KEY"},
		{stWrite, map[string]any{"key": "k"}, invoke.CodeInvalidInput},
		{stWrite, map[string]any{"key": "k", "value": strings.Repeat("v", 1<<20)}, "VALUE_TOO_LARGE"},
		{stRead, map[string]any{}, invoke.CodeInvalidInput},
		{stRead, map[string]any{"key": 3.0}, invoke.CodeInvalidInput},
		{stDelete, map[string]any{"key": "x\x00"}, "INVALID_KEY"},
		{stList, map[string]any{"prefix": long}, "INVALID_KEY"},
		{stCheckpoint, map[string]any{"name": strings.Repeat("n", 201)}, "INVALID_NAME"},
		{stRollback, map[string]any{}, invoke.CodeInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			h := h.in(t)
			_, err := h.call(tt.uri, "a", tt.in)
			wantCode(t, err, tt.code)
		})
	}
	// Exactly at the limits is fine.
	h.ok(stWrite, "a", map[string]any{"key": strings.Repeat("k", 512), "value": strings.Repeat("v", 1<<20-2)})
}

// TestStateNamespaces: agents never see each other's keys, whatever their
// ids hold.
func TestStateNamespaces(t *testing.T) {
	h, _ := stateHarness(t)
	callers := []string{"alice", "bob", "", "anonymous", "agent:alice", "alice/x", "alice%2Fx", "ali", "ünïcödé", "a\x00b"}
	for i, c := range callers {
		h.ok(stWrite, c, map[string]any{"key": "secret", "value": "of " + c})
		h.ok(stWrite, c, map[string]any{"key": fmt.Sprintf("own-%d", i), "value": true})
	}
	for i, c := range callers {
		if v := h.ok(stRead, c, map[string]any{"key": "secret"})["value"]; v != "of "+c {
			t.Errorf("caller %q reads %v, want its own value", c, v)
		}
		if got := keysOf(h, c, ""); !reflect.DeepEqual(got, []any{fmt.Sprintf("own-%d", i), "secret"}) {
			t.Errorf("caller %q lists %v, want only its own keys", c, got)
		}
	}
	_, err := h.call(stRead, "bob", map[string]any{"key": "own-0"})
	wantCode(t, err, "KEY_NOT_FOUND")
	_, err = h.call(stDelete, "bob", map[string]any{"key": "own-0"})
	wantCode(t, err, "KEY_NOT_FOUND")
	if h.ok(stRead, "alice", map[string]any{"key": "own-0"})["value"] != true {
		t.Error("bob's delete touched alice's key")
	}
	// The namespace mapping is injective on these ids and never holds "/".
	seen := map[string]string{}
	for _, c := range callers {
		ns := stateNamespace(c)
		if strings.Contains(ns, "/") || strings.IndexByte(ns, 0) >= 0 {
			t.Errorf("namespace of %q is %q: holds a separator", c, ns)
		}
		if other, dup := seen[ns]; dup {
			t.Errorf("callers %q and %q share namespace %q", c, other, ns)
		}
		seen[ns] = c
	}
}

func TestStateCheckpointRollback(t *testing.T) {
	h, spy := stateHarness(t)
	const agent = "planner"
	write := func(k string, v any) { h.ok(stWrite, agent, map[string]any{"key": k, "value": v}) }
	write("a", int64(1))
	write("b", map[string]any{"x": "y"})
	write("c", "same")
	cp := h.ok(stCheckpoint, agent, map[string]any{"name": "before"})
	id := cp["checkpoint"].(string)
	if cp["keys"] != int64(3) || cp["name"] != "before" || cp["created_at"] != "2026-01-15T17:30:00Z" {
		t.Errorf("checkpoint = %v", cp)
	}
	// Change one, delete one, add one, keep one.
	write("a", int64(10))
	h.ok(stDelete, agent, map[string]any{"key": "b"})
	write("d", "added later")
	// Another agent's state is not part of it.
	h.ok(stWrite, "other", map[string]any{"key": "z", "value": 1.0})

	spy.reset()
	out := h.ok(stRollback, agent, map[string]any{"checkpoint": id})
	want := map[string]any{"checkpoint": id, "name": "before", "restored": int64(2), "deleted": int64(1), "keys": int64(3)}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("rollback = %v, want %v", out, want)
	}
	if got := stateOf(h, agent); !reflect.DeepEqual(got, map[string]any{"a": int64(1), "b": map[string]any{"x": "y"}, "c": "same"}) {
		t.Errorf("state after rollback = %v", got)
	}
	if got := stateOf(h, "other"); !reflect.DeepEqual(got, map[string]any{"z": int64(1)}) {
		t.Errorf("rollback touched another agent: %v", got)
	}

	// The rollback was one ApplyDocs, and nothing else wrote.
	spy.mu.Lock()
	applies, puts, deletes := spy.applies, spy.puts, spy.deletes
	spy.mu.Unlock()
	if len(applies) != 1 || puts != 0 || deletes != 0 {
		t.Fatalf("rollback wrote with %d ApplyDocs, %d PutDoc, %d DeleteDoc; want exactly one ApplyDocs", len(applies), puts, deletes)
	}
	ns := stateNamespace(agent)
	wantOps := []registry.DocOp{
		{Kind: "state", Key: ns + "/d", Delete: true},
		{Kind: "state", Key: ns + "/a", Value: []byte(`1`)},
		{Kind: "state", Key: ns + "/b", Value: []byte(`{"x":"y"}`)},
	}
	if !reflect.DeepEqual(applies[0], wantOps) {
		t.Errorf("rollback ops:\n got %+v\nwant %+v", applies[0], wantOps)
	}

	// Rolling back again changes nothing, and the checkpoint stays usable.
	out = h.ok(stRollback, agent, map[string]any{"checkpoint": id})
	if out["restored"] != int64(0) || out["deleted"] != int64(0) {
		t.Errorf("second rollback = %v, want no change", out)
	}

	// A checkpoint of an empty namespace empties it.
	empty := h.ok(stCheckpoint, "fresh", map[string]any{})["checkpoint"].(string)
	h.ok(stWrite, "fresh", map[string]any{"key": "k1", "value": 1.0})
	h.ok(stWrite, "fresh", map[string]any{"key": "k2", "value": 2.0})
	if out := h.ok(stRollback, "fresh", map[string]any{"checkpoint": empty}); out["deleted"] != int64(2) || out["keys"] != int64(0) {
		t.Errorf("rollback to empty = %v", out)
	}
	if got := keysOf(h, "fresh", ""); len(got) != 0 {
		t.Errorf("after rollback to empty: %v", got)
	}
}

func TestStateCheckpointNotFound(t *testing.T) {
	h, _ := stateHarness(t)
	id := h.ok(stCheckpoint, "alice", map[string]any{})["checkpoint"].(string)
	for _, tt := range []struct{ caller, id string }{
		{"alice", "20990101T000000.000000000Z-000000000000"},
		{"alice", "../bob/" + id},
		{"alice", "bad\x00id"},
		{"bob", id}, // alice's checkpoint is not bob's
		{"", id},
	} {
		t.Run(tt.caller+"/"+tt.id, func(t *testing.T) {
			h := h.in(t)
			_, err := h.call(stRollback, tt.caller, map[string]any{"checkpoint": tt.id})
			wantCode(t, err, "CHECKPOINT_NOT_FOUND", "ossa:state/checkpoint")
		})
	}
}

// TestStateRollbackAllOrNothing: when the store refuses the rollback's one
// ApplyDocs, nothing of the state changes.
func TestStateRollbackAllOrNothing(t *testing.T) {
	h, spy := stateHarness(t)
	h.ok(stWrite, "a", map[string]any{"key": "k", "value": "old"})
	id := h.ok(stCheckpoint, "a", map[string]any{})["checkpoint"].(string)
	h.ok(stWrite, "a", map[string]any{"key": "k", "value": "new"})
	h.ok(stWrite, "a", map[string]any{"key": "extra", "value": "new"})
	before := stateOf(h, "a")

	spy.mu.Lock()
	spy.failApply = errors.New("disk I/O error")
	spy.mu.Unlock()
	_, err := h.call(stRollback, "a", map[string]any{"checkpoint": id})
	ie := wantCode(t, err, "STATE_STORE_UNAVAILABLE", "nothing was changed", "disk I/O error")
	if !ie.Retryable {
		t.Error("a store failure should be retryable")
	}
	spy.mu.Lock()
	spy.failApply = nil
	spy.mu.Unlock()
	if after := stateOf(h, "a"); !reflect.DeepEqual(after, before) {
		t.Errorf("a failed rollback changed the state: %v → %v", before, after)
	}
}

// TestStateRollbackSerialised: a write issued while a rollback is between
// its read of the state and its ApplyDocs waits for the rollback, so it is
// never half-undone: it lands after the restore and survives it.
func TestStateRollbackSerialised(t *testing.T) {
	h, spy := stateHarness(t)
	h.ok(stWrite, "a", map[string]any{"key": "k", "value": "old"})
	id := h.ok(stCheckpoint, "a", map[string]any{})["checkpoint"].(string)
	h.ok(stWrite, "a", map[string]any{"key": "k", "value": "changed"})

	writerDone := make(chan struct{})
	var landedDuringRollback atomic.Bool
	var once sync.Once
	spy.onList = func(kind, prefix string) {
		if kind != "state" {
			return
		}
		once.Do(func() {
			go func() {
				defer close(writerDone)
				if _, err := h.call(stWrite, "a", map[string]any{"key": "late", "value": "written during the rollback"}); err != nil {
					t.Errorf("concurrent write: %v", err)
				}
			}()
			// Give the writer ample time; it must still be waiting.
			select {
			case <-writerDone:
				landedDuringRollback.Store(true)
			case <-time.After(100 * time.Millisecond):
			}
		})
	}
	h.ok(stRollback, "a", map[string]any{"checkpoint": id})
	<-writerDone
	if landedDuringRollback.Load() {
		t.Fatal("a write landed between the rollback's read and its ApplyDocs")
	}
	if got := stateOf(h, "a"); !reflect.DeepEqual(got, map[string]any{"k": "old", "late": "written during the rollback"}) {
		t.Errorf("state = %v, want the checkpoint plus the later write", got)
	}
}

// TestStateConcurrent runs writers, checkpoints and rollbacks of several
// agents at once (run with -race); a final rollback restores its checkpoint
// exactly.
func TestStateConcurrent(t *testing.T) {
	h, _ := stateHarness(t)
	for i := range 5 {
		h.ok(stWrite, "a", map[string]any{"key": fmt.Sprintf("base%d", i), "value": int64(i)})
	}
	base := h.ok(stCheckpoint, "a", map[string]any{"name": "base"})["checkpoint"].(string)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				caller := []string{"a", "b"}[i%2]
				key := fmt.Sprintf("w%d-%d", w, i)
				if _, err := h.call(stWrite, caller, map[string]any{"key": key, "value": int64(i)}); err != nil {
					t.Errorf("write %s: %v", key, err)
				}
				if i%5 == 0 {
					if _, err := h.call(stRollback, "a", map[string]any{"checkpoint": base}); err != nil {
						t.Errorf("rollback: %v", err)
					}
				}
				if i%7 == 0 {
					if _, err := h.call(stCheckpoint, caller, map[string]any{}); err != nil {
						t.Errorf("checkpoint: %v", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	h.ok(stRollback, "a", map[string]any{"checkpoint": base})
	want := map[string]any{}
	for i := range 5 {
		want[fmt.Sprintf("base%d", i)] = int64(i)
	}
	if got := stateOf(h, "a"); !reflect.DeepEqual(got, want) {
		t.Errorf("after the final rollback: %v, want %v", got, want)
	}
	if got := len(keysOf(h, "b", "")); got != 4*7 {
		t.Errorf("agent b has %d keys, want the 28 it wrote (a's rollbacks must not touch it)", got)
	}
}

// TestStateCheckpointRetention: the newest 100 checkpoints are kept.
func TestStateCheckpointRetention(t *testing.T) {
	spy := &spyDocs{DocStore: openStore(t)}
	var tick atomic.Int64
	clock := func() time.Time { return exampleNow.Add(time.Duration(tick.Add(1)) * time.Second) }
	h := newHarness(t, Env{Docs: spy, Now: clock})
	h.ok(stWrite, "a", map[string]any{"key": "k", "value": 1.0})
	var ids []string
	for range stateMaxCheckpoint + 2 {
		ids = append(ids, h.ok(stCheckpoint, "a", map[string]any{})["checkpoint"].(string))
	}
	for i, id := range ids {
		_, err := h.call(stRollback, "a", map[string]any{"checkpoint": id})
		if i < 2 {
			wantCode(t, err, "CHECKPOINT_NOT_FOUND", "newest 100")
		} else if err != nil {
			t.Errorf("checkpoint %d (%s): %v", i, id, err)
		}
	}
	docs, err := spy.ListDocs(context.Background(), "state_checkpoint", stateNamespace("a")+"/")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != stateMaxCheckpoint {
		t.Errorf("%d checkpoints stored, want %d", len(docs), stateMaxCheckpoint)
	}
}

func TestStateWithoutStore(t *testing.T) {
	h := newHarness(t, Env{})
	_, err := h.call(stRead, "a", map[string]any{"key": "k"})
	if err == nil || !strings.Contains(err.Error(), "Env.Docs") {
		t.Errorf("err = %v, want one naming Env.Docs", err)
	}
}
