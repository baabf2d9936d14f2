// Package migrate reads the numbered schema migrations a store embeds.
package migrate

import (
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered schema change, from migrations/NNNN_name.sql
// in a store's embedded files.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads the migrations/NNNN_name.sql files of fsys in
// version order; a file named otherwise, or two files with one number, is
// an error (a build problem).
func Load(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s is not named NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("two migrations are numbered %d", out[i].Version)
		}
	}
	return out, nil
}

// Missing returns an error naming the first of migs that applied (the
// versions a database's schema_migrations holds) lacks, nil when it has
// them all: a database a process with older code migrated, or one whose
// migration failed, is not ready for this build.
func Missing(migs []Migration, applied []int) error {
	have := make(map[int]bool, len(applied))
	for _, v := range applied {
		have[v] = true
	}
	for _, m := range migs {
		if !have[m.Version] {
			return fmt.Errorf("%d of %d schema migrations applied: %04d_%s is missing (restart caphub to apply it)", len(applied), len(migs), m.Version, m.Name)
		}
	}
	return nil
}
