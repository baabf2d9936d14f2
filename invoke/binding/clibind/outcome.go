package clibind

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/internal/bindutil"
)

// snippetBytes bounds the stderr or stdout quoted in messages.
const snippetBytes = 512

// outcome turns a finished run into the call's result or error.
func (b *Binding) outcome(ctx context.Context, def *capability.Definition, program, parser string, res *result) (*invoke.Outcome, error) {
	stderr := bindutil.Snippet(res.stderr, snippetBytes)
	switch {
	case res.timedOut:
		e := &invoke.Error{Code: invoke.CodeTimeout, Retryable: true, Binding: Kind, Cause: context.DeadlineExceeded,
			Message: fmt.Sprintf("%s did not finish before the call's deadline; it and its process group were killed", program)}
		if stderr != "" {
			e.Details = map[string]any{"stderr": stderr}
		}
		return nil, e
	case res.canceled != nil:
		return nil, fmt.Errorf("cli binding: %s was killed because the call was cancelled: %w", program, res.canceled)
	case res.overflow:
		return nil, fmt.Errorf("cli binding: %s wrote more than %d bytes to stdout (%w) and was killed: raise clibind Options.MaxOutputBytes or make it print less", program, b.maxOut, ErrOutputTooLarge)
	case res.state == nil:
		return nil, fmt.Errorf("cli binding: %s: its exit status could not be read", program)
	}
	exit := res.state.ExitCode()
	if exit != 0 {
		return nil, exitError(def, program, exit, signalName(res.state), stderr)
	}
	out, err := parse(parser, res.stdout)
	if err != nil {
		return nil, fmt.Errorf("cli binding: the output of %s is not %s (%v); stdout began: %s", program, parser, err, orEmpty(bindutil.Snippet(res.stdout, snippetBytes)))
	}
	meta := map[string]any{"exit_code": 0}
	if stderr != "" {
		meta["stderr"] = stderr
	}
	return &invoke.Outcome{Output: out, Meta: meta}, nil
}

// exitError classifies a non-zero exit: the declared error whose
// x-exit-code lists the code, else EXIT_<n> (EXIT_SIGNAL when a signal
// ended the program).
func exitError(def *capability.Definition, program string, exit int, signal, stderr string) *invoke.Error {
	code, retryable, desc := "EXIT_"+strconv.Itoa(exit), false, ""
	details := map[string]any{"exit_code": exit}
	var msg string
	if exit < 0 || signal != "" {
		code = "EXIT_SIGNAL"
		details["signal"] = signal
		msg = fmt.Sprintf("%s was killed by signal %s", program, orEmpty(signal))
	} else {
		msg = fmt.Sprintf("%s exited with code %d", program, exit)
		if d := declaredFor(def, exit); d != nil {
			code, retryable, desc = d.Code, d.Retryable, d.Description
		}
	}
	if desc != "" {
		msg += " (" + desc + ")"
	}
	if stderr != "" {
		details["stderr"] = stderr
		msg += ": " + stderr
	}
	return &invoke.Error{Code: code, Retryable: retryable, Binding: Kind, Message: msg, Details: details}
}

// declaredFor returns def's declared error whose x-exit-code names exit.
func declaredFor(def *capability.Definition, exit int) *capability.ErrorDef {
	if def == nil {
		return nil
	}
	for i := range def.Errors {
		if exitListed(def.Errors[i].Extra[ExtraExitCode], exit) {
			return &def.Errors[i]
		}
	}
	return nil
}

// exitListed reports whether an x-exit-code value (a number, a numeric
// string, or a list of them) names exit.
func exitListed(v any, exit int) bool {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if exitListed(e, exit) {
				return true
			}
		}
	case int64:
		return x == int64(exit)
	case int:
		return x == exit
	case float64:
		return x == float64(exit)
	case json.Number:
		return x.String() == strconv.Itoa(exit)
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		return err == nil && n == exit
	}
	return false
}

// parse decodes stdout with the binding's parser (see the package doc).
func parse(parser string, stdout []byte) (any, error) {
	switch parser {
	case ParserJSON:
		dec := json.NewDecoder(bytes.NewReader(stdout))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("stdout is empty")
			}
			return nil, err
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, errors.New("more than one JSON value, or text after it")
		}
		return capability.Normalize(v), nil
	case ParserYAML:
		var v any
		if err := yaml.Unmarshal(stdout, &v); err != nil {
			return nil, err
		}
		return capability.Normalize(v), nil
	}
	return map[string]any{"text": string(stdout)}, nil
}

func orEmpty(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return s
}
