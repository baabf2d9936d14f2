package invoke

import "net/http"

// Error codes the pipeline, its bindings and the gateways use besides the
// ones a capability declares. Each edge turns a code into its own answer
// through one table (HTTPStatus for REST, ExitCode for the CLI); /mcp and
// the front carry the code itself in a tool error.
const (
	CodeInvalidInput        = "INVALID_INPUT"        // the input does not match the input schema
	CodeInvalidOutput       = "INVALID_OUTPUT"       // the output does not match the output schema
	CodeBindingFailed       = "BINDING_FAILED"       // a binding failed in a way the capability does not declare
	CodeNoBinding           = "NO_BINDING"           // no binding of the capability can run here
	CodeTimeout             = "TIMEOUT"              // an attempt exceeded its timeout
	CodeDenied              = "DENIED"               // the policy refused the call
	CodePolicyUnavailable   = "POLICY_UNAVAILABLE"   // the policy could not be read, so the call was refused; retrying may help
	CodeNotFound            = "NOT_FOUND"            // the URI does not resolve
	CodeNotExecutable       = "NOT_EXECUTABLE"       // the binding is device-only (Agent OS handlers)
	CodeUpstreamError       = "UPSTREAM_ERROR"       // the upstream answered with an error it did not classify
	CodeUpstreamUnavailable = "UPSTREAM_UNAVAILABLE" // the upstream could not be reached; retrying may help
	CodeApprovalNeeded      = "APPROVAL_REQUIRED"    // the policy holds the call until someone approves it
	CodeTooManyApprovals    = "TOO_MANY_APPROVALS"   // approval needed, but too many approvals are pending
)

// Exit codes of the caphub CLI for a failed invocation (README lists them).
const (
	ExitDeclared = 1 // the capability failed with one of its declared errors
	ExitNotFound = 3 // the URI does not resolve
	ExitInvalid  = 4 // the input (or the output) does not match its schema
	ExitDenied   = 5 // the policy refused, or the call waits for approval
	ExitUpstream = 6 // every binding failed: unreachable, timed out, not executable here
)

// codeAnswer is how the edges answer one code.
type codeAnswer struct {
	status int // REST: the problem document's HTTP status
	exit   int // CLI: the process exit code
}

// answers maps each of caphub's own codes to its answers; a code not listed
// is one the capability declares (422, exit 1).
var answers = map[string]codeAnswer{
	CodeNotFound:            {http.StatusNotFound, ExitNotFound},
	CodeInvalidInput:        {http.StatusUnprocessableEntity, ExitInvalid},
	CodeInvalidOutput:       {http.StatusBadGateway, ExitInvalid},
	CodeDenied:              {http.StatusForbidden, ExitDenied},
	CodePolicyUnavailable:   {http.StatusServiceUnavailable, ExitDenied},
	CodeApprovalNeeded:      {http.StatusAccepted, ExitDenied},
	CodeTooManyApprovals:    {http.StatusTooManyRequests, ExitDeclared},
	CodeTimeout:             {http.StatusGatewayTimeout, ExitUpstream},
	CodeNoBinding:           {http.StatusNotImplemented, ExitUpstream},
	CodeNotExecutable:       {http.StatusNotImplemented, ExitUpstream},
	CodeBindingFailed:       {http.StatusBadGateway, ExitUpstream},
	CodeUpstreamError:       {http.StatusBadGateway, ExitUpstream},
	CodeUpstreamUnavailable: {http.StatusBadGateway, ExitUpstream},
}

// declared is the answer to a code the capability declares.
var declared = codeAnswer{http.StatusUnprocessableEntity, ExitDeclared}

func answer(code string) codeAnswer {
	if a, ok := answers[code]; ok {
		return a
	}
	return declared
}

// HTTPStatus is the HTTP status of a failed invocation with this code.
func HTTPStatus(code string) int { return answer(code).status }

// ExitCode is the CLI's exit code for a failed invocation with this code.
func ExitCode(code string) int { return answer(code).exit }
