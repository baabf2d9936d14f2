// Package clibind invokes capabilities through their cli binding: it runs a
// program with arguments filled from the call's input, without a shell, and
// parses what it prints.
//
//	bindings:
//	  cli:
//	    command: "trivy fs {target} --severity {severity_threshold} --format json"
//	    parser: json
//	    env: {TRIVY_TOKEN: "${TRIVY_TOKEN}"}
//
// Rules, and why:
//
// Arguments. The command template is split into argv once, before anything
// is filled, with capability.SplitCommand (POSIX-like quoting, no
// expansion). Each argument's {placeholders} (capability.Placeholders; a
// dotted {a.b} reads a nested field) are then filled with the input values:
// strings as they are, numbers and booleans in their JSON text, arrays and
// objects as compact JSON. A placeholder therefore fills exactly one
// argument and no shell ever runs: "; rm -rf /", "$(id)", backticks, quotes,
// spaces and newlines arrive as literal text inside one argument. A value
// with a NUL byte is refused (INVALID_INPUT), since no argument can carry it.
// Values are not otherwise restricted, so a value starting with "-" can be
// read as an option by the program: write "--" before positional
// placeholders where the program supports it.
//
// Program. argv[0] must be literal: a placeholder there is refused, because
// the input must never choose what runs. A bare name is looked up in the
// child's PATH (relative PATH entries are skipped); a name with a "/" is used
// as it is. argv[0] must be one of Options.AllowedCommands, or resolve to
// the same file path as one of them (no symlink resolution); "*" allows any
// program, and an empty list none: definitions arrive over the API, so which
// programs run is the operator's decision (caphub --allow-command).
//
// Absent fields. An absent (or null) optional field drops every argument
// that names it. When the dropped argument is a value (it does not start
// with "-") and the argument before it in the template is a literal option
// (starts with "-", is not "--", has no placeholder), that option is dropped
// too: "--severity {severity}" disappears as a pair. "--flag={field}" is
// one argument and is dropped alone.
//
// Environment. The child does not inherit caphub's environment: it gets PATH
// (default /usr/local/bin:/usr/bin:/bin), HOME, LANG, TZ and TMPDIR when
// caphub has them, plus the binding's env, whose values may reference
// ${VAR} from caphub's environment (Options.Getenv). A referenced variable
// that is not set is an error naming it (NO_BINDING), never an empty value.
// Only ${NAME} is expanded; any other "$" is literal.
//
// Process. The program runs with stdin from /dev/null, in caphub's working
// directory, in its own process group. The call's context deadline (Options.Timeout when it has none)
// kills the whole group with SIGKILL and the error is TIMEOUT (retryable).
// When the program exits, whatever it left running in its group is killed
// too, so a call never leaves processes behind (a process that left the
// group with setsid is out of reach; its hold on the output pipes is cut 2
// seconds after the program ends). stdout is captured up to
// Options.MaxOutputBytes (more kills the group and is an error); stderr up to
// 64 KiB (the rest is discarded).
//
// Exit status. Exit code 0 is success. Exit code n ≠ 0 is an *invoke.Error
// with the capability's declared error whose Extra["x-exit-code"] is n (a
// number, a numeric string, or a list of them), else code EXIT_<n> (not
// retryable); a program killed by a signal gets EXIT_SIGNAL. The message and
// Details carry a stderr snippet. Outcome.Meta holds "exit_code" and, when
// the program wrote any, a "stderr" snippet.
//
// Parsers. "json": stdout must be exactly one JSON value, which is the
// output. "yaml": stdout is decoded as YAML (the first document; empty output
// is nil), map keys made strings and numbers normalised with
// capability.Normalize. "text" (the default): the output is {"text": stdout},
// stdout exactly as printed (trailing newline included). A parse failure is
// a plain error (BINDING_FAILED) with a stdout snippet.
package clibind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/internal/bindutil"
)

// Kind is the binding type this package implements.
const Kind = capability.BindingCLI

