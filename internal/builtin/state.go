package builtin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
)

// The OSSA state domain (ossa:state/*@1.0) keeps durable key/value state per
// agent in Env.Docs, the registry's document store.
//
// Namespaces. Each caller (invoke.Call.Caller, an agent id) has its own
// namespace; an agent never sees another's keys. The namespace of a caller
// is "agent:" followed by the caller id path-escaped (url.PathEscape: "/",
// "%", control characters and every non-ASCII byte become %XX), so it
// never contains "/" and two callers never share one. Anonymous calls
// (Caller "") share the namespace "anonymous", which no agent id can
// produce (agents' namespaces all start with "agent:").
//
// Documents.
//
//	kind "state"             key "<namespace>/<key>"   value: the JSON value as written
//	kind "state_checkpoint"  key "<namespace>/<id>"    value: {"id", "name", "created_at", "entries": {key: value}}
//
// Since a namespace holds no "/", "<namespace>/" prefixes exactly that
// namespace's documents, and since keys follow it unchanged, the store's
// byte order of document keys is the byte order of the state keys: list
// with a prefix is one range scan. Keys are 1 to 512 bytes of UTF-8 without
// NUL (which the stores cannot hold); values are any JSON up to 1 MiB.
//
// Checkpoints. checkpoint copies the whole namespace with one ListDocs (one
// consistent read) into one document; its id is the UTC creation time and a
// random suffix, so ids sort by age. The newest 100 checkpoints of a
// namespace are kept: creating one more deletes the oldest in the same
// ApplyDocs. rollback restores a checkpoint with one ApplyDocs (all or
// nothing): deletes of the keys the checkpoint does not hold, puts of the
// values that differ.
//
// Concurrency. Writes, deletes, checkpoints and rollbacks of one namespace
// are serialised within this process, so no write lands between the read
// and the write of a rollback: a rollback restores exactly the checkpoint.
// Several caphub processes on one PostgreSQL database do not share this
// lock; a write by another process during a rollback's read-then-apply may
// survive it.

// Document kinds of the state domain.
const (
	stateKind      = "state"
	checkpointKind = "state_checkpoint"
)

// State limits.
const (
	stateMaxKeyBytes   = 512
	stateMaxValueBytes = 1 << 20
	stateMaxNameBytes  = 200
	stateMaxCheckpoint = 100 // checkpoints kept per namespace
)

// anonymousNamespace is the namespace of calls without a caller.
const anonymousNamespace = "anonymous"

// stateNamespace returns the document-key namespace of a caller (see the
// layout above): "agent:<path-escaped caller>", or "anonymous" for "".
func stateNamespace(caller string) string {
	if caller == "" {
		return anonymousNamespace
	}
	return "agent:" + url.PathEscape(caller)
}

// nsLocks serialise the writers of a namespace (striped by a hash of the
// namespace, so memory stays bounded). They are package-wide so that every
// Handlers map of the process shares them.
var nsLocks [64]sync.Mutex

func lockNamespace(ns string) func() {
	h := fnv.New32a()
	h.Write([]byte(ns))
	m := &nsLocks[h.Sum32()%uint32(len(nsLocks))]
	m.Lock()
	return m.Unlock
}

