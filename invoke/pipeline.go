package invoke

import (
	"context"
	"errors"
	"fmt"
	"github.com/caphub/caphub/format/agentos"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/internal/wait"
	"github.com/caphub/caphub/registry"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Resolver finds the definition a URI names (registry.API is one).
type Resolver interface {
	Resolve(ctx context.Context, uri string) (registry.Resolution, error)
}

// Policy decides whether a call may run. It returns nil to allow, or an
// error (an *Error with code DENIED or APPROVAL_REQUIRED, naming the rule)
// to refuse.
type Policy interface {
	Check(ctx context.Context, call *Call) error
}

// AllowAll is the policy until governance is configured.
type AllowAll struct{}

// Check allows every call.
func (AllowAll) Check(context.Context, *Call) error { return nil }

// Recorder receives one structured record per invocation (the audit chain
// consumes them).
type Recorder interface {
	RecordInvocation(ctx context.Context, r Record)
}

// Record describes one finished invocation.
type Record struct {
	Time    time.Time `json:"time"`
	URI     string    `json:"uri"`
	Version string    `json:"version,omitempty"`
	Caller  string    `json:"caller,omitempty"`
	// Credential is who authenticated the call ("token:NAME"), when it is
	// not the caller itself: a token acting as an agent.
	Credential string    `json:"credential,omitempty"`
	Binding    string    `json:"binding,omitempty"`
	Attempts   []Attempt `json:"attempts"`
	DurationMS float64   `json:"duration_ms"`
	Code       string    `json:"code,omitempty"` // "" on success
	Message    string    `json:"message,omitempty"`
	// BindingsFrom says whose bindings ran when they are not the registered
	// ones: "agent:<id>" for an agent's capability_bindings.
	BindingsFrom string `json:"bindings_from,omitempty"`
}

// BindingOverrides gives the bindings that replace a capability's
// registered ones when a given caller invokes it: an agent's
// capability_bindings (OSSA §10.1). It returns nil bindings when the
// caller has none for the capability; from names whose bindings they are
// (recorded as Record.BindingsFrom).
type BindingOverrides interface {
	BindingsFor(ctx context.Context, caller, uri, version string) (b *capability.Bindings, from string, err error)
}

// Observer receives invocation measurements (metrics.Metrics is one).
type Observer interface {
	ObserveInvocation(binding, code string, d time.Duration)
}

// Options tune the pipeline.
type Options struct {
	// Timeout bounds each attempt unless the definition says otherwise
	// (metadata.caphub.timeout, a Go duration such as "5s"). Default 30s.
	Timeout time.Duration
	// MaxAttempts bounds the tries of one binding for retryable errors
	// (metadata.caphub.max_attempts overrides it). Default 3.
	MaxAttempts int
	// BaseBackoff and MaxBackoff shape the exponential backoff with full
	// jitter between retries. Defaults 50ms and 2s.
	BaseBackoff, MaxBackoff time.Duration
	// Lenient turns output schema mismatches into warnings.
	Lenient bool

	// Policy decides whether each call may run; default AllowAll.
	Policy Policy
	// Recorder receives one record per invocation (the audit chain).
	Recorder Recorder
	// Observer receives invocation measurements (metrics).
	Observer Observer
	// Overrides gives per-caller bindings (agents' capability_bindings); a
	// request's own Bindings still win.
	Overrides BindingOverrides
}

// Pipeline invokes capabilities. It is safe for concurrent use; its
// configuration is fixed by New.
type Pipeline struct {
	resolver Resolver
	bindings map[string]Binding
	opts     Options

	schemas sync.Map // schemaKey → *compiled
}

type compiled struct {
	input, output *jsonschema.Schema
	err           error
}

// New returns a pipeline over a resolver and the given bindings.
func New(resolver Resolver, bindings []Binding, opts Options) *Pipeline {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 3
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = 50 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 2 * time.Second
	}
	if opts.Policy == nil {
		opts.Policy = AllowAll{}
	}
	p := &Pipeline{resolver: resolver, bindings: map[string]Binding{}, opts: opts}
	for _, b := range bindings {
		p.bindings[b.Kind()] = b
	}
	return p
}

