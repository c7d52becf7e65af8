// Package record defines how a canonical record is laid out in Redis, once:
// the Go encoder and decoder the store uses, and the constants the Lua
// scripts compare and splice (lua/format.lib is generated from this file by
// internal/scripts_gen, and a test fails when the two differ).
//
// A record is one HASH. Field "h" is the header: fixed-width ASCII fields
// at fixed offsets (Fields), then the owner and the tool, separated by one
// space. The payloads are fields of their own, each cut into at most
// MaxParts parts where an allocator size class ends (Cut), so that a 64 KiB
// payload does not take an 80 KiB allocation:
//
//	h               the header
//	req req.2 ...   the request's parts
//	raw raw.2 ...   the raw response's parts (absent while PROJECTING)
//	res res.2 ...   the agent result's parts (absent unless READY)
//
// Go prepares every byte a script writes: Begin's header but the times and
// the generation (the script writes the server's clock and the run's
// generation into TimeSegment), a completion's Segment. A script reads only
// the bytes it compares, with string.sub at the offsets below, and never
// copies or cuts a payload.
package record

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version is the header's first byte: the layout it follows. Layout 2
// (runs outside their slot's due set), layout 1 (the header before claims
// and the run state's fence) and the meta line before it are refused by
// every script of this layout (LAYOUT_MISMATCH).
const Version = '3'

// RunLayout is what a run state of this layout keeps in its field
// RunLayoutField, and what every script compares before it reads the
// state further: a state without it is another layout's (LAYOUT_MISMATCH).
// The field is the one the earlier layouts kept their lost flag in, so
// that a worker of an earlier release refuses a run of this layout (as
// lost) instead of writing into it.
const (
	RunLayout      = "layout " + string(Version)
	RunLayoutField = "lost"
	// RunGoneField is 1 in a run state found lost (the earlier layouts'
	// "lost").
	RunGoneField = "gone"
)

// HeaderField is the hash field of the header.
const HeaderField = "h"

// MaxParts is how many parts a payload is cut into, at most.
const MaxParts = 3

// Widths of the header's fixed fields.
const (
	widthTime   = 13 // milliseconds since the epoch, zero-padded (to the year 2286)
	widthLen    = 10 // a payload's length in bytes, zero-padded
	widthDigest = 11 // a completion digest (8 bytes in base64url)
	widthError  = 26 // the longest stable code, space-padded
	widthGen    = 11 // a run generation (8 bytes in base64url)
	widthTag    = 8  // an identity tag (6 bytes in base64url)
	widthSHA    = 43 // a request SHA-256 in base64url
)

// Offsets of the header's fixed fields. A completion rewrites
// [OffStatus, OffUpdated) with Go's Segment and the time at OffUpdated;
// Begin writes [OffUpdated, OffIDTag) in Lua (TimeSegment).
const (
	OffVersion    = 0
	OffStatus     = OffVersion + 1
	OffEvidence   = OffStatus + 1
	OffOverflow   = OffEvidence + 1
	OffRawLen     = OffOverflow + 1
	OffResultLen  = OffRawLen + widthLen
	OffCompletion = OffResultLen + widthLen
	OffError      = OffCompletion + widthDigest
	OffUpdated    = OffError + widthError
	OffCreated    = OffUpdated + widthTime
	OffLease      = OffCreated + widthTime
	OffGen        = OffLease + widthTime
	OffIDTag      = OffGen + widthGen
	OffRequestLen = OffIDTag + widthTag
	OffRequestSHA = OffRequestLen + widthLen
	OffOwner      = OffRequestSHA + widthSHA // then the owner, one space, the tool
)

// Field is one fixed-width field of the header.
type Field struct {
	Name     string
	Off, Len int
	Doc      string
}

// Fields lists the header's fixed fields in order; the owner and the tool
// follow at OffOwner.
var Fields = []Field{
	{"version", OffVersion, 1, "layout version: " + string(Version)},
	{"status", OffStatus, 1, "P PROJECTING, R READY, E ERROR"},
	{"evidence", OffEvidence, 1, "U UNKNOWN, F EVIDENCE_FOUND, N NO_EVIDENCE, E ERROR"},
	{"overflow", OffOverflow, 1, "1: the completion was refused for its size (RESULT_TOO_LARGE), else 0"},
	{"raw_len", OffRawLen, widthLen, "bytes of the raw response"},
	{"result_len", OffResultLen, widthLen, "bytes of the agent result"},
	{"completion", OffCompletion, widthDigest, "digest of the completion made (to recognise its retry); `" + NoCompletion + "` none, `" + AbandonMark + "` and the abandoning claim (10 characters) abandoned"},
	{"error", OffError, widthError, "the stable error code, space-padded"},
	{"updated", OffUpdated, widthTime, "last transition, ms since the epoch (server clock)"},
	{"created", OffCreated, widthTime, "begin, ms since the epoch (server clock)"},
	{"lease", OffLease, widthTime, "lease deadline, ms since the epoch"},
	{"gen", OffGen, widthGen, "generation of the run state the call was counted in"},
	{"id_tag", OffIDTag, widthTag, "binds the record to its key's run_id and tool_call_id"},
	{"request_len", OffRequestLen, widthLen, "bytes of the request"},
	{"request_sha256", OffRequestSHA, widthSHA, "SHA-256 of the request, base64url"},
}

