package pgsink_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolcanon/toolcanon/audit"
	"github.com/toolcanon/toolcanon/audit/pgsink"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/internal/pgtest"
	"golang.org/x/mod/sumdb/note"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func keys(t *testing.T) (note.Signer, note.Verifiers) {
	skey, vkey, err := audit.GenerateKey("pg.test")
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	verifier, _ := note.NewVerifier(vkey)
	return signer, note.VerifierList(verifier)
}

// work makes calls runs×calls lifecycles, a replay and a close per run.
func work(t *testing.T, s *memstore.Store, tag string, runs, calls int) int {
	n := 0
	for r := range runs {
		run := fmt.Sprintf("pg-%s-%d", tag, r)
		for c := range calls {
			id := fmt.Sprintf("c%d", c)
			req := canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "t", Owner: "o" + id, Principal: "p",
				Request: []byte(`{"q":1}`), TTL: time.Hour}
			if _, err := s.Begin(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Complete(context.Background(), canonical.Completion{RunID: run, ToolCallID: id, Owner: "o" + id,
				Status: canonical.StatusReady, Evidence: canonical.NoEvidence, Raw: []byte(`[]`), Result: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			n += 2
		}
		req := canonical.BeginRequest{RunID: run, ToolCallID: "c0", Tool: "t", Owner: "other", Principal: "p",
			Request: []byte(`{"q":1}`), TTL: time.Hour}
		if _, err := s.Begin(context.Background(), req); canonical.CodeOf(err) != canonical.CodeDuplicateToolCall {
			t.Fatal(err)
		}
		if err := s.CloseRun(context.Background(), run, "p"); err != nil {
			t.Fatal(err)
		}
		n += 2
	}
	return n
}

func TestSinkOncePerEvent(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Database(t)
	sink, err := pgsink.Open(ctx, dsn, pgsink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	s := memstore.New(memstore.WithAudit(canonical.AuditOptions{Key: bytes.Repeat([]byte{1}, 32), KeyID: "k"}))
	signer, verifiers := keys(t)
	x := &audit.Exporter{Source: s, Sink: sink, Signer: signer, Origin: "pg", RunsPerBatch: 3, EventsPerRun: 4}
	n := work(t, s, "a", 5, 6)
	for {
		rep, err := x.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Pending == 0 {
			break
		}
	}
	// A batch delivered again: the same events, another checkpoint.
	pend := []audit.Event{}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var count int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM toolcanon_audit_events").Scan(&count); err != nil || count != n {
		t.Fatalf("%d rows, want %d (%v)", count, n, err)
	}
	rows, _ := conn.Query(ctx, "SELECT run, gen, seq FROM toolcanon_audit_events ORDER BY run, gen, seq LIMIT 3")
	for rows.Next() {
		var e audit.Event
		rows.Scan(&e.RunID, &e.Gen, &e.Seq)
		pend = append(pend, e)
	}
	rows.Close()
	last, ok, err := sink.LastCheckpoint(ctx)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	cp := audit.Checkpoint{Origin: "pg", N: last.N + 1, Prev: last.Digest(), Time: time.Now().UTC().Truncate(time.Millisecond)}
	cp.Sign(signer)
	if err := sink.Write(ctx, pend, cp); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM toolcanon_audit_events").Scan(&count); err != nil || count != n {
		t.Fatalf("after a duplicate delivery: %d rows, want %d (%v)", count, n, err)
	}
	// A checkpoint number taken: the batch fails whole.
	if err := sink.Write(ctx, pend, cp); err == nil {
		t.Fatal("a checkpoint number written twice was accepted")
	}
	rep, err := sink.Verify(ctx, audit.VerifyOptions{Verifiers: verifiers})
	if err != nil || !rep.OK() || rep.Events != n || rep.Replays != 5 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	// Tampered rows are found.
	for _, c := range []struct{ stmt, want string }{
		{"UPDATE toolcanon_audit_events SET raw_size = raw_size + 1 WHERE seq = 2 AND run = 'pg-a-1'", "was changed"},
		{"DELETE FROM toolcanon_audit_events WHERE seq = 3 AND run = 'pg-a-2'", "missing"},
	} {
		if _, err := conn.Exec(ctx, c.stmt); err != nil {
			t.Fatal(err)
		}
		rep, err := sink.Verify(ctx, audit.VerifyOptions{Verifiers: verifiers})
		if err != nil || rep.OK() || !strings.Contains(strings.Join(rep.Problems, "\n"), c.want) {
			t.Fatalf("%s: %v %v", c.stmt, rep.Problems, err)
		}
	}
}

// A table made before continuations gains their columns, and a continued
// call's events are kept with them and verify; a continue row changed is
// told.
func TestContinuedCallInATableOfAnEarlierRelease(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Database(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The events table as the release before continuations made it.
	if _, err := conn.Exec(ctx, `CREATE TABLE toolcanon_audit_events (
  run text NOT NULL, gen text NOT NULL, seq bigint NOT NULL, time timestamptz NOT NULL,
  type text NOT NULL, call text NOT NULL, tool text NOT NULL, tool_version text NOT NULL, principal text NOT NULL,
  status text NOT NULL, evidence text NOT NULL, code text NOT NULL, execution text NOT NULL, key_id text NOT NULL,
  request_hmac text NOT NULL, request_size bigint NOT NULL, raw_hmac text NOT NULL, raw_size bigint NOT NULL,
  result_hmac text NOT NULL, result_size bigint NOT NULL, redactions bigint NOT NULL, handles bigint NOT NULL,
  trace_id text NOT NULL, span_id text NOT NULL, prev text NOT NULL, hash text NOT NULL, origin text NOT NULL,
  PRIMARY KEY (run, gen, seq))`); err != nil {
		t.Fatal(err)
	}
	sink, err := pgsink.Open(ctx, dsn, pgsink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	opts := canonical.AuditOptions{Key: bytes.Repeat([]byte{1}, 32), KeyID: "k"}
	s := memstore.New(memstore.WithAudit(opts))
	signer, verifiers := keys(t)
	x := &audit.Exporter{Source: s, Sink: sink, Signer: signer, Origin: "pg"}
	req := canonical.BeginRequest{RunID: "pg-cont", ToolCallID: "c1", Tool: "t", Owner: "o1", Principal: "p",
		Request: []byte(`{"q":1}`), TTL: time.Hour}
	if _, err := s.Begin(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AwaitInput(ctx, canonical.AwaitInput{RunID: "pg-cont", ToolCallID: "c1", Owner: "o1", Token: "tok",
		Wait: time.Minute}); err != nil {
		t.Fatal(err)
	}
	input := []byte(`{"ask":{"action":"accept"}}`)
	if _, err := s.ContinueCall(ctx, canonical.ContinueCall{RunID: "pg-cont", ToolCallID: "c1", Owner: "o2", Principal: "p",
		RequestDigest: canonical.RequestDigest(req.Request), Token: "tok", Lease: time.Minute, Input: input}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, canonical.Completion{RunID: "pg-cont", ToolCallID: "c1", Owner: "o2",
		Status: canonical.StatusReady, Evidence: canonical.NoEvidence, Raw: []byte(`[]`), Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if rep, err := x.Pass(ctx); err != nil || rep.Exported != 4 {
		t.Fatalf("pass: %+v %v", rep, err)
	}
	var tokenHMAC, inputHMAC string
	var wait, size int64
	if err := conn.QueryRow(ctx, `SELECT a.token_hmac, a.wait_until_ms, c.input_hmac, c.input_size
  FROM toolcanon_audit_events a, toolcanon_audit_events c WHERE a.type = 'await_input' AND c.type = 'continue'`).
		Scan(&tokenHMAC, &wait, &inputHMAC, &size); err != nil {
		t.Fatal(err)
	}
	if tokenHMAC != opts.Digest([]byte("tok")) || wait == 0 || inputHMAC != opts.Digest(input) || size != int64(len(input)) {
		t.Fatalf("rows: token %s until %d, input %s of %d", tokenHMAC, wait, inputHMAC, size)
	}
	rep, err := sink.Verify(ctx, audit.VerifyOptions{Verifiers: verifiers})
	if err != nil || !rep.OK() || rep.Events != 4 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	if _, err := conn.Exec(ctx, "UPDATE toolcanon_audit_events SET input_size = input_size + 1 WHERE type = 'continue'"); err != nil {
		t.Fatal(err)
	}
	rep, err = sink.Verify(ctx, audit.VerifyOptions{Verifiers: verifiers})
	if err != nil || rep.OK() || !strings.Contains(strings.Join(rep.Problems, "\n"), "was changed") {
		t.Fatalf("a continue row changed: %v %v", rep.Problems, err)
	}
}
