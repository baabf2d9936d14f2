// Package audit is caphub's audit chain (the CCOS causal chain): an
// append-only log in which every registration, deprecation, policy
// decision, approval, agent and saved-server change and invocation is an
// Event whose Hash covers its content and the previous event's Hash.
// Changing, removing or reordering a stored event breaks the chain at that
// event, and Verify says where.
//
// The chain lives in the registry's database (chain.Store, which both
// stores implement); Append assigns the sequence number, time and
// hashes inside the store's append transaction, so concurrent appenders —
// in one process or on several replicas — never fork it. Changes are never
// recorded after the fact: a Log is a registry.ChangeRecorder whose hooks
// the store runs inside the change's own transaction (the record is never
// shorter than what happened), and CheckRegistrations finds any stored
// version without its "registered" event. Only invocations and policy
// decisions are queued (Enqueue), for throughput.
//
// Retention: the chain grows with every call it records, so a Log can be
// told how much of it to keep (WithRetention, or Prune by hand): the
// newest N events, those younger than a duration, or both. Prune removes
// the oldest events in transactions of at most chain.MaxPruneBatch, each
// holding the chain's lock like an append (appenders on every replica wait
// for one batch at most, and never see a half-pruned chain). Each
// transaction stores a checkpoint (chain.Checkpoint: the last removed
// event's Seq, Hash and Time, how many it removed, when) and appends a
// "pruned" event recording it, so the chain after the cut records that the
// cut happened. Verify then starts from the checkpoint instead of from the
// genesis hash: the first event kept must be the one after it and link to
// its hash, and the "pruned" event it names must match it. Rows deleted
// from the start of the chain without a checkpoint, a checkpoint moved over
// deleted rows, or one whose record is gone all show as breaks. Prune
// checks the checkpoint and every event it removes first and refuses to
// prune a broken chain, so it never erases the evidence of tampering.
//
// What the chain cannot show by itself is the loss of its newest events:
// deleting the last rows leaves a shorter chain that verifies, and someone
// who can write the database can rewrite the whole chain (or append a
// "pruned" event and a checkpoint of their own) with valid hashes, since
// none of it is signed. Keep the head (VerifyResult.HeadSeq and HeadHash)
// somewhere else, from time to time, to detect that; pruned events are
// gone for good, so export them first if they must be kept.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/invoke"
)

// Event kinds caphub appends. Kind is an open set: other components may
// append kinds of their own.
const (
	KindRegistered     = "registered"      // a capability version was registered
	KindDeprecated     = "deprecated"      // a capability version was deprecated
	KindPolicyDecision = "policy_decision" // governance allowed or denied a call
	KindApproval       = "approval"        // a human approved or rejected a call
	KindInvocation     = "invocation"      // a capability was invoked
	KindAgentApplied   = "agent_applied"   // an agent was created or replaced from its manifest
	KindAgentUpdated   = "agent_updated"   // an agent's capabilities were replaced
	KindAgentDeleted   = "agent_deleted"   // an agent was deleted
	KindServerSaved    = "server_saved"    // an MCP server connection was saved or replaced
	KindServerDeleted  = "server_deleted"  // a saved MCP server was removed
	KindTokenCreated   = "token_created"   // an API token was created (its secret is never recorded)
	KindTokenRevoked   = "token_revoked"   // an API token was revoked
	KindPolicySet      = "policy_set"      // an agent's policy was created or replaced
	KindPolicyDeleted  = "policy_deleted"  // an agent's policy was removed
	// KindPruned records a cut of the chain by its retention (Prune): its
	// Data is the checkpoint the cut left. Only Prune appends it.
	KindPruned = "pruned"
)

// recordTimeout bounds how long RecordInvocation, and the registry
// helpers' appends from API, may hold up the call they record.
const recordTimeout = 5 * time.Second

