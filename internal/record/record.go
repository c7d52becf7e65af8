// Package record defines how a canonical record is laid out in Redis, once:
// the Go encoder and decoder the store uses, and the constants the Lua
// scripts compare and splice (lua/format.lib is generated from this file by
// internal/scripts_gen, and a test fails when the two differ).
//
// A record is one HASH. Field "h" is the header: fixed-width ASCII fields
// at fixed offsets (Fields), then the owner and the tool, separated by one
// space, and a newline; a request short enough (EmbedRequest) follows in
// the same field, so that one HSETNX both makes a record and refuses to
// write over one. The other payloads are fields of their own, each cut into
// at most MaxParts parts where an allocator size class ends (Cut), so that
// a 64 KiB payload does not take an 80 KiB allocation:
//
//	h               the header, and the request when it is short
//	req req.2 ...   the request's parts, when it is not in h
//	raw raw.2 ...   the raw response's parts (absent while PROJECTING)
//	res res.2 ...   the agent result's parts (absent unless READY)
//
// Go prepares every byte a script writes: Begin's header but the times,
// the generation and the run's record limits (the script writes the
// server's clock and what the run's state holds), a completion's Segment.
// A script reads only the bytes it compares, with string.sub at the offsets
// below, and never cuts a payload; it copies the header field (with a short
// request) when it rewrites the header.
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

// Version is the header's first byte: the layout it follows. Layout 3 (the
// header of separate request fields and the run's separate leases, index
// and limits), layout 2, layout 1 (the header before claims and the run
// state's fence) and the meta line before it are refused by every script
// of this layout (LAYOUT_MISMATCH).
const Version = '4'

// RunLayout starts what a run state of this layout keeps in its field
// RunLayoutField: the layout, a space and the run's limits (PackLimits).
// Every script compares the layout before it reads the state further: a
// state without it is another layout's (LAYOUT_MISMATCH). The field is the
// one the earlier layouts kept their lost flag in, so that a worker of an
// earlier release refuses a run of this layout (as lost, or as another
// layout's) instead of writing into it.
const (
	RunLayout      = "layout " + string(Version)
	RunLayoutField = "lost"
	// RunIdentField holds the run's owner, generation and secret
	// (PackIdent); a state a completion made after a loss has none.
	RunIdentField = "id"
	// RunStateLost is the field "state" of a run found lost (else "open"
	// or "closed").
	RunStateLost = "lost"
)

// HeaderField is the hash field of the header.
const HeaderField = "h"

// The fields of a record that waits for the agent's input (a multi
// round-trip call, lua/await_input.lua): the token the continuing call must
// present, and the tool's state it is given (lua/continue_call.lua). A
// token taken by a continuing call is kept after ConsumedMark, so that the
// continuing call's retry finds it its own.
const (
	InputTokenField = "in"
	InputStateField = "is"
	ConsumedMark    = "~"
)

// MaxParts is how many parts a payload is cut into, at most.
const MaxParts = 3

// EmbedRequest is the most bytes the header field holds, header and
// request together, for the request to be kept in it, so that the field
// and its string header fill a 512-byte allocation at most. A completion
// rewrites the field, and Lua copies and hashes every byte of a string it
// makes, three times here (the field read, its tail, the new field): a
// longer request saves the same ~50 bytes of a field of its own, and
// costs each completion more than it saves (with a 3.5 KiB request, a
// lifecycle on one server took 1.3 times as long as with the request in
// its own field).
const EmbedRequest = 512 - 6

// Widths of the header's fixed fields.
const (
	widthTime   = 13 // milliseconds since the epoch, zero-padded (to the year 2286)
	widthLen    = 8  // a payload's length in bytes, zero-padded (at most canonical.MaxRecordBytesCeiling)
	widthDigest = 11 // a completion digest (8 bytes in base64url)
	widthError  = 26 // the longest stable code, space-padded
	widthGen    = 11 // a run generation (8 bytes in base64url)
	widthTag    = 8  // an identity tag (6 bytes in base64url)
	widthSHA    = 43 // a request SHA-256 in base64url
)

