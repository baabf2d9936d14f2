package invoke_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/native"
	"github.com/caphub/caphub/registry"
)

// A pipeline runs a capability through its bindings: here one native
// handler, resolved without a registry. The input is checked against the
// input schema before any binding runs.
func ExamplePipeline() {
	num := capability.Schema{"type": "number"}
	def := capability.Definition{
		URI: "ossa:math/add@1.0", Name: "add", Domain: "math", Version: "1.0.0", Stability: "stable",
		Description: "Add two numbers",
		Input:       capability.Schema{"type": "object", "required": []any{"a", "b"}, "properties": map[string]any{"a": num, "b": num}},
		Output:      capability.Schema{"type": "object", "properties": map[string]any{"sum": num}},
		Bindings:    capability.Bindings{Native: &capability.NativeBinding{Handler: "add"}},
	}
	def.Normalize()
	add := native.New(map[string]native.Handler{"add": func(_ context.Context, c *invoke.Call) (any, error) {
		return map[string]any{"sum": toF(c.Input["a"]) + toF(c.Input["b"])}, nil
	}})
	p := invoke.New(fixed{registry.Resolution{URI: def.URI, Version: def.Version, Record: registry.Record{Definition: def}}},
		[]invoke.Binding{add}, invoke.Options{})

	ctx := context.Background()
	res, err := p.Invoke(ctx, invoke.Request{URI: "ossa:math/add@1.0", Input: map[string]any{"a": 2, "b": 3}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Output, "via", res.Binding)

	_, err = p.Invoke(ctx, invoke.Request{URI: "ossa:math/add@1.0", Input: map[string]any{"a": "two", "b": 3}})
	var e *invoke.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code)
	}
	// Output:
	// map[sum:5] via native
	// INVALID_INPUT
}
