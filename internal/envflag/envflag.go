// Package envflag reads caphub's boolean environment switches
// (CAPHUB_AUDIT_SYNC, CAPHUB_HUMAN_APPROVAL_REQUIRED, …) one way: unset or
// empty is false, a value strconv.ParseBool reads (1, t, true, 0, f,
// false, …) is that value, and anything else is an error, so that a typo
// never silently turns a switch off.
package envflag

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Bool reads the switch name.
func Bool(name string) (bool, error) { return Parse(name, os.Getenv(name)) }

// Parse reads the value v of the switch name (name only names it in the
// error): from a configuration file as from the environment.
func Parse(name, v string) (bool, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q is not a boolean: use true or false", name, v)
	}
	return b, nil
}
