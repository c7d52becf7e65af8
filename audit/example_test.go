package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/toolcanon/toolcanon/audit"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"golang.org/x/mod/sumdb/note"
)

// memorySink is a Sink of one's own: an object store, a SIEM. It keeps
// each event once, by its ID, and its checkpoints in order.
type memorySink struct {
	events      map[string]audit.Event
	order       []string
	checkpoints []audit.Checkpoint
}

func (m *memorySink) Write(_ context.Context, events []audit.Event, cp audit.Checkpoint) error {
	for _, e := range events {
		if _, held := m.events[e.ID()]; held {
			continue // delivered again: stored once
		}
		m.events[e.ID()] = e
		m.order = append(m.order, e.ID())
	}
	m.checkpoints = append(m.checkpoints, cp)
	return nil // a real sink returns only once the batch is durable
}

func (m *memorySink) LastCheckpoint(context.Context) (audit.Checkpoint, bool, error) {
	if len(m.checkpoints) == 0 {
		return audit.Checkpoint{}, false, nil
	}
	return m.checkpoints[len(m.checkpoints)-1], true, nil
}

// A sink of one's own takes what the exporter drains from a store with
// audit on: every transition once, chained, with signed checkpoints.
func ExampleSink() {
	store := memstore.New(memstore.WithAudit(canonical.AuditOptions{
		Key: []byte("an operator's key of 32 bytes or more"), KeyID: "2026-12"}))
	ctx := context.Background()
	store.Begin(ctx, canonical.BeginRequest{RunID: "run-42", ToolCallID: "call_1", Tool: "search_docs",
		Owner: "o1", Principal: "alice", Request: []byte(`{"query":"refunds"}`), TTL: time.Hour})
	store.Complete(ctx, canonical.Completion{RunID: "run-42", ToolCallID: "call_1", Owner: "o1",
		Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Raw: []byte(`{"hits":3}`), Result: []byte(`{"n":3}`)})
	store.CloseRun(ctx, "run-42", "alice")

	skey, _, _ := audit.GenerateKey("audit.example.com")
	signer, _ := note.NewSigner(skey)
	sink := &memorySink{events: map[string]audit.Event{}}
	x := &audit.Exporter{Source: store, Sink: sink, Signer: signer, Origin: "example"}
	rep, err := x.Pass(ctx)
	fmt.Println(rep.Exported, "events exported", err)
	for _, id := range sink.order {
		e := sink.events[id]
		fmt.Println(e.Seq, e.Type, e.ToolCallID, e.Status, len(e.Hash))
	}
	fmt.Println("checkpoints:", len(sink.checkpoints))
	// Output:
	// 3 events exported <nil>
	// 1 begin call_1  64
	// 2 complete call_1 READY 64
	// 3 close   64
	// checkpoints: 1
}

// VerifyJSONL checks an export offline: the chain of every stream, the
// sequence numbers, the replays and the checkpoints' signatures.
func ExampleVerifyJSONL() {
	store := memstore.New(memstore.WithAudit(canonical.AuditOptions{
		Key: []byte("an operator's key of 32 bytes or more"), KeyID: "2026-12"}))
	ctx := context.Background()
	store.Begin(ctx, canonical.BeginRequest{RunID: "run-7", ToolCallID: "call_1", Tool: "t", Owner: "o",
		Request: []byte(`{}`), TTL: time.Hour})

	dir, _ := os.MkdirTemp("", "audit")
	defer os.RemoveAll(dir)
	sink, _ := audit.OpenJSONL(filepath.Join(dir, "export"), audit.JSONLOptions{})
	skey, vkey, _ := audit.GenerateKey("audit.example.com")
	signer, _ := note.NewSigner(skey)
	(&audit.Exporter{Source: store, Sink: sink, Signer: signer, Origin: "example"}).Pass(ctx)
	sink.Close()

	verifier, _ := note.NewVerifier(vkey)
	rep, err := audit.VerifyJSONL(filepath.Join(dir, "export"), audit.VerifyOptions{Verifiers: note.VerifierList(verifier)})
	fmt.Println(rep.OK(), rep.Events, rep.Checkpoints, rep.Signed, err)
	// Output: true 1 1 true <nil>
}
