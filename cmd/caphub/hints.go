package main

import (
	"errors"

	"github.com/caphub/caphub/governance/sign"
)

// hintFor names the caphub command that fixes err, for the library errors
// that say what to do without naming a command: REST and MCP clients read
// those messages too, where a command line means nothing. "" when there is
// no such hint.
func hintFor(err error) string {
	var (
		unknown   *sign.UnknownKeyError
		bad       *sign.BadSignatureError
		algorithm *sign.UnsupportedAlgorithmError
		malformed *sign.MalformedAttestationError
	)
	switch {
	case errors.As(err, &unknown):
		return "to trust the signer, add their public key (the NAME.pub file of `caphub key generate`) to the trusted keys (--trusted or $CAPHUB_TRUSTED_KEYS)"
	case errors.As(err, &bad), errors.As(err, &algorithm), errors.As(err, &malformed), errors.Is(err, sign.ErrUnsigned):
		return "sign it with `caphub capability sign FILE --key KEY`"
	}
	return ""
}

// withHint is err's message followed by its hint, if any.
func withHint(err error) string {
	if h := hintFor(err); h != "" {
		return err.Error() + " (" + h + ")"
	}
	return err.Error()
}
