package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxReadStmts bounds the read statements kept prepared: a list's SQL
// depends on which filters it has, so the distinct texts are many in
// principle; past the bound a query is prepared each time, as before.
const maxReadStmts = 64

// readStmts keeps the reader's frequent queries prepared, by their SQL
// text, so that SQLite parses each once per connection, not on every call:
// at 100k capabilities, parsing was ~12% of a registration's CPU (the
// tool-name and version-rule reads) and a share of every GET and list
// that misses the cache.
type readStmts struct {
	db     *sql.DB
	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	closed bool
}

// stmt returns query prepared on the reader, or nil when the bound is
// reached or preparing fails (then the caller runs query as it is, and
// meets any error there). It prepares without holding the lock, so that a
// statement waiting for a connection holds up no other read.
func (r *readStmts) stmt(ctx context.Context, query string) *sql.Stmt {
	r.mu.Lock()
	st, ok := r.stmts[query]
	full := r.closed || len(r.stmts) >= maxReadStmts
	r.mu.Unlock()
	if ok || full {
		return st
	}
	st, err := r.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if had, ok := r.stmts[query]; ok || r.closed || len(r.stmts) >= maxReadStmts {
		st.Close() // another read prepared it first, or the store closed
		return had
	}
	if r.stmts == nil {
		r.stmts = map[string]*sql.Stmt{}
	}
	r.stmts[query] = st
	return st
}

// query runs query on the reader, prepared when it can be.
func (r *readStmts) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := r.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return r.db.QueryContext(ctx, query, args...)
}

// queryRow is query for one row.
func (r *readStmts) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := r.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.db.QueryRowContext(ctx, query, args...)
}

// inTx runs query in tx, with the statement already prepared when there
// is one: it never prepares one, which would need a second connection
// while tx holds one (an in-memory database has only one).
func (r *readStmts) inTx(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	r.mu.Lock()
	st := r.stmts[query]
	r.mu.Unlock()
	if st != nil {
		return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

// len is how many statements are kept (for tests).
func (r *readStmts) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.stmts)
}

// close closes the statements; later queries run unprepared.
func (r *readStmts) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.stmts {
		st.Close()
	}
	r.stmts, r.closed = nil, true
}
