// Package grpcbind invokes capabilities through their gRPC binding, with no
// generated stubs: the method's request and response types are learnt at run
// time from the server's reflection service (grpc.reflection.v1, falling back
// to v1alpha), requests are built with dynamicpb from the call's JSON input,
// and responses are returned as JSON.
//
// A binding names a target (host:port), a fully-qualified service
// ("pkg.v1.Svc"), a method ("Add") and an optional mapping that renames
// top-level capability input fields to request-message fields:
//
//	bindings:
//	  grpc: {target: "127.0.0.1:50051", service: caphub.test.v1.Math, method: Add, mapping: {x: a, y: b}}
//
// Rules, and why:
//
//   - Only unary methods are invoked; a capability call is one request and one
//     answer, so streaming methods are refused with NO_BINDING.
//   - Targets are checked against Options.AllowedTargets before anything is
//     dialed, because definitions come from users and discovery and must not
//     turn caphub into a proxy to arbitrary hosts. An empty list allows
//     loopback only.
//   - Transport is plaintext unless Options.TLS is set, in which case every
//     target is dialed with TLS.
//   - One *grpc.ClientConn is kept per target and shared by all calls.
//   - Descriptors are cached per (target, service). A method missing from the
//     cached service, or an "unknown method/service" answer from the server
//     (it was redeployed), drops the entry and resolves it again; a call the
//     server rejected that way never ran, so it is sent once more.
//   - Input is read with protojson (enums by name or number, 64-bit integers
//     as numbers or strings, well-known types in their JSON forms); input
//     that does not fit the request message is INVALID_INPUT naming the field.
//   - Output is the response in protojson with proto field names and default
//     values emitted (zero scalars, empty lists and maps appear, so an output
//     schema that requires them validates; unset sub-messages stay absent
//     rather than null). Unlike canonical proto3 JSON, 64-bit integers are
//     returned as JSON numbers (Go int64, or uint64 above MaxInt64): an output
//     schema says "integer" for them, and Go values keep their precision.
//   - A gRPC status becomes an *invoke.Error with code GRPC_<STATUS> (e.g.
//     GRPC_NOT_FOUND), or the capability's declared code when it declares one
//     named after the status (NOT_FOUND); UNAVAILABLE, DEADLINE_EXCEEDED,
//     RESOURCE_EXHAUSTED and ABORTED are retryable unless declared otherwise.
//     The call's own deadline expiring is TIMEOUT.
package grpcbind

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/internal/bindutil"
)

// Kind is the binding type this package implements.
const Kind = capability.BindingGRPC

// Defaults for Options fields left zero.
const (
	DefaultDialTimeout = 5 * time.Second
	DefaultCallTimeout = 30 * time.Second
)

// Options configures a Binding.
type Options struct {
	// DialTimeout bounds connecting to a target and resolving a service's
	// descriptors through reflection. Zero means DefaultDialTimeout.
	DialTimeout time.Duration
	// CallTimeout bounds one call when the caller's context has no deadline
	// (the pipeline normally sets one per attempt). Zero means
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// TLS, when set, makes every connection use TLS with this configuration
	// (cloned). Nil means plaintext, which suits loopback and sidecar targets.
	TLS *tls.Config
	// AllowedTargets lists where bindings may connect; a target outside it is
	// refused before any dial. Empty means loopback only (localhost,
	// 127.0.0.0/8, ::1). Each entry is one of:
	//
	//	"*"                    any target (opt-in for trusted definitions only)
	//	"loopback"             localhost, 127.0.0.0/8 and ::1, any port
	//	"host" or "host:port"  that host name or IP, any port or that port
	//	"*.example.com[:port]" any subdomain of example.com (not example.com)
	//	"10.0.0.0/8[:port]"    IP literals in that CIDR range ("[fd00::/8]:443" for IPv6 with a port)
	//
	// Host names are matched as written in the binding, not as resolved: an
	// allowed name is trusted to resolve where its owner says. Entries that
	// fit none of these forms match nothing.
	AllowedTargets []string
	// Logger receives debug records about connections and descriptor
	// resolution. Nil means slog.Default().
	Logger *slog.Logger
}

