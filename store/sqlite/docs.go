package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/read"
	"github.com/caphub/caphub/store/internal/write"
)

var _ registry.DocStore = (*Store)(nil)

// docColumns are the columns scanDoc reads.
const docColumns = `kind, key, value, updated_at`

// PutDoc creates or replaces a document; see registry.DocStore.
func (s *Store) PutDoc(ctx context.Context, kind, key string, value []byte) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := write.CheckDoc(kind, key, value); err != nil {
		return fmt.Errorf("put %s: %w", write.DocName(kind, key), err)
	}
	if _, err := s.writer.ExecContext(ctx, putDocSQL, kind, key, string(value), formatTime(time.Now())); err != nil {
		return fmt.Errorf("put %s into sqlite database %s: %w", write.DocName(kind, key), s.path, err)
	}
	return nil
}

// putDocSQL creates or replaces one document. The value is bound as a
// string, so that it is stored as TEXT, exactly as given.
const putDocSQL = `INSERT INTO docs (kind, key, value, updated_at) VALUES (?, ?, ?, ?)
	ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`

// GetDoc returns a document; see registry.DocStore.
func (s *Store) GetDoc(ctx context.Context, kind, key string) (registry.Doc, error) {
	if err := s.checkOpen(); err != nil {
		return registry.Doc{}, err
	}
	if err := write.CheckDocName(kind, key); err != nil {
		return registry.Doc{}, fmt.Errorf("get %s: %w", write.DocName(kind, key), err)
	}
	d, err := scanDoc(s.reader.QueryRowContext(ctx, `SELECT `+docColumns+` FROM docs WHERE kind = ? AND key = ?`, kind, key))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.Doc{}, fmt.Errorf("%s: %w", write.DocName(kind, key), registry.ErrNotFound)
	}
	if err != nil {
		return registry.Doc{}, fmt.Errorf("get %s from sqlite database %s: %w", write.DocName(kind, key), s.path, err)
	}
	return d, nil
}

// ListDocs returns the documents of a kind whose key starts with prefix,
// in byte order of their keys; see registry.DocStore. It scans the primary
// key's index from prefix to the prefix's successor (never LIKE, whose
// wildcards a prefix may contain).
func (s *Store) ListDocs(ctx context.Context, kind, prefix string) ([]registry.Doc, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("list documents of kind %q with key prefix %q", kind, prefix)
	if err := write.CheckDocPrefix(kind, prefix); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	query, args := read.DocListQuery(dialect, docColumns, kind, prefix)
	rows, err := s.reader.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s in sqlite database %s: %w", what, s.path, err)
	}
	defer rows.Close()
	out, err := read.Collect(rows, func() (registry.Doc, error) { return scanDoc(rows) })
	if err != nil {
		return nil, fmt.Errorf("%s in sqlite database %s: %w", what, s.path, err)
	}
	return out, nil
}

// DeleteDoc deletes a document; see registry.DocStore.
func (s *Store) DeleteDoc(ctx context.Context, kind, key string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := write.CheckDocName(kind, key); err != nil {
		return fmt.Errorf("delete %s: %w", write.DocName(kind, key), err)
	}
	res, err := s.writer.ExecContext(ctx, deleteDocSQL, kind, key)
	if err != nil {
		return fmt.Errorf("delete %s from sqlite database %s: %w", write.DocName(kind, key), s.path, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("delete %s from sqlite database %s: %w", write.DocName(kind, key), s.path, err)
	}
	if n == 0 {
		return fmt.Errorf("delete %s: %w", write.DocName(kind, key), registry.ErrNotFound)
	}
	return nil
}

const deleteDocSQL = `DELETE FROM docs WHERE kind = ? AND key = ?`

// ApplyDocs applies the ops in order in one transaction; see
// registry.DocStore. Every op is checked before anything is written, so an
// invalid one fails the whole batch with nothing written. Several ops on one
// document leave what the last one says.
func (s *Store) ApplyDocs(ctx context.Context, ops []registry.DocOp) error {
	return s.ApplyDocsAudited(ctx, ops, nil)
}

// ApplyDocsAudited is ApplyDocs committing the events of hook in the same
// transaction; see registry.Store.
func (s *Store) ApplyDocsAudited(ctx context.Context, ops []registry.DocOp, hook *chain.Hook) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := write.CheckHook(hook, 0); err != nil {
		return fmt.Errorf("apply %d document ops: %w: nothing was written", len(ops), err)
	}
	for i, op := range ops {
		if err := write.CheckDocOp(op); err != nil {
			return fmt.Errorf("apply %d document ops: op %d (%s): %w: nothing was written", len(ops), i, write.OpName(op), err)
		}
	}
	if len(ops) == 0 {
		return nil
	}
	now := formatTime(time.Now())
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("apply %d document ops to sqlite database %s: begin: %w", len(ops), s.path, err)
	}
	defer tx.Rollback()
	put, err := tx.PrepareContext(ctx, putDocSQL)
	if err != nil {
		return fmt.Errorf("apply %d document ops to sqlite database %s: prepare statement: %w", len(ops), s.path, err)
	}
	defer put.Close()
	del, err := tx.PrepareContext(ctx, deleteDocSQL)
	if err != nil {
		return fmt.Errorf("apply %d document ops to sqlite database %s: prepare statement: %w", len(ops), s.path, err)
	}
	defer del.Close()
	for i, op := range ops {
		if op.Delete {
			_, err = del.ExecContext(ctx, op.Kind, op.Key)
		} else {
			_, err = put.ExecContext(ctx, op.Kind, op.Key, string(op.Value), now)
		}
		if err != nil {
			return fmt.Errorf("apply %d document ops to sqlite database %s: op %d (%s): %w: nothing was written", len(ops), s.path, i, write.OpName(op), err)
		}
	}
	if hook != nil {
		if err := s.appendHook(ctx, tx, hook, nil); err != nil {
			return fmt.Errorf("apply %d document ops to sqlite database %s: %w: nothing was written", len(ops), s.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("apply %d document ops to sqlite database %s: commit: %w: nothing was written", len(ops), s.path, err)
	}
	return nil
}

// checkOpen fails once the store is closed, with a message clearer than
// database/sql's.
func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return fmt.Errorf("sqlite store %s is closed", s.path)
	}
	return nil
}

// scanDoc reads one row of docColumns.
func scanDoc(sc scanner) (registry.Doc, error) {
	var (
		d         registry.Doc
		value     string
		updatedAt string
	)
	if err := sc.Scan(&d.Kind, &d.Key, &value, &updatedAt); err != nil {
		return registry.Doc{}, err
	}
	d.Value = []byte(value)
	t, err := parseTime(updatedAt)
	if err != nil {
		return registry.Doc{}, fmt.Errorf("decode updated_at of %s: %w: the database is damaged", write.DocName(d.Kind, d.Key), err)
	}
	d.UpdatedAt = t
	return d, nil
}
