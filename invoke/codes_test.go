package invoke

import (
	"net/http"
	"testing"
)

func TestCodeAnswers(t *testing.T) {
	for _, c := range []struct {
		code         string
		status, exit int
	}{
		{"DIVISION_BY_ZERO", http.StatusUnprocessableEntity, ExitDeclared}, // declared by a capability
		{CodeNotFound, http.StatusNotFound, ExitNotFound},
		{CodeInvalidOutput, http.StatusBadGateway, ExitInvalid},
		{CodeApprovalNeeded, http.StatusAccepted, ExitDenied},
		{CodeTooManyApprovals, http.StatusTooManyRequests, ExitDeclared},
		{CodeUpstreamUnavailable, http.StatusBadGateway, ExitUpstream},
		{CodeTimeout, http.StatusGatewayTimeout, ExitUpstream},
	} {
		t.Run(c.code, func(t *testing.T) {
			if got := HTTPStatus(c.code); got != c.status {
				t.Errorf("HTTPStatus = %d, want %d", got, c.status)
			}
			if got := ExitCode(c.code); got != c.exit {
				t.Errorf("ExitCode = %d, want %d", got, c.exit)
			}
		})
	}
}
