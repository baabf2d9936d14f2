package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/caphub/caphub/client"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/invoke"
	"github.com/spf13/cobra"
)

func newInvokeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "invoke URI",
		Short: "Invoke a capability through its bindings",
		Long: `Invoke resolves URI, validates the input, and runs the capability through its bindings in
order (native, mcp, http, grpc, cli, delegation), retrying retryable errors and falling through
to the next binding. It prints the result as JSON.

A call that needs a human's approval exits 5 with APPROVAL_REQUIRED and an approval id; once
approved (caphub approval approve ID), make the same call again with --approval ID.

Exit status: 0 success, 1 a declared error of the capability, 2 usage, 3 not found,
4 invalid input or output, 5 denied or waiting for approval, 6 every binding failed
(unreachable, timeout, not executable), 7 with --server, caphub gave up waiting for the
server's answer (--timeout, default 1m; 0: no limit): the call may still run there, so check
before calling again.`,
		Example: `  caphub invoke ossa:everruns/add@1.0 --input '{"a": 2, "b": 3}'
  caphub invoke mcp:everything/echo@1.0 --input @message.json
  caphub invoke ossa:everruns/get_current_time@1 --input '{"timezone": "Asia/Kolkata"}' --server http://127.0.0.1:8750`,
		Args: exactArgs(1, "a capability URI"),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, _ := cmd.Flags().GetString("input")
			input, err := readInput(raw)
			if err != nil {
				return &usageError{err}
			}
			req := invoke.Request{URI: args[0], Input: input}
			agent, _ := cmd.Flags().GetString("caller")
			if cmd.Flags().Changed("lenient") {
				l, _ := cmd.Flags().GetBool("lenient")
				req.Lenient = &l
			}
			approval, _ := cmd.Flags().GetString("approval")
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			cmd.SetContext(identity.With(ctx, identity.Caller{Agent: agent, Approval: strings.TrimSpace(approval)}))
			res, err := runInvoke(cmd, req)
			if err != nil {
				return invokeFailure(cmd, err)
			}
			return writeJSON(cmd.OutOrStdout(), res)
		},
	}
	cmd.Flags().String("input", "{}", "the input: a JSON object, or @FILE to read it from a file (@- for stdin)")
	cmd.Flags().String("caller", "", "the agent on whose behalf the call runs (namespaces its state)")
	cmd.Flags().String("approval", "", "retry a call that was answered APPROVAL_REQUIRED with its approval id, once a human approved it")
	cmd.Flags().Bool("lenient", false, "report an output that does not match its schema as a warning, not an error")
	addInvokeFlags(cmd)
	return cmd
}

func readInput(raw string) (map[string]any, error) {
	data := []byte(raw)
	if strings.HasPrefix(raw, "@") {
		var err error
		if raw == "@-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(raw[1:])
		}
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", raw, err)
		}
	}
	var input map[string]any
	if err := json.Unmarshal(data, &input); err != nil {
		return nil, fmt.Errorf("--input must be a JSON object (or @FILE): %v", err)
	}
	return input, nil
}

// runInvoke invokes on the server (--server) or in this process.
func runInvoke(cmd *cobra.Command, req invoke.Request) (*invoke.Result, error) {
	// The command prints the outcome itself; the log carries only errors.
	cfg, err := configFrom(cmd, slog.LevelError)
	if err != nil {
		return nil, err
	}
	if cfg.server != "" {
		c, err := client.New(cfg.server, client.WithTimeout(cfg.timeout), client.WithToken(cfg.token))
		if err != nil {
			return nil, &usageError{err}
		}
		return c.Invoke(cmd.Context(), req)
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	a, err := newApp(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	return a.pipeline.Invoke(ctx, req)
}

// invokeFailure prints the error (as JSON with --format json semantics: the
// code, message and attempts) and picks the exit code by class.
func invokeFailure(cmd *cobra.Command, err error) error {
	var u *usageError
	if errors.As(err, &u) {
		return err
	}
	var e *invoke.Error
	if !errors.As(err, &e) {
		return err
	}
	out := map[string]any{"error": e}
	if h := hintFor(e); h != "" {
		out["hint"] = h
	}
	_ = writeJSON(cmd.ErrOrStderr(), out)
	return &exitError{code: invoke.ExitCode(e.Code), msg: e.Error()}
}

// exitError ends the command with a specific exit code; its message was
// already printed.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }
