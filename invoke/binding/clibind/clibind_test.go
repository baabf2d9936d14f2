package clibind_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/clibind"
)

// argvScript prints argc and then each argument, NUL-terminated, so the test
// sees exactly the arguments the program received.
const argvScript = `/bin/sh -c 'printf "%s\000" "$#" "$@"' sh `

func def(cb *capability.CLIBinding, errs ...capability.ErrorDef) *capability.Definition {
	return &capability.Definition{URI: "ossa:test/cli@1.0", Name: "cli", Domain: "test", Version: "1.0.0",
		Bindings: capability.Bindings{CLI: cb}, Errors: errs}
}

func invokeCLI(t *testing.T, b *clibind.Binding, d *capability.Definition, input map[string]any) (*invoke.Outcome, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return b.Invoke(ctx, &invoke.Call{URI: d.URI, Definition: d, Input: input, Attempt: 1})
}

func mustInvoke(t *testing.T, b *clibind.Binding, d *capability.Definition, input map[string]any) *invoke.Outcome {
	t.Helper()
	out, err := invokeCLI(t, b, d, input)
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	return out
}

func invokeError(t *testing.T, err error) *invoke.Error {
	t.Helper()
	var e *invoke.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *invoke.Error", err, err)
	}
	return e
}

// argv runs argvScript followed by args and returns what the program got.
func argv(t *testing.T, b *clibind.Binding, args string, input map[string]any) []string {
	t.Helper()
	out := mustInvoke(t, b, def(&capability.CLIBinding{Command: argvScript + args}), input)
	text := out.Output.(map[string]any)["text"].(string)
	parts := strings.Split(strings.TrimSuffix(text, "\x00"), "\x00")
	n, err := strconv.Atoi(parts[0])
	if err != nil || n != len(parts)-1 {
		t.Fatalf("argc %q does not match the %d arguments printed: %q", parts[0], len(parts)-1, text)
	}
	return parts[1:]
}

func TestArgumentsAreLiteral(t *testing.T) {
	b := clibind.New(clibind.Options{AllowedCommands: anyProgram})
	values := []string{
		"; rm -rf /", "$(id)", "`id`", `"double" 'single'`, "a b  c", " lead and trail ", "line1\nline2\r\n",
		"*", "~", "$HOME", "${PATH}", "|| true", "&& false &", "> /tmp/x", "\\", "{y}", "", "--help", "ünïcødé ☃",
	}
	for _, v := range values {
		got := argv(t, b, "{x} fixed", map[string]any{"x": v, "y": "Y"})
		if want := []string{v, "fixed"}; !reflect.DeepEqual(got, want) {
			t.Errorf("value %q arrived as %q, want %q", v, got, want)
		}
	}
	// Several placeholders in one argument stay one argument; numbers,
	// booleans, objects and arrays are written as JSON text.
	got := argv(t, b, "--pair={a}:{b} {n} {f} {t} {obj} {arr} {nested.k}", map[string]any{
		"a": "x y", "b": ";", "n": int64(42), "f": 2.5, "t": true,
		"obj": map[string]any{"k": "v", "n": int64(1)}, "arr": []any{"a", int64(1)}, "nested": map[string]any{"k": "deep"},
	})
	want := []string{"--pair=x y:;", "42", "2.5", "true", `{"k":"v","n":1}`, `["a",1]`, "deep"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("arguments = %q, want %q", got, want)
	}

	// A value with a NUL byte cannot be an argument.
	_, err := invokeCLI(t, b, def(&capability.CLIBinding{Command: "/bin/echo {x}"}), map[string]any{"x": "a\x00b"})
	if e := invokeError(t, err); e.Code != invoke.CodeInvalidInput {
		t.Errorf("NUL: %v, want INVALID_INPUT", err)
	}
}