func stateEntries() []entry {
	key := prop("string", "The state key: 1 to 512 bytes of text (no NUL). Keys sort by byte order, so a shared prefix (\"plan/\", \"task:\") groups them.", "minLength", int64(1), "maxLength", int64(stateMaxKeyBytes))
	keyNotFound := errDef("KEY_NOT_FOUND", false, "The key has no value in the caller's namespace.")
	invalidKey := errDef("INVALID_KEY", false, "The key is empty, longer than 512 bytes or holds a NUL character.")
	storeErr := errDef("STATE_STORE_UNAVAILABLE", true, "The state store failed to read or write; try again.")
	desc := func(s string) string {
		return s + " State is durable and private to the calling agent (anonymous callers share one namespace)."
	}
	defs := []struct {
		d capability.Definition
		h func(e *env) Handler
	}{
		{capability.Definition{
			Name: "read", Title: "Read state value",
			Description: desc("Read the value stored under a key."),
			Input:       object(true, map[string]any{"key": key}, "key"),
			Output: object(false, map[string]any{
				"key":        prop("string", "The key."),
				"value":      prop("", "The stored value (any JSON)."),
				"updated_at": prop("string", "When the value was last written (RFC 3339, UTC).", "format", "date-time"),
			}, "key", "value"),
			Errors:   []capability.ErrorDef{keyNotFound, invalidKey, storeErr},
			Effects:  []string{"read_only"},
			Examples: []capability.Example{{Input: map[string]any{"key": "plan/step"}, Output: map[string]any{"key": "plan/step", "value": int64(3), "updated_at": "2026-01-15T17:30:00Z"}}},
		}, stateRead},
		{capability.Definition{
			Name: "write", Title: "Write state value",
			Description: desc("Store a value (any JSON, up to 1 MiB encoded) under a key, replacing what was there."),
			Input:       object(true, map[string]any{"key": key, "value": prop("", "The value to store: any JSON, null included.")}, "key", "value"),
			Output: object(false, map[string]any{
				"key":     prop("string", "The key."),
				"written": prop("boolean", "Always true."),
			}, "key", "written"),
			Errors: []capability.ErrorDef{invalidKey,
				errDef("VALUE_TOO_LARGE", false, "The value encodes to more than 1 MiB of JSON; store it in smaller parts."),
				storeErr},
			Effects:  []string{"writes", "idempotent"},
			Examples: []capability.Example{{Input: map[string]any{"key": "plan/step", "value": int64(3)}, Output: map[string]any{"key": "plan/step", "written": true}}},
		}, stateWrite},
		{capability.Definition{
			Name: "list", Title: "List state keys",
			Description: desc("List the caller's state keys in byte order, optionally only those starting with a prefix."),
			Input:       object(true, map[string]any{"prefix": prop("string", "Only keys starting with this text; all keys when absent or empty.", "maxLength", int64(stateMaxKeyBytes))}),
			Output: object(false, map[string]any{
				"keys":  prop("array", "The keys, in byte order.", "items", map[string]any{"type": "string"}),
				"count": prop("integer", "How many keys."),
			}, "keys", "count"),
			Errors: []capability.ErrorDef{
				errDef("INVALID_KEY", false, "The prefix is longer than 512 bytes or holds a NUL character."),
				storeErr},
			Effects:  []string{"read_only"},
			Examples: []capability.Example{{Input: map[string]any{"prefix": "plan/"}, Output: map[string]any{"keys": anyStrings("plan/goal", "plan/step"), "count": int64(2)}}},
		}, stateList},
		{capability.Definition{
			Name: "delete", Title: "Delete state value",
			Description: desc("Delete the value stored under a key."),
			Input:       object(true, map[string]any{"key": key}, "key"),
			Output: object(false, map[string]any{
				"key":     prop("string", "The key."),
				"deleted": prop("boolean", "Always true."),
			}, "key", "deleted"),
			Errors:   []capability.ErrorDef{keyNotFound, invalidKey, storeErr},
			Effects:  []string{"writes", "destructive"},
			Examples: []capability.Example{{Input: map[string]any{"key": "plan/step"}, Output: map[string]any{"key": "plan/step", "deleted": true}}},
		}, stateDelete},
		{capability.Definition{
			Name: "checkpoint", Title: "Create state checkpoint",
			Description: desc(fmt.Sprintf("Snapshot every key and value of the caller's state, atomically, and return the checkpoint's id for rollback. The newest %d checkpoints are kept.", stateMaxCheckpoint)),
			Input:       object(true, map[string]any{"name": prop("string", "An optional label (up to 200 bytes), returned with the checkpoint.", "maxLength", int64(stateMaxNameBytes))}),
			Output: object(false, map[string]any{
				"checkpoint": prop("string", "The checkpoint id: give it to ossa:state/rollback."),
				"name":       prop("string", "The label, when one was given."),
				"keys":       prop("integer", "How many keys the checkpoint holds."),
				"created_at": prop("string", "When it was taken (RFC 3339, UTC).", "format", "date-time"),
			}, "checkpoint", "keys", "created_at"),
			Errors: []capability.ErrorDef{
				errDef("INVALID_NAME", false, "The name is longer than 200 bytes or holds a NUL character."),
				storeErr},
			Effects: []string{"writes"},
			Examples: []capability.Example{{Input: map[string]any{"name": "before refactor"},
				Output: map[string]any{"checkpoint": "20260115T173000.000000000Z-5f2a9c01b7e3", "name": "before refactor", "keys": int64(2), "created_at": "2026-01-15T17:30:00Z"}}},
		}, stateCheckpoint},
		{capability.Definition{
			Name: "rollback", Title: "Roll back to checkpoint",
			Description: desc("Restore the caller's state to a checkpoint, atomically: keys written since are deleted, deleted ones come back, changed ones get their old values."),
			Input:       object(true, map[string]any{"checkpoint": prop("string", "The checkpoint id ossa:state/checkpoint returned.", "minLength", int64(1))}, "checkpoint"),
			Output: object(false, map[string]any{
				"checkpoint": prop("string", "The checkpoint id."),
				"name":       prop("string", "Its label, when it has one."),
				"restored":   prop("integer", "How many keys were written back (missing or changed since the checkpoint)."),
				"deleted":    prop("integer", "How many keys written since the checkpoint were deleted."),
				"keys":       prop("integer", "How many keys the state holds now."),
			}, "checkpoint", "restored", "deleted", "keys"),
			Errors: []capability.ErrorDef{
				errDef("CHECKPOINT_NOT_FOUND", false, fmt.Sprintf("The caller has no checkpoint with that id (it never existed, belongs to another agent, or is older than the newest %d).", stateMaxCheckpoint)),
				storeErr},
			Effects:  []string{"writes", "destructive"},
			Examples: []capability.Example{{Input: map[string]any{"checkpoint": "20260115T173000.000000000Z-5f2a9c01b7e3"}, Output: map[string]any{"checkpoint": "20260115T173000.000000000Z-5f2a9c01b7e3", "name": "before refactor", "restored": int64(1), "deleted": int64(1), "keys": int64(2)}}},
		}, stateRollback},
	}
	out := make([]entry, len(defs))
	for i, x := range defs {
		x.d.Domain = "state"
		x.d.Keywords = []string{"state", "memory", "key-value", "persistence"}
		h := x.h
		out[i] = entry{def: define(x.d), handler: func(e *env) Handler { return h(e) }}
	}
	return out
}

