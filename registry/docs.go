package registry

import (
	"context"
	"fmt"
	"time"

	"github.com/caphub/caphub/audit/chain"
)

// Doc is a JSON document a store keeps beside the capabilities, for the
// registry's other records: saved MCP servers and their last listing,
// agents, tokens, native state. Kind groups documents ("mcp_server",
// "agent", …); Key is unique within a kind.
type Doc struct {
	Kind      string
	Key       string
	Value     []byte // JSON
	UpdatedAt time.Time
}

// DocOp is one write of ApplyDocs: a put of Value, or a delete when Delete
// is set.
type DocOp struct {
	Kind   string
	Key    string
	Value  []byte
	Delete bool
}

// DocStore keeps documents: the part of Store that the registry's other
// records need. Both stores implement it (store/storetest runs one
// behaviour suite against both).
type DocStore interface {
	// PutDoc creates or replaces a document.
	PutDoc(ctx context.Context, kind, key string, value []byte) error
	// GetDoc returns a document; the error wraps ErrNotFound and names it
	// when there is none.
	GetDoc(ctx context.Context, kind, key string) (Doc, error)
	// ListDocs returns the documents of a kind whose key starts with prefix,
	// ordered by key (byte order).
	ListDocs(ctx context.Context, kind, prefix string) ([]Doc, error)
	// DeleteDoc deletes a document; ErrNotFound when there is none.
	DeleteDoc(ctx context.Context, kind, key string) error
	// ApplyDocs applies every op in one transaction: all or nothing. A
	// delete of a missing document is not an error here.
	ApplyDocs(ctx context.Context, ops []DocOp) error
	// ApplyDocsAudited is ApplyDocs recording the ops with every event of
	// hook.Events in the same transaction (see Store); a nil hook makes
	// the plain ApplyDocs.
	ApplyDocsAudited(ctx context.Context, ops []DocOp, hook *chain.Hook) error
}

// ApplyDocsRecorded applies ops to docs in one transaction together with
// the audit event that records them (rec.ChangeHook(kind, actor,
// capability, data)), so that a change to an agent, a saved server or an
// approval is never stored without its event, nor the event without it.
// Without a recorder (rec nil) it applies the ops alone.
func ApplyDocsRecorded(ctx context.Context, docs DocStore, rec ChangeRecorder, ops []DocOp, kind, actor, capability string, data any) error {
	if rec == nil {
		return docs.ApplyDocs(ctx, ops)
	}
	hook, err := rec.ChangeHook(kind, actor, capability, data)
	if err != nil {
		return fmt.Errorf("record %s: %w: nothing was written", kind, err)
	}
	return docs.ApplyDocsAudited(ctx, ops, hook)
}
