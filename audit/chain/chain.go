// Package chain holds the records of the audit chain (the CCOS causal
// chain) and the interface of the store that keeps them: what package
// audit, which appends to and verifies the chain, and the registry's stores
// (store/sqlite, store/postgres), which keep it, share. It imports nothing
// of caphub, so both can use it without an import cycle.
package chain

import (
	"context"
	"encoding/json"
	"time"
)

// Event is one event of the audit chain: a registration, deprecation,
// policy decision, approval or invocation. Package audit assigns Seq, Time,
// PrevHash and Hash and checks the chain; a store only keeps events,
// exactly as given.
type Event struct {
	// Seq numbers the events 1, 2, 3, … without gaps; once the oldest
	// were pruned, the chain starts at the one after the Checkpoint.
	Seq int64 `json:"seq"`
	// Time is when the event was appended, UTC. Stores keep microseconds
	// and refuse a time with finer digits, which would not read back as
	// hashed.
	Time time.Time `json:"time"`
	// Kind says what happened: "registered", "deprecated",
	// "policy_decision", "approval", "invocation", …
	Kind string `json:"kind"`
	// Actor is who did it (a caller, a token's subject, a user); may be "".
	Actor string `json:"actor"`
	// Capability is the URI of the capability the event is about; may be "".
	Capability string `json:"capability"`
	// Data is the event's details, a JSON object in canonical form (RFC
	// 8785), kept byte for byte.
	Data json.RawMessage `json:"data"`
	// PrevHash is the previous event's Hash (64 zeros for event 1; the
	// first event kept after a prune links to the Checkpoint's Hash);
	// Hash covers this event's fields and PrevHash. Both are hex SHA-256.
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
}

// Filter selects audit events. Empty fields do not filter; the events come
// in ascending Seq.
type Filter struct {
	// Since keeps events whose Time is at or after it.
	Since time.Time
	// Until keeps events whose Time is before it (Since and Until make a
	// half-open interval, so that consecutive windows do not overlap).
	Until time.Time
	// Actor keeps the events of one actor, exactly ("token:ci-bot").
	Actor string
	// Capability keeps the events about a capability: equal to it, or, when
	// it carries no version ("ossa:security/scan"), about any version of it
	// ("ossa:security/scan@1.0").
	Capability string
	// Capabilities keeps the events whose Capability is one of these,
	// exactly (no version ranges): the events of a page of versions in one
	// query (audit.Log.CheckRegistrations). Empty does not filter.
	Capabilities []string
	// Kind keeps the events of one kind.
	Kind string
	// Limit is the most events to return; 0 means no limit.
	Limit int
	// AfterSeq keeps events whose Seq is greater: the Seq of the last event
	// of the previous page continues a listing.
	AfterSeq int64
}

