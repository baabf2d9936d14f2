package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/read"
	"github.com/caphub/caphub/store/internal/write"
)

var _ registry.DocStore = (*Store)(nil)

// docColumns are the columns scanDoc reads.
const docColumns = `kind, key, value::text, updated_at`

// putDocSQL creates or replaces one document. The value goes in as text and
// is cast to json, which keeps it exactly as written.
const putDocSQL = `INSERT INTO docs (kind, key, value, updated_at) VALUES ($1, $2, $3::text::json, $4)
	ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`

const deleteDocSQL = `DELETE FROM docs WHERE kind = $1 AND key = $2`

// PutDoc creates or replaces a document; see registry.DocStore.
func (s *Store) PutDoc(ctx context.Context, kind, key string, value []byte) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := write.CheckDoc(kind, key, value); err != nil {
		return fmt.Errorf("put %s: %w", write.DocName(kind, key), err)
	}
	if _, err := s.pool.Exec(ctx, putDocSQL, kind, key, string(value), docTime()); err != nil {
		return fmt.Errorf("put %s into postgres %s: %w", write.DocName(kind, key), s.where, err)
	}
	return nil
}

// GetDoc returns a document; see registry.DocStore.
func (s *Store) GetDoc(ctx context.Context, kind, key string) (registry.Doc, error) {
	if err := s.checkOpen(); err != nil {
		return registry.Doc{}, err
	}
	if err := write.CheckDocName(kind, key); err != nil {
		return registry.Doc{}, fmt.Errorf("get %s: %w", write.DocName(kind, key), err)
	}
	d, err := scanDoc(s.pool.QueryRow(ctx, `SELECT `+docColumns+` FROM docs WHERE kind = $1 AND key = $2`, kind, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return registry.Doc{}, fmt.Errorf("%s: %w", write.DocName(kind, key), registry.ErrNotFound)
	}
	if err != nil {
		return registry.Doc{}, fmt.Errorf("get %s from postgres %s: %w", write.DocName(kind, key), s.where, err)
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
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s in postgres %s: %w", what, s.where, err)
	}
	defer rows.Close()
	out, err := read.Collect(rows, func() (registry.Doc, error) { return scanDoc(rows) })
	if err != nil {
		return nil, fmt.Errorf("%s in postgres %s: %w", what, s.where, err)
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
	tag, err := s.pool.Exec(ctx, deleteDocSQL, kind, key)
	if err != nil {
		return fmt.Errorf("delete %s from postgres %s: %w", write.DocName(kind, key), s.where, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete %s: %w", write.DocName(kind, key), registry.ErrNotFound)
	}
	return nil
}

// ApplyDocs applies the ops in one transaction; see registry.DocStore. Every
// op is checked before anything is written, so an invalid one fails the
// whole batch with nothing written. Several ops on one document leave what
// the last one says. The writes go in (kind, key) order, so that concurrent
// batches lock shared documents in the same order and do not deadlock.
func (s *Store) ApplyDocs(ctx context.Context, ops []registry.DocOp) error {
	return s.ApplyDocsAudited(ctx, ops, nil)
}

// ApplyDocsAudited is ApplyDocs committing the events of hook in the same
// transaction (the chain's lock taken last); see registry.Store.
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
	// The last op on each document decides what it becomes, as if the ops
	// were applied one after the other.
	type name struct{ kind, key string }
	last := map[name]int{}
	for i, op := range ops {
		last[name{op.Kind, op.Key}] = i
	}
	order := make([]int, 0, len(last))
	for _, i := range last {
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(ops[a].Kind, ops[b].Kind), strings.Compare(ops[a].Key, ops[b].Key))
	})
	now := docTime()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, i := range order {
			op := ops[i]
			if op.Delete {
				b.Queue(deleteDocSQL, op.Kind, op.Key)
			} else {
				b.Queue(putDocSQL, op.Kind, op.Key, string(op.Value), now)
			}
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil || hook == nil {
			return err
		}
		return s.appendHook(ctx, tx, hook, nil)
	})
	if err != nil {
		return fmt.Errorf("apply %d document ops to postgres %s: %w: nothing was written", len(ops), s.where, err)
	}
	return nil
}

// docTime is the time a write stamps documents with: now, to the
// microsecond PostgreSQL keeps.
func docTime() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// scanDoc reads one row of docColumns.
func scanDoc(row pgx.Row) (registry.Doc, error) {
	var (
		d     registry.Doc
		value string
	)
	if err := row.Scan(&d.Kind, &d.Key, &value, &d.UpdatedAt); err != nil {
		return registry.Doc{}, err
	}
	d.Value = []byte(value)
	d.UpdatedAt = d.UpdatedAt.UTC()
	return d, nil
}