// Offsets of the header's fixed fields. A completion rewrites
// [OffStatus, OffUpdated) with Go's Segment and the time at OffUpdated;
// Begin writes [OffUpdated, OffIDTag) and [OffMaxResult, OffOwner) in Lua.
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
	OffExpires    = OffLease + widthTime
	OffGen        = OffExpires + widthTime
	OffIDTag      = OffGen + widthGen
	OffRequestLen = OffIDTag + widthTag
	OffRequestSHA = OffRequestLen + widthLen
	OffMaxResult  = OffRequestSHA + widthSHA
	OffMaxRecord  = OffMaxResult + widthLen
	OffOwner      = OffMaxRecord + widthLen // then the owner, one space, the tool, a newline
)

// Field is one fixed-width field of the header.
type Field struct {
	Name     string
	Off, Len int
	Doc      string
}

// Fields lists the header's fixed fields in order; the owner, the tool
// and a newline follow at OffOwner.
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
	{"expires", OffExpires, widthTime, "the record's expiry, ms since the epoch (its key's PEXPIREAT)"},
	{"gen", OffGen, widthGen, "generation of the run state the call was counted in"},
	{"id_tag", OffIDTag, widthTag, "binds the record to its key's run_id and tool_call_id"},
	{"request_len", OffRequestLen, widthLen, "bytes of the request"},
	{"request_sha256", OffRequestSHA, widthSHA, "SHA-256 of the request, base64url"},
	{"max_result", OffMaxResult, widthLen, "the run's limit of an agent result's bytes, when the call began"},
	{"max_record", OffMaxRecord, widthLen, "the run's limit of a record's bytes (request, raw, result), when the call began"},
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
	Status, Evidence, Error          string
	Overflow                         bool
	RawLen, ResultLen                int64
	Completion                       string // NoCompletion, AbandonMark and a claim, or a digest
	Updated, Created, Lease, Expires int64
	Gen, IDTag                       string
	RequestLen                       int64
	RequestSHA256                    string
	MaxResult, MaxRecord             int64
	Owner, Tool                      string
}

// ErrHeader is the error of a header that is not one.
var ErrHeader = errors.New("record: not a header of layout " + string(rune(Version)))

// ErrLayout is the error of a header of another layout version.
var ErrLayout = errors.New("record: a header of another layout")

// Split cuts a header field into the header (its newline included) and
// the bytes that follow it (the request, when the field holds it). It
// fails as Decode does for what is not a header of this layout.
func Split(field string) (header, rest string, err error) {
	if len(field) > 0 && field[OffVersion] != Version && field[OffVersion] >= '0' && field[OffVersion] <= '9' {
		return "", "", fmt.Errorf("%w: version %q, this is %q", ErrLayout, field[OffVersion], Version)
	}
	if len(field) < OffOwner+4 || field[OffVersion] != Version {
		return "", "", fmt.Errorf("%w: %d bytes", ErrHeader, len(field))
	}
	end := strings.IndexByte(field[OffOwner:], '\n')
	if end < 0 {
		return "", "", fmt.Errorf("%w: no newline after the owner and tool", ErrHeader)
	}
	end += OffOwner + 1
	return field[:end], field[end:], nil
}