// Binding invokes gRPC bindings. It is safe for concurrent use; its zero
// value is not usable: create it with New and release it with Close.
type Binding struct {
	opts  Options
	creds credentials.TransportCredentials
	log   *slog.Logger

	mu       sync.Mutex
	closed   bool
	conns    map[string]*grpc.ClientConn // by dial target (host:port)
	services map[serviceKey]*serviceInfo
	inflight map[serviceKey]*flight
}

// serviceKey identifies a cached service: descriptors are per server.
type serviceKey struct{ target, service string }

// New returns a Binding with opts, zero fields taking their defaults.
func New(opts Options) *Binding {
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	opts.AllowedTargets = append([]string(nil), opts.AllowedTargets...)
	b := &Binding{
		opts:     opts,
		log:      opts.Logger,
		conns:    map[string]*grpc.ClientConn{},
		services: map[serviceKey]*serviceInfo{},
		inflight: map[serviceKey]*flight{},
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if opts.TLS != nil {
		b.creds = credentials.NewTLS(opts.TLS.Clone())
	} else {
		b.creds = insecure.NewCredentials()
	}
	return b
}

// Kind returns "grpc".
func (b *Binding) Kind() string { return Kind }

// Close closes every pooled connection and forgets cached descriptors.
// Calls after Close fail.
func (b *Binding) Close() error {
	b.mu.Lock()
	conns := b.conns
	b.conns = map[string]*grpc.ClientConn{}
	b.services = map[serviceKey]*serviceInfo{}
	b.closed = true
	b.mu.Unlock()
	var errs []error
	for target, cc := range conns {
		if err := cc.Close(); err != nil {
			errs = append(errs, fmt.Errorf("grpc binding: closing connection to %s: %w", target, err))
		}
	}
	return errors.Join(errs...)
}

// Invoke calls the unary method named by call.Definition.Bindings.GRPC with
// call.Input and returns the response as decoded JSON.
func (b *Binding) Invoke(ctx context.Context, call *invoke.Call) (*invoke.Outcome, error) {
	gb, service, method, err := grpcBindingOf(call)
	if err != nil {
		return nil, err
	}
	target, err := b.checkTarget(gb.Target)
	if err != nil {
		return nil, bindutil.NoBinding(Kind, map[string]any{"target": gb.Target, "service": service, "method": method}, "%v", err)
	}
	cc, err := b.conn(target)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.opts.CallTimeout)
		defer cancel()
	}
	return b.call(ctx, cc, call, target, service, method)
}

// grpcBindingOf returns the grpc binding of call with its service and
// method, or why there is none to invoke.
func grpcBindingOf(call *invoke.Call) (gb *capability.GRPCBinding, service, method string, err error) {
	if call == nil || call.Definition == nil || call.Definition.Bindings.GRPC == nil {
		return nil, "", "", bindutil.NoBinding(Kind, nil, "capability %s has no grpc binding; add bindings.grpc {target, service, method} to its definition", bindutil.CapabilityName(call))
	}
	gb = call.Definition.Bindings.GRPC
	service, method = splitMethod(gb.Service, gb.Method)
	details := map[string]any{"target": gb.Target, "service": service, "method": method}
	switch {
	case strings.TrimSpace(gb.Target) == "":
		return nil, "", "", bindutil.NoBinding(Kind, details, "the grpc binding of %s has no target; set bindings.grpc.target to host:port (e.g. 127.0.0.1:50051)", bindutil.CapabilityName(call))
	case service == "":
		return nil, "", "", bindutil.NoBinding(Kind, details, "the grpc binding of %s has no service; set bindings.grpc.service to the fully-qualified service name (e.g. pkg.v1.Svc)", bindutil.CapabilityName(call))
	case method == "":
		return nil, "", "", bindutil.NoBinding(Kind, details, "the grpc binding of %s has no method; set bindings.grpc.method to the method name (e.g. Add)", bindutil.CapabilityName(call))
	}
	return gb, service, method, nil
}

