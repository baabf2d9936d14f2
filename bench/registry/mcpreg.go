package main

// The reference: the official MCP Registry's PostgreSQL schema and queries
// (github.com/modelcontextprotocol/registry), rewritten here from reading
// them, not copied, and replayed with pgx on a schema of their own in the
// same PostgreSQL, loaded with the same N entries. Read (2026 versions):
//
//   - internal/database/migrations/008_separate_official_metadata.sql: the
//     servers table keyed by (server_name, version), registry metadata in
//     columns (status, published_at, updated_at, is_latest) beside the
//     server.json in value JSONB, its indexes (name, name+version, latest
//     per name, unique latest per name, status, published_at, updated_at,
//     GIN on remotes and packages) and CHECK constraints; the later
//     status_changed_at and status_message columns as
//     internal/database/postgres.go (commit 61de4583, which cites
//     2026-04-28 production measurements) reads them;
//   - internal/database/migrations/015_add_search_trgm_indexes.sql: trigram
//     GIN indexes on server_name and value->>'description' for ?search=;
//   - internal/database/postgres.go: ListServers (filters, status <>
//     'deleted', the (server_name, version) row-constructor cursor, ORDER BY
//     server_name, version LIMIT), GetServerByNameAndVersion, the publish
//     helpers (advisory transaction lock on the name, count of versions,
//     version exists, current latest, unmark latest, insert);
//   - internal/service/registry_service.go: createServerInTransaction, the
//     order of the publish transaction's steps, and the remote-URL conflict
//     check through ListServers with the GIN containment filter.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// refSchema creates the reference's servers table (see the file comment).
var refSchema = []string{
	`CREATE TABLE servers (
		server_name VARCHAR(255) NOT NULL,
		version VARCHAR(255) NOT NULL,
		status VARCHAR(50) NOT NULL DEFAULT 'active',
		status_changed_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
		status_message TEXT,
		published_at TIMESTAMPTZ NOT NULL,
		updated_at TIMESTAMPTZ,
		is_latest BOOLEAN NOT NULL DEFAULT false,
		value JSONB NOT NULL,
		PRIMARY KEY (server_name, version),
		CHECK (status IN ('active', 'deprecated', 'deleted')),
		CHECK (server_name ~ '^[a-zA-Z0-9][a-zA-Z0-9.-]*[a-zA-Z0-9]/[a-zA-Z0-9][a-zA-Z0-9._-]*[a-zA-Z0-9]$'),
		CHECK (length(trim(version)) > 0),
		CHECK (published_at >= '2020-01-01'::timestamp AND published_at <= NOW() + interval '1 day'))`,
	`CREATE INDEX ref_name ON servers (server_name)`,
	`CREATE INDEX ref_name_version ON servers (server_name, version)`,
	`CREATE INDEX ref_name_latest ON servers (server_name, is_latest) WHERE is_latest`,
	`CREATE UNIQUE INDEX ref_unique_latest ON servers (server_name) WHERE is_latest`,
	`CREATE INDEX ref_status ON servers (status)`,
	`CREATE INDEX ref_published_at ON servers (published_at DESC)`,
	`CREATE INDEX ref_updated_at ON servers (updated_at DESC) WHERE updated_at IS NOT NULL`,
	`CREATE INDEX ref_remotes ON servers USING GIN ((value -> 'remotes'))`,
	`CREATE INDEX ref_packages ON servers USING GIN ((value -> 'packages'))`,
	`CREATE INDEX ref_name_trgm ON servers USING GIN (server_name gin_trgm_ops)`,
	`CREATE INDEX ref_description_trgm ON servers USING GIN ((value ->> 'description') gin_trgm_ops)`,
}

// refColumns are the columns every read selects, as the registry's do.
const refColumns = `server_name, version, status, status_changed_at, status_message, published_at, updated_at, is_latest, value`

// serverJSON is the part of a server.json the reference stores and
// decodes: about the size of a real entry.
type serverJSON struct {
	Schema      string       `json:"$schema"`
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Version     string       `json:"version"`
	Repository  *repository  `json:"repository,omitempty"`
	Remotes     []remote     `json:"remotes,omitempty"`
	Packages    []refPackage `json:"packages,omitempty"`
}

type repository struct {
	URL    string `json:"url"`
	Source string `json:"source"`
}

type remote struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

type refPackage struct {
	RegistryType string `json:"registryType"`
	Identifier   string `json:"identifier"`
	Version      string `json:"version"`
}

// refEntry is one reference row as read back.
type refEntry struct {
	name, version, status   string
	statusChanged, pub, upd *time.Time
	statusMessage           *string
	latest                  bool
	server                  serverJSON
}

// reference is the official registry's schema in PostgreSQL.
type reference struct {
	pool *pgxpool.Pool
	// deep is the (server_name, version) cursor of the page 90% into the
	// list of latest versions.
	deep []any
}

