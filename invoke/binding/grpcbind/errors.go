package grpcbind

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
)

// codeNames are the canonical gRPC status names (as in grpc/status.proto's
// comments and every other gRPC implementation), indexed by code.
var codeNames = [...]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

// codeName returns the canonical name of a gRPC status code ("NOT_FOUND"),
// or "CODE_<n>" for a code outside the canonical set.
func codeName(c codes.Code) string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}

// deadlineSlack: a DEADLINE_EXCEEDED status that arrives this close to the
// call's own deadline is taken as that deadline expiring (TIMEOUT).
const deadlineSlack = 100 * time.Millisecond

// retryableCode reports the statuses that say "try again": the server was
// unreachable, overloaded, too slow or lost a concurrency race.
func retryableCode(c codes.Code) bool {
	switch c {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return true
	}
	return false
}

// statusError classifies err from a call to where. The call's own deadline
// is TIMEOUT; cancellation is returned as a plain error wrapping ctx.Err();
// a gRPC status becomes GRPC_<NAME> or the code def declares for it.
func statusError(ctx context.Context, def *capability.Definition, err error, where string) error {
	switch cerr := ctx.Err(); {
	case errors.Is(cerr, context.DeadlineExceeded):
		return &invoke.Error{
			Code: invoke.CodeTimeout, Retryable: true, Binding: Kind, Cause: err,
			Message: fmt.Sprintf("%s did not answer before the call's deadline", where),
		}
	case cerr != nil:
		return fmt.Errorf("grpc binding: %s: %w", where, cerr)
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("grpc binding: %s: %w", where, err)
	}
	if st.Code() == codes.DeadlineExceeded {
		// The deadline travels to the server (grpc-timeout), whose timer can
		// fire and answer before ours: so close to our deadline, it is ours.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < deadlineSlack {
			return &invoke.Error{
				Code: invoke.CodeTimeout, Retryable: true, Binding: Kind, Cause: err,
				Message: fmt.Sprintf("%s did not answer before the call's deadline", where),
			}
		}
	}
	name := codeName(st.Code())
	code, retryable := "GRPC_"+name, retryableCode(st.Code())
	if d := declared(def, name, code); d != nil {
		code, retryable = d.Code, d.Retryable
	}
	msg := st.Message()
	if msg == "" {
		msg = "(no message)"
	}
	return &invoke.Error{
		Code:      code,
		Retryable: retryable,
		Binding:   Kind,
		Message:   fmt.Sprintf("%s answered %s: %s", where, name, msg),
		Details:   map[string]any{"grpc_code": name, "grpc_status": int(st.Code())},
		Cause:     err,
	}
}

// declared returns def's error declaration for a status, named either as
// the status ("NOT_FOUND") or with the binding's prefix ("GRPC_NOT_FOUND").
func declared(def *capability.Definition, names ...string) *capability.ErrorDef {
	if def == nil {
		return nil
	}
	for _, n := range names {
		for i := range def.Errors {
			if def.Errors[i].Code == n {
				return &def.Errors[i]
			}
		}
	}
	return nil
}

// isUnknownRPC reports whether err is a server's router rejecting a method
// or service it does not have (so the handler never ran), as grpc-go
// ("unknown method …", "unknown service …") and grpc-java ("Method not
// found: …") word it.
func isUnknownRPC(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unimplemented {
		return false
	}
	m := strings.ToLower(st.Message())
	return strings.HasPrefix(m, "unknown method") || strings.HasPrefix(m, "unknown service") || strings.HasPrefix(m, "method not found")
}