// Completion fields that are no digest: a record not completed yet, and
// the mark that starts an abandoned one's, followed by the claim of the
// abandon that closed it (ClaimLen base64url characters), so that a resent
// abandon knows the abandonment for its own. '~' is not a base64url
// character.
const (
	NoCompletion = "~~~~~~~~~~~"
	AbandonMark  = "~"
	ClaimLen     = widthDigest - len(AbandonMark)
)

// IsAbandoned reports whether a header's completion field is an
// abandonment's.
func IsAbandoned(completion string) bool {
	return strings.HasPrefix(completion, AbandonMark) && completion != NoCompletion
}

// NewClaim returns a claim for an abandon to offer: ClaimLen random
// base64url characters. A reaper uses one per pass, so that the retry of
// an abandon whose reply was lost is told the abandonment is its own.
func NewClaim() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b[:])[:ClaimLen]
}

// ValidClaim reports whether c is a claim as NewClaim makes them.
func ValidClaim(c string) bool {
	if len(c) != ClaimLen {
		return false
	}
	for i := 0; i < len(c); i++ {
		if !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", rune(c[i])) {
			return false
		}
	}
	return true
}

// Status letters.
const (
	StatusProjecting = 'P'
	StatusReady      = 'R'
	StatusError      = 'E'
)

var statusNames = map[byte]string{StatusProjecting: "PROJECTING", StatusReady: "READY", StatusError: "ERROR"}

var evidenceNames = map[byte]string{'U': "UNKNOWN", 'F': "EVIDENCE_FOUND", 'N': "NO_EVIDENCE", 'E': "ERROR"}

// letter returns the letter names gives name.
func letter(names map[byte]string, name string) (byte, bool) {
	for l, n := range names {
		if n == name {
			return l, true
		}
	}
	return 0, false
}

// Part field names of each payload: the first part's field is the
// payload's name, the others add ".2", ".3".
var (
	RequestFields = partFields("req")
	RawFields     = partFields("raw")
	ResultFields  = partFields("res")
)

func partFields(name string) []string {
	f := []string{name}
	for i := 2; i <= MaxParts; i++ {
		f = append(f, name+"."+strconv.Itoa(i))
	}
	return f
}

// Header is a record's header, decoded. Status and evidence are the
// canonical names ("READY", "EVIDENCE_FOUND"); Owner and RequestSHA256
// are as Go gave them (StoreOwner, StoreDigest undone).
type Header struct {
	Status, Evidence, Error    string
	Overflow                   bool
	RawLen, ResultLen          int64
	Completion                 string // NoCompletion, AbandonMark and a claim, or a digest
	Updated, Created, Lease    int64
	Gen, IDTag                 string
	RequestLen                 int64
	RequestSHA256, Owner, Tool string
}

// ErrHeader is the error of a header that is not one.
var ErrHeader = errors.New("record: not a header of layout " + string(rune(Version)))

// ErrLayout is the error of a header of another layout version.
var ErrLayout = errors.New("record: a header of another layout")

// Decode reads a header. It fails with ErrLayout, wrapped, for a header of
// another layout version, and ErrHeader for anything else that is not one.
func Decode(h string) (Header, error) {
	var r Header
	if len(h) > 0 && h[OffVersion] != Version && h[OffVersion] >= '0' && h[OffVersion] <= '9' {
		return r, fmt.Errorf("%w: version %q, this is %q", ErrLayout, h[OffVersion], Version)
	}
	if len(h) < OffOwner+3 || h[OffVersion] != Version {
		return r, fmt.Errorf("%w: %d bytes", ErrHeader, len(h))
	}
	var ok bool
	if r.Status, ok = statusNames[h[OffStatus]]; !ok {
		return r, fmt.Errorf("%w: status %q", ErrHeader, h[OffStatus])
	}
	if r.Evidence, ok = evidenceNames[h[OffEvidence]]; !ok {
		return r, fmt.Errorf("%w: evidence %q", ErrHeader, h[OffEvidence])
	}
	switch h[OffOverflow] {
	case '0':
	case '1':
		r.Overflow = true
	default:
		return r, fmt.Errorf("%w: overflow %q", ErrHeader, h[OffOverflow])
	}
	nums := []struct {
		dst      *int64
		off, len int
	}{
		{&r.RawLen, OffRawLen, widthLen}, {&r.ResultLen, OffResultLen, widthLen}, {&r.Updated, OffUpdated, widthTime},
		{&r.Created, OffCreated, widthTime}, {&r.Lease, OffLease, widthTime}, {&r.RequestLen, OffRequestLen, widthLen},
	}
	for _, n := range nums {
		v, ok := digits(h[n.off : n.off+n.len])
		if !ok {
			return r, fmt.Errorf("%w: field at %d is not %d digits", ErrHeader, n.off, n.len)
		}
		*n.dst = v
	}
	r.Completion = h[OffCompletion : OffCompletion+widthDigest]
	r.Error = strings.TrimRight(h[OffError:OffError+widthError], " ")
	r.Gen = h[OffGen : OffGen+widthGen]
	r.IDTag = h[OffIDTag : OffIDTag+widthTag]
	r.RequestSHA256 = LoadDigest(h[OffRequestSHA : OffRequestSHA+widthSHA])
	owner, tool, found := strings.Cut(h[OffOwner:], " ")
	if !found || owner == "" || tool == "" {
		return r, fmt.Errorf("%w: no owner and tool", ErrHeader)
	}
	r.Owner, r.Tool = LoadOwner(owner), tool
	return r, nil
}

