package auditrec_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/auditrec"
	"github.com/toolcanon/toolcanon/lua"
)

const (
	gen    = "AAECAwQFBgc"
	digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	tag    = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
)

var trace = canonical.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"}

// element is what a script appends: sequence number, time and generation
// before Go's body.
func element(seq, ms, body string) string { return seq + " " + ms + " " + gen + " " + body }

func TestRoundTrip(t *testing.T) {
	b, err := auditrec.BeginBody(auditrec.Call{ToolCallID: "toolu_01", Tool: "search_docs", Definition: "kb.search@1.0.0",
		Principal: tag, KeyID: "k1", RequestDigest: digest, RequestSize: 53, Trace: trace}, false)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := auditrec.Decode("run-1", element("1", "1796321576928", b))
	if err != nil {
		t.Fatal(err)
	}
	want := canonical.AuditEvent{RunID: "run-1", Gen: gen, Seq: 1, Time: time.UnixMilli(1796321576928).UTC(),
		Type: canonical.AuditBegin, ToolCallID: "toolu_01", Tool: "search_docs", ToolVersion: "kb.search@1.0.0",
		Principal: tag, KeyID: "k1", RequestDigest: digest, RequestSize: 53, TraceID: trace.TraceID, SpanID: trace.SpanID}
	if ev != want {
		t.Fatalf("begin:\n got %+v\nwant %+v", ev, want)
	}

	c, err := auditrec.CompleteBody(auditrec.Outcome{ToolCallID: "toolu_01", Status: canonical.StatusError,
		Evidence: canonical.EvidenceError, Code: canonical.CodeExecutionFailed, Execution: canonical.ExecutionNotRun,
		KeyID: "k1", RawDigest: digest, RawSize: 7, Redactions: 2, Handles: 1})
	if err != nil {
		t.Fatal(err)
	}
	ev, err = auditrec.Decode("run-1", element("2", "1796321576930", c))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != canonical.AuditComplete || ev.Status != canonical.StatusError || ev.Code != canonical.CodeExecutionFailed ||
		ev.Execution != canonical.ExecutionNotRun || ev.RawDigest != digest || ev.RawSize != 7 || ev.ResultDigest != "" ||
		ev.Redactions != 2 || ev.Handles != 1 || ev.TraceID != "" || ev.Seq != 2 {
		t.Fatalf("complete: %+v", ev)
	}

	ev, err = auditrec.Decode("run-1", element("3", "1796321576931", auditrec.AbandonBody("toolu_02")))
	if err != nil || ev.Type != canonical.AuditAbandon || ev.Code != canonical.CodeExecutionAbandoned || ev.ToolCallID != "toolu_02" {
		t.Fatalf("abandon: %+v %v", ev, err)
	}
	x, err := auditrec.CloseBody(tag)
	if err != nil {
		t.Fatal(err)
	}
	ev, err = auditrec.Decode("run-1", element("4", "1796321576932", x))
	if err != nil || ev.Type != canonical.AuditClose || ev.Principal != tag {
		t.Fatalf("close: %+v %v", ev, err)
	}

	w, err := auditrec.AwaitBody(auditrec.Continuation{ToolCallID: "toolu_03", KeyID: "k1", TokenDigest: digest, Trace: trace})
	if err != nil {
		t.Fatal(err)
	}
	ev, err = auditrec.Decode("run-1", element("5", "1796321576933", w+" 1796322176933"))
	want = canonical.AuditEvent{RunID: "run-1", Gen: gen, Seq: 5, Time: time.UnixMilli(1796321576933).UTC(),
		Type: canonical.AuditAwaitInput, ToolCallID: "toolu_03", KeyID: "k1", TokenDigest: digest,
		WaitUntil: time.UnixMilli(1796322176933).UTC(), TraceID: trace.TraceID, SpanID: trace.SpanID}
	if err != nil || ev != want {
		t.Fatalf("await_input: %v\n got %+v\nwant %+v", err, ev, want)
	}
	k, err := auditrec.ContinueBody(auditrec.Continuation{ToolCallID: "toolu_03", Principal: tag, KeyID: "k1",
		InputDigest: digest, InputSize: 41})
	if err != nil {
		t.Fatal(err)
	}
	ev, err = auditrec.Decode("run-1", element("6", "1796321576990", k))
	want = canonical.AuditEvent{RunID: "run-1", Gen: gen, Seq: 6, Time: time.UnixMilli(1796321576990).UTC(),
		Type: canonical.AuditContinue, ToolCallID: "toolu_03", Principal: tag, KeyID: "k1", InputDigest: digest, InputSize: 41}
	if err != nil || ev != want {
		t.Fatalf("continue: %v\n got %+v\nwant %+v", err, ev, want)
	}
}

