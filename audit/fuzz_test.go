package audit_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/audit"
	"github.com/toolcanon/toolcanon/canonical"
)

// seedLines are an event's and a checkpoint's lines, as a sink writes them.
func seedLines(f *testing.F) [][]byte {
	signer, _ := keys(f)
	e := audit.Event{AuditEvent: canonical.AuditEvent{RunID: "run-1", Gen: "AAECAwQFBgc", Seq: 1,
		Time: time.UnixMilli(1796321576928).UTC(), Type: canonical.AuditBegin, ToolCallID: "c1", Tool: "kb_search",
		ToolVersion: "kb.search@1.0.0", Principal: strings.Repeat("ab", 32), KeyID: "k1",
		RequestDigest: strings.Repeat("cd", 32), RequestSize: 53, TraceID: strings.Repeat("0f", 16), SpanID: strings.Repeat("1e", 8)}}
	if err := e.Chain(audit.Genesis); err != nil {
		f.Fatal(err)
	}
	line, err := e.MarshalCloudEvent("origin-1")
	if err != nil {
		f.Fatal(err)
	}
	cp := audit.Checkpoint{Origin: "origin-1", N: 1, Time: e.Time,
		Heads: []audit.Head{{RunID: e.RunID, Gen: e.Gen, Seq: 1, Hash: e.Hash}}}
	if err := cp.Sign(signer); err != nil {
		f.Fatal(err)
	}
	cpLine, err := cp.MarshalCloudEvent()
	if err != nil {
		f.Fatal(err)
	}
	out := [][]byte{line, cpLine}
	// A continued call's events: the fields of their types.
	for i, c := range []canonical.AuditEvent{
		{Type: canonical.AuditAwaitInput, ToolCallID: "c1", KeyID: "k1", TokenDigest: strings.Repeat("ef", 32),
			WaitUntil: e.Time.Add(time.Minute)},
		{Type: canonical.AuditContinue, ToolCallID: "c1", Principal: strings.Repeat("ab", 32), KeyID: "k1",
			InputDigest: strings.Repeat("12", 32), InputSize: 41},
	} {
		c.RunID, c.Gen, c.Seq, c.Time = e.RunID, e.Gen, int64(i+2), e.Time
		ce := audit.Event{AuditEvent: c}
		if err := ce.Chain(e.Hash); err != nil {
			f.Fatal(err)
		}
		l, err := ce.MarshalCloudEvent("origin-1")
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// FuzzParseLine: whatever a line holds, ParseLine returns an error or a
// line that writes back to one that parses to the same.
func FuzzParseLine(f *testing.F) {
	for _, l := range seedLines(f) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := audit.ParseLine(b)
		if err != nil {
			return
		}
		switch {
		case l.Event != nil:
			origin := ""
			if env := bytes.Index(b, []byte(`"source":"urn:toolcanon:audit:`)); env >= 0 {
				rest := b[env+len(`"source":"urn:toolcanon:audit:`):]
				origin = string(rest[:bytes.IndexByte(rest, '"')])
			}
			out, err := l.Event.MarshalCloudEvent(origin)
			if err != nil {
				t.Fatalf("an event that parsed does not marshal: %v", err)
			}
			again, err := audit.ParseLine(out)
			if err != nil || *again.Event != *l.Event {
				t.Fatalf("round trip: %v\n%+v\n%+v", err, l.Event, again.Event)
			}
		case l.Checkpoint != nil:
			cp, err := audit.ParseCheckpoint(l.Checkpoint.Note)
			if err != nil || cp.Text() != l.Checkpoint.Text() {
				t.Fatalf("a checkpoint that parsed does not parse again: %v", err)
			}
		default:
			t.Fatal("a line that is neither an event nor a checkpoint")
		}
	})
}

// FuzzParseCheckpoint: a note either fails to parse or is a checkpoint in
// its canonical form.
func FuzzParseCheckpoint(f *testing.F) {
	signer, _ := keys(f)
	cp := audit.Checkpoint{Origin: "o", N: 2, Prev: strings.Repeat("0", 64), Time: time.UnixMilli(5),
		Heads: []audit.Head{{RunID: "r", Gen: "g", Seq: 3, Hash: strings.Repeat("a", 64)}}}
	cp.Sign(signer)
	f.Add(cp.Note)
	f.Add([]byte("toolcanon audit checkpoint v1\norigin o\nn 1\nprev -\ntime 1\n\n— k abc\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := audit.ParseCheckpoint(b)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(b, []byte(c.Text())) || c.N < 1 || (c.N == 1) != (c.Prev == "") {
			t.Fatalf("parsed %+v from %q", c, b)
		}
	})
}
