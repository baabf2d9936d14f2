// Package write holds what both stores (store/sqlite, store/postgres)
// check and derive alike before they write: the checks of a record, a
// document, an audit event and an audit hook, the values a record is
// indexed by, and the fields a deprecation sets. Keeping them here makes
// the two stores refuse and index the same things the same way; only
// their SQL differs.
package write

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// Prepared is a record checked and encoded for storage, with the values
// the side tables and the full-text index hold.
type Prepared struct {
	Rec          registry.Record
	VersionKey   string
	Definition   string // JSON
	Stability    string
	Source       string
	RegisteredAt time.Time
	Domains      []string
	Categories   []string
	Intents      []string
	Bindings     []string
	FTS          FullText
}

// FullText is the text of a record's full-text index, one field per
// indexed column.
type FullText struct {
	Name, Title, Description, Keywords, Intents, Domains, Categories string
}

// Map returns the text with f applied to every field.
func (t FullText) Map(f func(string) string) FullText {
	return FullText{f(t.Name), f(t.Title), f(t.Description), f(t.Keywords), f(t.Intents), f(t.Domains), f(t.Categories)}
}

// Prepare checks a record's key and encodes it. It does no I/O, so a batch
// with a bad record fails before anything is written.
func Prepare(r registry.Record, now time.Time) (Prepared, error) {
	k := r.Key
	if k.Scheme == "" || k.Domain == "" || k.Name == "" {
		return Prepared{}, fmt.Errorf("put %s: the key needs a scheme, a domain and a name", k)
	}
	v, err := capability.ParseVersion(k.Version)
	if err != nil {
		return Prepared{}, fmt.Errorf("put %s: %w", k, err)
	}
	if full := v.Full(); full != k.Version {
		return Prepared{}, fmt.Errorf("put %s: the key's version %q is not written in full: use %q (capability.Version.Full)", k, k.Version, full)
	}
	if r.Digest == "" {
		return Prepared{}, fmt.Errorf("put %s: the record has no content digest: the registry service computes it before storing", k)
	}
	def := string(r.JSON)
	if def == "" {
		var err error
		if def, err = MarshalDefinition(r.Definition); err != nil {
			return Prepared{}, fmt.Errorf("put %s: %w", k, err)
		}
	}
	r.JSON = nil // Prepared.Definition holds it; Rec need not hold it twice
	at := r.RegisteredAt
	if at.IsZero() {
		at = now
	}
	d := r.Definition
	p := Prepared{
		Rec:          r,
		VersionKey:   registry.VersionKey(v),
		Definition:   def,
		Stability:    d.Stability,
		Source:       registry.SourceOf(&d),
		RegisteredAt: at.UTC().Truncate(time.Microsecond),
		Categories:   uniq(d.Categories),
		Intents:      uniq(d.Intents),
		Bindings:     uniq(d.Bindings.Types()),
	}
	p.Domains = uniq(registry.DomainsOf(k, &d))
	p.FTS = FullText{
		Name:        words(k.Name),
		Title:       d.Title,
		Description: d.Description,
		Keywords:    strings.Join(d.Keywords, " "),
		Intents:     wordsOf(d.Intents),
		Domains:     wordsOf(p.Domains),
		Categories:  wordsOf(d.Categories),
	}
	return p, nil
}

// MarshalDefinition encodes a definition for the definition column.
func MarshalDefinition(d capability.Definition) (string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("encode the definition as JSON: %w: a definition holds only JSON values", err)
	}
	return string(b), nil
}

// uniq returns the non-empty values of list, sorted, without duplicates.
func uniq(list []string) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// words turns an identifier such as scan_vulnerabilities, github.issues or
// messaging/send-text into space-separated words, so that each part is a
// token of the full-text index whatever the tokenizer makes of "_" and ".".
func words(id string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '.', '/', '-', ':':
			return ' '
		}
		return r
	}, id)
}

func wordsOf(ids []string) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = words(id)
	}
	return strings.Join(parts, " ")
}

// DocName names a document in messages.
func DocName(kind, key string) string {
	return fmt.Sprintf("document %q of kind %q", key, kind)
}

