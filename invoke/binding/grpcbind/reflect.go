package grpcbind

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Reflection methods, newest first. v1alpha's messages are field for field
// the same as v1's, so one set of message types speaks both.
var reflectionMethods = []string{
	"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
	"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
}

var reflectionStream = &grpc.StreamDesc{StreamName: "ServerReflectionInfo", ServerStreams: true, ClientStreams: true}

// maxReflectedFiles bounds how many files one resolution fetches, so a
// misbehaving server cannot keep us asking.
const maxReflectedFiles = 10000

var (
	// errNoReflection: the server serves neither reflection version.
	errNoReflection = errors.New("server reflection is not served")
	// errBadDescriptors: the server's descriptors do not form a valid set.
	errBadDescriptors = errors.New("invalid descriptors from server reflection")
)

// symbolNotFoundError: reflection does not know the service.
type symbolNotFoundError struct {
	symbol    string
	available []string // services the server lists, when it could say
}

func (e *symbolNotFoundError) Error() string {
	return fmt.Sprintf("server reflection does not know %q", e.symbol)
}

// serviceInfo is one resolved service with a type resolver over the files
// it came from (for google.protobuf.Any in requests and responses).
type serviceInfo struct {
	desc  protoreflect.ServiceDescriptor
	types *dynamicpb.Types
	files int
}

// resolveService fetches the file that defines service and all its
// dependencies through reflection, v1 first then v1alpha.
func resolveService(ctx context.Context, cc grpc.ClientConnInterface, service string) (*serviceInfo, error) {
	for _, m := range reflectionMethods {
		info, err := resolveWith(ctx, cc, m, service)
		if status.Code(err) == codes.Unimplemented {
			continue
		}
		return info, err
	}
	return nil, errNoReflection
}

// reflectionError is an ErrorResponse from the reflection service.
type reflectionError struct {
	code codes.Code
	msg  string
}

func (e *reflectionError) Error() string {
	return fmt.Sprintf("reflection answered %v: %s", e.code, e.msg)
}

func resolveWith(ctx context.Context, cc grpc.ClientConnInterface, method, service string) (*serviceInfo, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := cc.NewStream(ctx, reflectionStream, method)
	if err != nil {
		return nil, err
	}
	defer func() { _ = stream.CloseSend() }()
	r := &reflector{stream: stream, files: map[string]*descriptorpb.FileDescriptorProto{}}
	if err := r.fileContaining(service); err != nil {
		return nil, err
	}
	if err := r.fetchMissing(); err != nil {
		return nil, err
	}
	return r.service(service)
}

// reflector asks a server's reflection service, on one stream, for the
// files that describe a service.
type reflector struct {
	stream grpc.ClientStream
	files  map[string]*descriptorpb.FileDescriptorProto // by name
}

// ask sends one request and receives its answer; an error answer is a
// *reflectionError.
func (r *reflector) ask(req *rpb.ServerReflectionRequest) (*rpb.ServerReflectionResponse, error) {
	if err := r.stream.SendMsg(req); err != nil {
		if err == io.EOF {
			// The stream ended; its status comes with the receive.
			resp := new(rpb.ServerReflectionResponse)
			if rerr := r.stream.RecvMsg(resp); rerr != nil {
				return nil, rerr
			}
		}
		return nil, err
	}
	resp := new(rpb.ServerReflectionResponse)
	if err := r.stream.RecvMsg(resp); err != nil {
		return nil, err
	}
	if er := resp.GetErrorResponse(); er != nil {
		return nil, &reflectionError{code: codes.Code(er.GetErrorCode()), msg: er.GetErrorMessage()}
	}
	return resp, nil
}

// add keeps the file descriptors of an answer (the first of each name).
func (r *reflector) add(resp *rpb.ServerReflectionResponse) error {
	fdr := resp.GetFileDescriptorResponse()
	if fdr == nil {
		return fmt.Errorf("%w: expected file descriptors, got %T", errBadDescriptors, resp.GetMessageResponse())
	}
	for _, raw := range fdr.GetFileDescriptorProto() {
		fd := new(descriptorpb.FileDescriptorProto)
		if err := proto.Unmarshal(raw, fd); err != nil {
			return fmt.Errorf("%w: %v", errBadDescriptors, err)
		}
		if _, seen := r.files[fd.GetName()]; !seen {
			r.files[fd.GetName()] = fd
		}
	}
	if len(r.files) > maxReflectedFiles {
		return fmt.Errorf("%w: more than %d files", errBadDescriptors, maxReflectedFiles)
	}
	return nil
}

// fileContaining fetches the file that declares service; when the server
// does not know it, the error lists the services it has.
func (r *reflector) fileContaining(service string) error {
	resp, err := r.ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: service}})
	var re *reflectionError
	if errors.As(err, &re) && re.code == codes.NotFound {
		return &symbolNotFoundError{symbol: service, available: r.services()}
	}
	if err != nil {
		return err
	}
	return r.add(resp)
}

// services lists the server's services, sorted (nil when it does not say).
func (r *reflector) services() []string {
	lr, err := r.ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{ListServices: "*"}})
	if err != nil {
		return nil
	}
	var names []string
	for _, s := range lr.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	sort.Strings(names)
	return names
}

// fetchMissing asks for the dependencies still missing until none is:
// servers send the transitive dependencies they have not sent on this
// stream.
func (r *reflector) fetchMissing() error {
	for {
		missing := missingDeps(r.files)
		if len(missing) == 0 {
			return nil
		}
		for _, name := range missing {
			if err := r.fetch(name); err != nil {
				return err
			}
		}
	}
}

// fetch asks for one file by name, falling back on a well-known file
// compiled into caphub.
func (r *reflector) fetch(name string) error {
	resp, err := r.ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileByFilename{FileByFilename: name}})
	if err == nil {
		err = r.add(resp)
	}
	if _, ok := r.files[name]; ok {
		return nil
	}
	if fd, gerr := protoregistry.GlobalFiles.FindFileByPath(name); gerr == nil {
		r.files[name] = protodesc.ToFileDescriptorProto(fd)
		return nil
	}
	if err == nil {
		err = fmt.Errorf("%w: the server did not send %q", errBadDescriptors, name)
	}
	return fmt.Errorf("fetching dependency %q: %w", name, err)
}

// service builds the fetched files and finds service among them.
func (r *reflector) service(service string) (*serviceInfo, error) {
	set := &descriptorpb.FileDescriptorSet{}
	for _, fd := range r.files {
		set.File = append(set.File, fd)
	}
	reg, err := protodesc.NewFiles(set)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadDescriptors, err)
	}
	d, err := reg.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		return nil, &symbolNotFoundError{symbol: service}
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, &symbolNotFoundError{symbol: service}
	}
	return &serviceInfo{desc: sd, types: dynamicpb.NewTypes(reg), files: len(r.files)}, nil
}

// missingDeps lists the dependencies of files that are not among them,
// sorted.
func missingDeps(files map[string]*descriptorpb.FileDescriptorProto) []string {
	seen := map[string]bool{}
	var out []string
	for _, fd := range files {
		for _, dep := range fd.GetDependency() {
			if _, ok := files[dep]; !ok && !seen[dep] {
				seen[dep] = true
				out = append(out, dep)
			}
		}
	}
	sort.Strings(out)
	return out
}