// A begin event of typical ids stays well under the 300 bytes an event
// may take in Redis.
func TestBodySize(t *testing.T) {
	b, _ := auditrec.BeginBody(auditrec.Call{ToolCallID: "toolu_01ABCDEFGHIJKLMNOPQRSTUVWX", Tool: "search_docs",
		Definition: "kb.search@1.0.0", Principal: tag, KeyID: "2026-12", RequestDigest: digest, RequestSize: 53, Trace: trace}, false)
	if e := element("17", "1796321576928", b); len(e) > 230 {
		t.Fatalf("a begin event is %d bytes: %s", len(e), e)
	}
}

func TestRefused(t *testing.T) {
	ok, _ := auditrec.BeginBody(auditrec.Call{ToolCallID: "c", Tool: "t", Principal: tag, KeyID: "k", RequestDigest: digest, RequestSize: 1}, false)
	for _, e := range []string{
		"", "1 2", element("0", "1", ok), element("01", "1", ok), element("1", "-5", ok),
		"1 1 short " + ok, element("1", "1", ok+" extra"), element("1", "1", strings.Replace(ok, " 1 ", " -1 ", 1)),
		element("1", "1", strings.Replace(ok, "B c", "B c/d", 1)), element("1", "1", "Z c"),
		element("1", "1", "C R F - c q k - 0 - 0 0 0 - -"), element("1", "1", "C R F NOPE c e k - 0 - 0 0 0 - -"),
		element("1", "1", "X AAAA"),
		element("1", "1", "W c k - - -"), element("1", "1", "W c k - - - -1"), element("1", "1", "W c k AAAA - - 5"),
		element("1", "1", "K c - k - x - -"), element("1", "1", "K c - k - 0 - - 9"),
	} {
		if _, err := auditrec.Decode("run", e); !errors.Is(err, auditrec.ErrEvent) {
			t.Errorf("Decode(%q) = %v, want ErrEvent", e, err)
		}
	}
	if _, err := auditrec.BeginBody(auditrec.Call{ToolCallID: "c", Tool: "t", Principal: "XYZ"}, false); err == nil {
		t.Error("a principal that is not hex was encoded")
	}
	if d := auditrec.Definition("kb search@1"); d != "" {
		t.Errorf("a definition with a space is kept: %q", d)
	}
}

// The scripts keep the overflow head and the type letters as this
// package does.
func TestScriptsAgree(t *testing.T) {
	lib := lua.Source("complete.lua") + lua.Source("begin.lua")
	for _, want := range []string{"'" + auditrec.OverflowHead + "'", "'" + auditrec.BeginType + " '", "'" + auditrec.ReplayType + " '"} {
		if !strings.Contains(lib, want) {
			t.Errorf("the scripts do not hold %s", want)
		}
	}
}

func TestHead(t *testing.T) {
	for _, h := range []canonical.AuditHead{{}, {Gen: gen, Seq: 41, Hash: digest}} {
		got, err := auditrec.DecodeHead(auditrec.Head(h))
		if err != nil || got != h {
			t.Errorf("head %+v: %+v %v", h, got, err)
		}
	}
	for _, s := range []string{"", "H", "H " + gen + " 0 " + digest, "H " + gen + " 1 " + strings.ToUpper(digest)} {
		if _, err := auditrec.DecodeHead(s); err == nil {
			t.Errorf("DecodeHead(%q) accepted", s)
		}
	}
}