func OpName(op registry.DocOp) string {
	if op.Delete {
		return "delete " + DocName(op.Kind, op.Key)
	}
	return "put " + DocName(op.Kind, op.Key)
}

func CheckDocOp(op registry.DocOp) error {
	if op.Delete {
		return CheckDocName(op.Kind, op.Key)
	}
	return CheckDoc(op.Kind, op.Key, op.Value)
}

// CheckDoc checks a document to be written: its kind and key, and that its
// value is one JSON text.
func CheckDoc(kind, key string, value []byte) error {
	if err := CheckDocName(kind, key); err != nil {
		return err
	}
	if !utf8.Valid(value) {
		return errors.New("the value is not valid UTF-8: a JSON text is UTF-8 (RFC 8259); encode it with encoding/json")
	}
	if !json.Valid(value) {
		// Unmarshal into a RawMessage only checks the syntax, and says where
		// it breaks.
		err := json.Unmarshal(value, new(json.RawMessage))
		if err == nil {
			err = errors.New("not one JSON value")
		}
		return fmt.Errorf("the value is not valid JSON: %w: store one JSON text (encode it with encoding/json)", err)
	}
	return nil
}

// CheckDocName checks a document's kind and key: not empty, valid UTF-8,
// no NUL (which PostgreSQL text cannot hold; both stores refuse it alike).
func CheckDocName(kind, key string) error {
	if err := checkDocText("kind", kind); err != nil {
		return err
	}
	return checkDocText("key", key)
}

// CheckDocPrefix checks the kind and key prefix of ListDocs; an empty
// prefix lists the whole kind.
func CheckDocPrefix(kind, prefix string) error {
	if err := checkDocText("kind", kind); err != nil {
		return err
	}
	if prefix == "" {
		return nil
	}
	return checkDocText("key prefix", prefix)
}

func checkDocText(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("the %s is empty: give a non-empty %s", what, what)
	case !utf8.ValidString(s):
		return fmt.Errorf("the %s is not valid UTF-8: document kinds and keys are UTF-8 text", what)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("the %s contains a NUL byte: document kinds and keys cannot hold one", what)
	}
	return nil
}

// CheckAuditEvent checks an event to be appended after last: the next seq,
// a time in microseconds, a kind, text PostgreSQL can hold (valid UTF-8, no
// NUL; both stores refuse alike), and one JSON text as data.
func CheckAuditEvent(e chain.Event, last *chain.Event) error {
	want := int64(1)
	if last != nil {
		want = last.Seq + 1
	}
	if e.Seq != want {
		return fmt.Errorf("its seq is %d, but the next one is %d: build the event from the last one AppendAudit gives (a bug in the caller)", e.Seq, want)
	}
	if e.Time.IsZero() {
		return errors.New("its time is zero: set the time it was appended")
	}
	if e.Time.Nanosecond()%1000 != 0 {
		return errors.New("its time has sub-microsecond digits, which the stores do not keep: truncate it to the microsecond before hashing the event")
	}
	if e.Kind == "" {
		return errors.New("its kind is empty: say what happened (registered, invocation, …)")
	}
	for _, f := range []struct{ name, value string }{
		{"kind", e.Kind}, {"actor", e.Actor}, {"capability", e.Capability}, {"prev_hash", e.PrevHash}, {"hash", e.Hash},
	} {
		switch {
		case !utf8.ValidString(f.value):
			return fmt.Errorf("its %s is not valid UTF-8", f.name)
		case strings.IndexByte(f.value, 0) >= 0:
			return fmt.Errorf("its %s contains a NUL byte, which the stores cannot hold", f.name)
		}
	}
	if !utf8.Valid(e.Data) || !json.Valid(e.Data) {
		return errors.New("its data is not one valid JSON text: encode it with encoding/json")
	}
	return nil
}

// CheckHook checks a hook before its write begins: for PutAudited (n, the
// number of records, > 0) one event per record, and a Chain to link them.
// A nil hook (a plain write) is fine.
func CheckHook(hook *chain.Hook, n int) error {
	switch {
	case hook == nil:
		return nil
	case hook.Chain == nil:
		return errors.New("the audit hook has no Chain: make hooks with package audit (a bug in the caller)")
	case n > 0 && len(hook.Events) != n:
		return fmt.Errorf("the audit hook has %d events for %d records: give one event per record (a bug in the caller)", len(hook.Events), n)
	}
	return nil
}

