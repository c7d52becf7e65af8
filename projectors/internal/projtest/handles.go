package projtest

import (
	"crypto/sha256"
	"encoding/base64"

	"github.com/toolcanon/toolcanon/canonical"
)

// Handles is a canonical.Masker that mints handles as the boundary does,
// without a key: the id is the base64url of the first six bytes of the
// value's SHA-256. It remembers each value by its handle.
type Handles map[string]string

// AppendMask implements canonical.Masker.
func (h Handles) AppendMask(dst []byte, kind canonical.Kind, value []byte) []byte {
	sum := sha256.Sum256(value)
	id := base64.RawURLEncoding.EncodeToString(sum[:6])
	handle := string(canonical.AppendHandle(nil, kind, id))
	h[handle] = string(value)
	return append(dst, handle...)
}
