package capability

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCompatible(t *testing.T) {
	tests := []struct {
		requested, available string
		rule                 string // "" when compatible
	}{
		{"ossa:security/scan@1.0", "ossa:security/scan@1.0", ""},  // equal
		{"ossa:security/scan@1.0", "ossa:security/scan@1.3", ""},  // higher minor
		{"ossa:security/scan@1.2", "ossa:security/scan@1.10", ""}, // numeric minor order
		{"ossa:security/scan@1", "ossa:security/scan@1.0", ""},    // @1 means 1.0
		{"ossa:security/scan@1", "ossa:security/scan@1.7", ""},
		{"ossa:security/scan@1.0", "ossa:security/scan@1", ""},
		{"ossa:security/scan", "ossa:security/scan@0.1", ""}, // versionless request
		{"ossa:security/scan", "ossa:security/scan@7.3", ""},
		{"ossa:security/scan", "ossa:security/scan", ""},
		{"ossa:security/scan@1.0", "mcp:security/scan@1.0", "scheme"},
		{"ossa:security/scan", "mcp:security/scan", "scheme"},
		{"ossa:security/scan@1.0", "ossa:code/scan@1.0", "domain"},
		{"ossa:security/scan@1.0", "ossa:security/scan_all@1.0", "name"},
		{"ossa:security/scan", "ossa:security/lint@1.0", "name"},
		{"ossa:security/scan@1.0", "ossa:security/scan", "version"},
		{"ossa:security/scan@1.0", "ossa:security/scan@2.0", "major"},
		{"ossa:security/scan@2.0", "ossa:security/scan@1.9", "major"},
		{"ossa:security/scan@1.0", "ossa:security/scan@0.9", "major"},
		{"ossa:security/scan@1.2", "ossa:security/scan@1.1", "minor"}, // lower minor
		{"ossa:security/scan@1.1", "ossa:security/scan@1", "minor"},
	}
	for _, tt := range tests {
		t.Run(tt.requested+" "+tt.available, func(t *testing.T) {
			r, a := MustParseURI(tt.requested), MustParseURI(tt.available)
			if got := Compatible(r, a); got != (tt.rule == "") {
				t.Errorf("Compatible = %v, want %v", got, tt.rule == "")
			}
			err := CheckCompatible(r, a)
			if tt.rule == "" {
				if err != nil {
					t.Errorf("CheckCompatible: %v, want nil", err)
				}
				return
			}
			var ie *IncompatibleError
			if !errors.As(err, &ie) {
				t.Fatalf("CheckCompatible = %v (%T), want *IncompatibleError", err, err)
			}
			if ie.Rule != tt.rule {
				t.Errorf("Rule = %q, want %q (%v)", ie.Rule, tt.rule, err)
			}
			if !reflect.DeepEqual(ie.Requested, r) || !reflect.DeepEqual(ie.Available, a) {
				t.Errorf("error holds %v / %v, want %v / %v", ie.Requested, ie.Available, r, a)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.available) || !strings.Contains(msg, tt.requested) || ie.Reason == "" || !strings.Contains(msg, ie.Reason) {
				t.Errorf("error %q should name both URIs and hold the reason", msg)
			}
		})
	}
}

func TestCheckCompatibleMessages(t *testing.T) {
	err := CheckCompatible(MustParseURI("ossa:code/lint@1.2"), MustParseURI("ossa:code/lint@1.1"))
	want := "ossa:code/lint@1.1 does not satisfy ossa:code/lint@1.2: version 1.1 is older than the requested 1.2"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want prefix %q", err, want)
	}
	err = CheckCompatible(MustParseURI("ossa:code/lint@1.0"), MustParseURI("ossa:code/lint@2.0"))
	if err == nil || !strings.Contains(err.Error(), "major version 2 differs from the requested 1") {
		t.Errorf("got %v", err)
	}
}