func TestAbsentOptionalFields(t *testing.T) {
	b := clibind.New(clibind.Options{AllowedCommands: anyProgram})
	tmpl := "-v --severity {sev} --format={fmt} {file} -- {pos}"
	for _, tc := range []struct {
		name  string
		input map[string]any
		want  []string
	}{
		{"all present", map[string]any{"sev": "high", "fmt": "json", "file": "f", "pos": "p"},
			[]string{"-v", "--severity", "high", "--format=json", "f", "--", "p"}},
		{"option value absent drops the pair", map[string]any{"fmt": "json", "file": "f", "pos": "p"},
			[]string{"-v", "--format=json", "f", "--", "p"}},
		{"--flag={x} dropped alone", map[string]any{"sev": "high", "file": "f", "pos": "p"},
			[]string{"-v", "--severity", "high", "f", "--", "p"}},
		{"null is absent", map[string]any{"sev": nil, "fmt": nil, "file": nil, "pos": nil},
			[]string{"-v", "--"}},
		{"-- is not an option", map[string]any{"file": "f"},
			[]string{"-v", "f", "--"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := argv(t, b, tmpl, tc.input); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("arguments = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestProgramChecks(t *testing.T) {
	b := clibind.New(clibind.Options{AllowedCommands: anyProgram})
	for _, cmd := range []string{"{prog} -x", "/bin/{prog}", "'{prog}'"} {
		_, err := invokeCLI(t, b, def(&capability.CLIBinding{Command: cmd}), map[string]any{"prog": "/bin/echo"})
		if err == nil || !strings.Contains(err.Error(), "must never choose what runs") {
			t.Errorf("%s: err = %v, want argv[0] placeholder refused", cmd, err)
		}
	}
	for _, cmd := range []string{"", "   ", "/bin/echo 'unterminated"} {
		if _, err := invokeCLI(t, b, def(&capability.CLIBinding{Command: cmd}), nil); err == nil {
			t.Errorf("command %q: no error", cmd)
		}
	}
	_, err := invokeCLI(t, b, def(&capability.CLIBinding{Command: "no-such-program-caphub x"}), nil)
	if e := invokeError(t, err); e.Code != invoke.CodeNoBinding || !strings.Contains(e.Message, "not found in PATH") {
		t.Errorf("missing program: %v", err)
	}

	allow := clibind.New(clibind.Options{AllowedCommands: []string{"echo", "/bin/echo"}})
	for _, cmd := range []string{"echo hi", "/bin/echo hi"} {
		if _, err := invokeCLI(t, allow, def(&capability.CLIBinding{Command: cmd}), nil); err != nil {
			t.Errorf("%s with echo allowed: %v", cmd, err)
		}
	}
	_, err = invokeCLI(t, allow, def(&capability.CLIBinding{Command: "/bin/sh -c 'echo no'"}), nil)
	if !errors.Is(err, clibind.ErrCommandNotAllowed) || invokeError(t, err).Code != invoke.CodeNoBinding {
		t.Errorf("sh with only echo allowed: %v", err)
	}
	// No list, no program: definitions arrive over the API, so running one
	// is the operator's decision.
	_, err = invokeCLI(t, clibind.New(clibind.Options{}), def(&capability.CLIBinding{Command: "echo hi"}), nil)
	if !errors.Is(err, clibind.ErrCommandNotAllowed) || !strings.Contains(err.Error(), "--allow-command echo") {
		t.Errorf("echo with no allowed commands: %v", err)
	}
	if b.Kind() != "cli" {
		t.Errorf("Kind = %s", b.Kind())
	}
}

// anyProgram lets the tests run any program.
var anyProgram = []string{"*"}

func TestParsers(t *testing.T) {
	b := clibind.New(clibind.Options{AllowedCommands: anyProgram})
	for _, tc := range []struct {
		name, cmd, parser string
		input             map[string]any
		want              any
		wantErr           string
	}{
		{"text default", "/bin/echo hello {name}", "", map[string]any{"name": "world"}, map[string]any{"text": "hello world\n"}, ""},
		{"text explicit", "/usr/bin/printf %s {name}", "text", map[string]any{"name": "a\nb"}, map[string]any{"text": "a\nb"}, ""},
		{"json from object input", "/bin/echo {obj}", "json", map[string]any{"obj": map[string]any{"a": int64(1), "b": []any{true, "x"}, "c": 1.5}},
			map[string]any{"a": int64(1), "b": []any{true, "x"}, "c": 1.5}, ""},
		{"json scalar", "/bin/echo 12345678901234567", "json", nil, int64(12345678901234567), ""},
		{"json invalid", "/bin/echo not json", "json", nil, nil, "is not json"},
		{"json two values", `/bin/echo '{"a":1}' '{"b":2}'`, "json", nil, nil, "more than one JSON value"},
		{"json empty", "/bin/true", "json", nil, nil, "stdout is empty"},
		{"yaml", `/usr/bin/printf 'name: %s\ncount: 3\nratio: 0.5\nlist: [a, 1]\n1: one\n' {name}`, "yaml", map[string]any{"name": "Ada"},
			map[string]any{"name": "Ada", "count": int64(3), "ratio": 0.5, "list": []any{"a", int64(1)}, "1": "one"}, ""},
		{"yaml empty", "/bin/true", "yaml", nil, nil, ""},
		{"yaml invalid", `/usr/bin/printf 'a: [\n'`, "yaml", nil, nil, "is not yaml"},
		{"unknown parser", "/bin/true", "xml", nil, nil, "not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := invokeCLI(t, b, def(&capability.CLIBinding{Command: tc.cmd, Parser: tc.parser}), tc.input)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out.Output, tc.want) {
				t.Errorf("output = %#v, want %#v", out.Output, tc.want)
			}
			if out.Meta["exit_code"] != 0 {
				t.Errorf("meta = %v", out.Meta)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	b := clibind.New(clibind.Options{AllowedCommands: anyProgram})
	cmd := `/bin/sh -c 'echo "partial output"; echo "something went wrong: $1" >&2; exit "$2"' sh {what} {code}`
	for _, tc := range []struct {
		name      string
		code      int64
		errs      []capability.ErrorDef
		want      string
		retryable bool
	}{
		{"undeclared", 3, nil, "EXIT_3", false},
		{"declared number", 2, []capability.ErrorDef{{Code: "TARGET_NOT_FOUND", Extra: map[string]any{"x-exit-code": int64(2)}}}, "TARGET_NOT_FOUND", false},
		{"declared string and retryable", 75, []capability.ErrorDef{{Code: "TEMP_FAIL", Retryable: true, Extra: map[string]any{"x-exit-code": "75"}}}, "TEMP_FAIL", true},
		{"declared list", 4, []capability.ErrorDef{{Code: "OTHER", Extra: map[string]any{"x-exit-code": int64(9)}}, {Code: "BAD", Extra: map[string]any{"x-exit-code": []any{int64(3), int64(4)}}}}, "BAD", false},
		{"other code not mapped", 5, []capability.ErrorDef{{Code: "BAD", Extra: map[string]any{"x-exit-code": int64(4)}}}, "EXIT_5", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := invokeCLI(t, b, def(&capability.CLIBinding{Command: cmd}, tc.errs...), map[string]any{"what": "disk", "code": tc.code})
			e := invokeError(t, err)
			if e.Code != tc.want || e.Retryable != tc.retryable || e.Binding != "cli" {
				t.Errorf("error = %s retryable=%v, want %s retryable=%v", e.Code, e.Retryable, tc.want, tc.retryable)
			}
			if !strings.Contains(e.Message, "something went wrong: disk") || e.Details["stderr"] != "something went wrong: disk" {
				t.Errorf("stderr missing: %q %v", e.Message, e.Details)
			}
			if e.Details["exit_code"] != int(tc.code) {
				t.Errorf("details exit_code = %v", e.Details["exit_code"])
			}
		})
	}
	_, err := invokeCLI(t, b, def(&capability.CLIBinding{Command: `/bin/sh -c 'kill -9 $$'`}), nil)
	if e := invokeError(t, err); e.Code != "EXIT_SIGNAL" || !strings.Contains(e.Message, "killed") {
		t.Errorf("signal: %v", err)
	}
}

// survivors lists the live processes of group pgid, waiting up to a second
// for SIGKILL (delivered asynchronously) to take effect.
func survivors(t *testing.T, pgid int) []int {
	t.Helper()
	var m []int
	for range 100 {
		if m = groupMembers(t, pgid); len(m) == 0 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return m
}

// groupMembers lists the processes whose process group is pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	if runtime.GOOS != "linux" {
		if err := syscall.Kill(-pgid, 0); err == nil {
			return []int{-1}
		}
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		// state ppid pgrp …; a zombie is already dead.
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	for range 50 {
		b, err := os.ReadFile(path)
		if pid, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the program did not write its pid to %s", path)
	return 0
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	b := clibind.New(clibind.Options{AllowedCommands: anyProgram})
	pidFile := filepath.Join(t.TempDir(), "pid")
	d := def(&capability.CLIBinding{Command: `/bin/sh -c 'echo $$ > "$1"; sleep 30 & sleep 30 & sleep 30; wait' sh {pidfile}`})
	// Long enough for the shell to start and write its pid on a loaded
	// machine; far shorter than its sleeps.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := b.Invoke(ctx, &invoke.Call{Definition: d, Input: map[string]any{"pidfile": pidFile}})
	if e := invokeError(t, err); e.Code != invoke.CodeTimeout || !e.Retryable {
		t.Fatalf("err = %v, want retryable TIMEOUT", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the timeout took %s to return", el)
	}
	pgid := readPID(t, pidFile)
	if m := survivors(t, pgid); len(m) > 0 {
		t.Errorf("processes %v of group %d survived the timeout", m, pgid)
	}

	// No deadline on the context: Options.Timeout applies.
	b = clibind.New(clibind.Options{AllowedCommands: anyProgram, Timeout: 200 * time.Millisecond})
	_, err = b.Invoke(context.Background(), &invoke.Call{Definition: def(&capability.CLIBinding{Command: "/bin/sleep 30"})})
	if e := invokeError(t, err); e.Code != invoke.CodeTimeout {
		t.Errorf("Options.Timeout: err = %v", err)
	}
}

func TestLeftoverProcessesKilled(t *testing.T) {
	b := clibind.New(clibind.Options{AllowedCommands: anyProgram})
	for _, script := range []string{
		`echo $$ > "$1"; sleep 30 & echo done`,                 // the straggler holds stdout open
		`echo $$ > "$1"; sleep 30 >/dev/null 2>&1 & echo done`, // the straggler holds nothing
	} {
		pidFile := filepath.Join(t.TempDir(), "pid")
		start := time.Now()
		out := mustInvoke(t, b, def(&capability.CLIBinding{Command: "/bin/sh -c '" + script + "' sh {pidfile}"}), map[string]any{"pidfile": pidFile})
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s: took %s", script, el)
		}
		if out.Output.(map[string]any)["text"] != "done\n" {
			t.Errorf("%s: output %v", script, out.Output)
		}
		if m := survivors(t, readPID(t, pidFile)); len(m) > 0 {
			t.Errorf("%s: processes %v outlived the call", script, m)
		}
	}
}

func TestMinimalEnvironment(t *testing.T) {
	t.Setenv("CAPHUB_TEST_SECRET", "do-not-leak")
	t.Setenv("CAPHUB_TEST_API_KEY", "key-123")
	b := clibind.New(clibind.Options{AllowedCommands: anyProgram})
	d := def(&capability.CLIBinding{Command: "/usr/bin/env", Env: map[string]string{
		"TOKEN": "${CAPHUB_TEST_API_KEY}", "MIXED": "a$b $$ ${CAPHUB_TEST_API_KEY}-x $HOME", "PLAIN": "v",
	}})
	out := mustInvoke(t, b, d, nil)
	env := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(out.Output.(map[string]any)["text"].(string)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	if _, leaked := env["CAPHUB_TEST_SECRET"]; leaked {
		t.Error("caphub's environment leaked into the child")
	}
	want := map[string]string{"TOKEN": "key-123", "MIXED": "a$b $$ key-123-x $HOME", "PLAIN": "v", "PATH": os.Getenv("PATH")}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TZ": true, "TMPDIR": true, "TOKEN": true, "MIXED": true, "PLAIN": true}
	for k := range env {
		if !allowed[k] {
			t.Errorf("unexpected variable %s in the child's environment", k)
		}
	}

	// A referenced variable that is not set is an error naming it.
	d = def(&capability.CLIBinding{Command: "/usr/bin/env", Env: map[string]string{"TOKEN": "${CAPHUB_TEST_UNSET_VAR}"}})
	_, err := invokeCLI(t, b, d, nil)
	if !errors.Is(err, clibind.ErrMissingEnv) || !strings.Contains(err.Error(), "CAPHUB_TEST_UNSET_VAR") || invokeError(t, err).Code != invoke.CodeNoBinding {
		t.Errorf("unset reference: %v", err)
	}

	// Options.Getenv replaces caphub's environment.
	b = clibind.New(clibind.Options{AllowedCommands: anyProgram, Getenv: func(k string) (string, bool) {
		v, ok := map[string]string{"HOME": "/home/agent", "K": "v"}[k]
		return v, ok
	}})
	out = mustInvoke(t, b, def(&capability.CLIBinding{Command: "/usr/bin/env", Env: map[string]string{"X": "${K}"}}), nil)
	got := out.Output.(map[string]any)["text"].(string)
	if want := "HOME=/home/agent\nPATH=" + clibind.DefaultPath + "\nX=v\n"; got != want {
		t.Errorf("env with Options.Getenv = %q, want %q", got, want)
	}
}

func TestOutputCapped(t *testing.T) {
	b := clibind.New(clibind.Options{AllowedCommands: anyProgram, MaxOutputBytes: 1000})
	start := time.Now()
	_, err := invokeCLI(t, b, def(&capability.CLIBinding{Command: `/bin/sh -c 'while :; do echo xxxxxxxxxxxxxxxxxxxxxxxx; done'`}), nil)
	if !errors.Is(err, clibind.ErrOutputTooLarge) || !strings.Contains(err.Error(), "MaxOutputBytes") {
		t.Errorf("err = %v, want ErrOutputTooLarge", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %s", el)
	}
	out := mustInvoke(t, b, def(&capability.CLIBinding{Command: `/usr/bin/printf %1000s x`}), nil)
	if len(out.Output.(map[string]any)["text"].(string)) != 1000 {
		t.Error("output at the limit was cut")
	}
}

func TestNoBinding(t *testing.T) {
	b := clibind.New(clibind.Options{AllowedCommands: anyProgram})
	_, err := b.Invoke(context.Background(), &invoke.Call{URI: "ossa:x/y@1.0", Definition: &capability.Definition{}})
	if e := invokeError(t, err); e.Code != invoke.CodeNoBinding || !strings.Contains(e.Message, "ossa:x/y@1.0") {
		t.Errorf("err = %v", err)
	}
}

// BenchmarkCLIInvoke measures one run of /bin/echo with a placeholder and
// the text parser: process start-up dominates.
func BenchmarkCLIInvoke(b *testing.B) {
	bind := clibind.New(clibind.Options{AllowedCommands: anyProgram})
	call := &invoke.Call{Definition: def(&capability.CLIBinding{Command: "/bin/echo {msg}"}), Input: map[string]any{"msg": "hello"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bind.Invoke(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}
