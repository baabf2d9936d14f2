package registry

import (
	"context"
	"encoding/json"
	"time"
)

// AuditEvent is one event of the audit chain (the CCOS causal chain): a
// registration, deprecation, policy decision, approval or invocation. Package
// audit assigns Seq, Time, PrevHash and Hash and checks the chain; a store
// only keeps events, exactly as given. It lives here, not in package audit,
// so that the stores can implement AuditStore without importing audit (and
// what audit imports); audit.Event is an alias of it.
type AuditEvent struct {
	// Seq numbers the events 1, 2, 3, … without gaps.
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
	// PrevHash is the previous event's Hash (64 zeros for the first event);
	// Hash covers this event's fields and PrevHash. Both are hex SHA-256.
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
}

// AuditFilter selects audit events. Empty fields do not filter; the events
// come in ascending Seq.
type AuditFilter struct {
	// Since keeps events whose Time is at or after it.
	Since time.Time
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

// AuditStore keeps the audit chain. Both stores implement it (store/storetest
// runs one behaviour suite, RunAudit, against both). All methods are safe
// for concurrent use, across processes and replicas too.
type AuditStore interface {
	// AppendAudit appends one event atomically: in one write transaction
	// that holds the chain's lock (SQLite: the single writer of BEGIN
	// IMMEDIATE; PostgreSQL: a transaction-scoped advisory lock of the
	// schema), it reads the last event (nil when the chain is empty), calls
	// next with it, and inserts the event next returns, which must have Seq
	// last.Seq+1 (1 for the first). So concurrent appenders, in one process
	// or on several replicas, never fork the chain. next may be called more
	// than once (when the transaction is retried) and must not call the
	// store; an error from it aborts the append and is returned wrapped.
	AppendAudit(ctx context.Context, next func(last *AuditEvent) (AuditEvent, error)) (AuditEvent, error)
	// AppendAuditBatch appends n events in one such transaction (a group
	// commit): next is called for i = 0..n-1, each time with the event
	// before it (the chain's last event, then the one just made); a retried
	// transaction calls it again from i = 0.
	AppendAuditBatch(ctx context.Context, n int, next func(last *AuditEvent, i int) (AuditEvent, error)) ([]AuditEvent, error)
	// ListAudit returns the events the filter selects in ascending Seq; an
	// empty slice, not an error, when there are none.
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditEvent, error)
	// ScanAudit calls fn with every event in ascending Seq, reading a page at
	// a time (memory stays bounded however long the chain is) and calling fn
	// outside of any database transaction. An error from fn stops the scan
	// and is returned as it is.
	ScanAudit(ctx context.Context, fn func(AuditEvent) error) error
}

// AuditHook records a write in the audit chain inside the write's own
// transaction, so that the change and the events that record it commit
// together or not at all: no crash, cancelled request or failed append can
// leave a change without its record, nor a record without its change.
// Package audit makes hooks (audit.Log is a ChangeRecorder); the stores'
// audited writes (AuditedStore) run them.
type AuditHook struct {
	// Events are the events that record the write: Kind, Actor, Capability
	// and Data (canonical JSON) set; Seq, Time, PrevHash and Hash are
	// Chain's to assign. For PutAudited, Events[i] records recs[i] and is
	// appended only when the Put creates that version (identical content
	// already stored changes nothing and records nothing); the other writes
	// append every event.
	Events []AuditEvent
	// Chain returns events (a subset of Events, in order) chained onto
	// last, the chain's last event (nil when it is empty): numbered from
	// last.Seq+1, stamped and hashed. The store calls it inside the write's
	// transaction while it holds the chain's lock, as AppendAudit does, and
	// may call it more than once (a retried transaction); it must not call
	// the store. An error from it rolls the whole write back.
	Chain func(last *AuditEvent, events []AuditEvent) ([]AuditEvent, error)
}

// AuditedStore commits a write and the audit events that record it in one
// database transaction. Both stores implement it; a nil hook makes the
// plain write (Put, Deprecate, ApplyDocs). In the transaction the store
// makes the write, then takes the audit chain's lock (SQLite: its single
// writer already holds it; PostgreSQL: the advisory lock AppendAudit takes,
// taken last so that it is held only until the commit), reads the chain's
// last event, calls hook.Chain and inserts the events it returns. When any
// step fails nothing is written, neither the change nor its events.
type AuditedStore interface {
	// PutAudited is Put recording each created version with its event of
	// hook.Events (one per record).
	PutAudited(ctx context.Context, recs []Record, hook *AuditHook) ([]PutResult, error)
	// DeprecateAudited is Deprecate recording the deprecation with every
	// event of hook.Events.
	DeprecateAudited(ctx context.Context, ds []Deprecation, hook *AuditHook) ([]Record, error)
	// ApplyDocsAudited is ApplyDocs recording the ops with every event of
	// hook.Events.
	ApplyDocsAudited(ctx context.Context, ops []DocOp, hook *AuditHook) error
}

// ChangeRecorder makes the audit hooks that record the registry's changes
// (package audit's Log is one): a Service given one (WithRecorder) commits
// every registration and deprecation together with its events, and
// ApplyDocsRecorded does the same for documents (agents, saved servers,
// approvals).
type ChangeRecorder interface {
	// RegisteredHook returns the hook of a registration batch: one event per
	// result, of which the store appends those of the versions it creates.
	RegisteredHook(actor string, results []RegisterResult) (*AuditHook, error)
	// DeprecatedHook returns the hook of a deprecation: one event per
	// version res.Deprecated lists.
	DeprecatedHook(actor string, req DeprecateRequest, res DeprecateResult) (*AuditHook, error)
	// ChangeHook returns the hook of one other change: an event of kind
	// (such as "agent_applied"), by actor, about capability ("" when it is
	// about none), whose Data is data encoded as a JSON object.
	ChangeHook(kind, actor, capability string, data any) (*AuditHook, error)
}