// Authorize runs the policy hook on a call that does not go through Invoke
// (a tools/call fronted to an upstream MCP server).
func (p *Pipeline) Authorize(ctx context.Context, call *Call) error {
	return p.opts.Policy.Check(ctx, call)
}

// Emit hands a record of a call that did not go through Invoke to the
// recorder and the observer, as Invoke does for its own.
func (p *Pipeline) Emit(ctx context.Context, rec Record) {
	if o := p.opts.Observer; o != nil {
		o.ObserveInvocation(rec.Binding, rec.Code, time.Duration(rec.DurationMS*float64(time.Millisecond)))
	}
	if r := p.opts.Recorder; r != nil {
		r.RecordInvocation(ctx, rec)
	}
}

// Request is one invocation request.
type Request struct {
	URI   string         `json:"uri"`
	Input map[string]any `json:"input"`
	// Lenient overrides Options.Lenient for this call when set.
	Lenient *bool `json:"lenient,omitempty"`
	// Bindings, when set, replaces the definition's bindings for this call
	// (an agent's capability_bindings).
	Bindings *capability.Bindings `json:"-"`
}

// Result is a successful invocation.
type Result struct {
	URI        string        `json:"uri"`
	Version    string        `json:"version"`
	Output     any           `json:"output"`
	Binding    string        `json:"binding"`
	Attempts   []Attempt     `json:"attempts"`
	Duration   time.Duration `json:"-"`
	DurationMS float64       `json:"duration_ms"`
	Warnings   []string      `json:"warnings,omitempty"`
	// Tool is the MCP tool result as the binding got it, when the binding
	// that ran called an MCP tool (see ToolResult); nil otherwise.
	Tool *ToolResult `json:"-"`
}

// Invoke runs one capability for the caller ctx carries
// (identity.From: the agent it acts as, the credential, the approval it is
// retried with). A failure is an *Error whose Details list every attempt.
func (p *Pipeline) Invoke(ctx context.Context, req Request) (*Result, error) {
	start := time.Now()
	who := identity.From(ctx)
	ctx, span := tracing.Start(ctx, "invoke", tracing.Internal)
	res, rec, err := p.invoke(ctx, req, who.Agent)
	d := time.Since(start)
	defer traceInvocation(span, &rec, who.Agent)
	rec.Time, rec.DurationMS, rec.Caller = start.UTC(), ms(d), who.Agent
	if who.Credential != who.Agent {
		rec.Credential = who.Credential
	}
	if rec.URI == "" {
		rec.URI = req.URI
	}
	code := ""
	if err != nil {
		e := AsError(err, "")
		code, rec.Code, rec.Message = e.Code, e.Code, e.Message
	}
	if o := p.opts.Observer; o != nil {
		o.ObserveInvocation(rec.Binding, code, d)
	}
	if r := p.opts.Recorder; r != nil {
		r.RecordInvocation(ctx, rec)
	}
	if err != nil {
		return nil, err
	}
	res.Duration, res.DurationMS = d, ms(d)
	return res, nil
}

