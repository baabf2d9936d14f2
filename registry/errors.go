package registry

import (
	"errors"
	"fmt"
	"strings"

	"github.com/caphub/caphub/capability"
)

// BreakingChangeError refuses a version whose bump is smaller than its
// changes need (OSSA §6, DESIGN §2).
type BreakingChangeError struct {
	URI      string // the refused version
	Previous string // the registered version it was compared with
	Report   *capability.DiffReport
}

func (e *BreakingChangeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.URI, e.Report.Problem)
	for _, c := range e.Report.Changes {
		if c.Bump >= e.Report.Declared && c.Bump > capability.BumpPatch || c.Bump == e.Report.Required {
			fmt.Fprintf(&b, "\n  %s change at %s: %s", c.Bump, c.Path, c.Description)
		}
	}
	return b.String()
}

// SunsetError says a URI only matches versions past their sunset date.
type SunsetError struct {
	URI            string
	Version        string
	SunsetDate     string
	DeprecatedBy   string
	MigrationGuide string
}

func (e *SunsetError) Error() string {
	msg := fmt.Sprintf("%s resolves only to version %s, which was sunset on %s", e.URI, e.Version, e.SunsetDate)
	if e.DeprecatedBy != "" {
		msg += ": use " + e.DeprecatedBy + " instead"
	}
	if e.MigrationGuide != "" {
		msg += " (migration guide: " + strings.TrimSpace(e.MigrationGuide) + ")"
	}
	return msg
}

// NotFoundError says that a named thing does not exist: a capability, or a
// document another package keeps (an agent, a saved MCP server, an
// approval, a policy). It wraps ErrNotFound. Its message is for any client;
// the command line adds the caphub command that creates or lists the thing.
type NotFoundError struct {
	Kind    string // what is missing: KindCapability or the document kind
	Name    string // its URI, name or id
	Domain  string // a capability's domain, to list its neighbours
	Message string // what is missing, in words
}

// KindCapability is NotFoundError.Kind for a capability.
const KindCapability = "capability"

// NotRegistered says that no version of capability u is registered.
func NotRegistered(u capability.URI) *NotFoundError {
	return &NotFoundError{Kind: KindCapability, Name: u.Base(), Domain: u.Domain, Message: fmt.Sprintf("capability %s is not registered", u.Base())}
}

func (e *NotFoundError) Error() string { return e.Message + ": " + ErrNotFound.Error() }

// Unwrap makes errors.Is(err, ErrNotFound) hold.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// ErrInvalid marks a request the registry refuses because of what it says
// (a malformed URI, a sunset date too early); the message says what to fix.
var ErrInvalid = errors.New("invalid request")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Warning is advice attached to a successful answer, e.g. that a resolved
// version is deprecated.
type Warning struct {
	Code           string `json:"code"`
	Message        string `json:"message"`
	DeprecatedBy   string `json:"deprecated_by,omitempty"`
	SunsetDate     string `json:"sunset_date,omitempty"`
	MigrationGuide string `json:"migration_guide,omitempty"`
}