// stateStore returns the document store, or says that caphub runs without one.
func (e *env) stateStore() (registry.DocStore, error) {
	if e.Docs == nil {
		return nil, errors.New("ossa:state is not available: caphub was started without a document store (builtin.Env.Docs is nil); run it on a database")
	}
	return e.Docs, nil
}

// storeFailure reports a failure of the document store.
func storeFailure(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &invoke.Error{Code: "STATE_STORE_UNAVAILABLE", Retryable: true, Message: fmt.Sprintf("%s: %v", what, err), Cause: err}
}

// checkText checks a key, prefix or name: at most max bytes, valid UTF-8,
// no NUL; empty only when allowEmpty.
func checkText(code, what, s string, max int, allowEmpty bool) error {
	switch {
	case s == "" && !allowEmpty:
		return invoke.Errorf(code, false, "the %s is empty: give 1 to %d bytes of text", what, max)
	case len(s) > max:
		return invoke.Errorf(code, false, "the %s is %d bytes long: give at most %d", what, len(s), max)
	case !utf8.ValidString(s):
		return invoke.Errorf(code, false, "the %s is not valid UTF-8 text", what)
	case strings.IndexByte(s, 0) >= 0:
		return invoke.Errorf(code, false, "the %s %q holds a NUL character, which state cannot store: remove it", what, s)
	}
	return nil
}

