package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// Event is an audit event as a sink keeps it: the transition a store
// recorded (canonical.AuditEvent) and its place in its stream's hash
// chain. Hash is SHA-256 over Prev and every field of the event (see
// ChainHash); Prev is the Hash of the event before it in the stream, 64
// zeros for a stream's first event (Seq 1).
type Event struct {
	canonical.AuditEvent
	Prev string // 64 hex digits
	Hash string // 64 hex digits
}

// Genesis is the Prev of a stream's first event.
var Genesis = hex.EncodeToString(make([]byte, sha256.Size))

// chainDomain starts every hashed event, so that no other SHA-256 input
// of this project is mistaken for one.
const chainDomain = "toolcanon audit event v1\n"

// fields returns the event's fields as the chain hashes and the JSON form
// names them, in that order: every field of canonical.AuditEvent, those of
// a continuation only in an event of its types (continuation).
func (e *Event) fields() [][2]string {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	f := [][2]string{
		{"run", e.RunID}, {"gen", e.Gen}, {"seq", i(e.Seq)}, {"time_ms", i(e.Time.UnixMilli())},
		{"type", string(e.Type)}, {"call", e.ToolCallID}, {"tool", e.Tool}, {"tool_version", e.ToolVersion},
		{"principal", e.Principal}, {"status", string(e.Status)}, {"evidence", string(e.Evidence)},
		{"code", string(e.Code)}, {"execution", e.Execution}, {"key_id", e.KeyID},
		{"request_hmac", e.RequestDigest}, {"request_size", i(e.RequestSize)},
		{"raw_hmac", e.RawDigest}, {"raw_size", i(e.RawSize)},
		{"result_hmac", e.ResultDigest}, {"result_size", i(e.ResultSize)},
		{"redactions", i(int64(e.Redactions))}, {"handles", i(int64(e.Handles))},
		{"trace_id", e.TraceID}, {"span_id", e.SpanID},
	}
	if continuation(e.Type) {
		f = append(f, [][2]string{
			{"token_hmac", e.TokenDigest}, {"wait_until_ms", i(unixMilli(e.WaitUntil))},
			{"input_hmac", e.InputDigest}, {"input_size", i(e.InputSize)},
		}...)
	}
	return f
}

// continuation reports whether t is a type of a continued call's events:
// await_input and continue. Only those have the fields token_hmac,
// wait_until_ms, input_hmac and input_size, so that the hash and JSON form
// of an event of another type are the same as before these types were.
func continuation(t canonical.AuditType) bool {
	return t == canonical.AuditAwaitInput || t == canonical.AuditContinue
}

