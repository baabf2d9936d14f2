package contract

import (
	"strings"

	"github.com/caphub/caphub/registry"
)

// KeyPrefixQuery returns the SQL and arguments of
// registry.Store.KeysWithPrefix, as range conditions on the columns of
// the (scheme, domain, name, …) index so that both stores answer with a
// range scan; ph writes the n-th placeholder (1-based). Text compares in
// byte order in both stores, which PrefixEnd's bound needs.
func KeyPrefixQuery(p registry.KeyPrefix, ph func(n int) string) (string, []any) {
	args := []any{p.Scheme}
	conds := []string{"scheme = " + ph(1)}
	startsWith := func(col, prefix string) {
		args = append(args, prefix)
		conds = append(conds, col+" >= "+ph(len(args)))
		if end, ok := PrefixEnd(prefix); ok {
			args = append(args, end)
			conds = append(conds, col+" < "+ph(len(args)))
		}
	}
	if p.DomainPrefix {
		startsWith("domain", p.Domain)
	} else {
		args = append(args, p.Domain)
		conds = append(conds, "domain = "+ph(len(args)))
		if p.Name != "" {
			startsWith("name", p.Name)
		}
	}
	return `SELECT DISTINCT scheme, domain, name FROM capabilities WHERE ` + strings.Join(conds, " AND ") + ` ORDER BY domain, name`, args
}
