package grpcbind

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	v1reflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1"
	v1alphareflectiongrpc "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The test service, caphub.test.v1.Math, is described in Go (there is no
// protoc here) and served with dynamicpb messages, like a real server whose
// types caphub has never seen.

const mathService = "caphub.test.v1.Math"

// mathFile returns caphub/test/v1/math.proto with the methods named (a
// subset of Add, Fail, Sleep, Watch, Old, New).
func mathFile(methods ...string) *descriptorpb.FileDescriptorProto {
	s := proto.String
	field := func(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string, repeated bool) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{
			Name:     s(name),
			JsonName: s(jsonName(name)),
			Number:   proto.Int32(num),
			Type:     typ.Enum(),
			Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		}
		if repeated {
			f.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
		}
		if typeName != "" {
			f.TypeName = s(typeName)
		}
		return f
	}
	const (
		i64  = descriptorpb.FieldDescriptorProto_TYPE_INT64
		u64  = descriptorpb.FieldDescriptorProto_TYPE_UINT64
		str  = descriptorpb.FieldDescriptorProto_TYPE_STRING
		dbl  = descriptorpb.FieldDescriptorProto_TYPE_DOUBLE
		msg  = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
		enum = descriptorpb.FieldDescriptorProto_TYPE_ENUM
	)
	all := map[string]*descriptorpb.MethodDescriptorProto{
		"Add":   {Name: s("Add"), InputType: s(".caphub.test.v1.AddRequest"), OutputType: s(".caphub.test.v1.AddResponse")},
		"Fail":  {Name: s("Fail"), InputType: s(".caphub.test.v1.FailRequest"), OutputType: s(".caphub.test.v1.AddResponse")},
		"Sleep": {Name: s("Sleep"), InputType: s(".caphub.test.v1.SleepRequest"), OutputType: s(".caphub.test.v1.AddResponse")},
		"Watch": {Name: s("Watch"), InputType: s(".caphub.test.v1.AddRequest"), OutputType: s(".caphub.test.v1.AddResponse"), ServerStreaming: proto.Bool(true)},
		"Old":   {Name: s("Old"), InputType: s(".caphub.test.v1.AddRequest"), OutputType: s(".caphub.test.v1.AddResponse")},
		"New":   {Name: s("New"), InputType: s(".caphub.test.v1.AddRequest"), OutputType: s(".caphub.test.v1.AddResponse")},
	}
	svc := &descriptorpb.ServiceDescriptorProto{Name: s("Math")}
	for _, m := range methods {
		svc.Method = append(svc.Method, all[m])
	}
	return &descriptorpb.FileDescriptorProto{
		Name:       s("caphub/test/v1/math.proto"),
		Package:    s("caphub.test.v1"),
		Syntax:     s("proto3"),
		Dependency: []string{"google/protobuf/timestamp.proto"},
		EnumType: []*descriptorpb.EnumDescriptorProto{{
			Name: s("Op"),
			Value: []*descriptorpb.EnumValueDescriptorProto{
				{Name: s("OP_UNSPECIFIED"), Number: proto.Int32(0)},
				{Name: s("OP_ADD"), Number: proto.Int32(1)},
				{Name: s("OP_MUL"), Number: proto.Int32(2)},
			},
		}},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: s("Operand"), Field: []*descriptorpb.FieldDescriptorProto{
				field("label", 1, str, "", false),
				field("value", 2, i64, "", false),
			}},
			{Name: s("AddRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				field("a", 1, i64, "", false),
				field("b", 2, i64, "", false),
				field("op", 3, enum, ".caphub.test.v1.Op", false),
				field("extra", 4, i64, "", true),
				field("bonus", 5, msg, ".caphub.test.v1.Operand", false),
				field("items", 6, msg, ".caphub.test.v1.Operand", true),
				field("at", 7, msg, ".google.protobuf.Timestamp", false),
				field("weights", 8, msg, ".caphub.test.v1.AddRequest.WeightsEntry", true),
				field("big", 9, u64, "", false),
				field("note_text", 10, str, "", false),
			}, NestedType: []*descriptorpb.DescriptorProto{{
				Name:    s("WeightsEntry"),
				Field:   []*descriptorpb.FieldDescriptorProto{field("key", 1, str, "", false), field("value", 2, i64, "", false)},
				Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
			}}},
			{Name: s("AddResponse"), Field: []*descriptorpb.FieldDescriptorProto{
				field("sum", 1, i64, "", false),
				field("op", 2, enum, ".caphub.test.v1.Op", false),
				field("terms", 3, i64, "", true),
				field("summary", 4, str, "", false),
				field("at", 5, msg, ".google.protobuf.Timestamp", false),
				field("labels", 6, str, "", true),
				field("big", 7, u64, "", false),
				field("mean", 8, dbl, "", false),
				field("note_text", 9, str, "", false),
			}},
			{Name: s("FailRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				field("code", 1, str, "", false),
				field("message", 2, str, "", false),
			}},
			{Name: s("SleepRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				field("ms", 1, i64, "", false),
			}},
		},
		Service: []*descriptorpb.ServiceDescriptorProto{svc},
	}
}

