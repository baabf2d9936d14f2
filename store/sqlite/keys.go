package sqlite

import (
	"context"
	"fmt"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/read"
)

// KeysWithPrefix lists capabilities by the start of their key; see
// registry.Store.
func (s *Store) KeysWithPrefix(ctx context.Context, p registry.KeyPrefix) ([]registry.Key, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	query, args := read.KeyPrefixQuery(dialect, p)
	rows, err := s.reads.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list capabilities by key prefix in sqlite database %s: %w", s.path, err)
	}
	defer rows.Close()
	keys, err := read.Keys(rows)
	if err != nil {
		return nil, fmt.Errorf("list capabilities by key prefix in sqlite database %s: %w", s.path, err)
	}
	return keys, nil
}