// call sends the request to service/method on target and returns the
// response as decoded JSON. When the server does not route a cached
// method, the method is resolved again and the call resent once.
func (b *Binding) call(ctx context.Context, cc *grpc.ClientConn, call *invoke.Call, target, service, method string) (*invoke.Outcome, error) {
	gb := call.Definition.Bindings.GRPC
	fullMethod := "/" + service + "/" + method
	where := fmt.Sprintf("%s on %s", fullMethod, target)
	for try := 0; ; try++ {
		info, md, err := b.method(ctx, cc, target, service, method, try > 0)
		if err != nil {
			return nil, err
		}
		req, err := buildRequest(md.Input(), call.Input, gb.Mapping, info.types)
		if err != nil {
			return nil, err
		}
		resp := dynamicpb.NewMessage(md.Output())
		err = cc.Invoke(ctx, fullMethod, req, resp)
		if err != nil && try == 0 && isUnknownRPC(err) {
			// The server no longer routes what we cached: it was probably
			// redeployed. It did not run the call, so resolve and resend.
			b.log.DebugContext(ctx, "grpc binding: server rejected a cached method; resolving it again",
				"target", target, "method", fullMethod, "error", err)
			b.forget(target, service)
			continue
		}
		if err != nil {
			if isUnknownRPC(err) {
				b.forget(target, service)
			}
			return nil, statusError(ctx, call.Definition, err, where)
		}
		out, err := encodeOutput(resp, info.types)
		if err != nil {
			return nil, fmt.Errorf("grpc binding: %s: encoding the response as JSON: %w", where, err)
		}
		return &invoke.Outcome{
			Output: out,
			Meta:   map[string]any{"target": target, "method": fullMethod},
		}, nil
	}
}

// method returns the descriptor of service/method on target, from the cache
// unless refresh is set or the cached service lacks the method.
func (b *Binding) method(ctx context.Context, cc *grpc.ClientConn, target, service, method string, refresh bool) (*serviceInfo, protoreflect.MethodDescriptor, error) {
	key := serviceKey{target, service}
	b.mu.Lock()
	info := b.services[key]
	b.mu.Unlock()
	if info == nil || refresh || info.desc.Methods().ByName(protoreflect.Name(method)) == nil {
		var err error
		if info, err = b.resolveShared(ctx, cc, key); err != nil {
			return nil, nil, err
		}
	}
	md := info.desc.Methods().ByName(protoreflect.Name(method))
	details := map[string]any{"target": target, "service": service, "method": method}
	if md == nil {
		return nil, nil, bindutil.NoBinding(Kind, details, "service %s on %s has no method %q; its methods are: %s — check bindings.grpc.method",
			service, target, method, methodNames(info.desc))
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return nil, nil, bindutil.NoBinding(Kind, details, "method %s/%s on %s is %s; the grpc binding invokes unary methods only — bind a unary method instead",
			service, method, target, streamingKind(md))
	}
	return info, md, nil
}

// flight is one resolution in progress, shared by the calls that need it.
type flight struct {
	done chan struct{}
	info *serviceInfo
	err  error
}

// resolveShared resolves key through reflection and caches the result.
// Concurrent callers share one resolution; it runs detached from the first
// caller's cancellation (it is bounded by DialTimeout), and each caller
// stops waiting when its own context ends.
func (b *Binding) resolveShared(ctx context.Context, cc *grpc.ClientConn, key serviceKey) (*serviceInfo, error) {
	b.mu.Lock()
	f := b.inflight[key]
	if f == nil {
		f = &flight{done: make(chan struct{})}
		b.inflight[key] = f
		go func() {
			f.info, f.err = b.resolve(context.WithoutCancel(ctx), cc, key.target, key.service)
			b.mu.Lock()
			delete(b.inflight, key)
			if f.err == nil && !b.closed {
				b.services[key] = f.info
			}
			b.mu.Unlock()
			close(f.done)
		}()
	}
	b.mu.Unlock()
	select {
	case <-f.done:
		return f.info, f.err
	case <-ctx.Done():
		return nil, statusError(ctx, nil, ctx.Err(), fmt.Sprintf("resolving %s on %s through reflection", key.service, key.target))
	}
}