// unixMilli is t in ms since the epoch, 0 for the zero time.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// ChainHash returns the hash the event must carry: the hex SHA-256 of
// "toolcanon audit event v1\n", the 32 bytes of Prev, then each field as
// its name, '=', its length in decimal, ':', its bytes and '\n', in the
// order of the JSON form (run, gen, seq, time_ms, type, call, tool,
// tool_version, principal, status, evidence, code, execution, key_id,
// request_hmac, request_size, raw_hmac, raw_size, result_hmac,
// result_size, redactions, handles, trace_id, span_id, and for await_input
// and continue then token_hmac, wait_until_ms, input_hmac, input_size),
// numbers in decimal. An event whose Prev is not 64 hex digits has no
// chain hash.
func (e *Event) ChainHash() (string, error) {
	prev, err := hex.DecodeString(e.Prev)
	if err != nil || len(prev) != sha256.Size || hex.EncodeToString(prev) != e.Prev {
		return "", fmt.Errorf("audit: prev %q is not 64 lowercase hex digits", e.Prev)
	}
	h := sha256.New()
	h.Write([]byte(chainDomain))
	h.Write(prev)
	var n [20]byte
	for _, f := range e.fields() {
		h.Write([]byte(f[0]))
		h.Write([]byte{'='})
		h.Write(strconv.AppendInt(n[:0], int64(len(f[1])), 10))
		h.Write([]byte{':'})
		h.Write([]byte(f[1]))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Chain sets e's Prev and Hash: prev is the Hash of the event before it in
// its stream (Genesis for the first).
func (e *Event) Chain(prev string) error {
	e.Prev = prev
	h, err := e.ChainHash()
	if err != nil {
		return err
	}
	e.Hash = h
	return nil
}

// ID is the event's name for good: run, generation and sequence number.
func (e *Event) ID() string { return e.RunID + "/" + e.Gen + "/" + strconv.FormatInt(e.Seq, 10) }

// CloudEvents: the envelope of every line a JSONL sink writes.
const (
	specVersion    = "1.0"
	typePrefix     = "io.github.toolcanon.audit."
	CheckpointType = typePrefix + "checkpoint" // a signed checkpoint's CloudEvents type
)

// envelope is a CloudEvents 1.0 event in its JSON format, with the data
// that follows its type.
type envelope struct {
	SpecVersion     string          `json:"specversion"`
	Type            string          `json:"type"`
	Source          string          `json:"source"`
	ID              string          `json:"id"`
	Time            string          `json:"time"`
	Subject         string          `json:"subject,omitempty"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data"`
}

// Source returns the CloudEvents source of an origin's events.
func Source(origin string) string { return "urn:toolcanon:audit:" + origin }

// MarshalCloudEvent returns the event as one CloudEvents JSON object of
// type io.github.toolcanon.audit.<type>, from origin: id the event's ID,
// subject its run, time its time, and data every field, Prev and Hash.
func (e *Event) MarshalCloudEvent(origin string) ([]byte, error) {
	var d bytes.Buffer
	d.WriteByte('{')
	for i, f := range e.fields() {
		if i > 0 {
			d.WriteByte(',')
		}
		writeMember(&d, f[0], f[1], isNumber(f[0]))
	}
	d.WriteByte(',')
	writeMember(&d, "prev", e.Prev, false)
	d.WriteByte(',')
	writeMember(&d, "hash", e.Hash, false)
	d.WriteByte('}')
	return json.Marshal(envelope{SpecVersion: specVersion, Type: typePrefix + string(e.Type), Source: Source(origin),
		ID: e.ID(), Time: e.Time.UTC().Format(timeFormat), Subject: e.RunID, DataContentType: "application/json",
		Data: d.Bytes()})
}

const timeFormat = "2006-01-02T15:04:05.000Z"

func isNumber(name string) bool {
	switch name {
	case "seq", "time_ms", "request_size", "raw_size", "result_size", "redactions", "handles", "wait_until_ms", "input_size":
		return true
	}
	return false
}

func writeMember(b *bytes.Buffer, name, value string, number bool) {
	b.WriteByte('"')
	b.WriteString(name)
	b.WriteString(`":`)
	if number {
		b.WriteString(value)
		return
	}
	v, _ := json.Marshal(value)
	b.Write(v)
}

// eventData is the data of an event's CloudEvent.
type eventData struct {
	Run         string `json:"run"`
	Gen         string `json:"gen"`
	Seq         int64  `json:"seq"`
	TimeMs      int64  `json:"time_ms"`
	Type        string `json:"type"`
	Call        string `json:"call"`
	Tool        string `json:"tool"`
	ToolVersion string `json:"tool_version"`
	Principal   string `json:"principal"`
	Status      string `json:"status"`
	Evidence    string `json:"evidence"`
	Code        string `json:"code"`
	Execution   string `json:"execution"`
	KeyID       string `json:"key_id"`
	RequestHMAC string `json:"request_hmac"`
	RequestSize int64  `json:"request_size"`
	RawHMAC     string `json:"raw_hmac"`
	RawSize     int64  `json:"raw_size"`
	ResultHMAC  string `json:"result_hmac"`
	ResultSize  int64  `json:"result_size"`
	Redactions  int64  `json:"redactions"`
	Handles     int64  `json:"handles"`
	TraceID     string `json:"trace_id"`
	SpanID      string `json:"span_id"`
	TokenHMAC   string `json:"token_hmac"`
	WaitUntilMs int64  `json:"wait_until_ms"`
	InputHMAC   string `json:"input_hmac"`
	InputSize   int64  `json:"input_size"`
	Prev        string `json:"prev"`
	Hash        string `json:"hash"`
}

// dataMembers is how many members an event's data has: all of its type's,
// with prev and hash.
func dataMembers(t canonical.AuditType) int {
	if continuation(t) {
		return 30
	}
	return 26
}

// dataNames are the names of an event's data members, by whether the
// event is of a continuation's type.
var dataNames = func() map[bool]map[string]bool {
	out := map[bool]map[string]bool{}
	for _, t := range []canonical.AuditType{canonical.AuditBegin, canonical.AuditContinue} {
		m := map[string]bool{"prev": true, "hash": true}
		for _, f := range (&Event{AuditEvent: canonical.AuditEvent{Type: t}}).fields() {
			m[f[0]] = true
		}
		out[continuation(t)] = m
	}
	return out
}()

// ErrFormat is the error of a line that is not an audit CloudEvent.
var ErrFormat = errors.New("audit: not an audit event")

// Line is one line of a JSONL export: an event or a checkpoint.
type Line struct {
	Event      *Event      // nil for a checkpoint
	Checkpoint *Checkpoint // nil for an event
}

// ParseLine reads one CloudEvents JSON object as a JSONL sink writes it:
// strict JSON (no repeated member, no unknown member), every data member
// present, the envelope agreeing with the data. It does not check the
// chain or a checkpoint's signature (Verifier does).
func ParseLine(b []byte) (Line, error) {
	if !strictjson.ValidObject(b) {
		return Line{}, fmt.Errorf("%w: not one strict JSON object", ErrFormat)
	}
	var env envelope
	if err := decodeStrict(b, &env); err != nil {
		return Line{}, err
	}
	if env.SpecVersion != specVersion {
		return Line{}, fmt.Errorf("%w: specversion %q", ErrFormat, env.SpecVersion)
	}
	if env.Type == CheckpointType {
		var text string
		if env.DataContentType != "text/plain" || json.Unmarshal(env.Data, &text) != nil {
			return Line{}, fmt.Errorf("%w: a checkpoint's data is its note, as a JSON string", ErrFormat)
		}
		cp, err := ParseCheckpoint([]byte(text))
		if err != nil {
			return Line{}, err
		}
		if env.ID != cp.ID() || env.Source != Source(cp.Origin) || env.Time != cp.Time.UTC().Format(timeFormat) || env.Subject != "" {
			return Line{}, fmt.Errorf("%w: the envelope of checkpoint %d does not match its note", ErrFormat, cp.N)
		}
		return Line{Checkpoint: &cp}, nil
	}
	var d eventData
	if err := decodeStrict(env.Data, &d); err != nil {
		return Line{}, err
	}
	var members map[string]json.RawMessage
	t := canonical.AuditType(d.Type)
	if err := json.Unmarshal(env.Data, &members); err != nil || len(members) != dataMembers(t) {
		return Line{}, fmt.Errorf("%w: an event's data has every member of its type, once", ErrFormat)
	}
	for name := range members {
		if !dataNames[continuation(t)][name] {
			// encoding/json matches names regardless of case.
			return Line{}, fmt.Errorf("%w: data member %q", ErrFormat, name)
		}
	}
	e := Event{AuditEvent: canonical.AuditEvent{
		RunID: d.Run, Gen: d.Gen, Seq: d.Seq, Time: time.UnixMilli(d.TimeMs).UTC(), Type: canonical.AuditType(d.Type),
		ToolCallID: d.Call, Tool: d.Tool, ToolVersion: d.ToolVersion, Principal: d.Principal,
		Status: canonical.Status(d.Status), Evidence: canonical.Evidence(d.Evidence), Code: canonical.Code(d.Code),
		Execution: d.Execution, KeyID: d.KeyID, RequestDigest: d.RequestHMAC, RequestSize: d.RequestSize,
		RawDigest: d.RawHMAC, RawSize: d.RawSize, ResultDigest: d.ResultHMAC, ResultSize: d.ResultSize,
		Redactions: int(d.Redactions), Handles: int(d.Handles), TraceID: d.TraceID, SpanID: d.SpanID,
		TokenDigest: d.TokenHMAC, InputDigest: d.InputHMAC, InputSize: d.InputSize,
	}, Prev: d.Prev, Hash: d.Hash}
	if d.WaitUntilMs != 0 {
		e.WaitUntil = time.UnixMilli(d.WaitUntilMs).UTC()
	}
	if !e.Type.Valid() || env.Type != typePrefix+d.Type || env.ID != e.ID() || env.Subject != e.RunID ||
		env.Time != e.Time.Format(timeFormat) || env.DataContentType != "application/json" || d.Redactions != int64(e.Redactions) ||
		d.Handles != int64(e.Handles) {
		return Line{}, fmt.Errorf("%w: the envelope of %s does not match its data", ErrFormat, e.ID())
	}
	return Line{Event: &e}, nil
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return nil
}
