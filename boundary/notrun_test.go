package boundary_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
)

// A tool that says it did nothing (NotRun) completes the record with its
// code and Executed false; an invalid code is EXECUTION_FAILED, still not
// executed. A call the caller cancels while the tool runs is CANCELLED and
// executed, unless the tool answers within the grace that it had not
// started.
func TestNotRunAndCancelled(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			return nil, boundary.NotRun(canonical.CodeUpstreamUnavailable, errors.New("connection refused"))
		}
		fx.checkError(t, fx.invoke("call_nr1"), "call_nr1", canonical.CodeUpstreamUnavailable, false)
		fx.checkRecord(t, "call_nr1", want{status: canonical.StatusError, evidence: canonical.EvidenceError, code: canonical.CodeUpstreamUnavailable})

		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return nil, boundary.NotRun("NO_SUCH_CODE", nil) }
		fx.checkError(t, fx.invoke("call_nr2"), "call_nr2", canonical.CodeExecutionFailed, false)

		for _, c := range []struct {
			id      string
			started bool
		}{{"call_nr3", true}, {"call_nr4", false}} {
			running := make(chan struct{})
			fx.tool.fn = func(ctx context.Context, _ []byte) ([]byte, error) {
				close(running)
				<-ctx.Done()
				if !c.started {
					return nil, boundary.NotRun(canonical.CodeCancelled, ctx.Err())
				}
				return nil, ctx.Err()
			}
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-running; cancel() }()
			res := fx.b.Invoke(ctx, fx.run, fx.envelope(c.id, "kb.search", okInput))
			fx.checkError(t, res, c.id, canonical.CodeCancelled, c.started)
			fx.checkRecord(t, c.id, want{status: canonical.StatusError, evidence: canonical.EvidenceError, code: canonical.CodeCancelled})
		}

		// A tool that ignores the cancel still ends the call, within the grace.
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { time.Sleep(30 * time.Second); return nil, nil }
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		fx.checkError(t, fx.b.Invoke(ctx, fx.run, fx.envelope("call_nr5", "kb.search", okInput)), "call_nr5", canonical.CodeDeadlineExceeded, true)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("a deadline waited %v for a tool that ignores it", d)
		}
	})
}
