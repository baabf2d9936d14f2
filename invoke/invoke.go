// Package invoke runs capabilities through their bindings. The Pipeline
// resolves a URI, validates the input (applying defaults), asks the policy
// hook, then tries the bindings in order (native, mcp, http, grpc, cli,
// delegation) with per-attempt timeouts, retries of retryable declared
// errors and fall-through to the next binding, maps output and errors, and
// validates the output.
//
// Each binding kind implements Binding; the implementations live in
// invoke/binding/<kind>.
package invoke

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/caphub/caphub/capability"
)

// Call is one invocation as a binding sees it.
type Call struct {
	// URI is the resolved capability URI (with @MAJOR.MINOR); Definition its
	// registered definition.
	URI        string
	Definition *capability.Definition
	// Input is the validated input, defaults applied, under the
	// capability's own field names. Each binding applies its own mapping.
	Input map[string]any
	// Caller identifies who invokes (an agent id; "" when anonymous). Native
	// handlers namespace per-caller state with it.
	Caller string
	// TrustTier is the trust tier the resolved version was registered with
	// (registry.Record.TrustTier; "" for one registered before tiers
	// existed), when Resolved.
	TrustTier string
	// Resolved says the pipeline resolved URI to a registered version, whose
	// tier TrustTier is; false for a call checked without being resolved (a
	// fronted tools/call, see Pipeline.Authorize).
	Resolved bool
	// Attempt counts from 1 within one binding.
	Attempt int
}

// Outcome is what a binding returns on success.
type Outcome struct {
	// Output is the result as decoded JSON (map[string]any, []any, string,
	// number, bool or nil), under the binding's own field names: the
	// pipeline applies the binding's output mapping.
	Output any
	// Meta carries binding details worth reporting (HTTP status, exit code,
	// …).
	Meta map[string]any
	// Tool is the MCP tool result as it came, when the binding called an
	// MCP tool; the pipeline hands it on in Result.Tool.
	Tool *ToolResult
}

// ToolResult is an MCP tool's result as the upstream sent it, so that an
// MCP endpoint can pass it on with nothing lost (images stay images,
// resource links stay links), where Output is its JSON reading for every
// other caller.
type ToolResult struct {
	// Content is the result's content blocks in the binding's own
	// representation: []mcp.Content of the Go SDK for the mcp binding
	// (this package does not depend on the SDK).
	Content any
	// Structured is the result's structuredContent, decoded as JSON (nil
	// when there was none), before the binding's output mapping.
	Structured any
}

// Binding executes capabilities through one kind of binding.
type Binding interface {
	// Kind is the binding type: one of capability.BindingOrder.
	Kind() string
	// Invoke runs the call. A failure the capability declares is an *Error
	// with its Code; anything else is a plain error (the pipeline reports it
	// as BINDING_FAILED and falls through to the next binding).
	Invoke(ctx context.Context, call *Call) (*Outcome, error)
}

// Error is a classified invocation failure.
type Error struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Binding   string         `json:"binding,omitempty"`
	Details   map[string]any `json:"details,omitempty"`
	Cause     error          `json:"-"`
}

func (e *Error) Error() string {
	if e.Binding != "" {
		return fmt.Sprintf("%s (%s binding): %s", e.Code, e.Binding, e.Message)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// Errorf returns an *Error with a formatted message.
func Errorf(code string, retryable bool, format string, args ...any) *Error {
	return &Error{Code: code, Retryable: retryable, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as an *Error, classifying unknown errors as
// BINDING_FAILED (and context deadlines as TIMEOUT).
func AsError(err error, binding string) *Error {
	var e *Error
	if errors.As(err, &e) {
		if e.Binding == "" {
			e.Binding = binding
		}
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: CodeTimeout, Message: "the attempt timed out", Retryable: true, Binding: binding, Cause: err}
	}
	return &Error{Code: CodeBindingFailed, Message: err.Error(), Binding: binding, Cause: err}
}

// Attempt is one try of one binding.
type Attempt struct {
	Binding    string        `json:"binding"`
	Attempt    int           `json:"attempt"`
	Duration   time.Duration `json:"-"`
	DurationMS float64       `json:"duration_ms"`
	Error      *Error        `json:"error,omitempty"`
}
