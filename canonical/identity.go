package canonical

import (
	"crypto/rand"
	"encoding/hex"
)

// MaxIDLen is the longest tool_call_id, run_id or owner token accepted.
const MaxIDLen = 128

// MaxPrefixLen is the longest key prefix accepted.
const MaxPrefixLen = 64

// DefaultPrefix is the key prefix used when none is configured.
const DefaultPrefix = "tc"

// ValidateToolCallID checks a framework tool_call_id: 1–128 bytes of
// [A-Za-z0-9_.-], first byte alphanumeric. The id is used exactly as given;
// an invalid one is refused, never replaced.
func ValidateToolCallID(id string) error {
	if !validID(id) {
		return Errorf(CodeInvalidToolCallID, "tool_call_id must be 1-%d bytes of [A-Za-z0-9_.-] starting with a letter or digit", MaxIDLen)
	}
	return nil
}

// ValidateRunID checks a run id with the same rules as a tool_call_id. In
// particular '{', '}', ':' and whitespace are refused: they would break the key
// layout or the cluster hash tag.
func ValidateRunID(id string) error {
	if !validID(id) {
		return Errorf(CodeInvalidRunID, "run_id must be 1-%d bytes of [A-Za-z0-9_.-] starting with a letter or digit", MaxIDLen)
	}
	return nil
}

// ValidateOwner checks an owner token with the same rules as a tool_call_id.
func ValidateOwner(owner string) error {
	if !validID(owner) {
		return Errorf(CodeInvalidArgument, "owner must be 1-%d bytes of [A-Za-z0-9_.-] starting with a letter or digit", MaxIDLen)
	}
	return nil
}

// ValidatePrefix checks a key prefix: 1–64 bytes of [A-Za-z0-9_.:-], first byte
// alphanumeric. Braces and whitespace are refused so that the run's hash tag
// is the only one in every key.
func ValidatePrefix(prefix string) error {
	ok := len(prefix) >= 1 && len(prefix) <= MaxPrefixLen && isAlnum(prefix[0])
	for i := 0; ok && i < len(prefix); i++ {
		c := prefix[i]
		ok = isAlnum(c) || c == '_' || c == '.' || c == '-' || c == ':'
	}
	if !ok {
		return Errorf(CodeInvalidArgument, "key prefix must be 1-%d bytes of [A-Za-z0-9_.:-] starting with a letter or digit", MaxPrefixLen)
	}
	return nil
}

// NewOwner returns a fresh random owner token (32 hex characters). An owner
// identifies one invocation, so that its retries are recognised as its own.
func NewOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

func validID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLen || !isAlnum(id[0]) {
		return false
	}
	for i := 1; i < len(id); i++ {
		c := id[i]
		if !isAlnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ValidateRead checks the identities of a read of one run's records: a valid
// run id and at most MaxIndexRead valid tool_call_ids.
func ValidateRead(runID string, toolCallIDs []string) error {
	if err := ValidateRunID(runID); err != nil {
		return err
	}
	if len(toolCallIDs) > MaxIndexRead {
		return Errorf(CodeInvalidArgument, "a read names at most %d ids (got %d)", MaxIndexRead, len(toolCallIDs))
	}
	for _, id := range toolCallIDs {
		if err := ValidateToolCallID(id); err != nil {
			return err
		}
	}
	return nil
}

// ValidateMax checks the bound of a read of a run's ids: 1..MaxIndexRead.
func ValidateMax(max int) error {
	if max < 1 || max > MaxIndexRead {
		return Errorf(CodeInvalidArgument, "max must be in 1..%d (got %d)", MaxIndexRead, max)
	}
	return nil
}
