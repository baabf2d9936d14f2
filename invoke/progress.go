package invoke

import "context"

// ProgressFunc receives the progress a binding reports during a call (an
// MCP tool's notifications/progress): how far it got, the total when it is
// known (0 when not) and a message ("" for none). It may be called from
// another goroutine than the caller's, never after the binding's Invoke
// returned, and must not block for long: the binding waits for it.
type ProgressFunc func(progress, total float64, message string)

type progressKey struct{}

// WithProgress returns ctx asking the bindings of a call made with it to
// report progress to f (an MCP endpoint passes it on to its client, under
// the client's progress token). Bindings that cannot report progress
// ignore it.
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// ProgressFrom returns the ProgressFunc a call's context carries, or nil
// when its caller did not ask for progress.
func ProgressFrom(ctx context.Context) ProgressFunc {
	f, _ := ctx.Value(progressKey{}).(ProgressFunc)
	return f
}