// Store keeps the audit chain. Both registry stores implement it
// (store/storetest runs one behaviour suite, RunAudit, against both). All
// methods are safe for concurrent use, across processes and replicas too.
type Store interface {
	// AppendAudit appends one event atomically: in one write transaction
	// that holds the chain's lock (SQLite: the single writer of BEGIN
	// IMMEDIATE; PostgreSQL: a transaction-scoped advisory lock of the
	// schema), it reads the last event (nil when the chain is empty), calls
	// next with it, and inserts the event next returns, which must have Seq
	// last.Seq+1 (1 for the first). So concurrent appenders, in one process
	// or on several replicas, never fork the chain. A store may instead
	// call next with the last event its own previous append left, and then
	// check under the lock, in the same transaction, that it still is the
	// last one (PostgreSQL, to save a round trip): when it is not, nothing
	// is written and next is called again with the event read. next may be
	// called more than once (that way, or when the transaction is retried)
	// and must not call the store; an error from it aborts the append and
	// is returned wrapped.
	AppendAudit(ctx context.Context, next func(last *Event) (Event, error)) (Event, error)
	// AppendAuditBatch appends n events in one such transaction (a group
	// commit): next is called for i = 0..n-1, each time with the event
	// before it (the chain's last event, then the one just made); a retried
	// transaction calls it again from i = 0.
	AppendAuditBatch(ctx context.Context, n int, next func(last *Event, i int) (Event, error)) ([]Event, error)
	// ListAudit returns the events the filter selects in ascending Seq; an
	// empty slice, not an error, when there are none.
	ListAudit(ctx context.Context, f Filter) ([]Event, error)
	// ScanAudit calls fn with every event in ascending Seq, reading a page at
	// a time (memory stays bounded however long the chain is) and calling fn
	// outside of any database transaction. An error from fn stops the scan
	// and is returned as it is.
	ScanAudit(ctx context.Context, fn func(Event) error) error
	// AuditState returns the chain's checkpoint and its last event, read
	// together (one snapshot).
	AuditState(ctx context.Context) (State, error)
	// PruneAudit removes the oldest events, those after the checkpoint up to
	// event upTo (at most MaxPruneBatch of them, and never past the last
	// event), in one write transaction that holds the chain's lock as
	// AppendAudit does: it makes the new checkpoint (Seq, Hash and Time of
	// the last event it removes, Pruned), calls record with the chain's last
	// event and that checkpoint, appends the event record returns (which
	// records the cut in the chain, so the cut is tamper-evident) as
	// AppendAudit would, deletes the events and stores the checkpoint, with
	// At and Record from the appended event. It returns the new checkpoint,
	// or nil when there is nothing to remove (upTo is at or before the
	// checkpoint). It refuses, writing nothing, when an event in the range
	// is missing. record may be called more than once and must not call
	// the store; an error from it aborts the prune and is returned wrapped.
	PruneAudit(ctx context.Context, upTo int64, record func(last *Event, cp Checkpoint) (Event, error)) (*Checkpoint, error)
}

// MaxPruneBatch bounds how many events one PruneAudit removes: one write
// transaction deletes at most this many rows, so appenders on every replica
// wait for the chain's lock no longer than for a bounded delete.
const MaxPruneBatch = 10000

// Checkpoint is where the chain was last cut by its retention: events 1 to
// Seq were removed, and the first event kept links to Hash. Verify starts
// from it instead of from the genesis hash. The cut is recorded in the
// chain itself: event Record (of kind "pruned", appended after the events
// kept, in the prune's transaction) holds Seq, Hash, Time and Pruned, so a
// checkpoint that does not match its record, or whose record is gone, shows
// as a broken chain.
type Checkpoint struct {
	// Seq is the last removed event's Seq: events 1..Seq are gone.
	Seq int64 `json:"seq"`
	// Hash is the last removed event's Hash: the PrevHash of event Seq+1.
	Hash string `json:"hash"`
	// Time is the last removed event's Time.
	Time time.Time `json:"time"`
	// Pruned is how many events the prune that made this checkpoint
	// removed (from the previous checkpoint's Seq+1 to Seq).
	Pruned int64 `json:"pruned"`
	// At is when that prune ran: the Time of its record.
	At time.Time `json:"at"`
	// Record is the Seq of the event that records this checkpoint.
	Record int64 `json:"record"`
}

// State is the chain's checkpoint (nil when no event was ever removed) and
// its last event (nil when the chain is empty).
type State struct {
	Checkpoint *Checkpoint
	Last       *Event
}

// Hook records a write in the audit chain inside the write's own
// transaction, so that the change and the events that record it commit
// together or not at all: no crash, cancelled request or failed append can
// leave a change without its record, nor a record without its change.
// Package audit makes hooks (audit.Log is a registry.ChangeRecorder); the
// stores' audited writes (registry.Store's PutAudited, DeprecateAudited and
// ApplyDocsAudited) run them.
type Hook struct {
	// Events are the events that record the write: Kind, Actor, Capability
	// and Data (canonical JSON) set; Seq, Time, PrevHash and Hash are
	// Chain's to assign. For PutAudited, Events[i] records recs[i] and is
	// appended only when the Put creates that version (identical content
	// already stored changes nothing and records nothing); the other writes
	// append every event.
	Events []Event
	// Chain returns events (a subset of Events, in order) chained onto
	// last, the chain's last event (nil when it is empty): numbered from
	// last.Seq+1, stamped and hashed. The store calls it inside the write's
	// transaction while it holds the chain's lock, as AppendAudit does, and
	// may call it more than once (a retried transaction); it must not call
	// the store. An error from it rolls the whole write back.
	Chain func(last *Event, events []Event) ([]Event, error)
}
