// Package auditrec defines how an audit event waits in Redis, once: the
// body Go encodes for a transition's script to append, and the decoder of
// what the script appended.
//
// A run's pending events are one LIST, <prefix>:{<run_id>}:audit. Its
// first element is the run's chain head (Head): "~" before anything of the
// run was exported, else "H <gen> <seq> <hash>", the last event a sink
// confirmed. Each other element is one event, as the transition's script
// appended it:
//
//	<seq> <time_ms> <gen> <body>
//
// where the script writes the sequence number (from the run's state), the
// server's clock and the stream's generation in front of the body Go
// encoded. The body is space-separated words, the first the event's type:
//
//	B <call> <tool> <definition> <principal> <key_id> <request_hmac> <request_size> <trace> <span>
//	R <call> <tool> <definition> <principal> <key_id> <request_hmac> <request_size> <trace> <span>
//	C <status> <evidence> <code> <call> <execution> <key_id> <raw_hmac> <raw_size> <result_hmac> <result_size> <redactions> <handles> <trace> <span>
//	A <call>
//	X <principal>
//	W <call> <key_id> <token_hmac> <trace> <span> <wait_until_ms>
//	K <call> <principal> <key_id> <input_hmac> <input_size> <trace> <span>
//
// Go sends a script a body's parts, the script joins them with a space:
// the type letter and the rest of a begin (CallRest), so that the same
// rest serves a replay; the head (type and outcome: "C R F -") and the
// rest of a complete (CompleteParts), so that the same rest serves the
// completion refused for its size (OverflowHead); an await_input's body
// but its last word (AwaitBody), the end of the lease the script sets.
//
// Digests, principal tags and trace ids are kept in base64url (a 32-byte
// digest in 43 characters), letters stand for status, evidence and
// execution, and "-" for an empty word, so that an event is about 250
// bytes; the exporter decodes it and the sink gets the full form.
package auditrec

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// Genesis is the head element of a run none of whose events was exported.
const Genesis = "~"

// empty stands for an empty word.
const empty = "-"

// MaxDefinition bounds BeginRequest.Definition as an event keeps it.
const MaxDefinition = 128

// ErrEvent is the error of an element that is no event.
var ErrEvent = errors.New("auditrec: not an audit event")

var (
	statusLetters   = map[string]string{string(canonical.StatusReady): "R", string(canonical.StatusError): "E"}
	evidenceLetters = map[string]string{
		string(canonical.EvidenceFound): "F", string(canonical.NoEvidence): "N", string(canonical.EvidenceError): "E",
	}
	executionLetters = map[string]string{
		canonical.ExecutionExecuted: "e", canonical.ExecutionNotRun: "n", canonical.ExecutionReplayed: "r",
	}
)

// word returns s as a word of a body: "-" when empty.
func word(s string) string {
	if s == "" {
		return empty
	}
	return s
}

// Definition returns the definition an event keeps of d: d when it is at
// most MaxDefinition bytes without spaces or control characters, else "".
func Definition(d string) string {
	if len(d) > MaxDefinition || d == empty {
		return ""
	}
	for i := 0; i < len(d); i++ {
		if d[i] <= ' ' || d[i] == 0x7f {
			return ""
		}
	}
	return d
}