// keyInput reads and checks the key field.
func keyInput(in map[string]any) (string, error) {
	key, ok, err := stringField(in, "key")
	if err != nil {
		return "", err
	}
	if !ok {
		return "", invalidInput("field \"key\" is missing: give the state key")
	}
	return key, checkText("INVALID_KEY", "key", key, stateMaxKeyBytes, false)
}

func docKey(ns, key string) string { return ns + "/" + key }

// stateHandler is a state built-in: op runs with the document store.
func stateHandler(e *env, op func(ctx context.Context, call *invoke.Call, docs registry.DocStore) (any, error)) Handler {
	return func(ctx context.Context, call *invoke.Call) (any, error) {
		docs, err := e.stateStore()
		if err != nil {
			return nil, err
		}
		return op(ctx, call, docs)
	}
}

// optionalText reads an optional text field of a state operation and
// checks it (code and what name it in errors).
func optionalText(in map[string]any, field, code, what string, max int) (string, error) {
	s, _, err := stringField(in, field)
	if err != nil {
		return "", err
	}
	return s, checkText(code, what, s, max, true)
}

func stateRead(e *env) Handler {
	return stateHandler(e, func(ctx context.Context, call *invoke.Call, docs registry.DocStore) (any, error) {
		key, err := keyInput(inputOf(call))
		if err != nil {
			return nil, err
		}
		ns := stateNamespace(callerOf(call))
		doc, err := docs.GetDoc(ctx, stateKind, docKey(ns, key))
		if errors.Is(err, registry.ErrNotFound) {
			return nil, invoke.Errorf("KEY_NOT_FOUND", false, "state key %q has no value for %s: write it first (ossa:state/write), or list the keys (ossa:state/list)", key, callerName(call))
		}
		if err != nil {
			return nil, storeFailure(fmt.Sprintf("read state key %q", key), err)
		}
		v, err := decodeJSON(doc.Value)
		if err != nil {
			return nil, fmt.Errorf("read state key %q: the stored value is not JSON (%v): the database is damaged", key, err)
		}
		out := map[string]any{"key": key, "value": v}
		if !doc.UpdatedAt.IsZero() {
			out["updated_at"] = doc.UpdatedAt.UTC().Format(time.RFC3339Nano)
		}
		return out, nil
	})
}

func stateWrite(e *env) Handler {
	return stateHandler(e, func(ctx context.Context, call *invoke.Call, docs registry.DocStore) (any, error) {
		in := inputOf(call)
		key, err := keyInput(in)
		if err != nil {
			return nil, err
		}
		value, present := in["value"]
		if !present {
			return nil, invalidInput("field \"value\" is missing: give the value to store (null is a value)")
		}
		b, err := json.Marshal(value)
		if err != nil {
			return nil, invalidInput("the value cannot be stored as JSON: %v", err)
		}
		if len(b) > stateMaxValueBytes {
			return nil, invoke.Errorf("VALUE_TOO_LARGE", false, "the value of %q encodes to %d bytes of JSON, over the limit of %d: store it in smaller parts under several keys", key, len(b), stateMaxValueBytes)
		}
		ns := stateNamespace(callerOf(call))
		unlock := lockNamespace(ns)
		defer unlock()
		if err := docs.PutDoc(ctx, stateKind, docKey(ns, key), b); err != nil {
			return nil, storeFailure(fmt.Sprintf("write state key %q", key), err)
		}
		return map[string]any{"key": key, "written": true}, nil
	})
}

