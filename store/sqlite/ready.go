package sqlite

import (
	"context"
	"fmt"

	"github.com/caphub/caphub/store/internal/migrate"
)

// Ready reports whether the database answers and holds every schema
// migration this build knows (serve's /readyz).
func (s *Store) Ready(ctx context.Context) error {
	migs, err := migrate.Load(migrationFiles)
	if err != nil {
		return err
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("sqlite database %s does not answer: %w", s.path, err)
	}
	defer rows.Close()
	var applied []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return fmt.Errorf("sqlite database %s: read schema_migrations: %w", s.path, err)
		}
		applied = append(applied, v)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite database %s: read schema_migrations: %w", s.path, err)
	}
	return migrate.Missing(migs, applied)
}