// refName is the reference's server name of a caphub capability.
func refName(d *capability.Definition) string { return "io.caphub." + d.Domain + "/" + d.Name }

// refServer is the server.json the reference stores for d.
func refServer(d *capability.Definition) serverJSON {
	return serverJSON{
		Schema:      "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
		Name:        refName(d),
		Description: d.Description,
		Version:     d.Version,
		Repository:  &repository{URL: "https://github.com/caphub-bench/" + d.Domain, Source: "github"},
		Remotes:     []remote{{Type: "streamable-http", URL: "https://" + d.Domain + ".example.com/mcp/" + d.Name}},
	}
}

// setupReference creates the reference's schema and loads b.defs into it
// with COPY, then ANALYZE.
func (b *bench) setupReference() error {
	schema, err := b.schema("", "mcpreg_bench")
	if err != nil {
		return err
	}
	cfg, err := pgxpool.ParseConfig(withSearchPath(b.cfg.pgURL, schema+",public"))
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(max(b.cfg.clients, 4))
	pool, err := pgxpool.NewWithConfig(b.ctx, cfg)
	if err != nil {
		return err
	}
	b.ref = &reference{pool: pool}
	if err := createTrgm(b.ctx, pool); err != nil {
		return err
	}
	for _, stmt := range refSchema {
		if _, err := pool.Exec(b.ctx, stmt); err != nil {
			return fmt.Errorf("reference schema: %w\n%s", err, stmt)
		}
	}
	start := time.Now()
	if err := b.ref.load(b.ctx, b.defs, b.latest); err != nil {
		return err
	}
	b.cfg.progress.Printf("reference: loaded %d in %s", len(b.defs), time.Since(start).Round(time.Millisecond))
	if _, err := pool.Exec(b.ctx, "ANALYZE servers"); err != nil {
		return err
	}
	return b.ref.findDeep(b.ctx, len(b.latest), b.cfg.pageSize)
}

// createTrgm makes sure pg_trgm exists (the registry's first migration
// creates it), tolerating a concurrent creation by another session.
func createTrgm(ctx context.Context, pool *pgxpool.Pool) error {
	var err error
	for range 3 {
		if _, err = pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public"); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("reference: CREATE EXTENSION pg_trgm: %w", err)
}

// load copies defs in, each capability's highest version (latest)
// flagged is_latest.
func (r *reference) load(ctx context.Context, defs, latest []capability.Definition) error {
	isLatest := make(map[string]string, len(latest))
	for i := range latest {
		isLatest[refName(&latest[i])] = latest[i].Version
	}
	now := time.Now().Add(-time.Hour)
	rows := make([][]any, 0, len(defs))
	for i := range defs {
		d := &defs[i]
		v, err := json.Marshal(refServer(d))
		if err != nil {
			return err
		}
		name := refName(d)
		rows = append(rows, []any{name, d.Version, "active", now, now, now, isLatest[name] == d.Version, string(v)})
	}
	_, err := r.pool.CopyFrom(ctx, pgx.Identifier{"servers"},
		[]string{"server_name", "version", "status", "status_changed_at", "published_at", "updated_at", "is_latest", "value"}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("reference: load: %w", err)
	}
	return nil
}

// findDeep finds the cursor of the page 90% into the latest versions.
func (r *reference) findDeep(ctx context.Context, latest, page int) error {
	pages := (latest + page - 1) / page
	offset := max(0, (pages-1)*9/10*page+page-1)
	var name, version string
	err := r.pool.QueryRow(ctx, `SELECT server_name, version FROM servers WHERE is_latest AND status <> 'deleted'
		ORDER BY server_name, version OFFSET $1 LIMIT 1`, offset).Scan(&name, &version)
	if err != nil {
		return fmt.Errorf("reference: find the deep cursor: %w", err)
	}
	r.deep = []any{name, version}
	return nil
}

// scanEntries reads and decodes the rows of a read, as the registry does.
func scanEntries(rows pgx.Rows) ([]refEntry, error) {
	defer rows.Close()
	var out []refEntry
	for rows.Next() {
		var e refEntry
		var value []byte
		if err := rows.Scan(&e.name, &e.version, &e.status, &e.statusChanged, &e.statusMessage, &e.pub, &e.upd, &e.latest, &value); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(value, &e.server); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// get reads one version by name and version.
func (r *reference) get(ctx context.Context, d *capability.Definition) error {
	rows, err := r.pool.Query(ctx, `SELECT `+refColumns+` FROM servers
		WHERE server_name = $1 AND version = $2 AND status <> 'deleted' LIMIT 1`, refName(d), d.Version)
	if err != nil {
		return err
	}
	es, err := scanEntries(rows)
	if err == nil && len(es) != 1 {
		err = fmt.Errorf("reference: %s@%s not found", refName(d), d.Version)
	}
	return err
}

// list reads a page of latest versions, after the cursor (name, version)
// when there is one.
func (r *reference) list(ctx context.Context, limit int, cursor []any) error {
	var rows pgx.Rows
	var err error
	if cursor == nil {
		rows, err = r.pool.Query(ctx, `SELECT `+refColumns+` FROM servers
			WHERE is_latest = $1 AND status <> 'deleted' ORDER BY server_name, version LIMIT $2`, true, limit)
	} else {
		rows, err = r.pool.Query(ctx, `SELECT `+refColumns+` FROM servers
			WHERE is_latest = $1 AND status <> 'deleted' AND (server_name, version) > ($2, $3)
			ORDER BY server_name, version LIMIT $4`, true, cursor[0], cursor[1], limit)
	}
	if err != nil {
		return err
	}
	es, err := scanEntries(rows)
	if err == nil && len(es) == 0 {
		err = errors.New("reference: an empty page")
	}
	return err
}

// likeEscaper escapes LIKE's wildcards in a search text.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// search is ?search=text&version=latest: a substring of the name or the
// description, the latest versions, by name.
func (r *reference) search(ctx context.Context, text string, limit int) error {
	pattern := "%" + likeEscaper.Replace(text) + "%"
	rows, err := r.pool.Query(ctx, `SELECT `+refColumns+` FROM servers
		WHERE (server_name ILIKE $1 ESCAPE '\' OR value ->> 'description' ILIKE $1 ESCAPE '\')
		AND is_latest = $2 AND status <> 'deleted' ORDER BY server_name, version LIMIT $3`, pattern, true, limit)
	if err != nil {
		return err
	}
	_, err = scanEntries(rows)
	return err
}

// publish runs the registry's publish transaction for w: lock the name,
// check the remote URLs and the versions, move the latest flag, insert.
func (r *reference) publish(ctx context.Context, w write) error {
	s := refServer(&w.def)
	value, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "publish:"+s.Name); err != nil {
			return err
		}
		if err := remotesFree(ctx, tx, &s); err != nil {
			return err
		}
		newLatest, hadLatest, err := versionChecks(ctx, tx, &s)
		if err != nil {
			return err
		}
		if newLatest && hadLatest {
			if _, err := tx.Exec(ctx, `UPDATE servers SET is_latest = false WHERE server_name = $1 AND is_latest`, s.Name); err != nil {
				return err
			}
		}
		now := time.Now()
		_, err = tx.Exec(ctx, `INSERT INTO servers (`+refColumns+`) VALUES ($1, $2, 'active', $3, NULL, $3, $3, $4, $5)`,
			s.Name, s.Version, now, newLatest, value)
		return err
	})
}