func stateList(e *env) Handler {
	return stateHandler(e, func(ctx context.Context, call *invoke.Call, docs registry.DocStore) (any, error) {
		prefix, err := optionalText(inputOf(call), "prefix", "INVALID_KEY", "prefix", stateMaxKeyBytes)
		if err != nil {
			return nil, err
		}
		ns := stateNamespace(callerOf(call))
		list, err := docs.ListDocs(ctx, stateKind, docKey(ns, prefix))
		if err != nil {
			return nil, storeFailure("list state keys", err)
		}
		keys := make([]any, len(list))
		for i, d := range list {
			keys[i] = strings.TrimPrefix(d.Key, ns+"/")
		}
		return map[string]any{"keys": keys, "count": int64(len(keys))}, nil
	})
}

func stateDelete(e *env) Handler {
	return stateHandler(e, func(ctx context.Context, call *invoke.Call, docs registry.DocStore) (any, error) {
		key, err := keyInput(inputOf(call))
		if err != nil {
			return nil, err
		}
		ns := stateNamespace(callerOf(call))
		unlock := lockNamespace(ns)
		defer unlock()
		err = docs.DeleteDoc(ctx, stateKind, docKey(ns, key))
		if errors.Is(err, registry.ErrNotFound) {
			return nil, invoke.Errorf("KEY_NOT_FOUND", false, "state key %q has no value for %s, so there is nothing to delete", key, callerName(call))
		}
		if err != nil {
			return nil, storeFailure(fmt.Sprintf("delete state key %q", key), err)
		}
		return map[string]any{"key": key, "deleted": true}, nil
	})
}

// checkpointDoc is the value of a state_checkpoint document.
type checkpointDoc struct {
	ID        string                     `json:"id"`
	Name      string                     `json:"name,omitempty"`
	CreatedAt string                     `json:"created_at"`
	Entries   map[string]json.RawMessage `json:"entries"`
}

// newCheckpointID returns an id that sorts by creation time: the UTC time to
// the nanosecond and 48 random bits.
func newCheckpointID(now time.Time) string {
	var r [6]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return now.UTC().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(r[:])
}

func stateCheckpoint(e *env) Handler {
	return stateHandler(e, func(ctx context.Context, call *invoke.Call, docs registry.DocStore) (any, error) {
		name, err := optionalText(inputOf(call), "name", "INVALID_NAME", "checkpoint name", stateMaxNameBytes)
		if err != nil {
			return nil, err
		}
		ns := stateNamespace(callerOf(call))
		unlock := lockNamespace(ns)
		defer unlock()

		// One ListDocs is one consistent read of the namespace.
		current, err := docs.ListDocs(ctx, stateKind, ns+"/")
		if err != nil {
			return nil, storeFailure("checkpoint: read the state", err)
		}
		now := e.Now().UTC()
		cp := checkpointDoc{ID: newCheckpointID(now), Name: name, CreatedAt: now.Format(time.RFC3339Nano), Entries: make(map[string]json.RawMessage, len(current))}
		for _, d := range current {
			cp.Entries[strings.TrimPrefix(d.Key, ns+"/")] = json.RawMessage(d.Value)
		}
		b, err := json.Marshal(cp)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: encode: %w", err)
		}
		ops := []registry.DocOp{{Kind: checkpointKind, Key: docKey(ns, cp.ID), Value: b}}
		// Keep the newest stateMaxCheckpoint: ids sort by age.
		existing, err := docs.ListDocs(ctx, checkpointKind, ns+"/")
		if err != nil {
			return nil, storeFailure("checkpoint: list the checkpoints", err)
		}
		for i := 0; i < len(existing)+1-stateMaxCheckpoint; i++ {
			ops = append(ops, registry.DocOp{Kind: checkpointKind, Key: existing[i].Key, Delete: true})
		}
		if err := docs.ApplyDocs(ctx, ops); err != nil {
			return nil, storeFailure("checkpoint: store it", err)
		}
		out := map[string]any{"checkpoint": cp.ID, "keys": int64(len(cp.Entries)), "created_at": cp.CreatedAt}
		if name != "" {
			out["name"] = name
		}
		return out, nil
	})
}

