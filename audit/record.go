package audit

import (
	"context"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
)

var _ invoke.Recorder = (*Log)(nil)

// RecordInvocation appends an "invocation" event for a finished call, so
// that a Log can be the invoke.Pipeline's Recorder: Actor is the caller,
// Capability the URI the call asked for, Data the whole invoke.Record (with
// the resolved version, the bindings tried and the outcome).
//
// By default the event is enqueued (see Enqueue): the call does not wait
// for the commit, which the writer makes within a moment, shared with the
// other events waiting. The price is that the last moment's events die
// with the process if it is killed (a clean shutdown writes them). With
// WithSyncInvocations it appends before it returns, so the event exists
// when the call does; it then gives up after a few seconds, and even when
// ctx is already cancelled it still tries: a failure is logged, never
// returned, and never fails the call.
func (l *Log) RecordInvocation(ctx context.Context, rec invoke.Record) {
	if !l.syncInvocations {
		l.Enqueue(KindInvocation, rec.Caller, rec.URI, rec)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if _, err := l.Record(ctx, KindInvocation, rec.Caller, rec.URI, rec); err != nil {
		l.log.ErrorContext(ctx, "the audit chain misses an invocation", "uri", rec.URI, "caller", rec.Caller, "code", rec.Code, "err", err)
	}
}

var _ registry.ChangeRecorder = (*Log)(nil)

// registered is the Data of a "registered" event.
type registered struct {
	Version string `json:"version"` // full semantic version
	Digest  string `json:"digest"`  // content digest (hex SHA-256)
}

// RegisteredHook returns the hook that records a registration batch: a
// "registered" event per result, which the store commits with the version
// when it creates it (a result whose identical content was already
// registered changes nothing and records nothing). Capability is the
// result's URI (@MAJOR.MINOR); Data holds the full version and the content
// digest.
func (l *Log) RegisteredHook(actor string, results []registry.RegisterResult) (*chain.Hook, error) {
	events := make([]chain.Event, len(results))
	for i, r := range results {
		b, err := marshalData(KindRegistered, registered{Version: r.Version, Digest: r.Digest})
		if err != nil {
			return nil, err
		}
		events[i] = chain.Event{Kind: KindRegistered, Actor: actor, Capability: r.URI, Data: b}
	}
	return l.Hook(events...)
}

// DeprecatedHook returns the hook that records a deprecation: a
// "deprecated" event for every version it marks, whose Capability is the
// version's full URI (as DeprecateResult lists it) and Data the request
// (deprecated_by, sunset_date, migration_guide).
func (l *Log) DeprecatedHook(actor string, req registry.DeprecateRequest, res registry.DeprecateResult) (*chain.Hook, error) {
	b, err := marshalData(KindDeprecated, req)
	if err != nil {
		return nil, err
	}
	events := make([]chain.Event, len(res.Deprecated))
	for i, uri := range res.Deprecated {
		events[i] = chain.Event{Kind: KindDeprecated, Actor: actor, Capability: uri, Data: b}
	}
	return l.Hook(events...)
}