// HookAppends reports whether a write appends any event of hook: whether
// keep (nil keeps all) holds for one of them. When none does, the write
// need not take the chain's lock.
func HookAppends(hook *chain.Hook, keep func(i int) bool) bool {
	for i := range hook.Events {
		if keep == nil || keep(i) {
			return true
		}
	}
	return false
}

// ChainHook returns the events of hook that a write appends after last,
// the chain's last event: those for which keep holds (nil keeps all),
// chained by hook.Chain and each checked as CheckAuditEvent checks an
// appended one. No event to append is no error (and no call of Chain).
func ChainHook(hook *chain.Hook, last *chain.Event, keep func(i int) bool) ([]chain.Event, error) {
	var events []chain.Event
	for i, e := range hook.Events {
		if keep == nil || keep(i) {
			events = append(events, e)
		}
	}
	if len(events) == 0 {
		return nil, nil
	}
	out, err := hook.Chain(last, events)
	if err != nil {
		return nil, fmt.Errorf("audit hook: %w", err)
	}
	if len(out) != len(events) {
		return nil, fmt.Errorf("audit hook: Chain returned %d events for %d (a bug in the caller)", len(out), len(events))
	}
	for i := range out {
		if err := CheckAuditEvent(out[i], last); err != nil {
			return nil, fmt.Errorf("audit event %d: %w", out[i].Seq, err)
		}
		last = &out[i]
	}
	return out, nil
}

// DeprecationTime is when a deprecation takes effect as both stores record
// it: at (now when zero), in UTC, to the microsecond.
func DeprecationTime(at time.Time) time.Time {
	if at.IsZero() {
		at = time.Now()
	}
	return at.UTC().Truncate(time.Microsecond)
}

// ApplyDeprecation sets a record's lifecycle fields from d, deprecated at at.
func ApplyDeprecation(r *registry.Record, d registry.Deprecation, at time.Time) {
	r.Definition.Stability = capability.StabilityDeprecated
	r.Definition.DeprecatedBy = d.DeprecatedBy
	r.Definition.SunsetDate = d.SunsetDate
	r.Definition.MigrationGuide = d.MigrationGuide
	r.DeprecatedAt = &at
}

// PruneRange is the range of events a PruneAudit removes: from the one
// after the checkpoint prev (nil: event 1) to upTo, but never past last,
// the chain's last event, nor more than chain.MaxPruneBatch events. ok is
// false when there is nothing to remove.
func PruneRange(prev *chain.Checkpoint, last *chain.Event, upTo int64) (from, to int64, ok bool) {
	from = 1
	if prev != nil {
		from = prev.Seq + 1
	}
	if last == nil {
		return 0, 0, false
	}
	to = min(upTo, last.Seq, from+chain.MaxPruneBatch-1)
	return from, to, to >= from
}

// NewCheckpoint is the checkpoint of a prune that removes events from to
// cut.Seq: cut is the last of them.
func NewCheckpoint(cut chain.Event, from int64) chain.Checkpoint {
	return chain.Checkpoint{Seq: cut.Seq, Hash: cut.Hash, Time: cut.Time.UTC(), Pruned: cut.Seq - from + 1}
}

// MissingCut is PruneAudit's error when event to, the last one it would
// remove, is not stored.
func MissingCut(to int64) error {
	return fmt.Errorf("audit event %d, the last to prune, is missing: the chain is broken; run caphub audit verify", to)
}

// PrunedCount is PruneAudit's error when deleting the events up to to
// removed n rows instead of to-from+1 (or failed to say, err): events in
// the range were missing, or rows before from were left.
func PrunedCount(from, to, n int64, err error) error {
	if err != nil {
		return fmt.Errorf("count the audit events deleted: %w", err)
	}
	return fmt.Errorf("deleting audit events up to %d removed %d rows, not the %d of events %d to %d: the chain is broken; run caphub audit verify", to, n, to-from+1, from, to)
}
