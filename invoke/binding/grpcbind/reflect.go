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
	ask := func(req *rpb.ServerReflectionRequest) (*rpb.ServerReflectionResponse, error) {
		if err := stream.SendMsg(req); err != nil {
			if err == io.EOF {
				// The stream ended; its status comes with the receive.
				resp := new(rpb.ServerReflectionResponse)
				if rerr := stream.RecvMsg(resp); rerr != nil {
					return nil, rerr
				}
			}
			return nil, err
		}
		resp := new(rpb.ServerReflectionResponse)
		if err := stream.RecvMsg(resp); err != nil {
			return nil, err
		}
		if er := resp.GetErrorResponse(); er != nil {
			return nil, &reflectionError{code: codes.Code(er.GetErrorCode()), msg: er.GetErrorMessage()}
		}
		return resp, nil
	}
	defer func() { _ = stream.CloseSend() }()

	files := map[string]*descriptorpb.FileDescriptorProto{}
	add := func(resp *rpb.ServerReflectionResponse) error {
		fdr := resp.GetFileDescriptorResponse()
		if fdr == nil {
			return fmt.Errorf("%w: expected file descriptors, got %T", errBadDescriptors, resp.GetMessageResponse())
		}
		for _, raw := range fdr.GetFileDescriptorProto() {
			fd := new(descriptorpb.FileDescriptorProto)
			if err := proto.Unmarshal(raw, fd); err != nil {
				return fmt.Errorf("%w: %v", errBadDescriptors, err)
			}
			if _, seen := files[fd.GetName()]; !seen {
				files[fd.GetName()] = fd
			}
		}
		if len(files) > maxReflectedFiles {
			return fmt.Errorf("%w: more than %d files", errBadDescriptors, maxReflectedFiles)
		}
		return nil
	}

	resp, err := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: service}})
	if err != nil {
		var re *reflectionError
		if errors.As(err, &re) && re.code == codes.NotFound {
			nf := &symbolNotFoundError{symbol: service}
			if lr, lerr := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{ListServices: "*"}}); lerr == nil {
				for _, s := range lr.GetListServicesResponse().GetService() {
					nf.available = append(nf.available, s.GetName())
				}
				sort.Strings(nf.available)
			}
			return nil, nf
		}
		return nil, err
	}
	if err := add(resp); err != nil {
		return nil, err
	}

	// Servers send the transitive dependencies they have not sent on this
	// stream; ask for any that are still missing.
	for {
		missing := missingDeps(files)
		if len(missing) == 0 {
			break
		}
		for _, name := range missing {
			resp, err := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileByFilename{FileByFilename: name}})
			if err == nil {
				err = add(resp)
			}
			if _, ok := files[name]; !ok {
				// Fall back on a well-known file compiled into caphub.
				if fd, gerr := protoregistry.GlobalFiles.FindFileByPath(name); gerr == nil {
					files[name] = protodesc.ToFileDescriptorProto(fd)
					continue
				}
				if err == nil {
					err = fmt.Errorf("%w: the server did not send %q", errBadDescriptors, name)
				}
				return nil, fmt.Errorf("fetching dependency %q: %w", name, err)
			}
		}
	}

	set := &descriptorpb.FileDescriptorSet{}
	for _, fd := range files {
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
	return &serviceInfo{desc: sd, types: dynamicpb.NewTypes(reg), files: len(files)}, nil
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