// traceInvocation ends an invocation's span with what its record says:
// the capability, the agent, the binding that answered and the outcome
// (ok, or the error code).
func traceInvocation(span tracing.Span, rec *Record, agent string) {
	if !span.Recording() {
		span.End(nil)
		return
	}
	span.SetString("caphub.capability.uri", rec.URI)
	if rec.Version != "" {
		span.SetString("caphub.capability.version", rec.Version)
	}
	if agent != "" {
		span.SetString("caphub.agent", agent)
	}
	if rec.Binding != "" {
		span.SetString("caphub.binding", rec.Binding)
	}
	span.SetInt("caphub.attempts", len(rec.Attempts))
	if rec.Code == "" {
		span.SetString("caphub.outcome", "ok")
		span.End(nil)
		return
	}
	span.SetString("caphub.outcome", rec.Code)
	span.Fail(rec.Code, rec.Message)
	span.End(nil)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// invocation is one call on its way through the pipeline: what each step
// reads and adds.
type invocation struct {
	req    Request
	caller string // the agent the call acts as

	def     capability.Definition // the resolved definition; its Bindings are the ones that run
	tier    string                // the resolved version's trust tier
	call    *Call
	schemas *compiled
	rec     Record
	res     *Result
}

// invoke runs the steps of one call: resolve the URI, check the input, pick
// the bindings, ask the policy, then try the bindings in order.
func (p *Pipeline) invoke(ctx context.Context, req Request, caller string) (*Result, Record, error) {
	inv := &invocation{req: req, caller: caller}
	if err := p.resolve(ctx, inv); err != nil {
		return nil, inv.rec, err
	}
	if err := inv.checkInput(); err != nil {
		return nil, inv.rec, err
	}
	if err := p.chooseBindings(ctx, inv); err != nil {
		return nil, inv.rec, err
	}
	if err := p.opts.Policy.Check(ctx, inv.call); err != nil {
		return nil, inv.rec, err
	}
	if err := p.runBindings(ctx, inv); err != nil {
		return nil, inv.rec, err
	}
	return inv.res, inv.rec, nil
}

// resolve finds the definition the URI names and its compiled schemas. A
// URI that does not resolve (or a sunset version) is NOT_FOUND.
func (p *Pipeline) resolve(ctx context.Context, inv *invocation) error {
	resolution, err := p.resolver.Resolve(ctx, inv.req.URI)
	if err != nil {
		var se *registry.SunsetError
		switch {
		case errors.As(err, &se):
			return &Error{Code: CodeNotFound, Message: err.Error(), Cause: err, Details: map[string]any{"deprecated_by": se.DeprecatedBy, "migration_guide": se.MigrationGuide}}
		case errors.Is(err, registry.ErrNotFound), errors.Is(err, registry.ErrInvalid):
			return &Error{Code: CodeNotFound, Message: err.Error(), Cause: err}
		}
		return err
	}
	inv.def = resolution.Record.Definition
	inv.tier = resolution.Record.TrustTier
	inv.rec.URI, inv.rec.Version = resolution.URI, resolution.Version
	inv.res = &Result{URI: resolution.URI, Version: resolution.Version}
	for _, w := range resolution.Warnings {
		inv.res.Warnings = append(inv.res.Warnings, w.Message)
	}
	inv.schemas = p.compiled(&resolution)
	if inv.schemas.err != nil {
		return &Error{Code: CodeBindingFailed, Message: "the registered schemas do not compile: " + inv.schemas.err.Error()}
	}
	return nil
}

// checkInput normalises the input, applies the schema's defaults and
// validates it: a mismatch is INVALID_INPUT.
func (inv *invocation) checkInput() error {
	input := inv.req.Input
	if input == nil {
		input = map[string]any{}
	}
	input = capability.Normalize(input).(map[string]any)
	ApplyDefaults(inv.def.Input, input)
	if inv.schemas.input != nil {
		if err := inv.schemas.input.Validate(anyMap(input)); err != nil {
			return &Error{Code: CodeInvalidInput, Message: "the input does not match the input schema: " + capability.FirstSchemaError(err)}
		}
	}
	inv.call = &Call{URI: inv.rec.URI, Definition: &inv.def, Input: input, Caller: inv.caller, TrustTier: inv.tier, Resolved: true}
	return nil
}

// chooseBindings replaces the registered bindings with the request's own,
// else with the caller's (an agent's capability_bindings), if any.
func (p *Pipeline) chooseBindings(ctx context.Context, inv *invocation) error {
	switch {
	case inv.req.Bindings != nil:
		inv.def.Bindings = *inv.req.Bindings
	case p.opts.Overrides != nil && inv.caller != "":
		b, from, err := p.opts.Overrides.BindingsFor(ctx, inv.caller, inv.rec.URI, inv.rec.Version)
		if err != nil {
			return &Error{Code: CodeBindingFailed, Message: fmt.Sprintf("cannot read the bindings caller %q has for %s: %v", inv.caller, inv.rec.URI, err), Cause: err}
		}
		if b != nil {
			inv.def.Bindings, inv.rec.BindingsFrom = *b, from
		}
	}
	return nil
}

// runBindings tries each binding the definition declares, in order, until
// one succeeds; it returns the last failure, with every attempt, when none
// does.
func (p *Pipeline) runBindings(ctx context.Context, inv *invocation) error {
	var lastErr *Error
	tried := false
	for _, kind := range append(append([]string{}, capability.BindingOrder...), sortedExtraKinds(inv.def.Bindings)...) {
		if !hasBinding(inv.def.Bindings, kind) {
			continue
		}
		b, ok := p.bindings[kind]
		if !ok {
			lastErr = unavailable(kind, inv.rec.URI)
			inv.rec.Attempts = append(inv.rec.Attempts, Attempt{Binding: kind, Error: lastErr})
			continue
		}
		tried = true
		last, outcome := p.tryBinding(ctx, inv, b)
		if last == nil {
			return outcome
		}
		lastErr = last
		if ctx.Err() != nil {
			break
		}
	}
	return inv.failure(lastErr, tried)
}

// bindingRTFS is the binding kind of a CCOS capability implemented in RTFS
// (format/rtfs): its code is kept in metadata.rtfs.implementation, and
// caphub does not evaluate RTFS.
const bindingRTFS = "rtfs"

// unavailable is the error of a declared binding caphub cannot run here.
func unavailable(kind, uri string) *Error {
	if kind == bindingRTFS {
		return &Error{Code: CodeNotExecutable, Binding: kind, Message: fmt.Sprintf("%s is implemented in RTFS (its metadata.rtfs.implementation) and caphub does not evaluate RTFS: "+
			"bind it to what caphub runs (an http, mcp, cli or native binding) in a new version or in the calling agent's capability_bindings, or run it in a CCOS runtime", uri)}
	}
	if agentos.IsDeviceBinding(kind) {
		return &Error{Code: CodeNotExecutable, Binding: kind, Message: fmt.Sprintf("the %s binding runs on a device (an Agent OS handler), not on a server", kind)}
	}
	if !isKnownKind(kind) {
		return &Error{Code: CodeNotExecutable, Binding: kind, Message: fmt.Sprintf("the %s binding is not one caphub runs (it runs %s): bind %s to one of those in a new version or in the calling agent's capability_bindings", kind, strings.Join(capability.BindingOrder, ", "), uri)}
	}
	return &Error{Code: CodeNoBinding, Binding: kind, Message: fmt.Sprintf("caphub has no %s binding configured", kind)}
}

// tryBinding runs one binding, retrying retryable errors with backoff. It
// returns the binding's last error when every attempt failed; otherwise the
// call is over and outcome is its result (nil, or an output that fails its
// schema).
func (p *Pipeline) tryBinding(ctx context.Context, inv *invocation, b Binding) (last *Error, outcome error) {
	kind := b.Kind()
	timeout, maxAttempts := p.limits(&inv.def)
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		inv.call.Attempt = attempt
		actx, cancel := context.WithTimeout(ctx, timeout)
		actx, span := tracing.StartFor(actx, "binding", kind, tracing.Internal)
		span.SetString("caphub.binding", kind)
		span.SetInt("caphub.attempt", attempt)
		t0 := time.Now()
		out, ierr := b.Invoke(actx, inv.call)
		cancel()
		a := Attempt{Binding: kind, Attempt: attempt, Duration: time.Since(t0)}
		a.DurationMS = ms(a.Duration)
		if ierr == nil {
			span.End(nil)
			inv.rec.Attempts = append(inv.rec.Attempts, a)
			inv.rec.Binding = kind
			return nil, p.finish(inv, kind, out)
		}
		last = classify(ierr, kind, &inv.def)
		if ctx.Err() != nil && errors.Is(ierr, context.Canceled) {
			last = &Error{Code: CodeTimeout, Binding: kind, Message: "the call was cancelled", Cause: ierr}
		}
		a.Error = last
		span.Fail(last.Code, last.Message)
		span.End(nil)
		inv.rec.Attempts = append(inv.rec.Attempts, a)
		if !last.Retryable || attempt == maxAttempts || ctx.Err() != nil {
			break
		}
		if !wait.Sleep(ctx, p.backoff(attempt)) {
			break
		}
	}
	return last, nil
}