// digits reads a zero-padded decimal field.
func digits(s string) (int64, bool) {
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// Encode returns the header h describes. It fails for a value that does
// not fit its field (a status or evidence without a letter, a number too
// large, a generation, tag, digest or code of another width, an owner or
// tool that is empty or holds a space).
func Encode(h Header) (string, error) {
	st, ok := letter(statusNames, h.Status)
	if !ok {
		return "", fmt.Errorf("record: status %q", h.Status)
	}
	ev, ok := letter(evidenceNames, h.Evidence)
	if !ok {
		return "", fmt.Errorf("record: evidence %q", h.Evidence)
	}
	owner := StoreOwner(h.Owner)
	sha := StoreDigest(h.RequestSHA256)
	switch {
	case len(h.Completion) != widthDigest || len(h.Gen) != widthGen || len(h.IDTag) != widthTag || len(sha) != widthSHA:
		return "", errors.New("record: completion, generation, identity tag or request digest of another width")
	case len(h.Error) > widthError:
		return "", fmt.Errorf("record: error code %q over %d bytes", h.Error, widthError)
	case owner == "" || h.Tool == "" || strings.ContainsAny(owner+h.Tool, " \n"):
		return "", errors.New("record: owner and tool must be words")
	}
	var b strings.Builder
	b.Grow(OffOwner + len(owner) + 1 + len(h.Tool))
	b.WriteByte(Version)
	b.WriteByte(st)
	b.WriteByte(ev)
	b.WriteByte(flag(h.Overflow))
	if err := writeNums(&b, widthLen, h.RawLen, h.ResultLen); err != nil {
		return "", err
	}
	b.WriteString(h.Completion)
	b.WriteString(h.Error + strings.Repeat(" ", widthError-len(h.Error)))
	if err := writeNums(&b, widthTime, h.Updated, h.Created, h.Lease); err != nil {
		return "", err
	}
	b.WriteString(h.Gen)
	b.WriteString(h.IDTag)
	if err := writeNums(&b, widthLen, h.RequestLen); err != nil {
		return "", err
	}
	b.WriteString(sha)
	b.WriteString(owner)
	b.WriteByte(' ')
	b.WriteString(h.Tool)
	return b.String(), nil
}

func flag(v bool) byte {
	if v {
		return '1'
	}
	return '0'
}

// writeNums writes each v zero-padded to width digits.
func writeNums(b *strings.Builder, width int, vs ...int64) error {
	for _, v := range vs {
		s := strconv.FormatInt(v, 10)
		if v < 0 || len(s) > width {
			return fmt.Errorf("record: %d does not fit %d digits", v, width)
		}
		b.WriteString(strings.Repeat("0", width-len(s)))
		b.WriteString(s)
	}
	return nil
}

// Segment returns the bytes a completion writes at OffStatus, up to
// OffUpdated: status, evidence, overflow, lengths, digest and code.
func Segment(status, evidence, code string, overflow bool, rawLen, resultLen int64, completion string) (string, error) {
	h := Header{Status: status, Evidence: evidence, Error: code, Overflow: overflow, RawLen: rawLen, ResultLen: resultLen,
		Completion: completion, Gen: strings.Repeat("0", widthGen), IDTag: strings.Repeat("0", widthTag),
		RequestSHA256: strings.Repeat("0", widthSHA), Owner: "o", Tool: "t"}
	s, err := Encode(h)
	if err != nil {
		return "", err
	}
	return s[OffStatus:OffUpdated], nil
}

// AbandonedSegment returns the Segment an abandonment by claim writes.
func AbandonedSegment(claim string) (string, error) {
	if !ValidClaim(claim) {
		return "", fmt.Errorf("record: claim %q is not %d base64url characters", claim, ClaimLen)
	}
	return Segment("ERROR", "ERROR", "EXECUTION_ABANDONED", false, 0, 0, AbandonMark+claim)
}

// abandonedHead and abandonedTail are an abandonment's Segment before and
// after its claim: the script writes the claim between them.
var abandonedHead, abandonedTail = func() (string, string) {
	seg := must(AbandonedSegment(strings.Repeat("A", ClaimLen)))
	at := OffCompletion - OffStatus + len(AbandonMark)
	return seg[:at], seg[at+ClaimLen:]
}()

// OverflowSegment returns the Segment of a completion refused for its
// size: ERROR/RESULT_TOO_LARGE with no payload, recognised by digest.
func OverflowSegment(completion string) (string, error) {
	return Segment("ERROR", "ERROR", "RESULT_TOO_LARGE", true, 0, 0, completion)
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// BeginHeader returns a new PROJECTING record's header cut around its time
// segment: head is the bytes before OffUpdated, tail those from OffIDTag
// on. The script writes updated, created, lease and generation between
// them.
func BeginHeader(owner, tool, idTag, requestSHA256 string, requestLen int64) (head, tail string, err error) {
	h, err := Encode(Header{Status: "PROJECTING", Evidence: "UNKNOWN", Completion: NoCompletion,
		Gen: strings.Repeat("0", widthGen), IDTag: idTag, RequestLen: requestLen, RequestSHA256: requestSHA256,
		Owner: owner, Tool: tool})
	if err != nil {
		return "", "", err
	}
	return h[:OffUpdated], h[OffIDTag:], nil
}

// OwnerWord is what a script compares at OffOwner to tell the record's
// owner: the stored owner and the space that ends it.
func OwnerWord(owner string) string { return StoreOwner(owner) + " " }

// ownerMark starts an owner stored in base64url.
const ownerMark = "~"

// StoreOwner returns the form of owner the record keeps: 16 bytes in
// base64url behind "~" for the 32 lowercase hex digits of
// canonical.NewOwner, else the owner itself.
func StoreOwner(owner string) string {
	if b, ok := lowerHex(owner, 16); ok {
		return ownerMark + base64.RawURLEncoding.EncodeToString(b)
	}
	return owner
}

// LoadOwner undoes StoreOwner.
func LoadOwner(s string) string {
	if b64, ok := strings.CutPrefix(s, ownerMark); ok {
		if b, err := base64.RawURLEncoding.DecodeString(b64); err == nil {
			return hex.EncodeToString(b)
		}
	}
	return s
}

// StoreDigest returns a hex SHA-256 as the record keeps it: base64url.
func StoreDigest(d string) string {
	if b, ok := lowerHex(d, 32); ok {
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return d
}

// LoadDigest undoes StoreDigest.
func LoadDigest(s string) string {
	if len(s) == base64.RawURLEncoding.EncodedLen(32) {
		if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
			return hex.EncodeToString(b)
		}
	}
	return s
}

// CompletionDigest is what the record keeps of a completion's hex digest
// to recognise its retry: the first 8 bytes, in base64url (11
// characters). It only tells one completion of the same owner's call from
// another, which 64 bits do.
func CompletionDigest(hexDigest string) string {
	b, _ := hex.DecodeString(hexDigest)
	if len(b) < 8 {
		b = append(b, make([]byte, 8-len(b))...)
	}
	return base64.RawURLEncoding.EncodeToString(b[:8])
}

// IdentityTag is what a record keeps of its run_id and tool_call_id: the
// first 6 bytes of SHA-256(run_id NUL tool_call_id), in base64url (8
// characters): it tells a record copied under another key, not an attacker
// who can write to Redis. Ids cannot hold NUL, so distinct pairs hash
// distinct inputs.
func IdentityTag(runID, toolCallID string) string {
	h := sha256.New()
	h.Write([]byte(runID))
	h.Write([]byte{0})
	h.Write([]byte(toolCallID))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:6])
}

// NewGeneration returns a run generation for a Begin to offer: 8 random
// bytes in base64url (11 characters). Only the Begin that makes a run's
// state uses it; each record keeps its run's, so that a record outliving
// its run's state is told from one counted in a new state.
func NewGeneration() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// NewRunSecret returns a secret for a run that has none: 16 random bytes
// in base64url, the key with which the run's handles are minted.
func NewRunSecret() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// lowerHex decodes s when it is exactly n bytes in lowercase hex, the form
// that encodes back to s.
func lowerHex(s string, n int) ([]byte, bool) {
	if len(s) != 2*n || strings.ToLower(s) != s {
		return nil, false
	}
	b, err := hex.DecodeString(s)
	return b, err == nil
}
