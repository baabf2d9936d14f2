package read

import (
	"strings"

	"github.com/caphub/caphub/registry"
)

// KeyPrefixQuery returns the SQL and arguments of
// registry.Store.KeysWithPrefix, as range conditions on the columns of
// the (scheme, domain, name, …) index so that both stores answer with a
// range scan. Text compares in byte order in both stores, which
// PrefixEnd's bound needs.
func KeyPrefixQuery(d Dialect, p registry.KeyPrefix) (string, []any) {
	a := NewArgs(d)
	conds := []string{"scheme = " + a.Add(p.Scheme)}
	startsWith := func(col, prefix string) {
		conds = append(conds, col+" >= "+a.Add(prefix))
		if end, ok := PrefixEnd(prefix); ok {
			conds = append(conds, col+" < "+a.Add(end))
		}
	}
	if p.DomainPrefix {
		startsWith("domain", p.Domain)
	} else {
		conds = append(conds, "domain = "+a.Add(p.Domain))
		if p.Name != "" {
			startsWith("name", p.Name)
		}
	}
	return `SELECT DISTINCT scheme, domain, name FROM capabilities WHERE ` + strings.Join(conds, " AND ") + ` ORDER BY domain, name`, a.Vals
}

// Keys reads the rows of KeyPrefixQuery.
func Keys(rows Rows) ([]registry.Key, error) {
	return Collect(rows, func() (registry.Key, error) {
		var k registry.Key
		return k, rows.Scan(&k.Scheme, &k.Domain, &k.Name)
	})
}