func stateRollback(e *env) Handler {
	return stateHandler(e, func(ctx context.Context, call *invoke.Call, docs registry.DocStore) (any, error) {
		id, ok, err := stringField(inputOf(call), "checkpoint")
		if err != nil {
			return nil, err
		}
		if !ok || id == "" {
			return nil, invalidInput("field \"checkpoint\" is missing: give the id ossa:state/checkpoint returned")
		}
		notFound := func() error {
			return invoke.Errorf("CHECKPOINT_NOT_FOUND", false, "%s has no checkpoint %q: use an id ossa:state/checkpoint returned to the same agent (only the newest %d are kept)", callerName(call), id, stateMaxCheckpoint)
		}
		if checkText("CHECKPOINT_NOT_FOUND", "checkpoint", id, 1024, false) != nil {
			return nil, notFound()
		}
		ns := stateNamespace(callerOf(call))
		unlock := lockNamespace(ns)
		defer unlock()

		doc, err := docs.GetDoc(ctx, checkpointKind, docKey(ns, id))
		if errors.Is(err, registry.ErrNotFound) {
			return nil, notFound()
		}
		if err != nil {
			return nil, storeFailure(fmt.Sprintf("rollback: read checkpoint %q", id), err)
		}
		var cp checkpointDoc
		if err := json.Unmarshal(doc.Value, &cp); err != nil {
			return nil, fmt.Errorf("rollback: checkpoint %q cannot be decoded (%v): the database is damaged; take a new checkpoint", id, err)
		}
		current, err := docs.ListDocs(ctx, stateKind, ns+"/")
		if err != nil {
			return nil, storeFailure("rollback: read the state", err)
		}
		ops, restored, deleted := rollbackOps(ns, cp.Entries, current)
		// One ApplyDocs: the state becomes the checkpoint's or stays as it was.
		if err := docs.ApplyDocs(ctx, ops); err != nil {
			return nil, storeFailure(fmt.Sprintf("rollback to checkpoint %q (nothing was changed)", id), err)
		}
		out := map[string]any{"checkpoint": id, "restored": int64(restored), "deleted": int64(deleted), "keys": int64(len(cp.Entries))}
		if cp.Name != "" {
			out["name"] = cp.Name
		}
		return out, nil
	})
}

// rollbackOps returns the ops that turn the current documents of namespace
// ns into the snapshot: a delete for every key the snapshot lacks, a put for
// every snapshot value missing or different now. Keys are sorted (current
// is in key order; snapshot keys are sorted), so the ops are deterministic.
func rollbackOps(ns string, snapshot map[string]json.RawMessage, current []registry.Doc) (ops []registry.DocOp, restored, deleted int) {
	now := make(map[string][]byte, len(current))
	for _, d := range current {
		key := strings.TrimPrefix(d.Key, ns+"/")
		now[key] = d.Value
		if _, keep := snapshot[key]; !keep {
			ops = append(ops, registry.DocOp{Kind: stateKind, Key: d.Key, Delete: true})
			deleted++
		}
	}
	keys := make([]string, 0, len(snapshot))
	for k := range snapshot {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := snapshot[k]
		if cur, ok := now[k]; ok && bytes.Equal(cur, v) {
			continue
		}
		ops = append(ops, registry.DocOp{Kind: stateKind, Key: docKey(ns, k), Value: []byte(v)})
		restored++
	}
	return ops, restored, deleted
}

func callerOf(call *invoke.Call) string {
	if call == nil {
		return ""
	}
	return call.Caller
}

// callerName names the caller in messages.
func callerName(call *invoke.Call) string {
	if c := callerOf(call); c != "" {
		return fmt.Sprintf("agent %q", c)
	}
	return "the anonymous namespace"
}
