package test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// TestDifferentialMemoryVersusRedis drives memstore and redisstore with the
// same random operation sequences — begins and their retries, completions
// and their retries, abandons, closes, progress reports and every read —
// and requires identical answers: every field of every reply, the stored
// payloads byte for byte, the indexes, the leases and the counters. Times
// come from two clocks, so they are compared by what they must equal: a
// lease as an offset from its record's creation, a TTL by its range.
func TestDifferentialMemoryVersusRedis(t *testing.T) {
	addr := redistest.Addr(t)
	rs := open(t, redisstore.Options{Addrs: []string{addr}, Prefix: "tcdiff"})
	const sequences, steps = 25, 200
	seen := map[string]int{}
	for seq := 0; seq < sequences; seq++ {
		seed := int64(1000 + seq)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			runDifferential(t, seed, steps, memstore.New(), rs, seen)
		})
	}
	// The sequences must reach every outcome, or agreement proves little.
	for _, want := range []string{
		"begin ", "begin DUPLICATE_TOOL_CALL", "begin TOOL_CALL_IN_PROGRESS", "begin BUDGET_EXHAUSTED",
		"begin RESULT_TOO_LARGE", "begin RUN_INACTIVE", "begin INVALID_ARGUMENT", "begin-retry ",
		"complete ", "complete RESULT_TOO_LARGE", "complete INVALID_TRANSITION", "complete NOT_FOUND", "complete-retry ",
		"abandon ", "abandon INVALID_TRANSITION", "abandon NOT_FOUND", "expired ", "expired some", "get ", "get NOT_FOUND",
		"getmany ", "usage ", "usage NOT_FOUND", "progress ", "close ",
		"begin RUN_FORBIDDEN", "progress RUN_FORBIDDEN", "close RUN_FORBIDDEN", "check ", "check RUN_FORBIDDEN",
	} {
		if seen[want] == 0 {
			t.Errorf("no operation ended as %q; outcomes seen: %v", want, seen)
		}
	}
	t.Logf("outcomes over %d operations: %v", sequences*steps, seen)
}

type op struct {
	kind string
	desc string
	do   func(s canonical.Store) (string, canonical.Code)
}

const diffTTL = time.Hour