// finish maps a binding's output to the capability's fields and validates
// it: a mismatch is INVALID_OUTPUT, or a warning when the call is lenient.
func (p *Pipeline) finish(inv *invocation, kind string, out *Outcome) error {
	output := mapOutput(inv.def.Bindings, kind, out.Output)
	if inv.schemas.output != nil {
		if verr := inv.schemas.output.Validate(anyValue(output)); verr != nil {
			msg := "the output does not match the output schema: " + capability.FirstSchemaError(verr)
			if !p.lenient(inv.req) {
				return &Error{Code: CodeInvalidOutput, Binding: kind, Message: msg, Details: map[string]any{"attempts": inv.rec.Attempts}}
			}
			inv.res.Warnings = append(inv.res.Warnings, msg)
		}
	}
	inv.res.Output, inv.res.Binding, inv.res.Attempts, inv.res.Tool = output, kind, inv.rec.Attempts, out.Tool
	return nil
}

// failure is the error of a call no binding completed: the last error,
// listing every attempt, with a summary message when there were several
// (or none could run).
func (inv *invocation) failure(last *Error, tried bool) error {
	if last == nil {
		return &Error{Code: CodeNoBinding, Message: fmt.Sprintf("%s declares no binding caphub can run", inv.rec.URI)}
	}
	final := *last
	final.Details = map[string]any{"attempts": inv.rec.Attempts}
	if len(inv.rec.Attempts) > 1 || !tried {
		var parts []string
		for _, a := range inv.rec.Attempts {
			if a.Error != nil {
				parts = append(parts, fmt.Sprintf("%s#%d: %s", a.Binding, a.Attempt, a.Error.Error()))
			}
		}
		final.Message = fmt.Sprintf("every binding failed (%s)", strings.Join(parts, "; "))
	}
	return &final
}

