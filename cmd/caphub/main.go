// Command caphub is the capability registry and broker for AI agents: it
// validates, compares, stores, serves and invokes capability definitions.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/caphub/caphub/client"
	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes, mapped from errors in one place (exitCode).
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and found a problem (invalid file, incompatible, too small a bump)
	exitUsage   = 2 // the command line itself was wrong
	// exitGaveUp: with --server, caphub stopped waiting for the answer to a
	// change the server had received (--timeout passed, or the connection
	// broke): the server may still complete it, so it is not reported as
	// failed. 3 to 6 are invoke's (invoke.Exit*).
	exitGaveUp = 7
)

// run executes the command line and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var silent *silentError
	var exit *exitError
	if !errors.As(err, &silent) && !errors.As(err, &exit) {
		fmt.Fprintln(root.ErrOrStderr(), "caphub:", err)
		if h := hintFor(err); h != "" {
			fmt.Fprintln(root.ErrOrStderr(), "caphub: hint:", h)
		}
	}
	if gaveUp := (*client.GaveUpError)(nil); errors.As(err, &gaveUp) {
		fmt.Fprintln(root.ErrOrStderr(), "caphub:", gaveUpAdvice(cmd))
	}
	return exitCode(err)
}

// gaveUpAdvice says what to do after cmd gave up waiting for the server:
// the command's own advice (longServerWork), else a general one.
func gaveUpAdvice(cmd *cobra.Command) string {
	if cmd != nil && cmd.Annotations[annotGaveUp] != "" {
		return cmd.Annotations[annotGaveUp]
	}
	return "the server may still complete the request: check what it did before you try again, and give it more time with --timeout (0: no limit)."
}

// usageError marks a mistake on the command line (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() + " (see --help)" }
func (e *usageError) Unwrap() error { return e.err }

// silentError reports a failure whose details the command already printed
// (exit 1).
type silentError struct{ msg string }

func (e *silentError) Error() string { return e.msg }

func exitCode(err error) int {
	var u *usageError
	if errors.As(err, &u) || strings.HasPrefix(err.Error(), "unknown command") {
		return exitUsage // cobra reports unknown subcommands as plain errors
	}
	var exit *exitError
	if errors.As(err, &exit) {
		return exit.code
	}
	var gaveUp *client.GaveUpError
	if errors.As(err, &gaveUp) {
		return exitGaveUp
	}
	return exitFailure
}