// Log appends to and checks the audit chain of a store. It is safe for
// concurrent use.
type Log struct {
	store           chain.Store
	log             *slog.Logger
	now             func() time.Time
	syncInvocations bool
	// groupDelay is how long the writer waits for more enqueued events
	// to share a commit (WithGroupCommitDelay).
	groupDelay time.Duration

	// retention is what the pruner keeps (WithRetention); zero: no pruner.
	retention     Retention
	pruneInterval time.Duration
	// pruneNow wakes the pruner; the writer sends on it (without blocking)
	// every pruneTrigger events it commits, counted in sincePrune.
	pruneNow     chan struct{}
	pruneTrigger int
	sincePrune   int
	stopPruner   context.CancelFunc
	prunerDone   chan struct{}

	commitObserver       func(events int, d time.Duration, err error)
	startOnce, closeOnce sync.Once
	queue                chan *pending
	urgent               chan struct{} // hurry: ends linger's wait
	stop, stopped        chan struct{}
}

// Option configures a Log.
type Option func(*Log)

// WithLogger sets the logger that RecordInvocation and API report failed
// appends to (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(g *Log) { g.log = l } }

// WithClock replaces the clock that stamps events (for tests).
func WithClock(now func() time.Time) Option { return func(g *Log) { g.now = now } }

// WithSyncInvocations makes RecordInvocation wait until the invocation's
// event is committed (CAPHUB_AUDIT_SYNC): no call returns before the chain
// holds it, at the price of a commit's latency on every call.
func WithSyncInvocations() Option { return func(g *Log) { g.syncInvocations = true } }

// DefaultGroupCommitDelay is how long, by default, the writer holds
// enqueued events back for more to share their commit; see
// WithGroupCommitDelay. A commit costs the writer about as much CPU as a
// hundred µs of events (SQLite: BEGIN, the last event, COMMIT and its WAL
// frames), so at a client's pace of a call a millisecond, 10 ms (about 10
// events a commit) records a call for less CPU than 2 ms (about 3) did:
// BenchmarkRecordPaced, 116 against 83 cpu-µs/event. The price is that a
// process killed outright loses up to the last 10 ms of enqueued events
// instead of 2 ms (a clean shutdown writes them all).
const DefaultGroupCommitDelay = 10 * time.Millisecond

// WithGroupCommitDelay sets how long the writer, when only enqueued events
// (Enqueue, RecordInvocation) are waiting, waits for more before it
// commits them together (default DefaultGroupCommitDelay; 0 commits at
// once). A commit costs far more than the events in it, and a client
// calling in a loop enqueues one event at a time: without the delay each
// would be a commit of its own. An Append, a Flush or Close ends the wait
// at once; the delay only postpones when enqueued events reach the chain.
func WithGroupCommitDelay(d time.Duration) Option {
	return func(g *Log) { g.groupDelay = max(d, 0) }
}

// WithCommitObserver reports each commit of the writer (events appended
// together, how long the transaction took, its error), for metrics.
func WithCommitObserver(o func(events int, d time.Duration, err error)) Option {
	return func(g *Log) { g.commitObserver = o }
}

// QueueLen is how many events wait for the writer (0 before it starts).
func (l *Log) QueueLen() int { return len(l.queue) }

// New returns the Log of a store's audit chain.
func New(store chain.Store, opts ...Option) *Log {
	l := &Log{store: store, log: slog.Default(), now: time.Now, groupDelay: DefaultGroupCommitDelay}
	for _, o := range opts {
		o(l)
	}
	if !l.retention.IsZero() {
		l.startPruner()
	}
	return l
}

// Append appends an event and returns it as stored. Of e it takes Kind
// (required), Actor, Capability and Data (a JSON object, stored in
// canonical form; empty means {}); it assigns Seq, Time, PrevHash and Hash
// in the store's append transaction, from the chain's last event: Seq is
// the next number, PrevHash the last Hash, Time the current time in
// microseconds (never earlier than the last event's, so that time order
// follows the chain even across replicas whose clocks differ a little).
func (l *Log) Append(ctx context.Context, e chain.Event) (chain.Event, error) {
	data, err := eventData(e.Kind, e.Data)
	if err != nil {
		return chain.Event{}, fmt.Errorf("append audit event: %w", err)
	}
	e.Data = data
	l.startOnce.Do(l.start)
	r := &pending{e: e, done: make(chan appended, 1)}
	select {
	case l.queue <- r:
		l.hurry()
	case <-ctx.Done():
		return chain.Event{}, fmt.Errorf("%s event: %w", e.Kind, ctx.Err())
	case <-l.stop:
		return chain.Event{}, fmt.Errorf("%s event: the audit log is closed", e.Kind)
	}
	select {
	case res := <-r.done:
		if res.err != nil {
			return chain.Event{}, fmt.Errorf("%s event: %w", e.Kind, res.err)
		}
		return res.ev, nil
	case <-ctx.Done():
		return chain.Event{}, fmt.Errorf("%s event: %w (it may still be appended)", e.Kind, ctx.Err())
	}
}

