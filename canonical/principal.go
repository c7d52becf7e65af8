package canonical

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// MaxPrincipalLen bounds a principal, in bytes.
const MaxPrincipalLen = 1024

// ValidatePrincipal checks a principal: the opaque name of who acts, as the
// host authenticated it (for example a bearer token's subject). It may be
// empty, the principal of hosts that name none; otherwise it is at most
// MaxPrincipalLen bytes of valid UTF-8. Stores keep only its PrincipalTag.
func ValidatePrincipal(p string) error {
	if len(p) > MaxPrincipalLen || !utf8.ValidString(p) {
		return Errorf(CodeInvalidArgument, "principal must be at most %d bytes of UTF-8", MaxPrincipalLen)
	}
	return nil
}

// PrincipalTag is what a store keeps of a run's principal: the hex SHA-256
// of "toolcanon/principal\x00" and the principal, so that no caller's name
// is stored in clear and every tag has the same 64 safe bytes. It
// pseudonymises, it does not hide: anyone who can guess a principal can
// compute its tag.
func PrincipalTag(p string) string {
	h := sha256.New()
	h.Write([]byte("toolcanon/principal\x00"))
	h.Write([]byte(p))
	return hex.EncodeToString(h.Sum(nil))
}

// CheckOwner is the rule of Store.CheckPrincipal, shared by every store:
// owner is the run's stored PrincipalTag (hasOwner false when it has none)
// and hasCalls tells whether the run has completed or running calls.
func CheckOwner(owner string, hasOwner, hasCalls bool, principal string) error {
	switch {
	case hasOwner && owner == PrincipalTag(principal):
		return nil
	case hasOwner:
		return Errorf(CodeRunForbidden, "the run belongs to another principal")
	case hasCalls:
		// The run's state, and with it its owner, is gone while its calls
		// live: nobody can be told it is theirs.
		return Errorf(CodeRunForbidden, "the run's owner is unknown: its state is lost")
	}
	return Errorf(CodeNotFound, "the run has no owner and no calls")
}