func runDifferential(t *testing.T, seed int64, steps int, a, b canonical.Store, seen map[string]int) {
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	runs := []string{fmt.Sprintf("d%d-%s-a", seed, canonical.NewOwner()[:8]), fmt.Sprintf("d%d-%s-b", seed, canonical.NewOwner()[:8])}
	ids := []string{"c0", "c1", "c2", "c3", "c4", "c5"}
	owners := []string{"o1", "o2"}
	tools := []string{"kb.search", "logs.query"}
	base := canonical.Limits{MaxCallsPerRun: 5, MaxCallsPerTool: 3, MaxRunBytes: 900, MaxRecordBytes: 400, MaxResultBytes: 120}
	pick := func(xs []string) string { return xs[rng.Intn(len(xs))] }
	payload := func(n int) []byte { return bytes.Repeat([]byte{'a' + byte(rng.Intn(26))}, n) }
	// Principals come from a stream of their own, so that the operations
	// stay those of the seed: mostly the runs' usual principal, sometimes
	// another, whose every write must be RUN_FORBIDDEN alike on both.
	prng := rand.New(rand.NewSource(seed ^ 0x5eed))
	principal := func() string {
		if prng.Intn(8) == 0 {
			return "intruder"
		}
		return "agent"
	}
	var lastBegin *canonical.BeginRequest
	var lastComplete *canonical.Completion

	beginOp := func(kind string, req canonical.BeginRequest) op {
		return op{kind, fmt.Sprintf("%s %s/%s by %s for %q (lease %v, limits %+v)", kind, req.RunID, req.ToolCallID, req.Owner, req.Principal, req.Lease, req.Limits),
			func(s canonical.Store) (string, canonical.Code) {
				r, err := s.Begin(ctx, req)
				return reply(r, err, req.TTL), canonical.CodeOf(err)
			}}
	}
	completeOp := func(kind string, c canonical.Completion) op {
		return op{kind, fmt.Sprintf("%s %s/%s by %s as %s", kind, c.RunID, c.ToolCallID, c.Owner, c.Status),
			func(s canonical.Store) (string, canonical.Code) {
				r, err := s.Complete(ctx, c)
				return reply(r, err, diffTTL), canonical.CodeOf(err)
			}}
	}

	for i := 0; i < steps; i++ {
		run, id, owner := pick(runs), pick(ids), pick(owners)
		var o op
		switch k := rng.Intn(100); {
		case k < 28:
			lim := base
			switch rng.Intn(10) {
			case 0, 1:
				lim = canonical.Limits{} // a worker joining the run
			case 2:
				lim.MaxCallsPerRun = 6 // a worker with other limits
			}
			lease := time.Millisecond
			if rng.Intn(2) == 0 {
				lease = diffTTL
			}
			size := rng.Intn(60)
			if rng.Intn(10) == 0 {
				size = 360 + rng.Intn(100) // around the record's 400 bytes
			}
			req := canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: pick(tools), Owner: owner,
				Request: []byte(`{"q":"` + string(payload(size)) + `"}`), TTL: diffTTL, Lease: lease, Limits: lim,
				Principal: principal()}
			lastBegin = &req
			o = beginOp("begin", req)
		case k < 34:
			if lastBegin == nil {
				continue
			}
			o = beginOp("begin-retry", *lastBegin)
		case k < 54:
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
			lastComplete = &c
			o = completeOp("complete", c)
		case k < 60:
			if lastComplete == nil {
				continue
			}
			o = completeOp("complete-retry", *lastComplete)
		case k < 68:
			time.Sleep(3 * time.Millisecond) // every 1ms lease has passed, on both clocks
			o = op{"abandon", "abandon " + run + "/" + id, func(s canonical.Store) (string, canonical.Code) {
				r, err := s.Abandon(ctx, run, id)
				return reply(r, err, diffTTL), canonical.CodeOf(err)
			}}
		case k < 72:
			time.Sleep(3 * time.Millisecond)
			max := 1 + rng.Intn(6)
			o = op{"expired", "expired leases of " + run, func(s canonical.Store) (string, canonical.Code) {
				got, err := s.ExpiredLeases(ctx, run, max)
				// Leases that pass in one millisecond on one clock may pass in
				// two on the other: the set is compared, not its order.
				slices.Sort(got)
				return fmt.Sprintf("%s %v", canonical.CodeOf(err), got), canonical.CodeOf(err)
			}}
		case k < 79:
			o = op{"get", "get " + run + "/" + id, func(s canonical.Store) (string, canonical.Code) {
				r, err := s.Get(ctx, run, id)
				return reply(r, err, diffTTL), canonical.CodeOf(err)
			}}
		case k < 84:
			want := []string{pick(ids), pick(ids), "never", pick(ids)}
			opts := canonical.ReadOptions{Request: rng.Intn(2) == 0, Raw: rng.Intn(2) == 0}
			o = op{"getmany", fmt.Sprintf("getmany %s %v %+v", run, want, opts), func(s canonical.Store) (string, canonical.Code) {
				recs, err := s.GetMany(ctx, run, want, opts)
				var out []string
				for _, r := range recs {
					if r == nil {
						out = append(out, "nil")
						continue
					}
					out = append(out, reply(*r, nil, diffTTL))
				}
				return fmt.Sprintf("%s [%s]", canonical.CodeOf(err), strings.Join(out, " | ")), canonical.CodeOf(err)
			}}
		case k < 91:
			max := 1 + rng.Intn(4)
			o = op{"usage", "usage " + run, func(s canonical.Store) (string, canonical.Code) {
				u, err := s.Usage(ctx, run)
				idx, n, err2 := s.Completed(ctx, run, max)
				ttl := u.TTL > 0 && u.TTL <= redisstore.DefaultClosedRunRetention
				return fmt.Sprintf("%s run=%s limits=%+v calls=%d tools=%v bytes=%d done=%d inflight=%d closed=%v lost=%v proto=%+v ttl-ok=%v"+
					" | index %v of %d %s", canonical.CodeOf(err), u.RunID, u.Limits, u.Calls, u.ToolCalls, u.Bytes, u.Completed,
					u.InFlight, u.Closed, u.Lost, u.Protocol, ttl || err != nil, idx, n, canonical.CodeOf(err2)), canonical.CodeOf(err)
			}}
		case k < 96:
			valid, who := rng.Intn(2) == 0, principal()
			o = op{"progress", "progress " + run + " for " + who, func(s canonical.Store) (string, canonical.Code) {
				p, err := s.(canonical.ProgressObserver).ObserveProgress(ctx, run, who, valid, 3)
				return fmt.Sprintf("%s %+v", canonical.CodeOf(err), p), canonical.CodeOf(err)
			}}
		default:
			if rng.Intn(8) != 0 {
				continue // closing is rarer, so runs live long enough to matter
			}
			who := principal()
			o = op{"close", "close " + run + " for " + who, func(s canonical.Store) (string, canonical.Code) {
				c := canonical.CodeOf(s.CloseRun(ctx, run, who))
				return string(c), c
			}}
		}
		ga, code := o.do(a)
		gb, _ := o.do(b)
		seen[o.kind+" "+string(code)]++
		if o.kind == "expired" && !strings.HasSuffix(ga, " []") {
			seen["expired some"]++
		}
		if ga != gb {
			t.Fatalf("step %d: %s\nmemstore:   %s\nredisstore: %s", i, o.desc, ga, gb)
		}
		if prng.Intn(6) == 0 {
			who := principal()
			ca, cb := canonical.CodeOf(a.CheckPrincipal(ctx, run, who)), canonical.CodeOf(b.CheckPrincipal(ctx, run, who))
			seen["check "+string(ca)]++
			if ca != cb {
				t.Fatalf("step %d: check %s for %s\nmemstore:   %s\nredisstore: %s", i, run, who, ca, cb)
			}
		}
	}
}

// reply renders every field of a store's reply. An error is its code (the
// message may name a time); a record is every field, payloads quoted byte
// for byte, its lease as an offset from its creation and its TTL by range.
func reply(r canonical.Record, err error, ttl time.Duration) string {
	if err != nil {
		code := canonical.CodeOf(err)
		if code == canonical.CodeResultTooLarge {
			// Complete returns the ERROR/RESULT_TOO_LARGE record with it.
			return fmt.Sprintf("%s %s", code, reply(r, nil, ttl))
		}
		zero := r.Status == "" && r.RunID == "" && r.Raw == nil && r.Result == nil
		return fmt.Sprintf("%s zero-record=%v", code, zero)
	}
	return fmt.Sprintf("run=%s id=%s tool=%s %s/%s/%s owner=%s request=%q digest=%s requestLen=%d raw=%q rawLen=%d result=%q "+
		"limits=%+v lease=created+%v updated>=created:%v ttl-ok:%v",
		r.RunID, r.ToolCallID, r.Tool, r.Status, r.Evidence, r.Error, r.Owner, r.Request, r.RequestDigest, r.RequestLen,
		r.Raw, r.RawLen, r.Result, r.Limits, r.LeaseUntil.Sub(r.CreatedAt), !r.UpdatedAt.Before(r.CreatedAt),
		r.TTL > ttl-time.Minute && r.TTL <= ttl)
}