func uris(t *testing.T, ss ...string) []URI {
	t.Helper()
	out := make([]URI, len(ss))
	for i, s := range ss {
		out[i] = MustParseURI(s)
	}
	return out
}

func TestNegotiate(t *testing.T) {
	const scan = "ossa:security/scan_vulnerabilities"
	tests := []struct {
		name      string
		req       NegotiationRequest
		available []string
		want      NegotiationResponse
		reason    string // fragment of Reason when unavailable
	}{
		{
			name:      "OSSA §7.1 example, 1.0 available",
			req:       NegotiationRequest{Type: "capability_request", Capability: scan, PreferredVersions: []string{"1.0", "0.9"}, MinimumVersion: "0.9"},
			available: []string{scan + "@1.0", "ossa:code/lint@1.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan + "@1.0", Status: "available"},
		},
		{
			name:      "OSSA §7.1 example, only 2.0 available",
			req:       NegotiationRequest{Type: "capability_request", Capability: scan, PreferredVersions: []string{"1.0", "0.9"}, MinimumVersion: "0.9"},
			available: []string{scan + "@2.0", "ossa:code/lint@1.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan, Status: "unavailable", AvailableVersions: []string{"2.0"}},
			reason:    "No compatible version available: none of the offered versions (2.0) is compatible with preferred version 1.0 or 0.9 at or above minimum 0.9 or with minimum version 0.9",
		},
		{
			name:      "preferred order honoured",
			req:       NegotiationRequest{Capability: scan, PreferredVersions: []string{"1.0", "2.0"}},
			available: []string{scan + "@2.3", scan + "@1.1", scan + "@1.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan + "@1.1", Status: "available"},
		},
		{
			name:      "first preferred missing, second used",
			req:       NegotiationRequest{Capability: scan, PreferredVersions: []string{"3.0", "2.0", "1.0"}},
			available: []string{scan + "@1.4", scan + "@2.1"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan + "@2.1", Status: "available"},
		},
		{
			name:      "highest compatible chosen",
			req:       NegotiationRequest{Capability: scan, PreferredVersions: []string{"1.0"}},
			available: []string{scan + "@1.0", scan + "@1.3", scan + "@1.1", scan + "@2.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan + "@1.3", Status: "available"},
		},
		{
			name:      "fallback to minimum",
			req:       NegotiationRequest{Capability: scan, PreferredVersions: []string{"3.0"}, MinimumVersion: "1.2"},
			available: []string{scan + "@1.1", scan + "@1.5", scan + "@2.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan + "@1.5", Status: "available"},
		},
		{
			name:      "minimum only",
			req:       NegotiationRequest{Capability: scan, MinimumVersion: "1"},
			available: []string{scan + "@1.1", scan + "@1.5", scan + "@2.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan + "@1.5", Status: "available"},
		},
		{
			name:      "minimum excludes a lower preferred",
			req:       NegotiationRequest{Capability: scan, PreferredVersions: []string{"0.9", "1.0"}, MinimumVersion: "1.0"},
			available: []string{scan + "@0.9", scan + "@1.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan + "@1.0", Status: "available"},
		},
		{
			name:      "minimum excludes every preferred candidate",
			req:       NegotiationRequest{Capability: scan, PreferredVersions: []string{"1.0"}, MinimumVersion: "1.4"},
			available: []string{scan + "@1.1", scan + "@1.3", scan + "@1.1"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan, Status: "unavailable", AvailableVersions: []string{"1.3", "1.1"}},
			reason:    "at or above minimum 1.4",
		},
		{
			name:      "no preference: highest",
			req:       NegotiationRequest{Capability: scan},
			available: []string{scan + "@1.1", scan + "@3.0", scan + "@2.9", "ossa:security/other@9.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan + "@3.0", Status: "available"},
		},
		{
			name:      "version on the capability is the first preference",
			req:       NegotiationRequest{Capability: scan + "@2", PreferredVersions: []string{"1.0"}},
			available: []string{scan + "@1.1", scan + "@2.2"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan + "@2.2", Status: "available"},
		},
		{
			name:      "available written @1 answered as MAJOR.MINOR",
			req:       NegotiationRequest{Capability: scan, PreferredVersions: []string{"1"}},
			available: []string{scan + "@1"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan + "@1.0", Status: "available"},
		},
		{
			name:      "only a versionless URI offered, no constraints",
			req:       NegotiationRequest{Capability: scan},
			available: []string{scan},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan, Status: "available"},
		},
		{
			name:      "versionless URI does not satisfy a preferred version",
			req:       NegotiationRequest{Capability: scan, PreferredVersions: []string{"1.0"}},
			available: []string{scan},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan, Status: "unavailable"},
			reason:    "only versionless URIs",
		},
		{
			name:      "capability not offered at all",
			req:       NegotiationRequest{Capability: scan, PreferredVersions: []string{"1.0"}},
			available: []string{"ossa:code/lint@1.0", "mcp:security/scan_vulnerabilities@1.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan, Status: "unavailable"},
			reason:    "capability " + scan + " is not available: no version of it is offered",
		},
		{
			name:   "nothing available",
			req:    NegotiationRequest{Capability: scan},
			want:   NegotiationResponse{Type: "capability_response", Capability: scan, Status: "unavailable"},
			reason: "no version of it is offered",
		},
		{
			name:      "available versions deduplicated, highest first",
			req:       NegotiationRequest{Capability: scan, PreferredVersions: []string{"4.0"}},
			available: []string{scan + "@1.0", scan + "@2.10", scan + "@1", scan + "@2.9", scan + "@2.10", scan},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan, Status: "unavailable", AvailableVersions: []string{"2.10", "2.9", "1.0"}},
			reason:    "preferred version 4.0",
		},
		{
			name:   "malformed capability URI",
			req:    NegotiationRequest{Capability: "ossa:Security/scan"},
			want:   NegotiationResponse{Type: "capability_response", Capability: "ossa:Security/scan", Status: "unavailable"},
			reason: `bad request: invalid capability URI "ossa:Security/scan": domain "Security"`,
		},
		{
			name:      "malformed preferred version",
			req:       NegotiationRequest{Capability: scan, PreferredVersions: []string{"1.0", "1.x"}},
			available: []string{scan + "@1.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan, Status: "unavailable", AvailableVersions: []string{"1.0"}},
			reason:    `bad request: preferred_versions[1] "1.x"`,
		},
		{
			name:      "preferred version with a patch",
			req:       NegotiationRequest{Capability: scan, PreferredVersions: []string{"1.0.2"}},
			available: []string{scan + "@1.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan, Status: "unavailable", AvailableVersions: []string{"1.0"}},
			reason:    "drop the patch: write 1.0",
		},
		{
			name:      "malformed minimum version",
			req:       NegotiationRequest{Capability: scan, MinimumVersion: "v1"},
			available: []string{scan + "@1.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan, Status: "unavailable", AvailableVersions: []string{"1.0"}},
			reason:    `bad request: minimum_version "v1"`,
		},
		{
			name:      "wrong message type",
			req:       NegotiationRequest{Type: "capability_response", Capability: scan},
			available: []string{scan + "@1.0"},
			want:      NegotiationResponse{Type: "capability_response", Capability: scan, Status: "unavailable"},
			reason:    `bad request: type "capability_response" must be "capability_request"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Negotiate(tt.req, uris(t, tt.available...))
			reason := got.Reason
			got.Reason = ""
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Negotiate = %+v, want %+v (reason %q)", got, tt.want, reason)
			}
			if tt.want.Status == StatusAvailable && reason != "" {
				t.Errorf("available response has reason %q", reason)
			}
			if tt.want.Status == StatusUnavailable && !strings.Contains(reason, tt.reason) {
				t.Errorf("reason %q does not contain %q", reason, tt.reason)
			}
		})
	}
}
