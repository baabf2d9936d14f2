package audit

import (
	"context"

	"github.com/caphub/caphub/capability"
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

// registered is the Data of a "registered" event.
type registered struct {
	Version string `json:"version"` // full semantic version
	Digest  string `json:"digest"`  // content digest (hex SHA-256)
}

// RecordRegistered appends a "registered" event for every result that
// created a version (Created false means identical content was already
// registered: nothing changed, nothing is recorded). Capability is the
// result's URI (@MAJOR.MINOR); Data holds the full version and the content
// digest. It stops at the first failed append.
func (l *Log) RecordRegistered(ctx context.Context, actor string, results []registry.RegisterResult) error {
	for _, r := range results {
		if !r.Created {
			continue
		}
		if _, err := l.Record(ctx, KindRegistered, actor, r.URI, registered{Version: r.Version, Digest: r.Digest}); err != nil {
			return err
		}
	}
	return nil
}

// RecordDeprecated appends a "deprecated" event for every version a
// deprecation marked: Capability is the version's full URI (as
// DeprecateResult lists it), Data the deprecation request (deprecated_by,
// sunset_date, migration_guide). It stops at the first failed append.
func (l *Log) RecordDeprecated(ctx context.Context, actor string, req registry.DeprecateRequest, res registry.DeprecateResult) error {
	for _, uri := range res.Deprecated {
		if _, err := l.Record(ctx, KindDeprecated, actor, uri, req); err != nil {
			return err
		}
	}
	return nil
}

// API returns api with every registration that creates a version and every
// deprecation appended to the log, by the actor that actor(ctx) names (nil:
// no actor). The change is made first and recorded after it: a failed
// append is logged (as RecordInvocation does) and does not turn the
// change, which is already committed, into an error.
func (l *Log) API(api registry.API, actor func(context.Context) string) registry.API {
	return &auditedAPI{API: api, log: l, actor: actor}
}

// auditedAPI is a registry.API that records its changes; see Log.API.
type auditedAPI struct {
	registry.API
	log   *Log
	actor func(context.Context) string
}

func (a *auditedAPI) who(ctx context.Context) string {
	if a.actor == nil {
		return ""
	}
	return a.actor(ctx)
}

// RegisterBatch registers and records the versions it created.
func (a *auditedAPI) RegisterBatch(ctx context.Context, defs []capability.Definition) ([]registry.RegisterResult, error) {
	res, err := a.API.RegisterBatch(ctx, defs)
	if err != nil {
		return res, err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := a.log.RecordRegistered(rctx, a.who(ctx), res); err != nil {
		a.log.log.ErrorContext(ctx, "the audit chain misses registrations", "err", err)
	}
	return res, nil
}

// Deprecate deprecates and records the versions it marked.
func (a *auditedAPI) Deprecate(ctx context.Context, scheme, domain, name, version string, req registry.DeprecateRequest) (registry.DeprecateResult, error) {
	res, err := a.API.Deprecate(ctx, scheme, domain, name, version, req)
	if err != nil {
		return res, err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := a.log.RecordDeprecated(rctx, a.who(ctx), req, res); err != nil {
		a.log.log.ErrorContext(ctx, "the audit chain misses deprecations", "err", err)
	}
	return res, nil
}