func jsonName(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// reflectionMode says which reflection versions a test server serves.
type reflectionMode int

const (
	reflectBoth reflectionMode = iota
	reflectV1AlphaOnly
	reflectNone
)

// serverConfig describes a test server.
type serverConfig struct {
	addr       string // "" means 127.0.0.1:0
	reflection reflectionMode
	methods    []string // of the Math service; nil means Add, Fail, Sleep, Watch
	creds      credentials.TransportCredentials
}

// testServer is a real gRPC server on loopback.
type testServer struct {
	addr        string
	srv         *grpc.Server
	accepts     atomic.Int64 // TCP connections accepted
	reflections atomic.Int64 // reflection streams opened
	calls       atomic.Int64 // Math calls handled
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// overlay resolves descriptors from local files first, then the global ones
// (health, reflection, well-known types).
type overlay struct{ local *protoregistry.Files }

func (o overlay) FindFileByPath(p string) (protoreflect.FileDescriptor, error) {
	if fd, err := o.local.FindFileByPath(p); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(p)
}

func (o overlay) FindDescriptorByName(n protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := o.local.FindDescriptorByName(n); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(n)
}

func startServer(t testing.TB, cfg serverConfig) *testServer {
	t.Helper()
	if cfg.addr == "" {
		cfg.addr = "127.0.0.1:0"
	}
	if cfg.methods == nil {
		cfg.methods = []string{"Add", "Fail", "Sleep", "Watch"}
	}
	files := new(protoregistry.Files)
	if err := files.RegisterFile(timestamppb.File_google_protobuf_timestamp_proto); err != nil {
		t.Fatal(err)
	}
	fd, err := protodesc.NewFile(mathFile(cfg.methods...), files)
	if err != nil {
		t.Fatalf("building math.proto: %v", err)
	}
	if err := files.RegisterFile(fd); err != nil {
		t.Fatal(err)
	}
	sd := fd.Services().ByName("Math")

	ts := &testServer{}
	var opts []grpc.ServerOption
	if cfg.creds != nil {
		opts = append(opts, grpc.Creds(cfg.creds))
	}
	opts = append(opts, grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if strings.HasSuffix(info.FullMethod, "/ServerReflectionInfo") {
			ts.reflections.Add(1)
		}
		return h(srv, ss)
	}))
	ts.srv = grpc.NewServer(opts...)

	desc := grpc.ServiceDesc{ServiceName: mathService, HandlerType: (*any)(nil)}
	for _, name := range cfg.methods {
		md := sd.Methods().ByName(protoreflect.Name(name))
		if md.IsStreamingServer() {
			desc.Streams = append(desc.Streams, grpc.StreamDesc{
				StreamName:    name,
				ServerStreams: true,
				Handler: func(_ any, stream grpc.ServerStream) error {
					req := dynamicpb.NewMessage(md.Input())
					if err := stream.RecvMsg(req); err != nil {
						return err
					}
					return stream.SendMsg(add(req, md.Output()))
				},
			})
			continue
		}
		desc.Methods = append(desc.Methods, grpc.MethodDesc{
			MethodName: name,
			Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				req := dynamicpb.NewMessage(md.Input())
				if err := dec(req); err != nil {
					return nil, err
				}
				ts.calls.Add(1)
				return handle(ctx, name, req, md.Output())
			},
		})
	}
	ts.srv.RegisterService(&desc, struct{}{})
	healthpb.RegisterHealthServer(ts.srv, health.NewServer())

	ropts := reflection.ServerOptions{Services: ts.srv, DescriptorResolver: overlay{files}}
	switch cfg.reflection {
	case reflectBoth:
		v1reflectiongrpc.RegisterServerReflectionServer(ts.srv, reflection.NewServerV1(ropts))
		v1alphareflectiongrpc.RegisterServerReflectionServer(ts.srv, reflection.NewServer(ropts))
	case reflectV1AlphaOnly:
		v1alphareflectiongrpc.RegisterServerReflectionServer(ts.srv, reflection.NewServer(ropts))
	}

	lis, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		t.Fatalf("listen %s: %v", cfg.addr, err)
	}
	ts.addr = lis.Addr().String()
	go func() { _ = ts.srv.Serve(countingListener{lis, &ts.accepts}) }()
	t.Cleanup(ts.srv.Stop)
	return ts
}

