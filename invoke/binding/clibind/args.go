package clibind

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/permit"
	"github.com/caphub/caphub/invoke/binding/internal/bindutil"
)

// fillArgs fills each argument template with the input (see the package
// doc, Arguments and Absent fields).
func fillArgs(tmpl []string, input map[string]any) ([]string, error) {
	if len(tmpl) == 0 {
		return nil, fmt.Errorf("cli binding: the command is empty: set bindings.cli.command to a program and its arguments")
	}
	if ph := capability.Placeholders(tmpl[0]); len(ph) > 0 {
		return nil, fmt.Errorf("cli binding: the program %q is a placeholder ({%s}); the input must never choose what runs: name the program literally in bindings.cli.command", tmpl[0], ph[0])
	}
	out := make([]string, 1, len(tmpl))
	out[0] = tmpl[0]
	// lastOption is the index in out of the previous argument when it is
	// a literal option that a dropped value would take with it; -1 if not.
	lastOption := -1
	for _, a := range tmpl[1:] {
		if len(capability.Placeholders(a)) == 0 {
			out = append(out, a)
			lastOption = -1
			if strings.HasPrefix(a, "-") && a != "--" && a != "-" {
				lastOption = len(out) - 1
			}
			continue
		}
		filled, absent, err := fillArg(a, input)
		if err != nil {
			return nil, err
		}
		switch {
		case !absent:
			out = append(out, filled)
		case !strings.HasPrefix(a, "-") && lastOption >= 0 && lastOption == len(out)-1:
			out = out[:lastOption] // the option goes with its value
		}
		lastOption = -1
	}
	return out, nil
}

// fillArg fills one argument template; absent is set when it names a field
// that is absent or null, and the argument is then dropped.
func fillArg(a string, input map[string]any) (filled string, absent bool, err error) {
	names := capability.Placeholders(a)
	pairs := make([]string, 0, 2*len(names))
	for _, name := range names {
		v, ok := bindutil.Lookup(input, name)
		if !ok || v == nil {
			return "", true, nil
		}
		text, err := valueText(v)
		if err != nil {
			return "", false, fmt.Errorf("cli binding: argument %q, {%s}: %w", a, name, err)
		}
		if strings.IndexByte(text, 0) >= 0 {
			return "", false, bindutil.InvalidInput(Kind, "input field %s contains a NUL byte, which no program argument can carry: remove it", name)
		}
		pairs = append(pairs, "{"+name+"}", text)
	}
	return strings.NewReplacer(pairs...).Replace(a), false, nil
}

// valueText is a value as one argument: strings as they are, numbers and
// booleans in their JSON text, arrays and objects as compact JSON.
func valueText(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("cannot write a %T value as text: %w", v, err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// envNameRE is a portable environment variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// refRE is a ${NAME} reference in a binding env value.
var refRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// env builds the child's environment: the base variables from caphub's
// environment, then the binding's env with ${VAR} references expanded.
func (b *Binding) env(bindingEnv map[string]string) ([]string, error) {
	vars := map[string]string{}
	for _, k := range baseEnv {
		if v, ok := b.getenv(k); ok {
			vars[k] = v
		}
	}
	if vars["PATH"] == "" {
		vars["PATH"] = DefaultPath
	}
	keys := make([]string, 0, len(bindingEnv))
	for k := range bindingEnv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !envNameRE.MatchString(k) {
			return nil, fmt.Errorf("cli binding: env name %q is not a valid variable name: use letters, digits and _ in bindings.cli.env", k)
		}
		raw := bindingEnv[k]
		var missing string
		val := refRE.ReplaceAllStringFunc(raw, func(m string) string {
			name := m[2 : len(m)-1]
			v, ok := b.getenv(name)
			if !ok && missing == "" {
				missing = name
			}
			return v
		})
		if missing != "" {
			e := bindutil.NoBinding(Kind, map[string]any{"env": missing},
				"bindings.cli.env.%s references ${%s}, which is not available: %s, or remove the reference", k, missing, permit.EnvHint(missing))
			e.Cause = fmt.Errorf("%w: %s", ErrMissingEnv, missing)
			return nil, e
		}
		if strings.IndexByte(val, 0) >= 0 {
			return nil, fmt.Errorf("cli binding: env %s contains a NUL byte: fix bindings.cli.env or the variable it references", k)
		}
		vars[k] = val
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// program resolves argv[0] (a bare name in the child's PATH) and checks it
// against Options.AllowedCommands.
func (b *Binding) program(name string, env []string) (string, error) {
	pathVar := DefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	path, lookErr := lookPath(name, pathVar)
	look := func(a string) (string, error) { return lookPath(a, pathVar) }
	if err := (&permit.Permits{Commands: b.allowed}).Command(name, path, look); err != nil {
		e := bindutil.NoBinding(Kind, map[string]any{"command": name}, "%v", err)
		e.Cause = ErrCommandNotAllowed
		return "", e
	}
	if lookErr != nil {
		return "", bindutil.NoBinding(Kind, map[string]any{"command": name}, "%v", lookErr)
	}
	return path, nil
}

// lookPath finds an executable: a name with "/" as it is, a bare name in
// the absolute directories of pathVar.
func lookPath(name, pathVar string) (string, error) {
	if strings.Contains(name, "/") {
		if err := executable(name); err != nil {
			return "", fmt.Errorf("program %s cannot be run (%v): check bindings.cli.command", name, err)
		}
		return filepath.Clean(name), nil
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("program %s was not found in PATH (%s): install it or name it by its absolute path in bindings.cli.command", name, pathVar)
}

// executable reports why p is not an executable regular file.
func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a directory", p)
	}
	if st.Mode()&0o111 == 0 {
		return fs.ErrPermission
	}
	return nil
}
