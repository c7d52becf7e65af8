package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// Record is the one canonical record of a tool call: the complete request, the
// complete raw response, the bounded agent result and the lifecycle, together.
// Raw is harness-only data: it is never shown to an agent.
type Record struct {
	RunID      string   // run that owns the call
	ToolCallID string   // the framework's id, exactly as given
	Tool       string   // agent-facing tool name
	Status     Status   // PROJECTING, READY or ERROR
	Evidence   Evidence // UNKNOWN while PROJECTING; EVIDENCE_FOUND or NO_EVIDENCE when READY; ERROR when ERROR
	Error      Code     // set only when Status is ERROR

	Request       []byte // complete canonical request, a JSON object
	RequestDigest string // hex SHA-256 of Request
	Raw           []byte // complete raw tool response; nil until completed (and when refused for size)
	Result        []byte // bounded agent-facing result JSON; set only when READY
	RequestLen    int    // bytes of the stored request, known even when Request was not read
	RawLen        int    // bytes of the stored raw response, known even when Raw was not read

	Owner      string        // token of the invocation that began the call
	CreatedAt  time.Time     // server time of Begin
	UpdatedAt  time.Time     // server time of the last transition
	LeaseUntil time.Time     // server time after which Abandon may close a PROJECTING record
	TTL        time.Duration // time left before the record expires, as of the read

	// Limits are the run's limits, as the Begin that returned this record
	// found them; other methods leave them zero (they belong to the run,
	// not to the record: see RunUsage).
	Limits Limits
	// RunSecret is the run's secret, returned by Begin only: the key with
	// which the boundary mints the run's handles. It is never exported
	// (MarshalJSON leaves it out) and never shown to an agent.
	RunSecret []byte
}

// RequestDigest returns the hex SHA-256 of a canonical request, as stored in
// Record.RequestDigest.
func RequestDigest(request []byte) string {
	sum := sha256.Sum256(request)
	return hex.EncodeToString(sum[:])
}

// Size returns the bytes a record counts against MaxRecordBytes and
// MaxRunBytes: request, raw and result, also when the payloads were not read.
func (r *Record) Size() int64 {
	return int64(max(len(r.Request), r.RequestLen) + max(len(r.Raw), r.RawLen) + len(r.Result))
}

// Referencable reports whether the record may be cited as evidence: READY with
// an evidence status a READY record may carry.
func (r *Record) Referencable() bool { return r.Status == StatusReady && r.Evidence.Ready() }

// recordJSON is the export. Its names are the specs' (raw_response,
// agent_result, evidence_status), whatever a store calls the fields inside.
type recordJSON struct {
	RunID         string          `json:"run_id"`
	ToolCallID    string          `json:"tool_call_id"`
	Tool          string          `json:"tool"`
	Status        Status          `json:"status"`
	Evidence      Evidence        `json:"evidence_status"`
	Error         Code            `json:"error,omitempty"`
	Request       json.RawMessage `json:"request,omitempty"`
	RequestBase64 string          `json:"request_base64,omitempty"`
	RequestDigest string          `json:"request_sha256,omitempty"`
	Raw           json.RawMessage `json:"raw_response,omitempty"`
	RawBase64     string          `json:"raw_response_base64,omitempty"`
	Result        json.RawMessage `json:"agent_result,omitempty"`
	ResultBase64  string          `json:"agent_result_base64,omitempty"`
	Owner         string          `json:"owner,omitempty"`
	CreatedMs     int64           `json:"created_ms"`
	UpdatedMs     int64           `json:"updated_ms"`
	TTLMs         int64           `json:"ttl_ms"`
	LeaseMs       int64           `json:"lease_until_ms,omitempty"`
}

// MarshalJSON encodes the record as one JSON object, with the specs' names:
// "request", "raw_response", "agent_result", "status", "evidence_status".
// Each payload is embedded as JSON when that keeps it byte for byte, else as
// base64 under the name with "_base64" appended ("raw_response_base64"), so
// that no byte of it is lost or rewritten.
func (r Record) MarshalJSON() ([]byte, error) {
	j := recordJSON{
		RunID: r.RunID, ToolCallID: r.ToolCallID, Tool: r.Tool, Status: r.Status,
		Evidence: r.Evidence, Error: r.Error, RequestDigest: r.RequestDigest, Owner: r.Owner,
		CreatedMs: r.CreatedAt.UnixMilli(), UpdatedMs: r.UpdatedAt.UnixMilli(), TTLMs: r.TTL.Milliseconds(),
	}
	if !r.LeaseUntil.IsZero() {
		j.LeaseMs = r.LeaseUntil.UnixMilli()
	}
	j.Request, j.RequestBase64 = jsonOrBase64(r.Request)
	j.Raw, j.RawBase64 = jsonOrBase64(r.Raw)
	j.Result, j.ResultBase64 = jsonOrBase64(r.Result)
	// No HTML escaping: embedded JSON must come out byte for byte.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(j); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (r *Record) UnmarshalJSON(b []byte) error {
	var j recordJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Record{
		RunID: j.RunID, ToolCallID: j.ToolCallID, Tool: j.Tool, Status: j.Status,
		Evidence: j.Evidence, Error: j.Error, RequestDigest: j.RequestDigest, Owner: j.Owner,
		CreatedAt: time.UnixMilli(j.CreatedMs), UpdatedAt: time.UnixMilli(j.UpdatedMs),
		TTL: time.Duration(j.TTLMs) * time.Millisecond,
	}
	if j.LeaseMs != 0 {
		r.LeaseUntil = time.UnixMilli(j.LeaseMs)
	}
	var err error
	if r.Request, err = fromJSONOrBase64(j.Request, j.RequestBase64); err != nil {
		return err
	}
	if r.Raw, err = fromJSONOrBase64(j.Raw, j.RawBase64); err != nil {
		return err
	}
	if r.Result, err = fromJSONOrBase64(j.Result, j.ResultBase64); err != nil {
		return err
	}
	return nil
}

// jsonOrBase64 embeds b as JSON when every encoder keeps it byte for byte:
// compact strict JSON (so never invalid UTF-8, a lone surrogate or a
// repeated name) without the characters encoding/json escapes when it
// compacts embedded JSON (<, >, &, U+2028, U+2029). Anything else goes as
// base64, so an export never loses or rewrites a stored byte and is itself
// strict JSON.
func jsonOrBase64(b []byte) (json.RawMessage, string) {
	if len(b) == 0 {
		return nil, ""
	}
	if strictjson.Valid(b) && !bytes.ContainsAny(b, "<>&\u2028\u2029") {
		var c bytes.Buffer
		if json.Compact(&c, b) == nil && bytes.Equal(c.Bytes(), b) {
			return json.RawMessage(b), ""
		}
	}
	return nil, base64.StdEncoding.EncodeToString(b)
}

func fromJSONOrBase64(j json.RawMessage, b64 string) ([]byte, error) {
	if len(j) > 0 {
		return []byte(j), nil
	}
	if b64 == "" {
		return nil, nil
	}
	return base64.StdEncoding.DecodeString(b64)
}
