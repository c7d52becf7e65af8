package canonical_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/internal/storeimpl"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

func TestIdentityRules(t *testing.T) {
	good := []string{"a", "call_8f2k", "toolu_01ABCdef", "550e8400-e29b-41d4-a716-446655440000", "A.b-c_d", strings.Repeat("x", 128)}
	bad := []string{"", strings.Repeat("x", 129), "{a}", "a{", "a}", "a:b", "a b", "a\nb", "a\tb", "é", "aé", "_a", "-a", ".a", "a/b", "a*", "a\x00"}
	for _, id := range good {
		if err := canonical.ValidateToolCallID(id); err != nil {
			t.Errorf("tool_call_id %q refused: %v", id, err)
		}
		if err := canonical.ValidateRunID(id); err != nil {
			t.Errorf("run_id %q refused: %v", id, err)
		}
	}
	for _, id := range bad {
		if err := canonical.ValidateToolCallID(id); canonical.CodeOf(err) != canonical.CodeInvalidToolCallID {
			t.Errorf("tool_call_id %q: %v", id, err)
		}
		if err := canonical.ValidateRunID(id); canonical.CodeOf(err) != canonical.CodeInvalidRunID {
			t.Errorf("run_id %q: %v", id, err)
		}
	}
}

func TestKeyLayout(t *testing.T) {
	k, err := canonical.NewKeys("")
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Record("run-1", "call_1"); got != "tc:{run-1}:call:call_1" {
		t.Fatalf("record key %q", got)
	}
	if k.Run("run-1") != "tc:{run-1}:run" || k.Calls("run-1") != "tc:{run-1}:calls" || k.Live("run-1") != "tc:{run-1}:live" {
		t.Fatalf("run keys %q %q %q", k.Run("run-1"), k.Calls("run-1"), k.Live("run-1"))
	}
	// A tool_call_id named like a run key lives in the call: namespace.
	if k.Record("r", "run") == k.Run("r") || k.Record("r", "calls") == k.Calls("r") {
		t.Fatal("call ids collide with run keys")
	}
	if k2, err := canonical.NewKeys("app:prod.tc"); err != nil || k2.Run("r") != "app:prod.tc:{r}:run" {
		t.Fatalf("prefix with colon: %v %v", k2, err)
	}
	for _, p := range []string{"{x}", "a b", "a}", ":a", strings.Repeat("p", 65), "é"} {
		if _, err := canonical.NewKeys(p); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
			t.Errorf("prefix %q: %v", p, err)
		}
	}
}

func TestErrorsMatchByCode(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", canonical.Errorf(canonical.CodeDuplicateToolCall, "detail %d", 1))
	if !errors.Is(err, canonical.ErrDuplicateToolCall) || errors.Is(err, canonical.ErrNotFound) {
		t.Fatal("errors.Is by code")
	}
	if canonical.CodeOf(err) != canonical.CodeDuplicateToolCall || canonical.CodeOf(nil) != "" {
		t.Fatal("CodeOf")
	}
	if canonical.CodeOf(errors.New("dial tcp: refused")) != canonical.CodeStoreUnavailable {
		t.Fatal("an unclassified error must not look like success or a caller mistake")
	}
	cause := errors.New("cause")
	if w := canonical.Wrap(canonical.CodeStoreUnavailable, cause, "op"); !errors.Is(w, cause) || !strings.Contains(w.Error(), "op") {
		t.Fatalf("Wrap: %v", w)
	}
	if !canonical.CodeResultTooLarge.Valid() || canonical.Code("NOPE").Valid() {
		t.Fatal("Code.Valid")
	}
}

