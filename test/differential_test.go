package test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// TestDifferentialMemoryVersusRedis drives memstore and redisstore with the
// same random operation sequences and requires identical answers: codes,
// states, payloads, indexes and counters (TTLs and times aside, which come
// from different clocks).
func TestDifferentialMemoryVersusRedis(t *testing.T) {
	addr := redistest.Addr(t)
	rs := open(t, redisstore.Options{Addrs: []string{addr}, Prefix: "tcdiff"})
	const sequences, steps = 25, 150
	seen := map[canonical.Code]int{}
	for seq := 0; seq < sequences; seq++ {
		seed := int64(1000 + seq)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			ms := memstore.New()
			runDifferential(t, seed, steps, ms, rs, seen)
		})
	}
	// The sequences must reach every outcome, or agreement proves little.
	for _, c := range []canonical.Code{"", canonical.CodeDuplicateToolCall, canonical.CodeBudgetExhausted,
		canonical.CodeResultTooLarge, canonical.CodeInvalidTransition, canonical.CodeNotFound, canonical.CodeRunInactive} {
		if seen[c] == 0 {
			t.Errorf("no operation ended with %q; outcomes seen: %v", c, seen)
		}
	}
	t.Logf("outcomes over %d operations: %v", sequences*steps, seen)
}

type op struct {
	kind string
	desc string
	do   func(s canonical.Store) (string, canonical.Code)
}

func runDifferential(t *testing.T, seed int64, steps int, a, b canonical.Store, seen map[canonical.Code]int) {
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	runs := []string{fmt.Sprintf("d%d-%s-a", seed, canonical.NewOwner()[:8]), fmt.Sprintf("d%d-%s-b", seed, canonical.NewOwner()[:8])}
	ids := []string{"c0", "c1", "c2", "c3", "c4", "c5"}
	owners := []string{"o1", "o2"}
	tools := []string{"kb.search", "logs.query"}
	limits := canonical.Limits{MaxCallsPerRun: 5, MaxCallsPerTool: 3, MaxRunBytes: 900, MaxRecordBytes: 400, MaxResultBytes: 120}
	pick := func(xs []string) string { return xs[rng.Intn(len(xs))] }
	payload := func(n int) []byte { return bytes.Repeat([]byte{'a' + byte(rng.Intn(26))}, n) }

	for i := 0; i < steps; i++ {
		run, id, owner := pick(runs), pick(ids), pick(owners)
		var o op
		switch k := rng.Intn(10); {
		case k < 3:
			req := canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: pick(tools), Owner: owner,
				Request: []byte(`{"q":"` + string(payload(rng.Intn(60))) + `"}`), TTL: time.Hour, Limits: limits}
			o = op{"begin", fmt.Sprintf("begin %s/%s by %s", run, id, owner), func(s canonical.Store) (string, canonical.Code) {
				r, err := s.Begin(ctx, req)
				return outcome(r, err, false), canonical.CodeOf(err)
			}}
		case k < 6:
			c := canonical.Completion{RunID: run, ToolCallID: id, Owner: owner}
			switch rng.Intn(4) {
			case 0, 1:
				c.Status, c.Evidence = canonical.StatusReady, []canonical.Evidence{canonical.EvidenceFound, canonical.NoEvidence}[rng.Intn(2)]
				c.Raw = []byte(`"` + string(payload(rng.Intn(300))) + `"`)
				c.Result = []byte(`"` + string(payload(rng.Intn(140))) + `"`)
			case 2:
				c.Status, c.Code = canonical.StatusError, canonical.CodeExecutionFailed
				if rng.Intn(2) == 0 {
					c.Raw = payload(rng.Intn(300))
				}
			case 3:
				c.Status, c.Evidence = canonical.StatusReady, "BOGUS"
				c.Result = []byte(`{}`)
			}
			o = op{"complete", fmt.Sprintf("complete %s/%s by %s as %s", run, id, owner, c.Status), func(s canonical.Store) (string, canonical.Code) {
				r, err := s.Complete(ctx, c)
				return outcome(r, err, true), canonical.CodeOf(err)
			}}
		case k < 7:
			o = op{"get", "get " + run + "/" + id, func(s canonical.Store) (string, canonical.Code) {
				r, err := s.Get(ctx, run, id)
				return outcome(r, err, true), canonical.CodeOf(err)
			}}
		case k < 8:
			o = op{"usage", "usage " + run, func(s canonical.Store) (string, canonical.Code) {
				u, err := s.Usage(ctx, run)
				idx, err2 := s.Completed(ctx, run)
				return fmt.Sprintf("%s calls=%d tools=%v bytes=%d done=%d closed=%v proto=%+v | index %v %s",
					canonical.CodeOf(err), u.Calls, u.ToolCalls, u.Bytes, u.Completed, u.Closed, u.Protocol, idx, canonical.CodeOf(err2)), canonical.CodeOf(err)
			}}
		case k < 9:
			valid := rng.Intn(2) == 0
			o = op{"progress", "progress " + run, func(s canonical.Store) (string, canonical.Code) {
				p, err := s.ObserveProgress(ctx, run, valid, 3)
				return fmt.Sprintf("%s %+v", canonical.CodeOf(err), p), canonical.CodeOf(err)
			}}
		default:
			if rng.Intn(4) != 0 {
				continue // closing is rarer, so runs live long enough to matter
			}
			o = op{"close", "close " + run, func(s canonical.Store) (string, canonical.Code) {
				c := canonical.CodeOf(s.CloseRun(ctx, run))
				return string(c), c
			}}
		}
		ga, code := o.do(a)
		gb, _ := o.do(b)
		seen[code]++
		if ga != gb {
			t.Fatalf("step %d: %s\nmemstore:   %s\nredisstore: %s", i, o.desc, ga, gb)
		}
	}
}

func outcome(r canonical.Record, err error, payload bool) string {
	s := fmt.Sprintf("%s %s/%s/%s owner=%s tool=%s", canonical.CodeOf(err), r.Status, r.Evidence, r.Error, r.Owner, r.Tool)
	if payload {
		s += fmt.Sprintf(" raw=%q result=%q", r.Raw, r.Result)
	}
	return s
}
