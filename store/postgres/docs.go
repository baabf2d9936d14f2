package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/caphub/caphub/registry"
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
	if err := checkDoc(kind, key, value); err != nil {
		return fmt.Errorf("put %s: %w", docName(kind, key), err)
	}
	if _, err := s.pool.Exec(ctx, putDocSQL, kind, key, string(value), docTime()); err != nil {
		return fmt.Errorf("put %s into postgres %s: %w", docName(kind, key), s.where, err)
	}
	return nil
}

// GetDoc returns a document; see registry.DocStore.
func (s *Store) GetDoc(ctx context.Context, kind, key string) (registry.Doc, error) {
	if err := s.checkOpen(); err != nil {
		return registry.Doc{}, err
	}
	if err := checkDocName(kind, key); err != nil {
		return registry.Doc{}, fmt.Errorf("get %s: %w", docName(kind, key), err)
	}
	d, err := scanDoc(s.pool.QueryRow(ctx, `SELECT `+docColumns+` FROM docs WHERE kind = $1 AND key = $2`, kind, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return registry.Doc{}, fmt.Errorf("%s: %w", docName(kind, key), registry.ErrNotFound)
	}
	if err != nil {
		return registry.Doc{}, fmt.Errorf("get %s from postgres %s: %w", docName(kind, key), s.where, err)
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
	if err := checkDocPrefix(kind, prefix); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	query, args := listDocsSQL(kind, prefix)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s in postgres %s: %w", what, s.where, err)
	}
	defer rows.Close()
	out := []registry.Doc{}
	for rows.Next() {
		d, err := scanDoc(rows)
		if err != nil {
			return nil, fmt.Errorf("%s in postgres %s: %w", what, s.where, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s in postgres %s: %w", what, s.where, err)
	}
	return out, nil
}

// listDocsSQL returns the query of ListDocs and its arguments. The key
// column is COLLATE "C", which the parameters take on, so the range is in
// byte order and the primary key's index serves it.
func listDocsSQL(kind, prefix string) (string, []any) {
	query := `SELECT ` + docColumns + ` FROM docs WHERE kind = $1`
	args := []any{kind}
	if prefix != "" {
		query += ` AND key >= $2`
		args = append(args, prefix)
		if end, ok := prefixEnd(prefix); ok {
			query += ` AND key < $3`
			args = append(args, end)
		}
	}
	return query + ` ORDER BY key`, args
}

// DeleteDoc deletes a document; see registry.DocStore.
func (s *Store) DeleteDoc(ctx context.Context, kind, key string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := checkDocName(kind, key); err != nil {
		return fmt.Errorf("delete %s: %w", docName(kind, key), err)
	}
	tag, err := s.pool.Exec(ctx, deleteDocSQL, kind, key)
	if err != nil {
		return fmt.Errorf("delete %s from postgres %s: %w", docName(kind, key), s.where, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete %s: %w", docName(kind, key), registry.ErrNotFound)
	}
	return nil
}

// ApplyDocs applies the ops in one transaction; see registry.DocStore. Every
// op is checked before anything is written, so an invalid one fails the
// whole batch with nothing written. Several ops on one document leave what
// the last one says. The writes go in (kind, key) order, so that concurrent
// batches lock shared documents in the same order and do not deadlock.
func (s *Store) ApplyDocs(ctx context.Context, ops []registry.DocOp) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	for i, op := range ops {
		if err := checkDocOp(op); err != nil {
			return fmt.Errorf("apply %d document ops: op %d (%s): %w: nothing was written", len(ops), i, opName(op), err)
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
		return tx.SendBatch(ctx, b).Close()
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

// docName names a document in messages.
func docName(kind, key string) string {
	return fmt.Sprintf("document %q of kind %q", key, kind)
}

func opName(op registry.DocOp) string {
	if op.Delete {
		return "delete " + docName(op.Kind, op.Key)
	}
	return "put " + docName(op.Kind, op.Key)
}

func checkDocOp(op registry.DocOp) error {
	if op.Delete {
		return checkDocName(op.Kind, op.Key)
	}
	return checkDoc(op.Kind, op.Key, op.Value)
}

// checkDoc checks a document to be written: its kind and key, and that its
// value is one JSON text.
func checkDoc(kind, key string, value []byte) error {
	if err := checkDocName(kind, key); err != nil {
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

// checkDocName checks a document's kind and key: not empty, valid UTF-8,
// no NUL (which PostgreSQL text cannot hold; both stores refuse it alike).
func checkDocName(kind, key string) error {
	if err := checkDocText("kind", kind); err != nil {
		return err
	}
	return checkDocText("key", key)
}

// checkDocPrefix checks the kind and key prefix of ListDocs; an empty
// prefix lists the whole kind.
func checkDocPrefix(kind, prefix string) error {
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

// prefixEnd returns the least valid UTF-8 string greater than every string
// that starts with prefix, the exclusive upper bound of a range scan for the
// prefix in byte order; false when there is none (the prefix is all
// U+10FFFF). prefix must be valid UTF-8: the successor of its last rune
// replaces it (skipping the surrogates, which UTF-8 cannot encode), so the
// bound is valid UTF-8 too, as a PostgreSQL text parameter must be. UTF-8's
// byte order is code point order, so a valid string is in [prefix, end)
// exactly when it starts with prefix.
func prefixEnd(prefix string) (string, bool) {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
		if r == utf8.MaxRune {
			continue
		}
		r++
		if r >= 0xD800 && r <= 0xDFFF {
			r = 0xE000
		}
		return prefix + string(r), true
	}
	return "", false
}