// Enqueue hands an event to the writer without waiting for its commit and
// returns at once: the caller pays for a channel send, and the writer
// encodes data (a struct or map that encodes as a JSON object, and that
// the caller does not change afterwards), hashes and commits it, in order,
// together with whatever else is waiting (a group commit). A failure is
// logged. When the writer falls behind by more than the queue holds,
// Enqueue blocks: events are delayed, never dropped. Close writes what is
// queued before it returns; Flush waits for it.
func (l *Log) Enqueue(kind, actor, capability string, data any) {
	l.startOnce.Do(l.start)
	r := &pending{e: chain.Event{Kind: kind, Actor: actor, Capability: capability}, data: data, async: true}
	select {
	case l.queue <- r:
	case <-l.stop:
		l.log.Error("audit event not recorded: the audit log is closed", "kind", kind, "capability", capability)
	}
}

// marshalData encodes the value of an event's Data: null (a nil map or
// pointer) is no data.
func marshalData(kind string, data any) ([]byte, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("%s event: its data cannot be encoded (encode its data as a JSON object of plain values): %w", kind, err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

// eventData checks an event's kind and returns its Data in canonical form:
// a JSON object, {} when there is none. Append and the writer (for
// enqueued events) both apply it.
func eventData(kind string, data []byte) ([]byte, error) {
	if kind == "" {
		return nil, errors.New("the kind is empty: say what happened (registered, invocation, …)")
	}
	if kind == KindPruned {
		return nil, errors.New(`the kind "pruned" is the chain's own record of a prune (Log.Prune): choose another kind`)
	}
	if len(data) == 0 {
		return []byte("{}"), nil
	}
	data, err := Canonicalize(data)
	if err != nil {
		return nil, fmt.Errorf("%s event: data: %w", kind, err)
	}
	if data[0] != '{' {
		return nil, fmt.Errorf("%s event: data is %s, not a JSON object: put the details in an object", kind, kindOfJSON(data[0]))
	}
	return data, nil
}

// encode sets an enqueued event's Data from the value it was given: an
// invocation's invoke.Record written in canonical form directly
// (recordJSON), anything else encoded and then canonicalized.
func (r *pending) encode() error {
	if rec, ok := r.data.(invoke.Record); ok && r.e.Kind == KindInvocation {
		if b, ok := recordJSON(rec); ok {
			r.e.Data = b
			return nil
		}
	}
	b, err := marshalData(r.e.Kind, r.data)
	if err == nil {
		r.e.Data, err = eventData(r.e.Kind, b)
	}
	return err
}

// Flush returns once every event handed to the writer before it (Enqueue
// included) is committed, or ctx ends.
func (l *Log) Flush(ctx context.Context) error {
	l.startOnce.Do(l.start)
	r := &pending{flush: true, done: make(chan appended, 1)}
	select {
	case l.queue <- r:
		l.hurry()
	case <-ctx.Done():
		return ctx.Err()
	case <-l.stop:
		return errors.New("the audit log is closed")
	}
	select {
	case res := <-r.done:
		return res.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pending is an event waiting for the writer; appended is its outcome.
type pending struct {
	e     chain.Event
	hash  *contentHash // the hash of e's content, made by the writer before it appends
	data  any          // enqueued: the value Data is encoded from, by the writer
	flush bool         // a Flush marker: no event, answered once what precedes it is committed
	async bool         // enqueued: nobody waits (done is nil), so the writer logs a failure itself
	done  chan appended
}

type appended struct {
	ev  chain.Event
	err error
}

// maxBatch bounds how many waiting events one transaction appends.
const maxBatch = 1024

// start runs the writer: it takes the waiting events and appends them in
// one transaction (a group commit), so concurrent appenders share a commit
// instead of queueing for one each. Appenders wait until their event is
// committed; enqueued events are not waited for, and when only they are
// waiting the writer first gives others the group delay to join them
// (linger). When the log is closed, the writer first writes everything
// still queued.
func (l *Log) start() {
	l.queue = make(chan *pending, 4*maxBatch)
	l.urgent = make(chan struct{}, 1)
	l.stop = make(chan struct{})
	l.stopped = make(chan struct{})
	go func() {
		defer close(l.stopped)
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		for {
			var first *pending
			stopping := false
			select {
			case first = <-l.queue:
			case <-l.stop:
				stopping = true
			}
			var batch []*pending
			if first != nil {
				batch = append(batch, first)
			}
		drain:
			for len(batch) < maxBatch {
				select {
				case r := <-l.queue:
					batch = append(batch, r)
				default:
					break drain
				}
			}
			if !stopping && len(batch) > 0 && len(batch) < maxBatch && l.groupDelay > 0 && onlyEnqueued(batch) {
				batch, stopping = l.linger(batch, timer)
			}
			if len(batch) > 0 {
				l.write(batch)
			}
			if stopping && len(batch) == 0 {
				return
			}
		}
	}()
}

// onlyEnqueued reports whether nobody waits for the batch: it holds only
// enqueued events, no Append and no Flush.
func onlyEnqueued(batch []*pending) bool {
	for _, r := range batch {
		if !r.async {
			return false
		}
	}
	return true
}

// linger waits out the group delay (timer) before the writer commits
// batch, a batch of enqueued events only, and adds to it what arrived
// meanwhile. The writer sleeps the while: events enqueued in the delay
// do not wake it one by one. An Append or Flush ends the wait at once
// (through urgent), and so does Close (stopping).
func (l *Log) linger(batch []*pending, timer *time.Timer) (_ []*pending, stopping bool) {
	timer.Reset(l.groupDelay)
	select {
	case <-timer.C:
	case <-l.urgent:
	case <-l.stop:
		stopping = true
	}
	timer.Stop()
	for len(batch) < maxBatch {
		select {
		case r := <-l.queue:
			batch = append(batch, r)
		default:
			return batch, stopping
		}
	}
	return batch, stopping
}

// hurry ends the writer's group delay: someone waits for what is queued.
// A signal left over from an append the writer took without a delay only
// cuts a later delay short.
func (l *Log) hurry() {
	select {
	case l.urgent <- struct{}{}:
	default:
	}
}

func (l *Log) write(all []*pending) {
	// Flush markers carry no event: they are answered with the batch.
	var batch, markers []*pending
	for _, r := range all {
		switch {
		case r.flush:
			markers = append(markers, r)
		case r.async:
			if err := r.encode(); err != nil {
				l.log.Error("audit event not recorded", "kind", r.e.Kind, "capability", r.e.Capability, "err", err)
				continue
			}
			batch = append(batch, r)
		default:
			batch = append(batch, r)
		}
	}
	// The hashes of the events' content, done before the append
	// transaction takes the chain's lock: in it, only the part of each
	// hash that depends on the last event is left.
	for _, r := range batch {
		r.hash = hashContent(r.e)
	}
	if len(batch) == 0 {
		for _, m := range markers {
			m.done <- appended{}
		}
		return
	}
	defer func(markers []*pending) {
		for _, m := range markers {
			m.done <- appended{}
		}
	}(markers)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	evs, err := l.store.AppendAuditBatch(ctx, len(batch), func(last *chain.Event, i int) (chain.Event, error) {
		return l.link(last, batch[i].e, batch[i].hash), nil
	})
	if l.commitObserver != nil {
		l.commitObserver(len(batch), time.Since(began), err)
	}
	if err == nil {
		l.noteAppended(len(evs))
	}
	for i, r := range batch {
		switch {
		case r.async:
			if err != nil {
				l.log.Error("audit event not recorded", "kind", r.e.Kind, "capability", r.e.Capability, "err", err)
			}
		case err != nil:
			r.done <- appended{err: err}
		default:
			r.done <- appended{ev: evs[i]}
		}
	}
}

// link returns e as the event that follows last (nil: e starts the chain):
// Seq is the next number, PrevHash last's Hash, Time the current time in
// microseconds (never earlier than last's), and Hash covers it all. Every
// event of the chain, appended or committed with a change (Hook), is made
// here. content, when not nil, is the hash of e's content already done
// (hashContent), which link finishes.
func (l *Log) link(last *chain.Event, e chain.Event, content *contentHash) chain.Event {
	next := chain.Event{Seq: 1, Time: l.now().UTC().Truncate(time.Microsecond), Kind: e.Kind, Actor: e.Actor,
		Capability: e.Capability, Data: e.Data, PrevHash: GenesisHash}
	if last != nil {
		next.Seq = last.Seq + 1
		next.PrevHash = last.Hash
		if last.Time.After(next.Time) {
			next.Time = last.Time.UTC()
		}
	}
	if content != nil {
		next.Hash = content.finish(next)
	} else {
		next.Hash = Hash(next)
	}
	return next
}

// chain links events one after the other onto last: the Chain of the hooks
// Hook makes.
func (l *Log) chain(last *chain.Event, events []chain.Event) ([]chain.Event, error) {
	out := make([]chain.Event, len(events))
	for i, e := range events {
		out[i] = l.link(last, e, nil)
		last = &out[i]
	}
	return out, nil
}

// Hook returns the hook with which a store commits events in the
// transaction of the change they record (registry.Store.PutAudited), instead of
// appending them after it: the change and its events commit together or
// not at all. Of each event it takes Kind (required), Actor, Capability and
// Data (a JSON object, stored in canonical form; empty means {}); the
// store's transaction assigns the rest, as Append's does.
func (l *Log) Hook(events ...chain.Event) (*chain.Hook, error) {
	out := make([]chain.Event, len(events))
	for i, e := range events {
		data, err := eventData(e.Kind, e.Data)
		if err != nil {
			return nil, fmt.Errorf("audit event: %w", err)
		}
		out[i] = chain.Event{Kind: e.Kind, Actor: e.Actor, Capability: e.Capability, Data: data}
	}
	return &chain.Hook{Events: out, Chain: l.chain}, nil
}

// ChangeHook returns the Hook of one event whose Data is the JSON encoding
// of data (which must encode as an object: a struct or a map); see
// registry.ChangeRecorder.
func (l *Log) ChangeHook(kind, actor, capability string, data any) (*chain.Hook, error) {
	b, err := marshalData(kind, data)
	if err != nil {
		return nil, err
	}
	return l.Hook(chain.Event{Kind: kind, Actor: actor, Capability: capability, Data: b})
}

// Close stops the writer once the events already handed to it (enqueued
// ones included) are appended. Appends after Close fail.
func (l *Log) Close() error {
	l.startOnce.Do(l.start)
	l.closeOnce.Do(func() {
		if l.stopPruner != nil {
			l.stopPruner()
			<-l.prunerDone
		}
		close(l.stop)
		<-l.stopped
		// An append that raced with Close and was queued after the writer's
		// last look fails rather than hangs (an enqueued one is logged).
		for {
			select {
			case r := <-l.queue:
				if r.async {
					l.log.Error("audit event not recorded: the audit log closed before it was written", "kind", r.e.Kind, "capability", r.e.Capability)
				} else {
					r.done <- appended{err: errors.New("the audit log closed before the event was written")}
				}
			default:
				return
			}
		}
	})
	return nil
}

// kindOfJSON names the kind of JSON value that starts with c.
func kindOfJSON(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// Record appends an event whose Data is the JSON encoding of data (which
// must encode as an object: a struct or a map).
func (l *Log) Record(ctx context.Context, kind, actor, capability string, data any) (chain.Event, error) {
	b, err := marshalData(kind, data)
	if err != nil {
		return chain.Event{}, fmt.Errorf("append audit event: %w", err)
	}
	return l.Append(ctx, chain.Event{Kind: kind, Actor: actor, Capability: capability, Data: b})
}

// List returns the events the filter selects, in ascending Seq.
func (l *Log) List(ctx context.Context, f chain.Filter) ([]chain.Event, error) {
	return l.store.ListAudit(ctx, f)
}

// Problems a Break reports.
const (
	// ProblemAltered: the event's Hash does not match its content.
	ProblemAltered = "altered"
	// ProblemMissing: one or more events are missing before this one.
	ProblemMissing = "missing"
	// ProblemRelinked: the event's PrevHash is not the previous event's
	// Hash: events were reordered, or replaced or removed and the chain
	// re-linked.
	ProblemRelinked = "relinked"
	// ProblemDuplicate: a Seq appears twice (only possible when the
	// database's uniqueness constraint was removed).
	ProblemDuplicate = "duplicate"
	// ProblemCheckpoint: the checkpoint the chain starts from does not
	// match the "pruned" event that records it, or that event is gone.
	ProblemCheckpoint = "checkpoint"
)

// Break is the first broken link of a chain.
type Break struct {
	// Seq is the event at which the chain breaks: the altered, relinked or
	// duplicated event, or the first missing one.
	Seq     int64  `json:"seq"`
	Problem string `json:"problem"` // ProblemAltered, ProblemMissing, …
	Message string `json:"message"` // what is wrong, for people
}

// VerifyResult is what Verify found.
type VerifyResult struct {
	// OK is true when the whole chain is intact and, once
	// AddRegistrations added its check, every stored version has its
	// registration event.
	OK bool `json:"ok"`
	// Count is the number of intact events before the break (every event
	// when OK).
	Count int64 `json:"count"`
	// HeadSeq and HeadHash are the last intact event's; 0 and "" when there
	// is none. When OK, they are the chain's head: keep them elsewhere to
	// detect later that newest events were removed.
	HeadSeq  int64  `json:"head_seq"`
	HeadHash string `json:"head_hash"`
	// FromSeq is the first event verified and FromHash the PrevHash it must
	// have: 1 and GenesisHash, or, once events were pruned, the event after
	// the checkpoint and the checkpoint's hash.
	FromSeq  int64  `json:"from_seq"`
	FromHash string `json:"from_hash"`
	// Checkpoint is where the chain was last pruned (nil when it never
	// was), and Pruned how many events are gone before it (its Seq).
	Checkpoint *chain.Checkpoint `json:"checkpoint,omitempty"`
	Pruned     int64             `json:"pruned"`
	// Break is the first broken link; nil when the chain is intact.
	Break *Break `json:"break,omitempty"`
	// Registrations is the check of CheckRegistrations, when
	// AddRegistrations added it.
	Registrations *RegistrationCheck `json:"registrations,omitempty"`
}

// AddRegistrations adds the check of CheckRegistrations to what Verify
// found: the result is OK only when both are.
func (r *VerifyResult) AddRegistrations(c *RegistrationCheck) {
	r.Registrations = c
	r.OK = r.OK && c.OK
}

// String returns e.g. "audit chain intact: 400 events, head event 400,
// hash a1b2…" or "audit chain broken at event 7: …; the 6 events before it
// are intact", and on a second line the registration check when there is
// one.
func (r *VerifyResult) String() string {
	s := r.chainString()
	if r.Registrations != nil {
		s += "\n" + r.Registrations.String()
	}
	return s
}

// chainString is String's report of the chain.
func (r *VerifyResult) chainString() string {
	cp := r.Checkpoint
	if r.Break == nil {
		switch {
		case r.Count == 0:
			return "audit chain intact: no events yet"
		case cp == nil:
			return fmt.Sprintf("audit chain intact: %s, head event %d, hash %s", events(r.Count), r.HeadSeq, r.HeadHash)
		}
		return fmt.Sprintf("audit chain intact: verified %s from event %d (checkpoint of %s, %s pruned) to event %d, head hash %s",
			events(r.Count), r.FromSeq, cp.At.Format(time.RFC3339), events(r.Pruned), r.HeadSeq, r.HeadHash)
	}
	intact := "no event before it is intact"
	switch {
	case r.Count == 1:
		intact = "the 1 event before it is intact"
	case r.Count > 1:
		intact = fmt.Sprintf("the %d events before it are intact", r.Count)
	}
	if cp != nil {
		intact += fmt.Sprintf(" (verified from event %d, after the checkpoint of %s: %s pruned)", r.FromSeq, cp.At.Format(time.RFC3339), events(r.Pruned))
	}
	return fmt.Sprintf("audit chain broken at event %d: %s; %s", r.Break.Seq, r.Break.Message, intact)
}

// events counts events in words.
func events(n int64) string {
	if n == 1 {
		return "1 event"
	}
	return fmt.Sprintf("%d events", n)
}

// errStop ends a scan at the first break.
var errStop = errors.New("stop")

// verifyAttempts bounds how often Verify starts again when prunes keep
// moving the checkpoint while it reads the chain. Each restart needs a
// prune to have committed meanwhile, and prunes stop once the chain is
// down to its retention, so the bound is only a backstop.
const verifyAttempts = 1000

// Verify walks the whole chain in Seq order, a page at a time (memory does
// not grow with the chain), and reports its first broken link: an event
// missing (a gap in Seq), an event that does not link to the one before it
// (PrevHash is not that event's Hash, as when rows are reordered), or an
// event altered (its Hash does not match its content). An error means the
// chain could not be read, not that it is broken.
//
// Once events were pruned (Prune), it starts from the checkpoint: the first
// event kept must be the one after it and link to its hash, and the
// "pruned" event that records the checkpoint must be in the chain and
// match it (ProblemCheckpoint otherwise). So rows deleted from the start of
// the chain without a checkpoint, and a checkpoint forged to cover them,
// both show as breaks. A prune that commits while Verify reads is no
// break: when the checkpoint moved, Verify reads again from the new one.
func (l *Log) Verify(ctx context.Context) (*VerifyResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := l.verifyOnce(ctx)
		if err != nil || res.Break == nil || attempt == verifyAttempts {
			return res, err
		}
		st, err := l.store.AuditState(ctx)
		if err != nil {
			return nil, fmt.Errorf("verify the audit chain: %w", err)
		}
		if sameCheckpoint(st.Checkpoint, res.Checkpoint) {
			return res, nil
		}
	}
}

// sameCheckpoint reports whether a and b are the same checkpoint.
func sameCheckpoint(a, b *chain.Checkpoint) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Seq == b.Seq && a.Record == b.Record && a.Hash == b.Hash
}

// verifyOnce is one walk of Verify.
func (l *Log) verifyOnce(ctx context.Context) (*VerifyResult, error) {
	st, err := l.store.AuditState(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify the audit chain: %w", err)
	}
	cp := st.Checkpoint
	res := &VerifyResult{FromSeq: 1, FromHash: GenesisHash, Checkpoint: cp}
	prevSeq, prevHash := int64(0), GenesisHash
	if cp != nil {
		prevSeq, prevHash = cp.Seq, cp.Hash
		res.FromSeq, res.FromHash, res.Pruned = cp.Seq+1, cp.Hash, cp.Seq
	}
	recorded := false
	err = l.store.ScanAudit(ctx, func(e chain.Event) error {
		b := checkLink(e, prevSeq, prevHash)
		if cp != nil && res.Count == 0 {
			b = fromCheckpoint(e, cp, b)
		}
		if b == nil && cp != nil && e.Seq == cp.Record {
			b, recorded = checkRecord(e, cp), true
		}
		if b != nil {
			res.Break = b
			return errStop
		}
		res.Count++
		prevSeq, prevHash = e.Seq, e.Hash
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("verify the audit chain: %w", err)
	}
	if res.Break == nil && cp != nil && !recorded {
		end := "the chain is empty"
		if res.Count > 0 {
			end = fmt.Sprintf("the chain ends at event %d", prevSeq)
		}
		res.Break = &Break{Seq: cp.Record, Problem: ProblemCheckpoint,
			Message: fmt.Sprintf("the checkpoint (events 1 to %d pruned) names event %d as its record, but %s: the checkpoint was forged, or the newest events were removed", cp.Seq, cp.Record, end)}
	}
	res.OK = res.Break == nil
	if res.Count > 0 {
		res.HeadSeq, res.HeadHash = prevSeq, prevHash
	}
	return res, nil
}

// fromCheckpoint rewords b, what checkLink found wrong with e, the first
// event after the checkpoint cp, to say what the checkpoint expected;
// when checkLink found nothing, it checks e against cp (checkFirst).
func fromCheckpoint(e chain.Event, cp *chain.Checkpoint, b *Break) *Break {
	if b == nil {
		return checkFirst(e, cp)
	}
	switch b.Problem {
	case ProblemMissing:
		b.Message = fmt.Sprintf("events %d to %d are missing: the checkpoint says events 1 to %d were pruned, but the chain starts at event %d (events were deleted without a checkpoint, or the checkpoint is stale)",
			cp.Seq+1, e.Seq-1, cp.Seq, e.Seq)
		if e.Seq == cp.Seq+2 {
			b.Message = fmt.Sprintf("event %d is missing: the checkpoint says events 1 to %d were pruned, but the chain starts at event %d (events were deleted without a checkpoint, or the checkpoint is stale)",
				cp.Seq+1, cp.Seq, e.Seq)
		}
	case ProblemDuplicate:
		b.Message = fmt.Sprintf("event %d is stored although the checkpoint says events 1 to %d were pruned (the checkpoint was forged, or pruned events were put back)", e.Seq, cp.Seq)
	case ProblemRelinked:
		b.Message = fmt.Sprintf("event %d does not link to the checkpoint: its prev_hash %s is not the hash %s of event %d, the last pruned (the checkpoint was forged, or event %d was altered)",
			e.Seq, short(e.PrevHash), short(cp.Hash), cp.Seq, e.Seq)
	}
	return b
}

// checkLink checks event e, which follows event prevSeq whose hash is
// prevHash (0 and GenesisHash at the start): its Seq first, then its link,
// then its content, so that a reordered event is reported as such rather
// than as altered (its Seq, which its Hash covers, changed too).
func checkLink(e chain.Event, prevSeq int64, prevHash string) *Break {
	want := prevSeq + 1
	switch {
	case e.Seq < want:
		return &Break{Seq: e.Seq, Problem: ProblemDuplicate,
			Message: fmt.Sprintf("event %d appears more than once (after event %d): the database lost its uniqueness constraint on seq", e.Seq, prevSeq)}
	case e.Seq > want:
		var msg string
		switch {
		case prevSeq == 0 && e.Seq == 2:
			msg = "event 1 is missing (the chain starts at event 2)"
		case prevSeq == 0:
			msg = fmt.Sprintf("events 1 to %d are missing (the chain starts at event %d)", e.Seq-1, e.Seq)
		case e.Seq == want+1:
			msg = fmt.Sprintf("event %d is missing (the chain jumps from %d to %d)", want, prevSeq, e.Seq)
		default:
			msg = fmt.Sprintf("events %d to %d are missing (the chain jumps from %d to %d)", want, e.Seq-1, prevSeq, e.Seq)
		}
		return &Break{Seq: want, Problem: ProblemMissing, Message: msg}
	case e.PrevHash != prevHash:
		msg := fmt.Sprintf("event %d does not link to event %d: its prev_hash %s is not event %d's hash %s (events were reordered, or one was replaced or removed and the chain re-linked)",
			e.Seq, prevSeq, short(e.PrevHash), prevSeq, short(prevHash))
		if prevSeq == 0 {
			msg = fmt.Sprintf("event 1 does not start the chain: its prev_hash %s is not 64 zeros (events before it were removed and the chain re-linked, or it was altered)", short(e.PrevHash))
		}
		return &Break{Seq: e.Seq, Problem: ProblemRelinked, Message: msg}
	case Hash(e) != e.Hash:
		return &Break{Seq: e.Seq, Problem: ProblemAltered,
			Message: fmt.Sprintf("event %d was altered: its hash does not match its content (its time, kind, actor, capability, data or hash was changed after it was written)", e.Seq)}
	}
	return nil
}

// short abbreviates a hash for messages.
func short(h string) string {
	if len(h) > 16 {
		return h[:16] + "…"
	}
	if h == "" {
		return `""`
	}
	return h
}
