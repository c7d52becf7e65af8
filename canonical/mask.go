package canonical

// Kind is the class of a masked value: what an agent sees in its place says
// what it was (a secret, an address, an id), never what it was.
type Kind string

// The classes of masked values. A projector's redactor names one for every
// value it masks; a Masker decides what the agent sees.
const (
	KindSecret     Kind = "SECRET"      // password, token, key, signature, cookie, session id
	KindID         Kind = "ID"          // a generated value whose context does not prove it public
	KindPrivateKey Kind = "PRIVATE_KEY" // a private key block
	KindIP         Kind = "IP"          // IPv4/IPv6 address, with port, CIDR or zone
	KindMAC        Kind = "MAC"         // hardware address
	KindEmail      Kind = "EMAIL"       // e-mail address
	KindHost       Kind = "HOST"        // host or node name
	KindPod        Kind = "POD"         // Kubernetes pod name
	KindContainer  Kind = "CONTAINER"   // container id
	KindPID        Kind = "PID"         // process or thread id
	KindUser       Kind = "USER"        // user or account name
	KindCard       Kind = "CARD"        // payment card number
	KindAccount    Kind = "ACCOUNT"     // cloud or bank account, subscription, tenant or project id
	KindStr        Kind = "STR"         // SQL string literal
	KindNum        Kind = "NUM"         // SQL number literal
)

// MaxKindLen bounds a Kind: 1–16 bytes of A-Z and '_'.
const MaxKindLen = 16

// Valid reports whether k can name a class in a handle: 1–16 bytes of A-Z
// and '_', starting with a letter.
func (k Kind) Valid() bool {
	if len(k) == 0 || len(k) > MaxKindLen || k[0] < 'A' || k[0] > 'Z' {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; (c < 'A' || c > 'Z') && c != '_' {
			return false
		}
	}
	return true
}

// A Masker decides what an agent sees in place of a sensitive value. The
// projectors' redactor calls it for every value it masks; the boundary
// gives each call a Masker that mints the run's handles (see Call.Mask).
// A Masker is used by one projection at a time.
type Masker interface {
	// AppendMask appends to dst what stands for value, a value of class
	// kind, and returns the extended slice. It must not keep value.
	AppendMask(dst []byte, kind Kind, value []byte) []byte
}

// Placeholders is the Masker that writes the class alone, "<SECRET>",
// "<IP>": the value is gone, and equal values cannot be told apart. It is
// what a projection gets when its call has no Masker.
var Placeholders Masker = placeholders{}

type placeholders struct{}

func (placeholders) AppendMask(dst []byte, kind Kind, _ []byte) []byte {
	dst = append(dst, '<')
	dst = append(dst, kind...)
	return append(dst, '>')
}

// MaskerOf returns m, or Placeholders when m is nil.
func MaskerOf(m Masker) Masker {
	if m == nil {
		return Placeholders
	}
	return m
}

// A handle stands for one masked value of one run: "<" kind ":" id ">",
// where id is HandleIDLen bytes of the base64url alphabet, e.g.
// "<SECRET:k7Qp2xA9>". Within a run the same value always gets the same
// id (whatever its kind); in another run it gets another. The id is keyed
// with a secret of the run that no agent sees, so that it tells nothing of
// the value: no one can compute it from a guess.
const (
	HandleIDLen = 8
	// MaxHandleLen is the longest handle: "<", a kind, ":", an id, ">".
	MaxHandleLen = 1 + MaxKindLen + 1 + HandleIDLen + 1
)

// AppendHandle appends the handle of kind and id to dst. It does not check
// them: ParseHandle does.
func AppendHandle(dst []byte, kind Kind, id string) []byte {
	dst = append(dst, '<')
	dst = append(dst, kind...)
	dst = append(dst, ':')
	dst = append(dst, id...)
	return append(dst, '>')
}

// ParseHandle reads a handle at the start of b. It returns the handle's
// kind, its id and its length in bytes, or ok false when b does not start
// with a well-formed handle.
func ParseHandle(b []byte) (kind Kind, id string, n int, ok bool) {
	if len(b) < 4 || b[0] != '<' {
		return "", "", 0, false
	}
	i := 1
	for i < len(b) && i <= MaxKindLen && (b[i] >= 'A' && b[i] <= 'Z' || b[i] == '_') {
		i++
	}
	if i == 1 || i >= len(b) || b[i] != ':' || b[1] == '_' {
		return "", "", 0, false
	}
	k := Kind(b[1:i])
	i++
	start := i
	for i < len(b) && i-start < HandleIDLen && handleIDByte(b[i]) {
		i++
	}
	if i-start != HandleIDLen || i >= len(b) || b[i] != '>' {
		return "", "", 0, false
	}
	return k, string(b[start:i]), i + 1, true
}

// IndexHandle returns the offset of the first handle in b and its length,
// or -1 and 0 when b holds none. It costs time linear in b.
func IndexHandle(b []byte) (offset, n int) {
	for i := 0; i < len(b); i++ {
		if b[i] != '<' {
			continue
		}
		if _, _, n, ok := ParseHandle(b[i:]); ok {
			return i, n
		}
	}
	return -1, 0
}

// ValidHandleID reports whether id is a handle's id: HandleIDLen bytes of
// the base64url alphabet.
func ValidHandleID(id string) bool {
	if len(id) != HandleIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !handleIDByte(id[i]) {
			return false
		}
	}
	return true
}

func handleIDByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
