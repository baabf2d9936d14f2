// Package auth authenticates callers of caphub's HTTP API with bearer tokens
// that carry scopes (read, publish, invoke, admin).
//
// A token's secret is shown once, when it is created, and stored only as its
// SHA-256 hash in the registry's document store (kind "token", key = the
// token id). The id is embedded in the secret (chp_<id>_<random>), so a
// request's token is found by one key lookup and then checked with a
// constant-time comparison of hashes.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/registry"
)

// DocKind is the document kind tokens are stored under.
const DocKind = "token"

// Prefix starts every caphub token, so that secret scanners and people can
// tell one apart.
const Prefix = "chp_"

// Scope is a permission a token grants.
type Scope string

// The scopes. Admin implies all the others.
const (
	ScopeRead    Scope = "read"    // list, get, search, resolve, negotiate, metrics
	ScopePublish Scope = "publish" // register, deprecate, save servers and agents, discover
	ScopeInvoke  Scope = "invoke"  // POST /v1/invoke and the MCP endpoints
	ScopeAdmin   Scope = "admin"   // everything
)

// Scopes lists every scope, in order of increasing power.
var Scopes = []Scope{ScopeRead, ScopePublish, ScopeInvoke, ScopeAdmin}

// ParseScope checks a scope name.
func ParseScope(s string) (Scope, error) {
	sc := Scope(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(Scopes, sc) {
		return sc, nil
	}
	return "", fmt.Errorf("unknown scope %q: use read, publish, invoke or admin", s)
}

// Errors of Authenticate. Each wraps ErrUnauthenticated, so a caller can
// test for any of them at once.
var (
	ErrUnauthenticated = errors.New("not authenticated")
	ErrMissing         = fmt.Errorf("no bearer token: send Authorization: Bearer chp_… (%w)", ErrUnauthenticated)
	ErrMalformed       = fmt.Errorf("malformed token: caphub tokens look like chp_<id>_<secret> (%w)", ErrUnauthenticated)
	ErrUnknown         = fmt.Errorf("unknown token (%w)", ErrUnauthenticated)
	ErrExpired         = fmt.Errorf("token expired (%w)", ErrUnauthenticated)
	ErrRevoked         = fmt.Errorf("token revoked (%w)", ErrUnauthenticated)
)

// Token is a token's record, without its secret.
type Token struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Scopes    []Scope    `json:"scopes"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	// Agent, when set, is the one agent the token acts as: its calls run
	// as that agent (policy, state, bindings), and it may use that agent's
	// MCP endpoint only. Without it a token acts as itself ("token:NAME");
	// only an admin token may act as any agent.
	Agent string `json:"agent,omitempty"`
}

// Has reports whether the token grants scope; admin grants every scope.
func (t *Token) Has(scope Scope) bool {
	return slices.Contains(t.Scopes, scope) || slices.Contains(t.Scopes, ScopeAdmin)
}

// State is "active", "expired" or "revoked" at time now.
func (t *Token) State(now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return "revoked"
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return "expired"
	}
	return "active"
}

// stored is a token's document: the record plus the hash of its secret.
type stored struct {
	Token
	Hash string `json:"sha256"` // hex SHA-256 of the whole secret
}

// Tokens creates, lists, revokes and checks tokens in a document store.
type Tokens struct {
	docs     registry.DocStore
	recorder registry.ChangeRecorder // nil: changes are not audited
	now      func() time.Time
	sessions *sessions // what outlives a request, by token
	records  recordCache
}

// RecordTTL is how long Authenticate trusts a token record it read without
// reading it again: a token revoked through another Tokens (another
// replica of caphub serve on the same database) stops authenticating
// within it; through this one, at once. Reading the record on every
// request cost a store round trip, a fifth of a cached GET's CPU.
const RecordTTL = time.Second

// recordCache keeps the token records Authenticate read, each for at most
// ttl; changes made through the same Tokens replace or drop their entry.
type recordCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]cachedRecord
}

type cachedRecord struct {
	s    stored
	read time.Time
}

// maxCachedRecords bounds the cache: an attacker's unknown ids are never
// kept, so only real tokens fill it.
const maxCachedRecords = 4096

func (c *recordCache) get(id string, now time.Time) (stored, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[id]
	if !ok || now.Sub(r.read) >= c.ttl || now.Before(r.read) {
		return stored{}, false
	}
	return r.s, true
}

func (c *recordCache) put(s stored, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedRecords {
		c.m = make(map[string]cachedRecord)
	}
	c.m[s.ID] = cachedRecord{s: s, read: now}
}

func (c *recordCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// New returns the tokens kept in docs. With a recorder, every creation and
// revocation commits with its audit event (audit.KindTokenCreated,
// audit.KindTokenRevoked) in one transaction; the secret and its hash are
// never recorded.
func New(docs registry.DocStore, recorder registry.ChangeRecorder) *Tokens {
	return &Tokens{docs: docs, recorder: recorder, now: time.Now, sessions: newSessions(), records: recordCache{ttl: RecordTTL}}
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// checkRequest checks what a new token is asked for and returns its
// scopes, parsed and without duplicates.
func checkRequest(name string, scopes []Scope, ttl time.Duration, agentID string) ([]Scope, error) {
	if agentID != "" && !nameRE.MatchString(agentID) {
		return nil, fmt.Errorf("agent %q: an agent ID uses letters, digits, '.', '_', '@' or '-'", agentID)
	}
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("token name %q: use 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit", name)
	}
	if len(scopes) == 0 {
		return nil, errors.New("a token needs at least one scope: read, publish, invoke or admin")
	}
	var sc []Scope
	for _, s := range scopes {
		p, err := ParseScope(string(s))
		if err != nil {
			return nil, err
		}
		if !slices.Contains(sc, p) {
			sc = append(sc, p)
		}
	}
	if ttl < 0 {
		return nil, fmt.Errorf("token expiry %s is negative: give a positive duration such as 720h, or 0 for none", ttl)
	}
	return sc, nil
}

// checkNameFree refuses a name an active token has.
func (t *Tokens) checkNameFree(ctx context.Context, name string, now time.Time) error {
	all, err := t.List(ctx)
	if err != nil {
		return err
	}
	for _, o := range all {
		if o.Name == name && o.State(now) == "active" {
			return refused{fmt.Errorf("an active token named %q exists (id %s): revoke it first (caphub token revoke %s) or choose another name", name, o.ID, o.ID)}
		}
	}
	return nil
}

// refused is a request Create refuses for what it asks (a name, a scope,
// an expiry): its message, and registry.ErrInvalid for the edges to tell
// it from a store failure.
type refused struct{ error }

func (e refused) Unwrap() []error { return []error{e.error, registry.ErrInvalid} }

// newSecret draws a token id and its secret, Prefix + id + "_" + 32 random
// bytes.
func newSecret() (id, secret string, err error) {
	idb := make([]byte, 6)
	secb := make([]byte, 32)
	if _, err := rand.Read(idb); err != nil {
		return "", "", err
	}
	if _, err := rand.Read(secb); err != nil {
		return "", "", err
	}
	id = hex.EncodeToString(idb)
	return id, Prefix + id + "_" + base64.RawURLEncoding.EncodeToString(secb), nil
}

// Create makes a token named name with the given scopes, valid for ttl (0:
// no expiry). It returns the record and the secret, which is not kept and
// cannot be shown again. Names are unique among active tokens.
func (t *Tokens) Create(ctx context.Context, name string, scopes []Scope, ttl time.Duration) (*Token, string, error) {
	return t.CreateForAgent(ctx, name, scopes, ttl, "")
}

// CreateForAgent is Create for a token bound to one agent (Token.Agent);
// agentID "" binds none.
func (t *Tokens) CreateForAgent(ctx context.Context, name string, scopes []Scope, ttl time.Duration, agentID string) (*Token, string, error) {
	sc, err := checkRequest(name, scopes, ttl, agentID)
	if err != nil {
		return nil, "", refused{err}
	}
	now := t.now().UTC()
	if err := t.checkNameFree(ctx, name, now); err != nil {
		return nil, "", err
	}
	id, secret, err := newSecret()
	if err != nil {
		return nil, "", err
	}
	rec := stored{Token: Token{ID: id, Name: name, Scopes: sc, CreatedAt: now.Truncate(time.Second), Agent: agentID}, Hash: hashOf(secret)}
	if ttl > 0 {
		exp := now.Add(ttl).Truncate(time.Second)
		rec.ExpiresAt = &exp
	}
	if err := t.put(ctx, rec, audit.KindTokenCreated); err != nil {
		return nil, "", err
	}
	tok := rec.Token
	return &tok, secret, nil
}

// List returns every token (active, expired and revoked), ordered by id,
// without secrets.
func (t *Tokens) List(ctx context.Context) ([]Token, error) {
	docs, err := t.docs.ListDocs(ctx, DocKind, "")
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := make([]Token, 0, len(docs))
	for _, d := range docs {
		var s stored
		if err := json.Unmarshal(d.Value, &s); err != nil {
			return nil, fmt.Errorf("token %s: unreadable record: %w", d.Key, err)
		}
		out = append(out, s.Token)
	}
	return out, nil
}

// Exist reports whether at least one active (not expired, not revoked)
// token exists: the condition for serving beyond loopback.
func (t *Tokens) Exist(ctx context.Context) (bool, error) {
	all, err := t.List(ctx)
	if err != nil {
		return false, err
	}
	now := t.now()
	for _, tok := range all {
		if tok.State(now) == "active" {
			return true, nil
		}
	}
	return false, nil
}

// Revoke marks a token revoked; it then no longer authenticates. The record
// is kept so that the audit trail's "token:NAME" actors stay explainable.
// Revoking a revoked token is not an error.
func (t *Tokens) Revoke(ctx context.Context, id string) (*Token, error) {
	s, err := t.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if s.RevokedAt == nil {
		now := t.now().UTC().Truncate(time.Second)
		s.RevokedAt = &now
		if err := t.put(ctx, s, audit.KindTokenRevoked); err != nil {
			return nil, err
		}
	}
	tok := s.Token
	return &tok, nil
}

// Check returns the current record of the token with id, or an error
// wrapping ErrUnknown, ErrExpired or ErrRevoked when it no longer
// authenticates: for sessions that outlive the request that opened them.
func (t *Tokens) Check(ctx context.Context, id string) (*Token, error) {
	s, err := t.get(ctx, id)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, ErrUnknown
	}
	if err != nil {
		return nil, err
	}
	switch s.State(t.now()) {
	case "revoked":
		return nil, ErrRevoked
	case "expired":
		return nil, ErrExpired
	}
	tok := s.Token
	return &tok, nil
}

// Authenticate checks a bearer token and returns its record. The errors
// wrap ErrMissing, ErrMalformed, ErrUnknown, ErrExpired or ErrRevoked.
func (t *Tokens) Authenticate(ctx context.Context, bearer string) (*Token, error) {
	bearer = strings.TrimSpace(bearer)
	if bearer == "" {
		return nil, ErrMissing
	}
	id, ok := idOf(bearer)
	if !ok {
		return nil, ErrMalformed
	}
	now := time.Now()
	s, cached := t.records.get(id, now)
	if !cached {
		var err error
		s, err = t.get(ctx, id)
		if errors.Is(err, registry.ErrNotFound) {
			return nil, ErrUnknown
		}
		if err != nil {
			return nil, err
		}
		t.records.put(s, now)
	}
	if subtle.ConstantTimeCompare([]byte(hashOf(bearer)), []byte(s.Hash)) != 1 {
		return nil, ErrUnknown
	}
	switch s.State(t.now()) {
	case "revoked":
		return nil, fmt.Errorf("token %s (%s) was revoked at %s: %w", s.ID, s.Name, s.RevokedAt.Format(time.RFC3339), ErrRevoked)
	case "expired":
		return nil, fmt.Errorf("token %s (%s) expired at %s: %w", s.ID, s.Name, s.ExpiresAt.Format(time.RFC3339), ErrExpired)
	}
	tok := s.Token
	return &tok, nil
}

func (t *Tokens) get(ctx context.Context, id string) (stored, error) {
	var s stored
	d, err := t.docs.GetDoc(ctx, DocKind, id)
	if err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			return s, fmt.Errorf("no token with id %q (see caphub token list): %w", id, registry.ErrNotFound)
		}
		return s, fmt.Errorf("read token %s: %w", id, err)
	}
	if err := json.Unmarshal(d.Value, &s); err != nil {
		return s, fmt.Errorf("token %s: unreadable record: %w", id, err)
	}
	return s, nil
}

// put saves s, with an audit event of kind (by the caller in ctx) that
// names the token and its scopes, never its secret or hash.
func (t *Tokens) put(ctx context.Context, s stored, kind string) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	event := map[string]any{"token": s.ID, "name": s.Name, "scopes": s.Scopes}
	if s.Agent != "" {
		event["agent"] = s.Agent
	}
	if s.ExpiresAt != nil {
		event["expires_at"] = s.ExpiresAt
	}
	ops := []registry.DocOp{{Kind: DocKind, Key: s.ID, Value: b}}
	t.records.drop(s.ID)
	defer t.records.drop(s.ID) // a request that read it meanwhile
	if err := registry.ApplyDocsRecorded(ctx, t.docs, t.recorder, ops, kind, identity.From(ctx).Actor, "", event); err != nil {
		return fmt.Errorf("save token %s: %w", s.ID, err)
	}
	return nil
}

// idOf extracts the id from chp_<id>_<secret>; ids are lowercase hex.
func idOf(secret string) (string, bool) {
	rest, ok := strings.CutPrefix(secret, Prefix)
	if !ok {
		return "", false
	}
	id, sec, ok := strings.Cut(rest, "_")
	if !ok || id == "" || sec == "" || len(id) > 32 {
		return "", false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return id, true
}

func hashOf(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// ErrAuthNeeded is Required's refusal. Callers prefix where they would
// listen: fmt.Errorf("caphub serve on %s %w", addr, err).
var ErrAuthNeeded = errors.New("needs API authentication: create a token with `caphub token create NAME --scope admin` first")

// Required decides whether caphub serve enforces authentication. With at
// least one token, it always does. Without one, it serves openly on
// loopback (only local users can reach it) and refuses, with ErrAuthNeeded,
// both a non-loopback address and force (--auth): enforcing auth with no
// token would refuse every request.
func Required(loopback bool, tokensExist bool, force bool) (enforce bool, err error) {
	switch {
	case tokensExist:
		return true, nil
	case !loopback || force:
		return false, ErrAuthNeeded
	}
	return false, nil
}