// resolve asks target's reflection service for service, bounded by
// DialTimeout.
func (b *Binding) resolve(ctx context.Context, cc *grpc.ClientConn, target, service string) (*serviceInfo, error) {
	rctx, cancel := context.WithTimeout(ctx, b.opts.DialTimeout)
	defer cancel()
	start := time.Now()
	info, err := resolveService(rctx, cc, service)
	if err != nil {
		details := map[string]any{"target": target, "service": service}
		var nf *symbolNotFoundError
		switch {
		case errors.Is(err, errNoReflection):
			return nil, bindutil.NoBinding(Kind, details, "target %s does not serve gRPC server reflection (grpc.reflection.v1 or v1alpha), which caphub needs to learn the types of %s: register it on the server (grpc-go: reflection.Register(server))", target, service)
		case errors.As(err, &nf):
			msg := fmt.Sprintf("target %s does not serve service %q", target, service)
			if len(nf.available) > 0 {
				msg += "; it serves: " + strings.Join(nf.available, ", ")
			}
			return nil, bindutil.NoBinding(Kind, details, "%s — check bindings.grpc.service (fully qualified, e.g. pkg.v1.Svc)", msg)
		case errors.Is(err, errBadDescriptors):
			return nil, fmt.Errorf("grpc binding: descriptors of %s from %s: %w", service, target, err)
		case errors.Is(rctx.Err(), context.DeadlineExceeded):
			return nil, &invoke.Error{
				Code: "GRPC_UNAVAILABLE", Retryable: true, Binding: Kind, Details: details, Cause: err,
				Message: fmt.Sprintf("could not reach %s and resolve %s through reflection within %s (Options.DialTimeout): is the server running there?", target, service, b.opts.DialTimeout),
			}
		}
		return nil, statusError(rctx, nil, err, "reflection on "+target)
	}
	b.log.Debug("grpc binding: resolved service through reflection",
		"target", target, "service", service, "files", info.files, "took", time.Since(start))
	return info, nil
}

// forget drops the cached descriptors of service on target.
func (b *Binding) forget(target, service string) {
	b.mu.Lock()
	delete(b.services, serviceKey{target, service})
	b.mu.Unlock()
}

// conn returns the pooled connection to target, creating it (lazily
// connecting) on first use.
func (b *Binding) conn(target string) (*grpc.ClientConn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errors.New("grpc binding: used after Close; create a new one with grpcbind.New")
	}
	if cc := b.conns[target]; cc != nil {
		return cc, nil
	}
	cc, err := grpc.NewClient("dns:///"+target,
		grpc.WithTransportCredentials(b.creds),
		grpc.WithUserAgent("caphub-grpcbind"),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.DefaultConfig, MinConnectTimeout: b.opts.DialTimeout}),
	)
	if err != nil {
		return nil, fmt.Errorf("grpc binding: creating a client for %s: %w", target, err)
	}
	b.conns[target] = cc
	b.log.Debug("grpc binding: new connection", "target", target)
	return cc, nil
}

// splitMethod accepts the method as "Add", "pkg.Svc/Add" or "/pkg.Svc/Add"
// (the service then may be empty) and returns service and method.
func splitMethod(service, method string) (string, string) {
	service = strings.TrimSpace(service)
	method = strings.TrimPrefix(strings.TrimSpace(method), "/")
	if i := strings.LastIndex(method, "/"); i >= 0 {
		if s := method[:i]; service == "" || s == service {
			service = s
		}
		method = method[i+1:]
	}
	return service, method
}

func methodNames(sd protoreflect.ServiceDescriptor) string {
	ms := sd.Methods()
	if ms.Len() == 0 {
		return "(none)"
	}
	names := make([]string, ms.Len())
	for i := range names {
		names[i] = string(ms.Get(i).Name())
	}
	return strings.Join(names, ", ")
}

func streamingKind(md protoreflect.MethodDescriptor) string {
	switch {
	case md.IsStreamingClient() && md.IsStreamingServer():
		return "bidirectional-streaming"
	case md.IsStreamingClient():
		return "client-streaming"
	default:
		return "server-streaming"
	}
}