// FuzzDecode: whatever an element holds, Decode returns an event whose
// body encodes back to the element, or an error; never a panic.
func FuzzDecode(f *testing.F) {
	b, _ := auditrec.BeginBody(auditrec.Call{ToolCallID: "toolu_01", Tool: "t", Definition: "d@1", Principal: tag,
		KeyID: "k1", RequestDigest: digest, RequestSize: 53, Trace: trace}, true)
	c, _ := auditrec.CompleteBody(auditrec.Outcome{ToolCallID: "c1", Status: canonical.StatusReady, Evidence: canonical.EvidenceFound,
		Execution: canonical.ExecutionExecuted, KeyID: "k1", RawDigest: digest, RawSize: 9, ResultDigest: digest, ResultSize: 4})
	x, _ := auditrec.CloseBody(tag)
	w, _ := auditrec.AwaitBody(auditrec.Continuation{ToolCallID: "c3", KeyID: "k1", TokenDigest: digest, Trace: trace})
	k, _ := auditrec.ContinueBody(auditrec.Continuation{ToolCallID: "c3", Principal: tag, KeyID: "k1", InputDigest: digest, InputSize: 7})
	for _, e := range []string{element("1", "17", b), element("2", "18", c), element("3", "19", "A c2"), element("4", "20", x),
		element("5", "21", w+" 600021"), element("6", "22", k)} {
		f.Add(e)
	}
	f.Fuzz(func(t *testing.T, e string) {
		ev, err := auditrec.Decode("run", e)
		if err != nil {
			return
		}
		if ev.Seq <= 0 || !ev.Type.Valid() || ev.RunID != "run" {
			t.Fatalf("decoded %+v from %q", ev, e)
		}
		var body string
		switch ev.Type {
		case canonical.AuditBegin, canonical.AuditReplay:
			body, err = auditrec.BeginBody(auditrec.Call{ToolCallID: ev.ToolCallID, Tool: ev.Tool, Definition: ev.ToolVersion,
				Principal: ev.Principal, KeyID: ev.KeyID, RequestDigest: ev.RequestDigest, RequestSize: ev.RequestSize,
				Trace: canonical.Trace{TraceID: ev.TraceID, SpanID: ev.SpanID}}, ev.Type == canonical.AuditReplay)
		case canonical.AuditComplete:
			body, err = auditrec.CompleteBody(auditrec.Outcome{ToolCallID: ev.ToolCallID, Status: ev.Status, Evidence: ev.Evidence,
				Code: ev.Code, Execution: ev.Execution, KeyID: ev.KeyID, RawDigest: ev.RawDigest, RawSize: ev.RawSize,
				ResultDigest: ev.ResultDigest, ResultSize: ev.ResultSize, Redactions: ev.Redactions, Handles: ev.Handles,
				Trace: canonical.Trace{TraceID: ev.TraceID, SpanID: ev.SpanID}})
		case canonical.AuditAbandon:
			body = auditrec.AbandonBody(ev.ToolCallID)
		case canonical.AuditClose:
			body, err = auditrec.CloseBody(ev.Principal)
		case canonical.AuditAwaitInput:
			body, err = auditrec.AwaitBody(auditrec.Continuation{ToolCallID: ev.ToolCallID, KeyID: ev.KeyID,
				TokenDigest: ev.TokenDigest, Trace: canonical.Trace{TraceID: ev.TraceID, SpanID: ev.SpanID}})
			until := int64(0)
			if !ev.WaitUntil.IsZero() {
				until = ev.WaitUntil.UnixMilli()
			}
			body += " " + strconv.FormatInt(until, 10)
		case canonical.AuditContinue:
			body, err = auditrec.ContinueBody(auditrec.Continuation{ToolCallID: ev.ToolCallID, Principal: ev.Principal,
				KeyID: ev.KeyID, InputDigest: ev.InputDigest, InputSize: ev.InputSize,
				Trace: canonical.Trace{TraceID: ev.TraceID, SpanID: ev.SpanID}})
		}
		if err != nil {
			t.Fatalf("%+v does not encode: %v", ev, err)
		}
		w := strings.SplitN(e, " ", 4)
		if w[3] != body {
			t.Fatalf("decoded %q, encodes back to %q", w[3], body)
		}
	})
}
