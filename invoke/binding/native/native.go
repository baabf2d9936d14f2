// Package native is the binding to handlers compiled into caphub (the
// built-in capabilities).
package native

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
)

// Handler runs one native capability and returns its output.
type Handler func(ctx context.Context, call *invoke.Call) (any, error)

// Binding dispatches to handlers by name.
type Binding struct {
	handlers map[string]Handler
}

// New returns a native binding over handlers (name → Handler).
func New(handlers map[string]Handler) *Binding { return &Binding{handlers: handlers} }

// Kind is "native".
func (b *Binding) Kind() string { return capability.BindingNative }

// Invoke runs the handler the definition names.
func (b *Binding) Invoke(ctx context.Context, call *invoke.Call) (*invoke.Outcome, error) {
	nb := call.Definition.Bindings.Native
	if nb == nil {
		return nil, invoke.Errorf(invoke.CodeNoBinding, false, "%s has no native binding", call.URI)
	}
	h, ok := b.handlers[nb.Handler]
	if !ok {
		names := make([]string, 0, len(b.handlers))
		for n := range b.handlers {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, invoke.Errorf(invoke.CodeNoBinding, false, "no native handler %q is compiled into this caphub (it has: %s)", nb.Handler, strings.Join(names, ", "))
	}
	out, err := safeCall(ctx, h, call)
	if err != nil {
		return nil, err
	}
	return &invoke.Outcome{Output: out}, nil
}

// safeCall turns a handler panic into an error: one bad handler must not
// take the server down.
func safeCall(ctx context.Context, h Handler, call *invoke.Call) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("native handler %s panicked: %v", call.Definition.Bindings.Native.Handler, r)
		}
	}()
	return h(ctx, call)
}