func (p *Pipeline) lenient(req Request) bool {
	if req.Lenient != nil {
		return *req.Lenient
	}
	return p.opts.Lenient
}

// limits reads the per-attempt timeout and attempt bound: the definition's
// metadata.caphub.{timeout,max_attempts}, else the pipeline's options.
func (p *Pipeline) limits(d *capability.Definition) (time.Duration, int) {
	timeout, attempts := p.opts.Timeout, p.opts.MaxAttempts
	if m, ok := d.Metadata["caphub"].(map[string]any); ok {
		if s, ok := m["timeout"].(string); ok {
			if t, err := time.ParseDuration(s); err == nil && t > 0 {
				timeout = t
			}
		}
		if n, ok := m["max_attempts"].(int64); ok && n > 0 && n <= 10 {
			attempts = int(n)
		}
	}
	return timeout, attempts
}

// backoff is exponential with full jitter: a random wait in [d/2, d] with
// d = base·2^(attempt-1), capped at MaxBackoff.
func (p *Pipeline) backoff(attempt int) time.Duration {
	d := p.opts.BaseBackoff << (attempt - 1)
	if d > p.opts.MaxBackoff || d <= 0 {
		d = p.opts.MaxBackoff
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// classify turns a binding error into an *Error: the binding's error
// mapping applies (upstream code → declared code), and a declared code
// takes the declared retryable flag.
func classify(err error, kind string, d *capability.Definition) *Error {
	e := *AsError(err, kind)
	if m := errorMapping(d.Bindings, kind); m != nil {
		if to, ok := m[e.Code]; ok {
			e.Code = to
		}
	}
	for _, de := range d.Errors {
		if de.Code == e.Code {
			e.Retryable = de.Retryable
			break
		}
	}
	return &e
}

func errorMapping(b capability.Bindings, kind string) map[string]string {
	if kind == capability.BindingMCP && b.MCP != nil {
		return b.MCP.ErrorMapping
	}
	return nil
}

// mapOutput renames output fields by the binding's output mapping
// (binding field → capability field).
func mapOutput(b capability.Bindings, kind string, out any) any {
	if kind != capability.BindingMCP || b.MCP == nil || len(b.MCP.OutputMapping) == 0 {
		return out
	}
	m, ok := out.(map[string]any)
	if !ok {
		return out
	}
	mapped := make(map[string]any, len(m))
	for k, v := range m {
		if to, ok := b.MCP.OutputMapping[k]; ok {
			mapped[to] = v
		} else {
			mapped[k] = v
		}
	}
	return mapped
}

// MapInput renames input fields by a binding mapping (capability field →
// binding field); bindings call it.
func MapInput(input map[string]any, mapping map[string]string) map[string]any {
	if len(mapping) == 0 {
		return input
	}
	out := make(map[string]any, len(input))
	for k, v := range input {
		if to, ok := mapping[k]; ok {
			out[to] = v
		} else {
			out[k] = v
		}
	}
	return out
}

func hasBinding(b capability.Bindings, kind string) bool {
	switch kind {
	case capability.BindingNative:
		return b.Native != nil
	case capability.BindingMCP:
		return b.MCP != nil
	case capability.BindingHTTP:
		return b.HTTP != nil
	case capability.BindingGRPC:
		return b.GRPC != nil
	case capability.BindingCLI:
		return b.CLI != nil
	case capability.BindingDelegation:
		return b.Delegation != nil
	}
	_, ok := b.Extra[kind]
	return ok && !strings.HasPrefix(kind, "x-")
}

func isKnownKind(kind string) bool {
	for _, k := range capability.BindingOrder {
		if k == kind {
			return true
		}
	}
	return false
}

func sortedExtraKinds(b capability.Bindings) []string {
	types := b.Types()
	var out []string
	for _, t := range types {
		if !isKnownKind(t) {
			out = append(out, t)
		}
	}
	return out
}

// compiled returns the compiled schemas of a resolved version, cached.
func (p *Pipeline) compiled(r *registry.Resolution) *compiled {
	key := r.URI + "|" + r.Version + "|" + r.Record.Digest
	if c, ok := p.schemas.Load(key); ok {
		return c.(*compiled)
	}
	c := &compiled{}
	// An empty schema ({}) admits every value: it is left out rather than
	// checked (tools discovered without an outputSchema declare {}).
	d := r.Record.Definition
	if len(d.Input) > 0 {
		sch, issues := capability.CompileSchema(d.Input)
		if len(issues) > 0 {
			c.err = fmt.Errorf("input: %s", issues[0].Message)
		}
		c.input = sch
	}
	if len(d.Output) > 0 && c.err == nil {
		sch, issues := capability.CompileSchema(d.Output)
		if len(issues) > 0 {
			c.err = fmt.Errorf("output: %s", issues[0].Message)
		}
		c.output = sch
	}
	if r.Record.Digest != "" {
		p.schemas.Store(key, c)
	}
	return c
}

// ApplyDefaults fills absent properties that declare a default, in the
// object and, recursively, in nested objects that are present, looking
// through local $refs (an imported OpenAPI schema keeps its shared
// components under $defs).
func ApplyDefaults(schema map[string]any, obj map[string]any) {
	applyDefaults(schema, schema, obj, 0)
}

// maxDefaultRefHops bounds the chain of $refs ApplyDefaults follows from
// one schema (a chain that loops ends there).
const maxDefaultRefHops = 32

// applyDefaults applies the defaults of schema, then of the schema its
// $ref names in root (hops: $refs followed so far to get to schema).
func applyDefaults(root, schema map[string]any, obj map[string]any, hops int) {
	props, _ := schema["properties"].(map[string]any)
	for name, raw := range props {
		ps, _ := raw.(map[string]any)
		if ps == nil {
			continue
		}
		v, present := obj[name]
		if !present {
			// A default beside a $ref wins over the target's.
			if def, ok := derefSchema(root, ps)["default"]; ok {
				obj[name] = capability.CloneValue(def)
			}
			continue
		}
		if nested, ok := v.(map[string]any); ok {
			applyDefaults(root, ps, nested, 0)
		}
	}
	if ref, ok := schema["$ref"].(string); ok && hops < maxDefaultRefHops {
		if t, ok := capability.LocalRef(root, ref); ok {
			if m, ok := t.(map[string]any); ok {
				applyDefaults(root, m, obj, hops+1)
			}
		}
	}
}

// derefSchema returns the first schema with a default on the chain of
// local $refs from s into root; s itself when there is none.
func derefSchema(root, s map[string]any) map[string]any {
	cur := s
	for range maxDefaultRefHops {
		if _, ok := cur["default"]; ok {
			return cur
		}
		ref, ok := cur["$ref"].(string)
		if !ok {
			return s
		}
		t, ok := capability.LocalRef(root, ref)
		m, isMap := t.(map[string]any)
		if !ok || !isMap {
			return s
		}
		cur = m
	}
	return s
}

// anyMap and anyValue hand values to the schema validator.
func anyMap(m map[string]any) any { return m }
func anyValue(v any) any {
	return capability.Normalize(v)
}
