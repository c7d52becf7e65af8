package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// BadIDs are identities every store must refuse.
var BadIDs = map[string]string{
	"empty":           "",
	"129 bytes":       "a" + strings.Repeat("b", 128),
	"open brace":      "call{1",
	"close brace":     "call}1",
	"colon":           "call:1",
	"space":           "call 1",
	"newline":         "call\n1",
	"tab":             "call\t1",
	"non-ASCII":       "call_é",
	"leading dash":    "-call",
	"leading dot":     ".call",
	"slash":           "call/1",
	"star":            "call*",
	"NUL":             "call\x001",
	"hash tag escape": "}{x",
}

func testBadInput(t *testing.T, f Factory) {
	t.Run("InvalidToolCallID", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		for name, id := range BadIDs {
			req := beginReq(run, "x")
			req.ToolCallID = id
			_, err := h.Store.Begin(ctx(), req)
			if canonical.CodeOf(err) != canonical.CodeInvalidToolCallID {
				t.Errorf("%s: got %v, want INVALID_TOOL_CALL_ID", name, err)
			}
			c := ready(run, "x", canonical.EvidenceFound)
			c.ToolCallID = id
			if _, err := h.Store.Complete(ctx(), c); canonical.CodeOf(err) != canonical.CodeInvalidToolCallID {
				t.Errorf("%s complete: got %v", name, err)
			}
			if _, err := h.Store.Get(ctx(), run, id); canonical.CodeOf(err) != canonical.CodeInvalidToolCallID {
				t.Errorf("%s get: got %v", name, err)
			}
		}
		assertNothingStored(t, h, run)
	})

	t.Run("InvalidRunID", func(t *testing.T) {
		h := f(t)
		for name, id := range BadIDs {
			req := beginReq(id, "x")
			_, err := h.Store.Begin(ctx(), req)
			if canonical.CodeOf(err) != canonical.CodeInvalidRunID {
				t.Errorf("%s: got %v, want INVALID_RUN_ID", name, err)
			}
			for op, err := range map[string]error{
				"close": h.Store.CloseRun(ctx(), id, ""),
				"usage": second(h.Store.Usage(ctx(), id)),
				"index": third(h.Store.Completed(ctx(), id, 10)),
				"get":   second(h.Store.Get(ctx(), id, "x")),
			} {
				if canonical.CodeOf(err) != canonical.CodeInvalidRunID {
					t.Errorf("%s %s: got %v, want INVALID_RUN_ID", name, op, err)
				}
			}
		}
	})

	t.Run("InvalidArguments", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		type mod func(*canonical.BeginRequest)
		cases := map[string]struct {
			m    mod
			code canonical.Code
		}{
			"zero TTL":            {func(r *canonical.BeginRequest) { r.TTL = 0 }, canonical.CodeInvalidArgument},
			"negative TTL":        {func(r *canonical.BeginRequest) { r.TTL = -time.Second }, canonical.CodeInvalidArgument},
			"sub-millisecond TTL": {func(r *canonical.BeginRequest) { r.TTL = time.Microsecond }, canonical.CodeInvalidArgument},
			"request is array":    {func(r *canonical.BeginRequest) { r.Request = []byte(`[1,2]`) }, canonical.CodeInvalidArgument},
			"request is string":   {func(r *canonical.BeginRequest) { r.Request = []byte(`"x"`) }, canonical.CodeInvalidArgument},
			"request is invalid":  {func(r *canonical.BeginRequest) { r.Request = []byte(`{"a":`) }, canonical.CodeInvalidArgument},
			"request is empty":    {func(r *canonical.BeginRequest) { r.Request = nil }, canonical.CodeInvalidArgument},
			"trailing data":       {func(r *canonical.BeginRequest) { r.Request = []byte(`{} {}`) }, canonical.CodeInvalidArgument},
			// A JSON object that is not strict JSON (readers would disagree
			// about what was stored) gets the same one code.
			"request invalid UTF-8":  {func(r *canonical.BeginRequest) { r.Request = []byte("{\"q\":\"\xff\"}") }, canonical.CodeInvalidArgument},
			"request lone surrogate": {func(r *canonical.BeginRequest) { r.Request = []byte(`{"q":"\ud800"}`) }, canonical.CodeInvalidArgument},
			"request repeated name":  {func(r *canonical.BeginRequest) { r.Request = []byte(`{"q":1,"\u0071":2}`) }, canonical.CodeInvalidArgument},
			"empty owner":            {func(r *canonical.BeginRequest) { r.Owner = "" }, canonical.CodeInvalidArgument},
			"owner with colon":       {func(r *canonical.BeginRequest) { r.Owner = "a:b" }, canonical.CodeInvalidArgument},
			"empty tool":             {func(r *canonical.BeginRequest) { r.Tool = "" }, canonical.CodeUnknownTool},
			"negative limit":         {func(r *canonical.BeginRequest) { r.Limits.MaxCallsPerRun = -1 }, canonical.CodeInvalidArgument},
			"result over record":     {func(r *canonical.BeginRequest) { r.Limits = canonical.Limits{MaxRecordBytes: 10, MaxResultBytes: 11} }, canonical.CodeInvalidArgument},
			// Times are kept as milliseconds since the epoch in fields of
			// fixed width: a lifetime past MaxTTL is refused, not overflowed.
			"TTL over MaxTTL":   {func(r *canonical.BeginRequest) { r.TTL = canonical.MaxTTL + time.Millisecond }, canonical.CodeInvalidArgument},
			"TTL of 260 years":  {func(r *canonical.BeginRequest) { r.TTL = 260 * 365 * 24 * time.Hour }, canonical.CodeInvalidArgument},
			"lease over MaxTTL": {func(r *canonical.BeginRequest) { r.TTL, r.Lease = canonical.MaxTTL, canonical.MaxTTL+time.Millisecond }, canonical.CodeInvalidArgument},
		}
		for name, c := range cases {
			req := beginReq(run, "x")
			c.m(&req)
			_, err := h.Store.Begin(ctx(), req)
			if canonical.CodeOf(err) != c.code {
				t.Errorf("%s: got %v, want %s", name, err, c.code)
			}
		}
		assertNothingStored(t, h, run, "x")
	})

	// The longest lifetime a store accepts is one it can keep: the record
	// is read, completed and read again with its times intact.
	t.Run("LongestTTL", func(t *testing.T) {
		h := f(t)
		run := newRunID(t)
		req := beginReq(run, "c1")
		req.TTL, req.Lease = canonical.MaxTTL, canonical.MaxTTL
		rec := mustBegin(t, h.Store, req)
		if rec.TTL <= canonical.MaxTTL-time.Minute || rec.TTL > canonical.MaxTTL {
			t.Fatalf("TTL %v, want about %v", rec.TTL, canonical.MaxTTL)
		}
		if got := mustGet(t, h.Store, run, "c1"); got.LeaseUntil.Sub(got.CreatedAt) != canonical.MaxTTL {
			t.Fatalf("lease %v after creation, want %v", got.LeaseUntil.Sub(got.CreatedAt), canonical.MaxTTL)
		}
		done := mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		if done.Status != canonical.StatusReady || done.TTL <= canonical.MaxTTL-time.Minute {
			t.Fatalf("completed: %+v", done)
		}
		if got := mustGet(t, h.Store, run, "c1"); got.Status != canonical.StatusReady || string(got.Result) != string(ready(run, "c1", canonical.EvidenceFound).Result) {
			t.Fatalf("read after completion: %+v", got)
		}
	})
}

func second[T any](_ T, err error) error { return err }

func third[T, U any](_ T, _ U, err error) error { return err }