// remotesFree fails when another server uses one of s's remote URLs (the
// registry's check, through its list with the containment filter).
func remotesFree(ctx context.Context, tx pgx.Tx, s *serverJSON) error {
	for _, rm := range s.Remotes {
		rows, err := tx.Query(ctx, `SELECT `+refColumns+` FROM servers
			WHERE value -> 'remotes' @> jsonb_build_array(jsonb_build_object('url', $1::text)) AND status <> 'deleted'
			ORDER BY server_name, version LIMIT 1000`, rm.URL)
		if err != nil {
			return err
		}
		es, err := scanEntries(rows)
		if err != nil {
			return err
		}
		for _, e := range es {
			if e.name != s.Name {
				return fmt.Errorf("reference: remote URL %s is already used by %s", rm.URL, e.name)
			}
		}
	}
	return nil
}

// versionChecks counts s's versions, refuses a version that exists, and
// reads the current latest: whether s becomes the latest, and whether
// there was one.
func versionChecks(ctx context.Context, tx pgx.Tx, s *serverJSON) (newLatest, hadLatest bool, err error) {
	var count int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM servers WHERE server_name = $1`, s.Name).Scan(&count); err != nil {
		return false, false, err
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM servers WHERE server_name = $1 AND version = $2)`, s.Name, s.Version).Scan(&exists); err != nil {
		return false, false, err
	}
	if exists {
		return false, false, fmt.Errorf("reference: %s@%s exists", s.Name, s.Version)
	}
	rows, err := tx.Query(ctx, `SELECT `+refColumns+` FROM servers WHERE server_name = $1 AND is_latest`, s.Name)
	if err != nil {
		return false, false, err
	}
	current, err := scanEntries(rows)
	if err != nil {
		return false, false, err
	}
	if len(current) == 0 {
		return true, false, nil
	}
	return capability.MustParseVersion(current[0].version).Less(capability.MustParseVersion(s.Version)), true, nil
}

// close closes the pool (the schema is dropped with the run's others).
func (r *reference) close() { r.pool.Close() }
