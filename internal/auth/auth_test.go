package auth

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "caphub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

var _ registry.DocStore = (*sqlite.Store)(nil)

func TestCreateAuthenticate(t *testing.T) {
	ctx := context.Background()
	toks := New(openStore(t), nil)
	if ok, err := toks.Exist(ctx); err != nil || ok {
		t.Fatalf("Exist on empty store = %v, %v; want false", ok, err)
	}
	tok, secret, err := toks.Create(ctx, "ci-bot", []Scope{ScopeRead, ScopeInvoke, ScopeRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, Prefix+tok.ID+"_") || len(secret) < 40 {
		t.Fatalf("secret %q does not embed id %s", secret, tok.ID)
	}
	if len(tok.Scopes) != 2 || tok.ExpiresAt != nil {
		t.Fatalf("token = %+v, want scopes read, invoke deduplicated and no expiry", tok)
	}
	got, err := toks.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "ci-bot" || !got.Has(ScopeRead) || !got.Has(ScopeInvoke) || got.Has(ScopePublish) {
		t.Fatalf("authenticated %+v", got)
	}
	if ok, _ := toks.Exist(ctx); !ok {
		t.Fatal("Exist = false after Create")
	}
	// The secret is not stored: only its hash.
	d, err := openDoc(ctx, toks, tok.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(d), secret[len(Prefix)+len(tok.ID)+1:]) {
		t.Fatal("the stored record contains the secret")
	}
	for name, bearer := range map[string]string{
		"empty":        "",
		"no prefix":    "abc",
		"no secret":    Prefix + tok.ID,
		"bad id":       Prefix + "XYZ_abc",
		"unknown id":   Prefix + "000000000000_abc",
		"wrong secret": Prefix + tok.ID + "_wrong",
	} {
		_, err := toks.Authenticate(ctx, bearer)
		if !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: err = %v, want ErrUnauthenticated", name, err)
		}
	}
	if _, err := toks.Authenticate(ctx, Prefix+tok.ID+"_wrong"); !errors.Is(err, ErrUnknown) {
		t.Errorf("wrong secret: %v, want ErrUnknown", err)
	}
	if _, _, err := toks.Create(ctx, "ci-bot", []Scope{ScopeRead}, 0); err == nil {
		t.Error("a second active token with the same name was created")
	}
	for _, bad := range []struct {
		name   string
		scopes []Scope
		ttl    time.Duration
	}{{"", []Scope{ScopeRead}, 0}, {"x y", []Scope{ScopeRead}, 0}, {"ok", nil, 0}, {"ok", []Scope{"write"}, 0}, {"ok", []Scope{ScopeRead}, -time.Hour}} {
		if _, _, err := toks.Create(ctx, bad.name, bad.scopes, bad.ttl); err == nil {
			t.Errorf("Create(%q, %v, %s) succeeded", bad.name, bad.scopes, bad.ttl)
		}
	}
}

func openDoc(ctx context.Context, toks *Tokens, id string) ([]byte, error) {
	d, err := toks.docs.GetDoc(ctx, DocKind, id)
	return d.Value, err
}