// hexWord returns the base64url of a hex string, "-" for "".
func hexWord(h string) (string, error) {
	if h == "" {
		return empty, nil
	}
	b, err := hex.DecodeString(h)
	if err != nil || len(b) == 0 || strings.ToLower(h) != h {
		return "", fmt.Errorf("auditrec: %q is not lowercase hex", h)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Call is what a begin or replay body says of a call.
type Call struct {
	ToolCallID, Tool, Definition, Principal string // Principal: a PrincipalTag (hex)
	KeyID, RequestDigest                    string // RequestDigest: hex HMAC
	// RequestMAC, when set, is the request's HMAC itself, in place of
	// RequestDigest: it is written without a round trip through hex.
	RequestMAC  []byte
	RequestSize int64
	Trace       canonical.Trace
}

// macWord returns the word of a digest given as bytes (mac) or hex.
func macWord(mac []byte, hexDigest string) (string, error) {
	if mac != nil {
		return base64.RawURLEncoding.EncodeToString(mac), nil
	}
	return hexWord(hexDigest)
}

// The type letters of a begin and a replay body.
const (
	BeginType  = "B"
	ReplayType = "R"
)

// BeginBody returns the body of a begin event (replay false) or of a
// replay event: its type letter, a space and CallRest.
func BeginBody(c Call, replay bool) (string, error) {
	t := BeginType
	if replay {
		t = ReplayType
	}
	rest, err := CallRest(c)
	if err != nil {
		return "", err
	}
	return t + " " + rest, nil
}

// CallRest returns a begin or replay body after its type letter.
func CallRest(c Call) (string, error) {
	p, err := hexWord(c.Principal)
	if err != nil {
		return "", err
	}
	d, err := macWord(c.RequestMAC, c.RequestDigest)
	if err != nil {
		return "", err
	}
	tr, sp, err := traceWords(c.Trace)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(c.ToolCallID) + len(c.Tool) + len(c.Definition) + len(p) + len(d) + len(tr) + len(sp) + 40)
	for i, w := range []string{c.ToolCallID, c.Tool, word(Definition(c.Definition)), p, word(c.KeyID), d,
		strconv.FormatInt(c.RequestSize, 10), tr, sp} {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String(), nil
}

func traceWords(t canonical.Trace) (string, string, error) {
	tr, err := hexWord(t.TraceID)
	if err != nil {
		return "", "", err
	}
	sp, err := hexWord(t.SpanID)
	return tr, sp, err
}

// Outcome is what a complete body says.
type Outcome struct {
	ToolCallID string
	Status     canonical.Status
	Evidence   canonical.Evidence
	Code       canonical.Code
	Execution  string
	KeyID      string
	RawDigest  string
	RawSize    int64
	// ResultDigest and ResultSize: the agent result's.
	ResultDigest string
	ResultSize   int64
	// RawMAC and ResultMAC, when set, are the HMACs themselves, in place of
	// RawDigest and ResultDigest.
	RawMAC, ResultMAC []byte
	Redactions        int
	Handles           int
	Trace             canonical.Trace
}

// OverflowHead is the head of a complete event whose completion the
// store refused for its size (lua/audit.lib keeps the same).
const OverflowHead = "C E E RESULT_TOO_LARGE"

// CompleteBody returns the body of a complete event: its head, a space
// and its rest (CompleteParts).
func CompleteBody(o Outcome) (string, error) {
	head, rest, err := CompleteParts(o)
	if err != nil {
		return "", err
	}
	return head + " " + rest, nil
}

// CompleteParts returns a complete event's body cut in two: its head (the
// type letter, status, evidence and code) and the rest.
func CompleteParts(o Outcome) (head, rest string, err error) {
	st, ok := statusLetters[string(o.Status)]
	if !ok {
		return "", "", fmt.Errorf("auditrec: status %q", o.Status)
	}
	ev, ok := evidenceLetters[string(o.Evidence)]
	if !ok {
		return "", "", fmt.Errorf("auditrec: evidence %q", o.Evidence)
	}
	ex, ok := executionLetters[o.Execution]
	if !ok {
		return "", "", fmt.Errorf("auditrec: execution %q", o.Execution)
	}
	if o.Code != "" && !o.Code.Valid() {
		return "", "", fmt.Errorf("auditrec: code %q", o.Code)
	}
	raw, err := macWord(o.RawMAC, o.RawDigest)
	if err != nil {
		return "", "", err
	}
	res, err := macWord(o.ResultMAC, o.ResultDigest)
	if err != nil {
		return "", "", err
	}
	tr, sp, err := traceWords(o.Trace)
	if err != nil {
		return "", "", err
	}
	var b strings.Builder
	b.Grow(len(o.ToolCallID) + len(raw) + len(res) + len(tr) + len(sp) + 48)
	for i, w := range []string{o.ToolCallID, ex, word(o.KeyID), raw, strconv.FormatInt(o.RawSize, 10), res,
		strconv.FormatInt(o.ResultSize, 10), strconv.Itoa(o.Redactions), strconv.Itoa(o.Handles), tr, sp} {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return "C " + st + " " + ev + " " + word(string(o.Code)), b.String(), nil
}

// Continuation is what an await_input or a continue body says of a call.
type Continuation struct {
	ToolCallID string
	Principal  string // continue: a PrincipalTag (hex)
	KeyID      string
	// TokenDigest (await_input) and InputDigest (continue) are hex HMACs;
	// TokenMAC and InputMAC, when set, the HMACs themselves in their place.
	TokenDigest, InputDigest string
	TokenMAC, InputMAC       []byte
	InputSize                int64 // continue
	Trace                    canonical.Trace
}

// The type letters of an await_input and a continue body.
const (
	AwaitType    = "W"
	ContinueType = "K"
)

// AwaitBody returns the body of an await_input event but its last word:
// the script appends a space and the end of the lease it sets (ms).
func AwaitBody(c Continuation) (string, error) {
	tok, err := macWord(c.TokenMAC, c.TokenDigest)
	if err != nil {
		return "", err
	}
	tr, sp, err := traceWords(c.Trace)
	if err != nil {
		return "", err
	}
	return strings.Join([]string{AwaitType, c.ToolCallID, word(c.KeyID), tok, tr, sp}, " "), nil
}

// ContinueBody returns the body of a continue event.
func ContinueBody(c Continuation) (string, error) {
	p, err := hexWord(c.Principal)
	if err != nil {
		return "", err
	}
	in, err := macWord(c.InputMAC, c.InputDigest)
	if err != nil {
		return "", err
	}
	tr, sp, err := traceWords(c.Trace)
	if err != nil {
		return "", err
	}
	return strings.Join([]string{ContinueType, c.ToolCallID, p, word(c.KeyID), in, strconv.FormatInt(c.InputSize, 10), tr, sp}, " "), nil
}

// AbandonBody returns the body of an abandon event.
func AbandonBody(toolCallID string) string { return "A " + toolCallID }

// CloseBody returns the body of a close event by the principal of tag.
func CloseBody(principalTag string) (string, error) {
	p, err := hexWord(principalTag)
	if err != nil {
		return "", err
	}
	return "X " + p, nil
}

// Decode reads one pending event of run runID as a script appended it.
func Decode(runID, e string) (canonical.AuditEvent, error) {
	var ev canonical.AuditEvent
	w := strings.Split(e, " ")
	if len(w) < 5 {
		return ev, fmt.Errorf("%w: %d words", ErrEvent, len(w))
	}
	seq, err := positive(w[0])
	if err != nil {
		return ev, fmt.Errorf("%w: sequence number: %v", ErrEvent, err)
	}
	ms, err := positive(w[1])
	if err != nil {
		return ev, fmt.Errorf("%w: time: %v", ErrEvent, err)
	}
	if !validGen(w[2]) {
		return ev, fmt.Errorf("%w: generation %q", ErrEvent, w[2])
	}
	ev = canonical.AuditEvent{RunID: runID, Gen: w[2], Seq: seq, Time: time.UnixMilli(ms).UTC()}
	body := w[3:]
	want := map[string]int{"B": 10, "R": 10, "C": 15, "A": 2, "X": 2, "W": 7, "K": 8}[body[0]]
	if want == 0 || len(body) != want {
		return ev, fmt.Errorf("%w: a %q body of %d words", ErrEvent, body[0], len(body))
	}
	r := reader{words: body}
	switch body[0] {
	case "B", "R":
		ev.Type = canonical.AuditBegin
		if body[0] == "R" {
			ev.Type, ev.Execution = canonical.AuditReplay, canonical.ExecutionReplayed
		}
		ev.ToolCallID, ev.Tool = r.id(1), r.id(2)
		ev.ToolVersion = r.opt(3)
		if ev.ToolVersion != "" && Definition(ev.ToolVersion) != ev.ToolVersion {
			r.fail("definition")
		}
		ev.Principal, ev.KeyID, ev.RequestDigest = r.hex(4, 32), r.opt(5), r.hex(6, 32)
		ev.RequestSize = r.size(7)
		ev.TraceID, ev.SpanID = r.hex(8, 16), r.hex(9, 8)
	case "C":
		ev.Type = canonical.AuditComplete
		ev.Status = canonical.Status(r.letter(1, statusLetters))
		ev.Evidence = canonical.Evidence(r.letter(2, evidenceLetters))
		ev.Code = canonical.Code(r.opt(3))
		if ev.Code != "" && !ev.Code.Valid() {
			r.fail("code")
		}
		ev.ToolCallID = r.id(4)
		ev.Execution = r.letter(5, executionLetters)
		ev.KeyID, ev.RawDigest, ev.RawSize = r.opt(6), r.hex(7, 32), r.size(8)
		ev.ResultDigest, ev.ResultSize = r.hex(9, 32), r.size(10)
		ev.Redactions, ev.Handles = int(r.size(11)), int(r.size(12))
		ev.TraceID, ev.SpanID = r.hex(13, 16), r.hex(14, 8)
	case "A":
		ev.Type, ev.ToolCallID = canonical.AuditAbandon, r.id(1)
		ev.Status, ev.Evidence, ev.Code = canonical.StatusError, canonical.EvidenceError, canonical.CodeExecutionAbandoned
	case "X":
		ev.Type, ev.Principal = canonical.AuditClose, r.hex(1, 32)
	case "W":
		ev.Type, ev.ToolCallID = canonical.AuditAwaitInput, r.id(1)
		ev.KeyID, ev.TokenDigest = r.opt(2), r.hex(3, 32)
		ev.TraceID, ev.SpanID = r.hex(4, 16), r.hex(5, 8)
		if ms := r.size(6); ms > 0 {
			ev.WaitUntil = time.UnixMilli(ms).UTC()
		}
	case "K":
		ev.Type, ev.ToolCallID, ev.Principal = canonical.AuditContinue, r.id(1), r.hex(2, 32)
		ev.KeyID, ev.InputDigest, ev.InputSize = r.opt(3), r.hex(4, 32), r.size(5)
		ev.TraceID, ev.SpanID = r.hex(6, 16), r.hex(7, 8)
	}
	if r.err != nil {
		return canonical.AuditEvent{}, r.err
	}
	if ev.KeyID != "" && (len(ev.KeyID) > 16 || canonical.ValidateToolCallID(ev.KeyID) != nil) {
		return canonical.AuditEvent{}, fmt.Errorf("%w: key id %q", ErrEvent, ev.KeyID)
	}
	return ev, nil
}

// reader reads the words of a body; the first fault is kept in err.
type reader struct {
	words []string
	err   error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrEvent, what)
	}
}

func (r *reader) id(i int) string {
	if canonical.ValidateToolCallID(r.words[i]) != nil {
		r.fail("id")
		return ""
	}
	return r.words[i]
}

func (r *reader) opt(i int) string {
	if r.words[i] == empty {
		return ""
	}
	if r.words[i] == "" {
		r.fail("empty word")
	}
	return r.words[i]
}

// hex reads a base64url word of n bytes as hex ("" for "-").
func (r *reader) hex(i, n int) string {
	w := r.words[i]
	if w == empty {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(w)
	if err != nil || len(b) != n || base64.RawURLEncoding.EncodeToString(b) != w {
		r.fail("digest")
		return ""
	}
	return hex.EncodeToString(b)
}

func (r *reader) size(i int) int64 {
	v, err := strconv.ParseInt(r.words[i], 10, 64)
	if err != nil || v < 0 || strconv.FormatInt(v, 10) != r.words[i] {
		r.fail("size")
	}
	return v
}

func (r *reader) letter(i int, letters map[string]string) string {
	for name, l := range letters {
		if l == r.words[i] {
			return name
		}
	}
	r.fail("letter")
	return ""
}

func positive(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || strconv.FormatInt(v, 10) != s {
		return 0, fmt.Errorf("%q is not a positive integer", s)
	}
	return v, nil
}

// validGen reports whether g is a generation: 11 base64url characters.
func validGen(g string) bool {
	if len(g) != 11 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(g)
	return err == nil
}

// Head is the head element of a run whose chain stands at h.
func Head(h canonical.AuditHead) string {
	if h.IsZero() {
		return Genesis
	}
	return "H " + h.Gen + " " + strconv.FormatInt(h.Seq, 10) + " " + h.Hash
}

// DecodeHead reads a head element.
func DecodeHead(s string) (canonical.AuditHead, error) {
	if s == Genesis {
		return canonical.AuditHead{}, nil
	}
	w := strings.Split(s, " ")
	if len(w) != 4 || w[0] != "H" || !validGen(w[1]) || len(w[3]) != 64 {
		return canonical.AuditHead{}, fmt.Errorf("auditrec: %q is no chain head", s)
	}
	seq, err := positive(w[2])
	if err != nil {
		return canonical.AuditHead{}, fmt.Errorf("auditrec: chain head: %v", err)
	}
	if _, err := hex.DecodeString(w[3]); err != nil || strings.ToLower(w[3]) != w[3] {
		return canonical.AuditHead{}, fmt.Errorf("auditrec: chain head: hash %q", w[3])
	}
	return canonical.AuditHead{Gen: w[1], Seq: seq, Hash: w[3]}, nil
}