// Defaults for Options fields left zero.
const (
	DefaultMaxOutputBytes = 10 << 20
	DefaultTimeout        = 60 * time.Second
	// maxStderr bounds the stderr kept; the rest is read and discarded.
	maxStderr = 64 << 10
	// DefaultPath is the child's PATH when caphub has none.
	DefaultPath = "/usr/local/bin:/usr/bin:/bin"
)

// ExtraExitCode, on a declared error, names the exit code(s) mapped to it.
const ExtraExitCode = "x-exit-code"

// Parser names of CLIBinding.Parser.
const (
	ParserJSON = "json"
	ParserYAML = "yaml"
	ParserText = "text"
)

// Sentinel causes, for errors.Is on the errors Invoke returns.
var (
	// ErrCommandNotAllowed: argv[0] is not in Options.AllowedCommands.
	ErrCommandNotAllowed = errors.New("command not allowed")
	// ErrMissingEnv: the binding's env references an unset variable.
	ErrMissingEnv = errors.New("environment variable not set")
	// ErrOutputTooLarge: stdout exceeded Options.MaxOutputBytes.
	ErrOutputTooLarge = errors.New("output too large")
)

// baseEnv are the variables passed from caphub's environment to every child.
var baseEnv = []string{"PATH", "HOME", "LANG", "TZ", "TMPDIR"}

// Options configures a Binding.
type Options struct {
	// AllowedCommands lists the programs a cli binding may run: bare names
	// (resolved in the child's PATH) or paths; "*" allows any, and empty
	// none.
	AllowedCommands []string
	// Getenv reads caphub's environment (the base variables and ${VAR}
	// references); nil means os.LookupEnv.
	Getenv func(string) (string, bool)
	// MaxOutputBytes bounds the stdout kept; more is an error. Zero means
	// DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// Timeout bounds a call whose context has no deadline. Zero means
	// DefaultTimeout.
	Timeout time.Duration
}

// Binding invokes cli bindings. It is safe for concurrent use.
type Binding struct {
	allowed []string
	getenv  func(string) (string, bool)
	maxOut  int64
	timeout time.Duration
}

// New returns a Binding with opts, zero fields taking their defaults.
func New(opts Options) *Binding {
	b := &Binding{
		allowed: append([]string(nil), opts.AllowedCommands...),
		getenv:  opts.Getenv,
		maxOut:  opts.MaxOutputBytes,
		timeout: opts.Timeout,
	}
	if b.getenv == nil {
		b.getenv = os.LookupEnv
	}
	if b.maxOut <= 0 {
		b.maxOut = DefaultMaxOutputBytes
	}
	if b.timeout <= 0 {
		b.timeout = DefaultTimeout
	}
	return b
}

// Kind returns "cli".
func (b *Binding) Kind() string { return Kind }

// Invoke runs the command of call.Definition.Bindings.CLI with call.Input
// and returns its parsed output.
func (b *Binding) Invoke(ctx context.Context, call *invoke.Call) (*invoke.Outcome, error) {
	if call == nil || call.Definition == nil || call.Definition.Bindings.CLI == nil {
		return nil, bindutil.NoBinding(Kind, nil, "capability %s has no cli binding; add bindings.cli {command, parser} to its definition", bindutil.CapabilityName(call))
	}
	cb := call.Definition.Bindings.CLI
	parser := cb.Parser
	switch parser {
	case "":
		parser = ParserText
	case ParserJSON, ParserYAML, ParserText:
	default:
		return nil, fmt.Errorf("cli binding: parser %q is not supported: set bindings.cli.parser to json, yaml or text", cb.Parser)
	}
	tmpl, err := capability.SplitCommand(cb.Command)
	if err != nil {
		return nil, fmt.Errorf("cli binding: command %q: %w", cb.Command, err)
	}
	argv, err := fillArgs(tmpl, call.Input)
	if err != nil {
		return nil, err
	}
	env, err := b.env(cb.Env)
	if err != nil {
		return nil, err
	}
	path, err := b.program(argv[0], env)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	res, err := run(ctx, path, argv, env, b.maxOut, maxStderr)
	if err != nil {
		return nil, fmt.Errorf("cli binding: starting %s: %w", argv[0], err)
	}
	return b.outcome(ctx, call.Definition, argv[0], parser, res)
}
