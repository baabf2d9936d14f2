package postgres

import (
	"context"
	"fmt"

	"github.com/caphub/caphub/store/internal/migrate"
	"github.com/jackc/pgx/v5"
)

// Ready reports whether the database answers and holds every schema
// migration this build knows (serve's /readyz).
func (s *Store) Ready(ctx context.Context) error {
	migs, err := migrate.Load(migrationFiles)
	if err != nil {
		return err
	}
	rows, err := s.pool.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("postgres %s does not answer: %w", s.where, err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return fmt.Errorf("postgres %s: read schema_migrations: %w", s.where, err)
	}
	return migrate.Missing(migs, applied)
}
