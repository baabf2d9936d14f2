// Package permit holds the operator's decisions that no API caller can
// change: which programs caphub may start, which of its environment
// variables a definition or a saved server may read, and which hosts it may
// connect to. Definitions, saved servers and agents arrive over the API
// from anyone with a publish token; what they may make caphub do is
// bounded here, from flags and configuration only.
//
// Empty lists permit nothing (hosts: loopback only); "*" permits anything.
// The operator's own set-up on the machine (a server saved with `caphub
// discover mcp` on the local database) runs with Operator, which permits
// everything: the operator typed it.
package permit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Flags that extend the lists, named in refusals.
const (
	commandFlag = "--allow-command"
	envFlag     = "--allow-env"
	HostFlag    = "--allow-host"
)

// BaseEnv are the variables every started program inherits and any
// definition may read: enough to run a program, nothing that carries
// caphub's own secrets.
var BaseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SHELL", "TERM", "SYSTEMROOT"}

// Permits is one set of operator decisions.
type Permits struct {
	// Commands are the programs that may be started: bare names (matched by
	// name, or by the file they resolve to) or paths; "*" any.
	Commands []string
	// Env are the environment variables that may be read (besides
	// BaseEnv); "*" any.
	Env []string
	// Hosts are the hosts that may be reached, in the syntax of
	// invoke/binding/allowlist; empty means loopback only.
	Hosts []string
}

// Operator permits everything: for what the operator configured on the
// machine itself.
var Operator = &Permits{Commands: []string{"*"}, Env: []string{"*"}, Hosts: []string{"*"}}

// AnyCommand reports whether every program is permitted.
func (p *Permits) AnyCommand() bool { return p != nil && slices.Contains(p.Commands, "*") }

// Command returns nil when the program name (argv[0]), which resolves to
// path ("" when it was not found), may be started. look resolves a bare
// name the way the caller will (nil: no resolution, names match by name).
func (p *Permits) Command(name, path string, look func(string) (string, error)) error {
	if p.AnyCommand() {
		return nil
	}
	var list []string
	if p != nil {
		list = p.Commands
	}
	for _, a := range list {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
		case a == name:
			return nil
		case strings.Contains(a, "/"):
			if path != "" && filepath.Clean(a) == path {
				return nil
			}
		case path != "" && look != nil:
			if q, err := look(a); err == nil && q == path {
				return nil
			}
		}
	}
	if len(list) == 0 {
		return fmt.Errorf("%w: program %s: caphub starts no program the operator has not allowed, and none is; to allow it, start caphub with %s %s", ErrCommand, name, commandFlag, name)
	}
	return fmt.Errorf("%w: program %s is not among the allowed commands (%s); to allow it, start caphub with %s %s", ErrCommand, name, strings.Join(list, ", "), commandFlag, name)
}

// EnvAllowed reports whether variable name may be read.
func (p *Permits) EnvAllowed(name string) bool {
	if slices.Contains(BaseEnv, name) {
		return true
	}
	return p != nil && (slices.Contains(p.Env, "*") || slices.Contains(p.Env, name))
}

// Getenv reads a permitted variable of caphub's environment; ok is false
// when it is unset or not permitted (the bindings' messages say both).
func (p *Permits) Getenv(name string) (string, bool) {
	if !p.EnvAllowed(name) {
		return "", false
	}
	return os.LookupEnv(name)
}

// Lookup reads a permitted variable; the error says which it is: not
// permitted (and the flag that permits it), or not set.
func (p *Permits) Lookup(name string) (string, error) {
	if !p.EnvAllowed(name) {
		return "", fmt.Errorf("%w: $%s: caphub lets definitions and saved servers read only the environment variables the operator allows; to allow it, start caphub with %s %s", ErrEnv, name, envFlag, name)
	}
	v, ok := os.LookupEnv(name)
	if !ok {
		return "", fmt.Errorf("$%s is not set in caphub's environment: export it before starting caphub", name)
	}
	return v, nil
}

// EnvHint is the advice a binding adds when a variable it needs is
// unavailable.
func EnvHint(name string) string {
	return fmt.Sprintf("set it in caphub's environment and allow definitions to read it (%s %s)", envFlag, name)
}

// Errors, to test with errors.Is.
var (
	ErrCommand = fmt.Errorf("program not allowed")
	ErrEnv     = fmt.Errorf("environment variable not allowed")
)
