package storetest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

var testAuditOptions = canonical.AuditOptions{Key: bytes.Repeat([]byte{7}, 32), KeyID: "suite"}

// audited returns an audited harness and its store as an AuditSource.
func audited(t *testing.T, f Factory, opts canonical.AuditOptions) (Harness, canonical.AuditSource) {
	t.Helper()
	h := f(t).Audited(t, opts)
	if h.AllKeys != nil {
		t.Cleanup(func() { assertEveryKeyHasTTL(t, h) })
	}
	src, ok := h.Store.(canonical.AuditSource)
	if !ok {
		t.Fatalf("%T has audit on but is no canonical.AuditSource", h.Store)
	}
	return h, src
}

// pendingOf reads every pending event of run.
func pendingOf(t *testing.T, src canonical.AuditSource, run string) canonical.AuditPending {
	t.Helper()
	p, err := src.AuditRead(ctx(), []string{run}, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return p[0]
}

// pendingRuns lists every run with pending events.
func pendingRuns(t *testing.T, src canonical.AuditSource) []string {
	t.Helper()
	var out []string
	if err := src.AuditRuns(ctx(), 2, func(runs []string) error {
		if len(runs) > 2 {
			return fmt.Errorf("a batch of %d runs, asked for 2", len(runs))
		}
		out = append(out, runs...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// ackAll acknowledges every pending event of run, chained with made-up
// hashes, and returns the head.
func ackAll(t *testing.T, src canonical.AuditSource, p canonical.AuditPending) canonical.AuditHead {
	t.Helper()
	last := p.Events[len(p.Events)-1]
	to := canonical.AuditHead{Gen: last.Gen, Seq: last.Seq, Hash: strings.Repeat(fmt.Sprintf("%x", last.Seq%16), 64)}
	ok, err := src.AuditAck(ctx(), p.RunID, p.Head, len(p.Events), to)
	if err != nil || !ok {
		t.Fatalf("ack of %d events of %s: %v %v", len(p.Events), p.RunID, ok, err)
	}
	return to
}

func testAudit(t *testing.T, f Factory) {
	t.Run("AnEventPerTransition", func(t *testing.T) {
		h, src := audited(t, f, testAuditOptions)
		s, run := h.Store, newRunID(t)
		tr := canonical.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"}
		c := canonical.WithTrace(ctx(), tr)
		req := beginReq(run, "c1")
		req.Principal, req.Definition = "alice", "kb.search@1.0.0"
		if _, err := s.Begin(c, req); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Begin(c, req); err != nil { // a retry: no event
			t.Fatal(err)
		}
		done := ready(run, "c1", canonical.EvidenceFound)
		done.Redactions, done.Handles = 2, nil
		for range 2 { // the second a retry: no event
			if _, err := s.Complete(c, done); err != nil {
				t.Fatal(err)
			}
		}
		dup := req
		dup.Owner = "owner-other"
		if _, err := s.Begin(c, dup); canonical.CodeOf(err) != canonical.CodeDuplicateToolCall {
			t.Fatalf("duplicate: %v", err)
		}
		req2 := beginReq(run, "c2")
		req2.Principal = "alice"
		mustBegin(t, s, req2)
		fail := failed(run, "c2", canonical.CodeUpstreamUnavailable)
		fail.NotRun = true
		if _, err := s.Complete(c, fail); err != nil {
			t.Fatal(err)
		}
		req3 := beginReq(run, "c3")
		req3.Principal, req3.Lease = "alice", time.Millisecond
		mustBegin(t, s, req3)
		h.Wait(5 * time.Millisecond)
		if _, err := s.Abandon(ctx(), run, "c3"); err != nil {
			t.Fatal(err)
		}
		// A refusal appends nothing.
		other := beginReq(run, "c4")
		other.Principal = "mallory"
		if _, err := s.Begin(ctx(), other); canonical.CodeOf(err) != canonical.CodeRunForbidden {
			t.Fatalf("another principal: %v", err)
		}
		if err := s.CloseRun(ctx(), run, "alice"); err != nil {
			t.Fatal(err)
		}
		if err := s.CloseRun(ctx(), run, "alice"); err != nil { // closed already: no event
			t.Fatal(err)
		}
		p := pendingOf(t, src, run)
		if !p.Head.IsZero() {
			t.Fatalf("head %+v before any export", p.Head)
		}
		want := []canonical.AuditType{canonical.AuditBegin, canonical.AuditComplete, canonical.AuditReplay,
			canonical.AuditBegin, canonical.AuditComplete, canonical.AuditBegin, canonical.AuditAbandon, canonical.AuditClose}
		if len(p.Events) != len(want) {
			t.Fatalf("%d events, want %d: %+v", len(p.Events), len(want), p.Events)
		}
		for i, e := range p.Events {
			if e.Type != want[i] || e.Seq != int64(i+1) || e.Gen == "" || e.Gen != p.Events[0].Gen || e.RunID != run || e.Time.IsZero() {
				t.Fatalf("event %d: %+v, want a %s numbered %d of one stream", i, e, want[i], i+1)
			}
		}
		b, cm, rp, b2, f2, ab, cl := p.Events[0], p.Events[1], p.Events[2], p.Events[3], p.Events[4], p.Events[6], p.Events[7]
		tag := canonical.PrincipalTag("alice")
		reqDigest := testAuditOptions.Digest(req.Request)
		switch {
		case b.ToolCallID != "c1" || b.Tool != req.Tool || b.ToolVersion != "kb.search@1.0.0" || b.Principal != tag ||
			b.KeyID != "suite" || b.RequestDigest != reqDigest || b.RequestSize != int64(len(req.Request)) ||
			b.TraceID != tr.TraceID || b.SpanID != tr.SpanID:
			t.Fatalf("begin event %+v", b)
		case cm.Status != canonical.StatusReady || cm.Evidence != canonical.EvidenceFound || cm.Code != "" ||
			cm.Execution != canonical.ExecutionExecuted || cm.RawDigest != testAuditOptions.Digest(done.Raw) ||
			cm.RawSize != int64(len(done.Raw)) || cm.ResultDigest != testAuditOptions.Digest(done.Result) ||
			cm.ResultSize != int64(len(done.Result)) || cm.Redactions != 2 || cm.TraceID != tr.TraceID:
			t.Fatalf("complete event %+v", cm)
		case rp.Execution != canonical.ExecutionReplayed || rp.RequestDigest != reqDigest || rp.ToolCallID != "c1":
			t.Fatalf("replay event %+v", rp)
		case b2.TraceID != "" || b2.ToolVersion != "":
			t.Fatalf("begin event without a trace or a definition %+v", b2)
		case f2.Status != canonical.StatusError || f2.Code != canonical.CodeUpstreamUnavailable || f2.Execution != canonical.ExecutionNotRun ||
			f2.RawDigest != "" || f2.RawSize != 0:
			t.Fatalf("not run event %+v", f2)
		case ab.Code != canonical.CodeExecutionAbandoned || ab.ToolCallID != "c3" || ab.KeyID != "":
			t.Fatalf("abandon event %+v (no digest: no key id)", ab)
		case cl.Principal != tag || cl.ToolCallID != "" || cl.KeyID != "":
			t.Fatalf("close event %+v", cl)
		}
		for _, e := range p.Events {
			if strings.Contains(fmt.Sprintf("%+v", e), "q-c1") {
				t.Fatalf("an event holds a payload: %+v", e)
			}
		}
	})

	t.Run("ContinuedCall", func(t *testing.T) {
		h, src := audited(t, f, testAuditOptions)
		s, c, run := h.Store, h.continuer(t), newRunID(t)
		tr := canonical.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"}
		mustBegin(t, s, asPrincipal(beginReq(run, "c1"), alice))
		token := canonical.NewOwner()
		// The second a resent await: no event (the first's lease end is the
		// event's).
		var waiting canonical.Record
		for i := range 2 {
			rec, err := c.AwaitInput(canonical.WithTrace(ctx(), tr), awaitReq(run, "c1", token))
			if err != nil {
				t.Fatalf("AwaitInput: %v", err)
			}
			if i == 0 {
				waiting = rec
			}
		}
		next := canonical.NewOwner()
		cont := continueReq(run, "c1", next, token)
		cont.Input = []byte(`{"confirm":{"action":"accept","content":{"ok":true}}}`)
		for range 2 { // the second a resent continue: no event
			if _, err := c.ContinueCall(ctx(), cont); err != nil {
				t.Fatalf("ContinueCall: %v", err)
			}
		}
		// A refused continue appends nothing.
		if _, err := c.ContinueCall(ctx(), continueReq(run, "c1", canonical.NewOwner(), token)); canonical.CodeOf(err) != canonical.CodeToolCallInProgress {
			t.Fatalf("a continue of a taken token: %v", err)
		}
		done := ready(run, "c1", canonical.EvidenceFound)
		done.Owner = next
		mustComplete(t, s, done)

		p := pendingOf(t, src, run)
		want := []canonical.AuditType{canonical.AuditBegin, canonical.AuditAwaitInput, canonical.AuditContinue, canonical.AuditComplete}
		if len(p.Events) != len(want) {
			t.Fatalf("%d events, want %d: %+v", len(p.Events), len(want), p.Events)
		}
		for i, e := range p.Events {
			if e.Type != want[i] || e.Seq != int64(i+1) || e.Gen == "" || e.Gen != p.Events[0].Gen || e.RunID != run ||
				e.ToolCallID != "c1" || e.Time.IsZero() || !e.Type.Valid() {
				t.Fatalf("event %d: %+v, want a %s of c1 numbered %d of one stream", i, e, want[i], i+1)
			}
		}
		aw, co := p.Events[1], p.Events[2]
		switch {
		case aw.TokenDigest != testAuditOptions.Digest([]byte(token)) || aw.KeyID != "suite" ||
			!aw.WaitUntil.Equal(waiting.LeaseUntil) || aw.TraceID != tr.TraceID || aw.SpanID != tr.SpanID ||
			aw.Principal != "" || aw.InputDigest != "" || aw.InputSize != 0 || aw.RequestDigest != "" || aw.Status != "":
			t.Fatalf("await_input event %+v (the call waits until %v)", aw, waiting.LeaseUntil)
		case co.Principal != canonical.PrincipalTag(alice) || co.KeyID != "suite" ||
			co.InputDigest != testAuditOptions.Digest(cont.Input) || co.InputSize != int64(len(cont.Input)) ||
			co.TokenDigest != "" || !co.WaitUntil.IsZero() || co.TraceID != "":
			t.Fatalf("continue event %+v", co)
		}
		for _, e := range p.Events {
			if v := fmt.Sprintf("%+v", e); strings.Contains(v, token) || strings.Contains(v, next) || strings.Contains(v, "accept") ||
				strings.Contains(v, "state of c1") {
				t.Fatalf("an event holds a secret or a payload: %s", v)
			}
		}
	})

	t.Run("ContinuationPastTheBacklog", func(t *testing.T) {
		o := testAuditOptions
		o.MaxBacklog = 3
		h, src := audited(t, f, o)
		s, c, run := h.Store, h.continuer(t), newRunID(t)
		mustBegin(t, s, asPrincipal(beginReq(run, "c1"), alice))
		mustComplete(t, s, ready(run, "c1", canonical.NoEvidence))
		mustBegin(t, s, asPrincipal(beginReq(run, "c2"), alice))
		// The backlog is full (as in BacklogRefuses): the call already
		// begun still waits, is continued and completes, each with its
		// event; only a new call is refused.
		token, next := canonical.NewOwner(), canonical.NewOwner()
		if _, err := c.AwaitInput(ctx(), awaitReq(run, "c2", token)); err != nil {
			t.Fatalf("AwaitInput past the backlog: %v", err)
		}
		if _, err := c.ContinueCall(ctx(), continueReq(run, "c2", next, token)); err != nil {
			t.Fatalf("ContinueCall past the backlog: %v", err)
		}
		if _, err := s.Begin(ctx(), asPrincipal(beginReq(run, "c3"), alice)); canonical.CodeOf(err) != canonical.CodeAuditBacklog {
			t.Fatalf("begin past the backlog: %v, want AUDIT_BACKLOG", err)
		}
		done := ready(run, "c2", canonical.NoEvidence)
		done.Owner = next
		mustComplete(t, s, done)
		p := pendingOf(t, src, run)
		want := []canonical.AuditType{canonical.AuditBegin, canonical.AuditComplete, canonical.AuditBegin,
			canonical.AuditAwaitInput, canonical.AuditContinue, canonical.AuditComplete}
		if len(p.Events) != len(want) {
			t.Fatalf("%d events, want %d: %+v", len(p.Events), len(want), p.Events)
		}
		for i, e := range p.Events {
			if e.Type != want[i] || e.Seq != int64(i+1) {
				t.Fatalf("event %d: %+v, want a %s numbered %d", i, e, want[i], i+1)
			}
		}
		ackAll(t, src, p)
		mustBegin(t, s, asPrincipal(beginReq(run, "c3"), alice))
	})

	t.Run("AwaitAfterALossHasAStream", func(t *testing.T) {
		h, src := audited(t, f, testAuditOptions)
		if h.DropRunState == nil {
			return
		}
		s, c, run := h.Store, h.continuer(t), newRunID(t)
		mustBegin(t, s, asPrincipal(beginReq(run, "c1"), alice))
		p := pendingOf(t, src, run)
		ackAll(t, src, p)
		h.DropRunState(t, run)
		if _, err := c.AwaitInput(ctx(), awaitReq(run, "c1", canonical.NewOwner())); err != nil {
			t.Fatalf("AwaitInput after a loss: %v", err)
		}
		mustComplete(t, s, ready(run, "c1", canonical.NoEvidence))
		q := pendingOf(t, src, run)
		if len(q.Events) != 2 || q.Events[0].Type != canonical.AuditAwaitInput || q.Events[0].Seq != 1 ||
			q.Events[1].Seq != 2 || q.Events[1].Gen != q.Events[0].Gen || q.Events[0].Gen == p.Events[0].Gen {
			t.Fatalf("after a loss: %+v, want an await and a completion in a stream of their own from 1", q.Events)
		}
	})

	t.Run("Acknowledge", func(t *testing.T) {
		h, src := audited(t, f, testAuditOptions)
		s := h.Store
		runA, runB := newRunID(t), newRunID(t)+"b"
		for _, run := range []string{runA, runB} {
			for i := range 3 {
				id := fmt.Sprintf("c%d", i)
				mustBegin(t, s, beginReq(run, id))
				mustComplete(t, s, ready(run, id, canonical.NoEvidence))
			}
		}
		runs := pendingRuns(t, src)
		if len(runs) != 2 {
			t.Fatalf("pending runs %v, want 2", runs)
		}
		p := pendingOf(t, src, runA)
		// Acknowledge the first two: the rest stays, and a stale head is
		// refused.
		first := canonical.AuditHead{Gen: p.Events[1].Gen, Seq: 2, Hash: strings.Repeat("a", 64)}
		if ok, err := src.AuditAck(ctx(), runA, p.Head, 2, first); err != nil || !ok {
			t.Fatalf("ack: %v %v", ok, err)
		}
		if ok, err := src.AuditAck(ctx(), runA, p.Head, 2, first); err != nil || ok {
			t.Fatalf("an ack from a stale head: %v %v, want false", ok, err)
		}
		q := pendingOf(t, src, runA)
		if q.Head != first || len(q.Events) != 4 || q.Events[0].Seq != 3 {
			t.Fatalf("after the ack: head %+v, %d events from %d", q.Head, len(q.Events), q.Events[0].Seq)
		}
		ackAll(t, src, q)
		if r := pendingOf(t, src, runA); len(r.Events) != 0 {
			t.Fatalf("%d events left", len(r.Events))
		}
		if runs := pendingRuns(t, src); len(runs) != 1 || runs[0] != runB {
			t.Fatalf("pending runs %v, want only %s", runs, runB)
		}
		// A later event of the same run continues the kept head.
		mustBegin(t, s, beginReq(runA, "c9"))
		r := pendingOf(t, src, runA)
		if len(r.Events) != 1 || r.Events[0].Seq != 7 || r.Head.Seq != 6 {
			t.Fatalf("after more work: head %+v, events %+v", r.Head, r.Events)
		}
	})

	t.Run("Lease", func(t *testing.T) {
		_, src := audited(t, f, testAuditOptions)
		for i, c := range []struct {
			holder string
			want   bool
		}{{"a", true}, {"b", false}, {"a", true}} {
			got, err := src.AuditLease(ctx(), c.holder, time.Minute)
			if err != nil || got != c.want {
				t.Fatalf("lease %d by %s: %v %v, want %v", i, c.holder, got, err, c.want)
			}
		}
		st := canonical.AuditStatus{LastPass: time.UnixMilli(1796321576928), Exported: 5, Pending: 2,
			OldestEvent: time.UnixMilli(1796321570000)}
		if err := src.AuditReport(ctx(), st); err != nil {
			t.Fatal(err)
		}
		got, err := src.AuditStatus(ctx())
		if err != nil || !got.LastPass.Equal(st.LastPass) || !got.OldestEvent.Equal(st.OldestEvent) || got.Exported != 5 || got.Pending != 2 {
			t.Fatalf("status %+v %v", got, err)
		}
	})

	t.Run("BacklogRefuses", func(t *testing.T) {
		o := testAuditOptions
		o.MaxBacklog = 3
		h, src := audited(t, f, o)
		s, run := h.Store, newRunID(t)
		mustBegin(t, s, beginReq(run, "c1"))
		mustComplete(t, s, ready(run, "c1", canonical.NoEvidence))
		mustBegin(t, s, beginReq(run, "c2"))
		var before map[string]time.Duration
		if h.AllKeys != nil {
			before = h.AllKeys(t)
		}
		_, err := s.Begin(ctx(), beginReq(run, "c3"))
		if canonical.CodeOf(err) != canonical.CodeAuditBacklog {
			t.Fatalf("begin past the backlog: %v, want AUDIT_BACKLOG", err)
		}
		if h.AllKeys != nil && len(h.AllKeys(t)) != len(before) {
			t.Fatal("a refused begin wrote keys")
		}
		// The call in flight completes all the same.
		mustComplete(t, s, ready(run, "c2", canonical.NoEvidence))
		p := pendingOf(t, src, run)
		if len(p.Events) != 4 {
			t.Fatalf("%d events, want 4", len(p.Events))
		}
		ackAll(t, src, p)
		mustBegin(t, s, beginReq(run, "c3"))
	})

	t.Run("RetriesAndTakenIdsKeepNoBacklog", func(t *testing.T) {
		o := testAuditOptions
		o.MaxBacklog = 3
		h, _ := audited(t, f, o)
		s, run := h.Store, newRunID(t)
		mustBegin(t, s, beginReq(run, "c1"))
		for range 3 {
			mustBegin(t, s, beginReq(run, "c1")) // a retry counts nothing
			other := beginReq(run, "c1")
			other.Owner = "owner-other"
			if _, err := s.Begin(ctx(), other); canonical.CodeOf(err) != canonical.CodeToolCallInProgress {
				t.Fatalf("another owner's begin of a taken id: %v", err)
			}
		}
		mustBegin(t, s, beginReq(run, "c2"))
		mustComplete(t, s, ready(run, "c1", canonical.NoEvidence)) // as in BacklogRefuses: the backlog is full
		if _, err := s.Begin(ctx(), beginReq(run, "c3")); canonical.CodeOf(err) != canonical.CodeAuditBacklog {
			t.Fatalf("begin past the backlog: %v, want AUDIT_BACKLOG", err)
		}
	})

	t.Run("AbandonAfterALossHasAStream", func(t *testing.T) {
		h, src := audited(t, f, testAuditOptions)
		if h.DropRunState == nil {
			return
		}
		s, run := h.Store, newRunID(t)
		req := beginReq(run, "c1")
		req.Lease = time.Millisecond
		mustBegin(t, s, req)
		p := pendingOf(t, src, run)
		ackAll(t, src, p)
		h.DropRunState(t, run)
		h.Wait(5 * time.Millisecond)
		if _, err := s.Abandon(ctx(), run, "c1"); err != nil {
			t.Fatal(err)
		}
		mustBegin(t, s, beginReq(newRunID(t), "c1")) // another run: the lost one stays refused
		if _, err := s.Begin(ctx(), beginReq(run, "c2")); canonical.CodeOf(err) != canonical.CodeRunInactive {
			t.Fatalf("begin on the lost run: %v, want RUN_INACTIVE", err)
		}
		// Closing the lost run is no event of it: it was not open.
		if err := s.CloseRun(ctx(), run, ""); err != nil {
			t.Fatal(err)
		}
		q := pendingOf(t, src, run)
		if len(q.Events) != 1 || q.Events[0].Seq != 1 || q.Events[0].Gen == p.Events[0].Gen || q.Events[0].Type != canonical.AuditAbandon {
			t.Fatalf("after a loss: %+v, want one abandon in a stream of its own", q.Events)
		}
	})

	t.Run("LostStateHasAStream", func(t *testing.T) {
		h, src := audited(t, f, testAuditOptions)
		if h.DropRunState == nil {
			return
		}
		s, run := h.Store, newRunID(t)
		mustBegin(t, s, beginReq(run, "c1"))
		mustBegin(t, s, beginReq(run, "c2"))
		p := pendingOf(t, src, run)
		ackAll(t, src, p)
		h.DropRunState(t, run)
		mustComplete(t, s, ready(run, "c1", canonical.NoEvidence))
		mustComplete(t, s, ready(run, "c2", canonical.NoEvidence))
		q := pendingOf(t, src, run)
		if len(q.Events) != 2 || q.Events[0].Seq != 1 || q.Events[1].Seq != 2 || q.Events[0].Gen == p.Events[0].Gen {
			t.Fatalf("after a loss: %+v, want a stream of its own from 1", q.Events)
		}
	})
}