// Decode reads a header field: the header, and whatever follows its
// newline, which Decode leaves alone (Split returns it). It fails with
// ErrLayout, wrapped, for a header of another layout version, and ErrHeader
// for anything else that is not one.
func Decode(field string) (Header, error) {
	var r Header
	h, _, err := Split(field)
	if err != nil {
		return r, err
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
		{&r.Created, OffCreated, widthTime}, {&r.Lease, OffLease, widthTime}, {&r.Expires, OffExpires, widthTime},
		{&r.RequestLen, OffRequestLen, widthLen}, {&r.MaxResult, OffMaxResult, widthLen}, {&r.MaxRecord, OffMaxRecord, widthLen},
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
	owner, tool, found := strings.Cut(h[OffOwner:len(h)-1], " ")
	if !found || owner == "" || tool == "" || strings.Contains(tool, " ") {
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

// Encode returns the header h describes, its newline included. It fails
// for a value that does not fit its field (a status or evidence without a
// letter, a number too large, a generation, tag, digest or code of another
// width, an owner or tool that is empty or holds a space).
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
	b.Grow(OffOwner + len(owner) + 2 + len(h.Tool))
	b.WriteByte(Version)
	b.WriteByte(st)
	b.WriteByte(ev)
	b.WriteByte(flag(h.Overflow))
	if err := writeNums(&b, widthLen, h.RawLen, h.ResultLen); err != nil {
		return "", err
	}
	b.WriteString(h.Completion)
	b.WriteString(h.Error + strings.Repeat(" ", widthError-len(h.Error)))
	if err := writeNums(&b, widthTime, h.Updated, h.Created, h.Lease, h.Expires); err != nil {
		return "", err
	}
	b.WriteString(h.Gen)
	b.WriteString(h.IDTag)
	if err := writeNums(&b, widthLen, h.RequestLen); err != nil {
		return "", err
	}
	b.WriteString(sha)
	if err := writeNums(&b, widthLen, h.MaxResult, h.MaxRecord); err != nil {
		return "", err
	}
	b.WriteString(owner)
	b.WriteByte(' ')
	b.WriteString(h.Tool)
	b.WriteByte('\n')
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
	var buf [20]byte
	for _, v := range vs {
		s := strconv.AppendInt(buf[:0], v, 10)
		if v < 0 || len(s) > width {
			return fmt.Errorf("record: %d does not fit %d digits", v, width)
		}
		for range width - len(s) {
			b.WriteByte('0')
		}
		b.Write(s)
	}
	return nil
}

// Segment returns the bytes a completion writes at OffStatus, up to
// OffUpdated: status, evidence, overflow, lengths, digest and code.
func Segment(status, evidence, code string, overflow bool, rawLen, resultLen int64, completion string) (string, error) {
	st, ok := letter(statusNames, status)
	if !ok {
		return "", fmt.Errorf("record: status %q", status)
	}
	ev, ok := letter(evidenceNames, evidence)
	if !ok {
		return "", fmt.Errorf("record: evidence %q", evidence)
	}
	if len(completion) != widthDigest || len(code) > widthError {
		return "", errors.New("record: a completion digest or error code of another width")
	}
	var b strings.Builder
	b.Grow(OffUpdated - OffStatus)
	b.WriteByte(st)
	b.WriteByte(ev)
	b.WriteByte(flag(overflow))
	if err := writeNums(&b, widthLen, rawLen, resultLen); err != nil {
		return "", err
	}
	b.WriteString(completion)
	b.WriteString(code)
	b.WriteString(strings.Repeat(" ", widthError-len(code)))
	return b.String(), nil
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

// overflowHead and overflowTail are the OverflowSegment before and after
// its digest: the script writes the completion's digest between them.
var overflowHead, overflowTail = func() (string, string) {
	seg := must(OverflowSegment(strings.Repeat("A", widthDigest)))
	at := OffCompletion - OffStatus
	return seg[:at], seg[at+widthDigest:]
}()

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// BeginHeader returns a new PROJECTING record's header cut around what
// the script writes: head is the bytes before OffUpdated, mid those from
// OffIDTag to OffMaxResult (identity tag, request length and digest), tail
// those from OffOwner on (owner, tool, newline). The script writes the
// times, the expiry and the generation between head and mid, and the
// run's record limits between mid and tail.
func BeginHeader(owner, tool, idTag, requestSHA256 string, requestLen int64) (head, mid, tail string, err error) {
	stored, sha := StoreOwner(owner), StoreDigest(requestSHA256)
	switch {
	case len(idTag) != widthTag || len(sha) != widthSHA:
		return "", "", "", errors.New("record: identity tag or request digest of another width")
	case stored == "" || tool == "" || strings.ContainsAny(stored, " \n") || strings.ContainsAny(tool, " \n"):
		return "", "", "", errors.New("record: owner and tool must be words")
	}
	var b strings.Builder
	b.Grow(widthTag + widthLen + widthSHA)
	b.WriteString(idTag)
	if err := writeNums(&b, widthLen, requestLen); err != nil {
		return "", "", "", err
	}
	b.WriteString(sha)
	return projectingHead, b.String(), stored + " " + tool + "\n", nil
}

// projectingHead is the header of a record just begun, up to OffUpdated.
var projectingHead = string(rune(Version)) + must(Segment("PROJECTING", "UNKNOWN", "", false, 0, 0, NoCompletion))

// CutRequest returns how a request is stored beside a header of
// headerLen bytes: in the header field (inHeader, the whole request) when
// both fit EmbedRequest, else in parts of their own (Cut).
func CutRequest(headerLen int, request []byte) (inHeader []byte, parts [MaxParts][]byte) {
	if headerLen+len(request) <= EmbedRequest {
		return request, parts
	}
	return nil, Cut(request)
}

// Widths of the fields of a run's packed limits (PackLimits).
const (
	widthCalls    = 10 // calls per run, calls per tool: at most canonical.MaxCallsCeiling
	widthRunBytes = 13 // bytes per run: at most canonical.MaxRunBytesCeiling
)

// PackedLimitsLen is the length of PackLimits's result.
const PackedLimitsLen = 2*widthCalls + widthRunBytes + 2*widthLen

// PackLimits returns limits as a run state keeps them, after its layout in
// RunLayoutField, and as Begin sends them: calls per run and per tool,
// bytes per run, per agent result and per record, zero-padded, the last
// two as a record's header keeps them (at OffMaxResult). It fails for a
// limit that does not fit its width.
func PackLimits(callsRun, callsTool, runBytes, resultBytes, recordBytes int64) (string, error) {
	var b strings.Builder
	b.Grow(PackedLimitsLen)
	for _, f := range []struct {
		v     int64
		width int
	}{{callsRun, widthCalls}, {callsTool, widthCalls}, {runBytes, widthRunBytes}, {resultBytes, widthLen}, {recordBytes, widthLen}} {
		if err := writeNums(&b, f.width, f.v); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// UnpackLimits reads what PackLimits wrote.
func UnpackLimits(s string) (callsRun, callsTool, runBytes, resultBytes, recordBytes int64, ok bool) {
	if len(s) != PackedLimitsLen {
		return 0, 0, 0, 0, 0, false
	}
	var v [5]int64
	off := 0
	for i, w := range []int{widthCalls, widthCalls, widthRunBytes, widthLen, widthLen} {
		if v[i], ok = digits(s[off : off+w]); !ok {
			return 0, 0, 0, 0, 0, false
		}
		off += w
	}
	return v[0], v[1], v[2], v[3], v[4], true
}

// RunLayoutValue returns what a run state of this layout keeps in
// RunLayoutField: the layout, and the run's packed limits after a space
// (none in a state a completion made after a loss).
func RunLayoutValue(packedLimits string) string {
	if packedLimits == "" {
		return RunLayout
	}
	return RunLayout + " " + packedLimits
}

// ParseRunLayout reads a state's RunLayoutField: whether it is this
// layout's, and the run's packed limits ("" when it has none).
func ParseRunLayout(v string) (packedLimits string, thisLayout bool) {
	if v == RunLayout {
		return "", true
	}
	rest, ok := strings.CutPrefix(v, RunLayout+" ")
	return rest, ok && len(rest) == PackedLimitsLen
}

// Widths of a run's packed identity (PackIdent).
const (
	widthPrincipal = 64 // a principal tag: SHA-256 in hex
	widthSecret    = 22 // a run secret: 16 bytes in base64url
)

// PackIdent returns the run's owner (its principal tag), generation and
// secret as a run state keeps them, in RunIdentField, and as Begin offers
// them to a run that has none. It fails for a part of another width.
func PackIdent(principalTag, gen, secret string) (string, error) {
	if len(principalTag) != widthPrincipal || len(gen) != widthGen || len(secret) != widthSecret {
		return "", errors.New("record: a principal tag, generation or run secret of another width")
	}
	return principalTag + gen + secret, nil
}

// UnpackIdent reads what PackIdent wrote.
func UnpackIdent(s string) (principalTag, gen, secret string, ok bool) {
	if len(s) != widthPrincipal+widthGen+widthSecret {
		return "", "", "", false
	}
	return s[:widthPrincipal], s[widthPrincipal : widthPrincipal+widthGen], s[widthPrincipal+widthGen:], true
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
	if len(s) != 2*n {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return nil, false
		}
	}
	b, err := hex.DecodeString(s)
	return b, err == nil
}
