package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/governance/sign"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/registry"
)

// hintFor names the caphub command that fixes err, for the library errors
// that say what to do without naming a command: REST and MCP clients read
// those messages too, where a command line means nothing. "" when there is
// no such hint.
func hintFor(err error) string {
	var (
		missing   *registry.NotFoundError
		failed    *invoke.Error
		unknown   *sign.UnknownKeyError
		bad       *sign.BadSignatureError
		algorithm *sign.UnsupportedAlgorithmError
		malformed *sign.MalformedAttestationError
	)
	switch {
	case errors.As(err, &missing):
		return notFoundHint(missing)
	case errors.As(err, &failed):
		return invokeHint(failed)
	case errors.As(err, &unknown):
		return "to trust the signer, add their public key (the NAME.pub file of `caphub key generate`) to the trusted keys (--trusted or $CAPHUB_TRUSTED_KEYS)"
	case errors.As(err, &bad), errors.As(err, &algorithm), errors.As(err, &malformed), errors.Is(err, sign.ErrUnsigned):
		return "sign it with `caphub capability sign FILE --key KEY`"
	}
	return ""
}

// notFoundHint names the command that lists or creates what e says is
// missing.
func notFoundHint(e *registry.NotFoundError) string {
	switch e.Kind {
	case registry.KindCapability:
		return fmt.Sprintf("list what is registered with `caphub capability list --domain %s`", shellWord(e.Domain))
	case agent.DocKind:
		return "create it with `caphub agent apply FILE` (its OSSA manifest)"
	case "mcp_server":
		return fmt.Sprintf("save it with `caphub discover mcp %s --command …` or `--url …`; list the saved ones with `caphub discover server list`", shellWord(e.Name))
	case "approval":
		return "list the approvals with `caphub approval list --status all`"
	case "policy":
		return fmt.Sprintf("set one with `caphub policy set %s`", shellWord(e.Name))
	}
	return ""
}

// invokeHint names the command that gets a refused call through: the policy
// change it needs, or the approval it waits for. The details it reads travel
// in REST problem documents too, so it works with --server.
func invokeHint(e *invoke.Error) string {
	detail := func(k string) string { s, _ := e.Details[k].(string); return s }
	switch e.Code {
	case invoke.CodeDenied:
		agent := shellWord(detail("policy"))
		for _, kind := range []string{"permission", "effect"} {
			if v := detail(kind); v != "" && agent != "" {
				return fmt.Sprintf("grant it with `caphub policy set %s … --%s %s`; policy set replaces the whole policy, so repeat what `caphub policy show %s` lists", agent, kind, shellWord(v), agent)
			}
		}
	case invoke.CodeApprovalNeeded:
		if id := detail("approval_id"); id != "" {
			return fmt.Sprintf("approve it with `caphub approval approve %s` (or deny it), then call again with the approval id", shellWord(id))
		}
	case invoke.CodeTooManyApprovals:
		return "decide some with `caphub approval approve|deny ID`; list them with `caphub approval list`"
	}
	return ""
}

// shellWord quotes s for a POSIX shell when it holds anything but plain
// word characters (a policy named "*", a domain with spaces).
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// withHint is err's message followed by its hint, if any.
func withHint(err error) string {
	if h := hintFor(err); h != "" {
		return err.Error() + " (" + h + ")"
	}
	return err.Error()
}