func TestExpireRevoke(t *testing.T) {
	ctx := context.Background()
	toks := New(openStore(t), nil)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	toks.now = func() time.Time { return now }
	tok, secret, err := toks.Create(ctx, "short", []Scope{ScopeAdmin}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if tok.ExpiresAt == nil || !tok.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("ExpiresAt = %v", tok.ExpiresAt)
	}
	if _, err := toks.Authenticate(ctx, secret); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	now = now.Add(time.Hour)
	if _, err := toks.Authenticate(ctx, secret); !errors.Is(err, ErrExpired) {
		t.Fatalf("at expiry: %v, want ErrExpired", err)
	}
	if ok, _ := toks.Exist(ctx); ok {
		t.Fatal("Exist counts an expired token")
	}

	tok2, secret2, err := toks.Create(ctx, "other", []Scope{ScopeRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := toks.Revoke(ctx, tok2.ID)
	if err != nil || rev.RevokedAt == nil {
		t.Fatalf("Revoke = %+v, %v", rev, err)
	}
	if _, err := toks.Revoke(ctx, tok2.ID); err != nil {
		t.Fatalf("second Revoke: %v", err)
	}
	if _, err := toks.Authenticate(ctx, secret2); !errors.Is(err, ErrRevoked) || !strings.Contains(err.Error(), tok2.ID) {
		t.Fatalf("revoked: %v, want ErrRevoked naming %s", err, tok2.ID)
	}
	if _, err := toks.Revoke(ctx, "deadbeef0000"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("Revoke unknown: %v, want ErrNotFound", err)
	}
	all, err := toks.List(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("List = %v, %v", all, err)
	}
	states := map[string]string{}
	for _, x := range all {
		states[x.Name] = x.State(now)
	}
	if states["short"] != "expired" || states["other"] != "revoked" {
		t.Fatalf("states = %v", states)
	}
	// A revoked name may be reused.
	if _, _, err := toks.Create(ctx, "other", []Scope{ScopeRead}, 0); err != nil {
		t.Fatalf("reuse of a revoked name: %v", err)
	}
}

func TestRequired(t *testing.T) {
	for _, c := range []struct {
		loopback, exist, force bool
		enforce                bool
		err                    bool
	}{
		{loopback: true, exist: false, force: false, enforce: false},
		{loopback: true, exist: true, force: false, enforce: true},
		{loopback: true, exist: false, force: true, err: true},
		{loopback: true, exist: true, force: true, enforce: true},
		{loopback: false, exist: false, force: false, err: true},
		{loopback: false, exist: true, force: false, enforce: true},
		{loopback: false, exist: false, force: true, err: true},
		{loopback: false, exist: true, force: true, enforce: true},
	} {
		enforce, err := Required(c.loopback, c.exist, c.force)
		if enforce != c.enforce || (err != nil) != c.err {
			t.Errorf("Required(loopback=%v, exist=%v, force=%v) = %v, %v; want %v, error %v", c.loopback, c.exist, c.force, enforce, err, c.enforce, c.err)
		}
		if err != nil && !errors.Is(err, ErrAuthNeeded) {
			t.Errorf("error %v is not ErrAuthNeeded", err)
		}
	}
	_, err := Required(false, false, false)
	got := "caphub serve on 0.0.0.0:8750 " + err.Error()
	want := "caphub serve on 0.0.0.0:8750 needs API authentication: create a token with `caphub token create NAME --scope admin` first"
	if got != want {
		t.Errorf("message:\n got %s\nwant %s", got, want)
	}
}

func TestParseScope(t *testing.T) {
	for _, s := range []string{"read", "publish", "invoke", "admin", "READ"} {
		if _, err := ParseScope(s); err != nil {
			t.Errorf("ParseScope(%q): %v", s, err)
		}
	}
	if _, err := ParseScope("write"); err == nil || !strings.Contains(err.Error(), "read, publish, invoke or admin") {
		t.Errorf("ParseScope(write) = %v", err)
	}
	admin := &Token{Scopes: []Scope{ScopeAdmin}}
	for _, s := range Scopes {
		if !admin.Has(s) {
			t.Errorf("admin lacks %s", s)
		}
	}
}

// TestTokenChangesAudited checks that creating and revoking a token each
// commit an audit event by the caller, naming the token and its scopes but
// never its secret or hash.
func TestTokenChangesAudited(t *testing.T) {
	st := openStore(t)
	log := audit.New(st)
	t.Cleanup(func() { log.Close() })
	ctx := identity.With(context.Background(), identity.Caller{Actor: "local:ops"})
	toks := New(st, log)
	tok, secret, err := toks.Create(ctx, "ci-bot", []Scope{ScopeRead}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := toks.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	var hash string
	if d, err := openDoc(ctx, toks, tok.ID); err == nil {
		var s stored
		_ = json.Unmarshal(d, &s)
		hash = s.Hash
	}
	for _, kind := range []string{audit.KindTokenCreated, audit.KindTokenRevoked} {
		evs, err := log.List(ctx, chain.Filter{Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Actor != "local:ops" || !strings.Contains(string(evs[0].Data), `"token":"`+tok.ID+`"`) || !strings.Contains(string(evs[0].Data), `"scopes":["read"]`) {
			t.Fatalf("%s events = %+v, want one by local:ops naming token %s and its scopes", kind, evs, tok.ID)
		}
		if strings.Contains(string(evs[0].Data), secret[len(Prefix)+len(tok.ID)+1:]) || hash == "" || strings.Contains(string(evs[0].Data), hash) {
			t.Fatalf("%s event holds the secret or its hash: %s", kind, evs[0].Data)
		}
	}
	if v, err := log.Verify(ctx); err != nil || !v.OK {
		t.Fatalf("chain does not verify: %+v, %v", v, err)
	}
}

// Authenticate keeps the records it read for RecordTTL: a token revoked
// through the same Tokens stops authenticating at once, and one revoked
// through another Tokens on the same database (another replica) once the
// record it kept is older than the TTL.
func TestRevocationReachesCachedRecords(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	a, b := New(st, nil), New(st, nil)
	b.records.ttl = 200 * time.Millisecond
	tok, secret, err := a.Create(ctx, "cached", []Scope{ScopeRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Tokens{a, b} {
		if _, err := x.Authenticate(ctx, secret); err != nil {
			t.Fatalf("before revocation: %v", err)
		}
	}
	if _, err := a.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, secret); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked through the same Tokens: %v, want ErrRevoked at once", err)
	}
	// b read the record before the revocation: it may accept it within its
	// TTL, never after.
	deadline := time.Now().Add(b.records.ttl)
	for {
		_, err := b.Authenticate(ctx, secret)
		if errors.Is(err, ErrRevoked) {
			break
		}
		if err != nil {
			t.Fatalf("another replica: %v, want ErrRevoked or success within the TTL", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("another replica still accepts a token revoked %s ago (TTL %s)", time.Since(deadline)+b.records.ttl, b.records.ttl)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A wrong secret with a cached id is still refused.
	if _, err := a.Authenticate(ctx, secret[:len(secret)-2]+"xx"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("wrong secret of a known id: %v, want ErrUnknown", err)
	}
}
