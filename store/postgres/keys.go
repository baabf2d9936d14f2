package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/internal/contract"
)

// KeysWithPrefix lists capabilities by the start of their key; see
// registry.Store.
func (s *Store) KeysWithPrefix(ctx context.Context, p registry.KeyPrefix) ([]registry.Key, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	query, args := contract.KeyPrefixQuery(p, func(n int) string { return "$" + strconv.Itoa(n) })
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list capabilities by key prefix in postgres %s: %w", s.where, err)
	}
	defer rows.Close()
	keys, err := contract.Collect(rows, func() (registry.Key, error) {
		var k registry.Key
		return k, rows.Scan(&k.Scheme, &k.Domain, &k.Name)
	})
	if err != nil {
		return nil, fmt.Errorf("list capabilities by key prefix in postgres %s: %w", s.where, err)
	}
	return keys, nil
}