func TestLimitsDefaultsAndBounds(t *testing.T) {
	l := canonical.Limits{}.WithDefaults()
	if l != canonical.DefaultLimits {
		t.Fatalf("defaults %+v", l)
	}
	if l.MaxRecordBytes != 1<<20 || (canonical.Limits{MaxRecordBytes: 16 << 20}).Validate() != nil {
		t.Fatalf("a record is bounded at 1 MiB by default and may be allowed 16 MiB: %+v", l)
	}
	if l := (canonical.Limits{MaxRecordBytes: 100}).WithDefaults(); l.MaxResultBytes != 100 {
		t.Fatalf("result default must not exceed the record limit: %+v", l)
	}
	for _, bad := range []canonical.Limits{{MaxCallsPerRun: -1}, {MaxCallsPerTool: -1}, {MaxRunBytes: -1},
		{MaxRecordBytes: -1}, {MaxResultBytes: -1}, {MaxRecordBytes: canonical.MaxRecordBytesCeiling + 1}, {MaxRecordBytes: 16<<20 + 1},
		{MaxRecordBytes: 10, MaxResultBytes: 11}} {
		if err := bad.Validate(); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

func TestCompletionDigestSeparatesFields(t *testing.T) {
	a := canonical.Completion{Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Raw: []byte("ab"), Result: []byte("c")}
	b := a
	b.Raw, b.Result = []byte("a"), []byte("bc")
	if a.Digest() == b.Digest() {
		t.Fatal("moving bytes between raw and result must change the digest")
	}
	if a.Digest() != a.Digest() {
		t.Fatal("digest not deterministic")
	}
	// The digest is kept in records: its definition must not drift, or a
	// retry after an upgrade would no longer be recognised.
	if got, want := a.Digest(), canonical.RequestDigest([]byte("5:READY14:EVIDENCE_FOUND0:2:ab1:c")); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
}

func TestRecordJSONRoundTrip(t *testing.T) {
	rec := canonical.Record{
		RunID: "r", ToolCallID: "c", Tool: "kb.search", Status: canonical.StatusReady, Evidence: canonical.EvidenceFound,
		Request: []byte(`{"q":"<b>&"}`), RequestDigest: "d", Raw: []byte{0xff, 0x00, 'x'}, Result: []byte(`{"a": 1}`),
		Owner: "o", CreatedAt: time.UnixMilli(1000), UpdatedAt: time.UnixMilli(2000), TTL: 3 * time.Second,
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["raw_response_base64"]; !ok {
		t.Fatalf("binary raw not base64: %s", b)
	}
	if _, ok := m["agent_result_base64"]; !ok {
		t.Fatalf("non-compact result must be kept byte for byte (base64): %s", b)
	}
	var back canonical.Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Raw, rec.Raw) || !bytes.Equal(back.Result, rec.Result) || !bytes.Equal(back.Request, rec.Request) ||
		back.TTL != rec.TTL || !back.CreatedAt.Equal(rec.CreatedAt) || back.Status != rec.Status {
		t.Fatalf("round trip:\n%+v\n%+v", back, rec)
	}
}

// The export names its fields as the specs do: raw_response, agent_result,
// evidence_status, whatever the stores call them inside.
func TestRecordJSONUsesTheSpecNames(t *testing.T) {
	keys := func(rec canonical.Record) []string {
		t.Helper()
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(m))
	}
	ready := canonical.Record{
		RunID: "r", ToolCallID: "c", Tool: "kb.search", Status: canonical.StatusReady, Evidence: canonical.EvidenceFound,
		Request: []byte(`{"q":1}`), RequestDigest: "d", Raw: []byte(`{"hits":[]}`), Result: []byte(`{"evidence":[]}`),
		Owner: "o", CreatedAt: time.UnixMilli(1000), UpdatedAt: time.UnixMilli(2000), TTL: time.Second,
	}
	want := []string{"agent_result", "created_ms", "evidence_status", "owner", "raw_response", "request", "request_sha256",
		"run_id", "status", "tool", "tool_call_id", "ttl_ms", "updated_ms"}
	if got := keys(ready); !slices.Equal(got, want) {
		t.Fatalf("READY export keys %v, want %v", got, want)
	}
	// Bytes that are not compact JSON go as base64 under the same names.
	binary := ready
	binary.Raw, binary.Result = []byte{0xff}, []byte(`{"a": 1}`)
	want = []string{"agent_result_base64", "created_ms", "evidence_status", "owner", "raw_response_base64", "request",
		"request_sha256", "run_id", "status", "tool", "tool_call_id", "ttl_ms", "updated_ms"}
	if got := keys(binary); !slices.Equal(got, want) {
		t.Fatalf("binary export keys %v, want %v", got, want)
	}
	// An ERROR record: evidence_status ERROR, its code, raw kept, no result.
	failed := ready
	failed.Status, failed.Evidence, failed.Error, failed.Result = canonical.StatusError, canonical.EvidenceError, canonical.CodeProjectionFailed, nil
	b, err := json.Marshal(failed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"status":"ERROR","evidence_status":"ERROR","error":"PROJECTION_FAILED"`)) ||
		!bytes.Contains(b, []byte(`"raw_response":{"hits":[]}`)) || bytes.Contains(b, []byte(`agent_result`)) {
		t.Fatalf("ERROR export: %s", b)
	}
	var back canonical.Record
	if err := json.Unmarshal(b, &back); err != nil || back.Evidence != canonical.EvidenceError || string(back.Raw) != `{"hits":[]}` {
		t.Fatalf("ERROR export does not read back: %+v, %v", back, err)
	}
}

func TestIsJSONObjectIsStrict(t *testing.T) {
	for in, want := range map[string]bool{
		`{"q":"x"}`: true, ` {} `: true, `[]`: false, `"x"`: false, `{"a":`: false, `{} {}`: false,
		"{\"q\":\"\xff\"}": false, `{"q":"\ud800"}`: false, `{"q":1,"q":2}`: false, `{"q":1,"\u0071":2}`: false,
	} {
		if got := canonical.IsJSONObject([]byte(in)); got != want {
			t.Errorf("IsJSONObject(%q) = %v", in, got)
		}
	}
}

// Begin refuses every malformed request with one code, INVALID_ARGUMENT:
// what is not a JSON object as well as a JSON object that is not strict.
func TestBeginRequestStrictness(t *testing.T) {
	for in, want := range map[string]canonical.Code{
		`{"a":`: canonical.CodeInvalidArgument, `[1]`: canonical.CodeInvalidArgument, `{} {}`: canonical.CodeInvalidArgument, "": canonical.CodeInvalidArgument, "{\"q\":\"\xff\"}": canonical.CodeInvalidArgument,
		`{"q":"\udc00"}`: canonical.CodeInvalidArgument, `{"q":1,"q":1}`: canonical.CodeInvalidArgument, `{"q":"ok"}`: "",
	} {
		req := canonical.BeginRequest{RunID: "r", ToolCallID: "c", Tool: "t", Owner: "o", Request: []byte(in), TTL: time.Minute}
		_, err := storeimpl.ValidateBegin(&req, 0)
		if canonical.CodeOf(err) != want && !(want == "" && err == nil) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	c := canonical.Completion{RunID: "r", ToolCallID: "c", Owner: "o", Status: canonical.StatusReady, Evidence: canonical.EvidenceFound,
		Result: []byte("{\"m\":\"\xff\"}")}
	if err := c.Validate(); canonical.CodeOf(err) != canonical.CodeInvalidTransition {
		t.Errorf("READY with a result of invalid UTF-8: %v", err)
	}
}

func FuzzValidateToolCallID(f *testing.F) {
	for _, s := range []string{"call_1", "", "a{b", "toolu_01", "a:b", "é", strings.Repeat("a", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := canonical.ValidateToolCallID(id)
		valid := len(id) >= 1 && len(id) <= 128 && utf8.ValidString(id) && !strings.ContainsAny(id, "{}: \t\r\n")
		for i := 0; valid && i < len(id); i++ {
			c := id[i]
			valid = c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || (i > 0 && strings.IndexByte("_.-", c) >= 0))
		}
		if (err == nil) != valid {
			t.Fatalf("ValidateToolCallID(%q) = %v, model says valid=%v", id, err, valid)
		}
		if err == nil {
			k, _ := canonical.NewKeys("tc")
			if strings.Count(k.Record("run", id), "{") != 1 || strings.Count(k.Record("run", id), "}") != 1 {
				t.Fatalf("key %q has more than one hash tag", k.Record("run", id))
			}
		}
	})
}

func FuzzRecordJSON(f *testing.F) {
	f.Add([]byte(`{"a":1}`), []byte{0xff}, []byte(`{"x":"<&>"}`))
	f.Add([]byte(` {"a" : 1} `), []byte(`"raw"`), []byte(``))
	f.Add([]byte(`{"q":"\xff"}`), []byte(`{"a":1,"a":2}`), []byte(`{"m":"\ud800"}`))
	f.Add([]byte("{\"q\":\"\xff\"}"), []byte(`["\udc00"]`), []byte(`{"ok":true}`))
	f.Fuzz(func(t *testing.T, req, raw, result []byte) {
		rec := canonical.Record{RunID: "r", ToolCallID: "c", Request: req, Raw: raw, Result: result}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		// The export is strict JSON whatever the stored bytes: embedded
		// JSON with invalid UTF-8, a lone surrogate or a repeated name would
		// make readers disagree.
		if err := strictjson.Check(b, strictjson.MaxDepth+2); err != nil {
			t.Fatalf("export is not strict JSON (%v): %q", err, b)
		}
		var back canonical.Record
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		if !bytes.Equal(back.Request, req) || !bytes.Equal(back.Raw, raw) || !bytes.Equal(back.Result, result) {
			t.Fatalf("bytes changed across export:\nreq %q -> %q\nraw %q -> %q\nresult %q -> %q", req, back.Request, raw, back.Raw, result, back.Result)
		}
	})
}