// handle implements the unary Math methods.
func handle(ctx context.Context, name string, req *dynamicpb.Message, out protoreflect.MessageDescriptor) (any, error) {
	switch name {
	case "Fail":
		code, msg := str(req, "code"), str(req, "message")
		for c, n := range codeNames {
			if n == code {
				return nil, status.Error(codes.Code(c), msg)
			}
		}
		return nil, status.Errorf(codes.InvalidArgument, "unknown code %q", code)
	case "Sleep":
		select {
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-time.After(time.Duration(req.Get(fieldOf(req, "ms")).Int()) * time.Millisecond):
		}
		return dynamicpb.NewMessage(out), nil
	}
	return add(req, out), nil
}

// add sums (or multiplies, for OP_MUL) a, b, extra, bonus.value and
// items[].value, and echoes op, at, big and note_text.
func add(req *dynamicpb.Message, out protoreflect.MessageDescriptor) *dynamicpb.Message {
	var terms []int64
	var labels []string
	terms = append(terms, req.Get(fieldOf(req, "a")).Int(), req.Get(fieldOf(req, "b")).Int())
	extra := req.Get(fieldOf(req, "extra")).List()
	for i := 0; i < extra.Len(); i++ {
		terms = append(terms, extra.Get(i).Int())
	}
	operand := func(m protoreflect.Message) {
		terms = append(terms, m.Get(m.Descriptor().Fields().ByName("value")).Int())
		labels = append(labels, m.Get(m.Descriptor().Fields().ByName("label")).String())
	}
	if req.Has(fieldOf(req, "bonus")) {
		operand(req.Get(fieldOf(req, "bonus")).Message())
	}
	items := req.Get(fieldOf(req, "items")).List()
	for i := 0; i < items.Len(); i++ {
		operand(items.Get(i).Message())
	}
	weights := req.Get(fieldOf(req, "weights")).Map()
	weights.Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
		terms = append(terms, v.Int())
		return true
	})
	op := req.Get(fieldOf(req, "op")).Enum()
	result := int64(0)
	if op == 2 {
		result = 1
	}
	parts := make([]string, len(terms))
	for i, x := range terms {
		if op == 2 {
			result *= x
		} else {
			result += x
		}
		parts[i] = fmt.Sprint(x)
	}

	resp := dynamicpb.NewMessage(out)
	set := func(name string, v protoreflect.Value) { resp.Set(out.Fields().ByName(protoreflect.Name(name)), v) }
	set("sum", protoreflect.ValueOfInt64(result))
	set("op", protoreflect.ValueOfEnum(op))
	ts := resp.Mutable(out.Fields().ByName("terms")).List()
	for _, x := range terms {
		ts.Append(protoreflect.ValueOfInt64(x))
	}
	ls := resp.Mutable(out.Fields().ByName("labels")).List()
	for _, l := range labels {
		if l != "" {
			ls.Append(protoreflect.ValueOfString(l))
		}
	}
	set("summary", protoreflect.ValueOfString(strings.Join(parts, "+")))
	if req.Has(fieldOf(req, "at")) {
		set("at", req.Get(fieldOf(req, "at")))
	}
	set("big", req.Get(fieldOf(req, "big")))
	set("note_text", req.Get(fieldOf(req, "note_text")))
	if len(terms) > 0 {
		set("mean", protoreflect.ValueOfFloat64(float64(result)/float64(len(terms))))
	}
	return resp
}

func fieldOf(m *dynamicpb.Message, name string) protoreflect.FieldDescriptor {
	return m.Descriptor().Fields().ByName(protoreflect.Name(name))
}

func str(m *dynamicpb.Message, name string) string { return m.Get(fieldOf(m, name)).String() }
