package grpcbind

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/caphub/caphub/internal/allowlist"
)

// parseTarget reads a binding target, "host:port" or "dns:///host:port", and
// returns its host and port. The port is required: gRPC's implicit 443 would
// hide a mistake in a definition.
func parseTarget(raw string) (host, port string, err error) {
	t := strings.TrimSpace(raw)
	if i := strings.Index(t, "://"); i >= 0 {
		scheme, rest := t[:i], t[i+3:]
		if !strings.EqualFold(scheme, "dns") {
			return "", "", fmt.Errorf("grpc target %q uses scheme %q; the grpc binding dials host:port (or dns:///host:port) only", raw, scheme)
		}
		// dns://[authority]/host:port: the authority names a DNS server,
		// which caphub does not let a definition choose.
		j := strings.Index(rest, "/")
		if j != 0 {
			return "", "", fmt.Errorf("grpc target %q names a DNS server; write it as host:port", raw)
		}
		t = rest[1:]
	}
	host, port, err = net.SplitHostPort(t)
	if err != nil {
		return "", "", fmt.Errorf("grpc target %q is not host:port (%v); write it as e.g. 127.0.0.1:50051", raw, err)
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return "", "", fmt.Errorf("grpc target %q has no host; write it as e.g. 127.0.0.1:50051", raw)
	}
	if net.ParseIP(host) == nil && !validHostName(host) {
		return "", "", fmt.Errorf("grpc target %q has host %q, which is neither an IP address nor a DNS name", raw, host)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port[0] == '+' {
		return "", "", fmt.Errorf("grpc target %q has port %q; a port is a number from 1 to 65535", raw, port)
	}
	return host, strconv.Itoa(n), nil
}

// validHostName reports whether h (lower case) is made of DNS labels:
// letters, digits, '-' and '_', separated by single dots.
func validHostName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// checkTarget parses raw and returns the host:port to dial, or an error when
// it is malformed or not allowed by Options.AllowedTargets.
func (b *Binding) checkTarget(raw string) (string, error) {
	host, port, err := parseTarget(raw)
	if err != nil {
		return "", err
	}
	if !targetAllowed(b.opts.AllowedTargets, host, port) {
		if len(b.opts.AllowedTargets) == 0 {
			return "", fmt.Errorf("grpc target %s is not allowed: with no allowed targets configured the grpc binding reaches loopback only; add it to the allowed gRPC targets (grpcbind Options.AllowedTargets) to permit it", raw)
		}
		return "", fmt.Errorf("grpc target %s is not allowed: it matches none of the allowed gRPC targets (%s); add it there to permit it", raw, strings.Join(b.opts.AllowedTargets, ", "))
	}
	return net.JoinHostPort(host, port), nil
}

// targetAllowed reports whether host:port matches one of patterns (see
// allowlist.Allowed); no patterns means loopback only.
func targetAllowed(patterns []string, host, port string) bool {
	return allowlist.Allowed(patterns, host, port)
}
