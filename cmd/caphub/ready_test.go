package main

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"
)

// TestReadyz checks serve's readiness endpoint: ready, without a token,
// when the store answers with every migration applied and the audit writer
// commits; 503 naming the migrations check when the database lacks one
// (as a database migrated by older code would), with no error detail.
func TestReadyz(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ready.db")
	if code, _, errOut := caphub(t, "token", "create", "ops", "--scope", "read", "--db", db); code != 0 {
		t.Fatalf("token create: exit %d\n%s", code, errOut)
	}
	p := startServe(t, db) // a token exists: every route but the public ones needs it
	get := func() (int, map[string]any) {
		t.Helper()
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	code, body := get()
	checks, _ := body["checks"].(map[string]any)
	if code != 200 || body["status"] != "ready" || checks["store"] != "ok" || checks["migrations"] != "ok" || checks["audit"] != "ok" {
		t.Fatalf("/readyz: %d %v; want 200 ready with store, migrations and audit ok", code, body)
	}
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(`DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)`); err != nil {
		t.Fatal(err)
	}
	code, body = get()
	checks, _ = body["checks"].(map[string]any)
	if code != 503 || body["status"] != "not ready" || checks["migrations"] == "ok" || checks["store"] != "ok" {
		t.Fatalf("/readyz without the last migration: %d %v; want 503 naming migrations", code, body)
	}
}
