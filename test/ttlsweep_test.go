package test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/reaper"
)

// Every key the store writes has a TTL, whatever wrote it. A broad workload
// runs through the store's paths on a prefix of its own — calls completed
// READY and ERROR, abandoned, reaped (by Reap and by the reaper's pass),
// awaiting input and continued, with handles resolved into a later call,
// progress observed, a run closed and one found lost, the audit stream
// exported (lease, read, acknowledge, status) and the cancel relay sent,
// heard and claimed — and after each step every key of the prefix on every
// server is read with its PTTL: each key without one fails the test, named
// with the step that first left it so.
func TestEveryKeyHasATTLAfterAWorkload(t *testing.T) {
	for _, topo := range []struct {
		name  string
		addrs func(t *testing.T) []string
	}{
		{"standalone", func(t *testing.T) []string { return []string{redistest.Addr(t)} }},
		{"cluster", func(t *testing.T) []string { return redistest.ClusterAddrs(t) }},
	} {
		t.Run(topo.name, func(t *testing.T) { sweepWorkload(t, topo.addrs(t)) })
	}
}

func sweepWorkload(t *testing.T, addrs []string) {
	prefix := "tcsweep" + canonical.NewOwner()[:8]
	audit := canonical.AuditOptions{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "k1"}
	s := open(t, redisstore.Options{Addrs: addrs, Prefix: prefix, Audit: &audit})
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()

	found := map[string]string{} // key without a TTL -> the step that first left it so
	var order []string
	step := func(name string, do func() error) {
		t.Helper()
		if err := do(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ttls, err := redistest.KeyTTLs(addrs, prefix+":*")
		if err != nil {
			t.Fatal(err)
		}
		if len(ttls) == 0 {
			t.Fatalf("%s: the sweep sees no key of %s", name, prefix)
		}
		for k, ms := range ttls {
			if ms == -1 {
				if _, seen := found[k]; !seen {
					found[k] = name
					order = append(order, k)
				}
			}
		}
	}
	const alice = "alice"
	id := canonical.NewOwner()[:8]
	run := "sweep-" + id
	req := func(run, call string) canonical.BeginRequest {
		r := begin(run, call)
		r.Principal = alice
		return r
	}
	complete := func(run, call string, handles ...string) error {
		c := readyFor(run, call)
		c.Handles = handles
		_, err := s.Complete(ctx, c)
		return err
	}

	step("begin and complete READY, minting a handle", func() error {
		if _, err := s.Begin(ctx, req(run, "c1")); err != nil {
			return err
		}
		return complete(run, "c1", "AAAAAAAA")
	})
	step("begin and complete ERROR", func() error {
		if _, err := s.Begin(ctx, req(run, "c2")); err != nil {
			return err
		}
		_, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "c2", Owner: "o-c2",
			Status: canonical.StatusError, Code: canonical.CodeExecutionFailed})
		return err
	})
	step("a handle resolved into a later call", func() error {
		src, err := s.HandleSources(ctx, run, alice, []string{"AAAAAAAA", "BBBBBBBB"})
		if err != nil || src.Calls[0] != "c1" {
			return fmt.Errorf("handle sources %+v, %v", src, err)
		}
		if _, err := s.Begin(ctx, req(run, "c3")); err != nil {
			return err
		}
		return complete(run, "c3")
	})
	step("abandon", func() error {
		r := req(run, "c4")
		r.Lease = time.Millisecond
		if _, err := s.Begin(ctx, r); err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
		_, err := s.Abandon(ctx, run, "c4")
		return err
	})
	step("await_input and continue", func() error {
		if _, err := s.Begin(ctx, req(run, "c5")); err != nil {
			return err
		}
		token := canonical.NewOwner()
		if _, err := s.AwaitInput(ctx, canonical.AwaitInput{RunID: run, ToolCallID: "c5", Owner: "o-c5", Token: token,
			State: []byte("state"), Wait: time.Minute}); err != nil {
			return err
		}
		next := "o2-c5"
		if _, err := s.ContinueCall(ctx, canonical.ContinueCall{RunID: run, ToolCallID: "c5", Owner: next, Principal: alice,
			RequestDigest: canonical.RequestDigest(begin(run, "c5").Request), Token: token, Lease: time.Minute,
			Input: []byte(`{"answer":1}`)}); err != nil {
			return err
		}
		c := readyFor(run, "c5")
		c.Owner = next
		_, err := s.Complete(ctx, c)
		return err
	})
	step("observe_progress", func() error {
		_, err := s.ObserveProgress(ctx, run, alice, true, 3)
		return err
	})
	step("reads of the run", func() error {
		if _, err := s.ReadIndex(ctx, run, alice, 10); err != nil {
			return err
		}
		if _, err := s.ReadUsage(ctx, run, alice); err != nil {
			return err
		}
		if _, err := s.GetMany(ctx, run, []string{"c1", "c2", "c3"}, canonical.ReadOptions{}); err != nil {
			return err
		}
		_, err := s.ListRuns(ctx, "", 10)
		return err
	})
	stuck := func(run string) error {
		r := req(run, "c1")
		r.Lease = time.Millisecond
		if _, err := s.Begin(ctx, r); err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
		return nil
	}
	step("a reap pass (Reap)", func() error {
		if err := stuck("stuck1-" + id); err != nil {
			return err
		}
		// A pass under the reap lease, held shortly so that the reaper's
		// passes of the next step run.
		rep, err := s.Reap(ctx, canonical.ReapOptions{Every: 20 * time.Millisecond})
		if err == nil && len(rep.Abandoned) != 1 {
			err = fmt.Errorf("reap abandoned %d calls, want 1", len(rep.Abandoned))
		}
		return err
	})
	step("the reaper's passes", func() error {
		if err := stuck("stuck2-" + id); err != nil {
			return err
		}
		passed := make(chan canonical.ReapReport, 1)
		stopReaper, err := reaper.Start(s, reaper.Options{Interval: reaper.MinInterval, OnPass: func(rep canonical.ReapReport, err error) {
			if err == nil && !rep.Yielded && len(rep.Abandoned) > 0 {
				select {
				case passed <- rep:
				default:
				}
			}
		}})
		if err != nil {
			return err
		}
		defer stopReaper()
		select {
		case <-passed:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("the reaper abandoned nothing")
		}
	})
	step("close run", func() error {
		closed := "closed-" + id
		if _, err := s.Begin(ctx, req(closed, "c1")); err != nil {
			return err
		}
		if err := complete(closed, "c1"); err != nil {
			return err
		}
		return s.CloseRun(ctx, closed, alice)
	})
	step("a run found lost", func() error {
		lost := "lost-" + id
		if _, err := s.Begin(ctx, req(lost, "c1")); err != nil {
			return err
		}
		deleted := 0
		for _, addr := range addrs {
			if n, err := redistest.Command(addr, "DEL", s.Keys().Run(lost)); err == nil && n == "1" {
				deleted++
			}
		}
		if deleted != 1 {
			return fmt.Errorf("DEL of the run state deleted %d keys", deleted)
		}
		// Whatever each of these answers on a lost run, none may leave a
		// key behind without a TTL.
		_ = complete(lost, "c1")
		_, _ = s.Begin(ctx, req(lost, "c2"))
		_, _ = s.Abandon(ctx, lost, "c2")
		_, _ = s.ObserveProgress(ctx, lost, alice, true, 3)
		_, _ = s.Reap(ctx, canonical.ReapOptions{})
		_ = s.CloseRun(ctx, lost, alice)
		return nil
	})
	step("an export pass and its lease", func() error {
		if ok, err := s.AuditLease(ctx, "exporter-1", time.Minute); err != nil || !ok {
			return fmt.Errorf("audit lease: %v, %v", ok, err)
		}
		var runs []string
		if err := s.AuditRuns(ctx, 100, func(batch []string) error {
			runs = append(runs, batch...)
			return nil
		}); err != nil {
			return err
		}
		if !slices.Contains(runs, run) {
			return fmt.Errorf("the export sees runs %v, not %s", runs, run)
		}
		pending, err := s.AuditRead(ctx, runs, 1000)
		if err != nil {
			return err
		}
		exported := 0
		for _, p := range pending {
			if len(p.Events) == 0 {
				continue
			}
			last := p.Events[len(p.Events)-1]
			// The exporter's chain hash: any 64 hex digits to the store.
			to := canonical.AuditHead{Gen: last.Gen, Seq: last.Seq, Hash: strings.Repeat("ab", 32)}
			if _, err := s.AuditAck(ctx, p.RunID, p.Head, len(p.Events), to); err != nil {
				return err
			}
			exported += len(p.Events)
		}
		if exported == 0 {
			return fmt.Errorf("the export found no event")
		}
		return s.AuditReport(ctx, canonical.AuditStatus{LastPass: time.Now(), Exported: int64(exported)})
	})
	step("the cancel relay", func() error {
		lctx, stopListening := context.WithCancel(ctx)
		defer stopListening()
		heard := make(chan string, 16)
		go func() { _ = s.ListenCancels(lctx, func(k, id string) { heard <- k + " " + id }) }()
		key := "k" + id
		for got := ""; got != key+" c1"; {
			if err := s.SendCancel(ctx, key, "c1"); err != nil {
				return err
			}
			select {
			case got = <-heard:
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return fmt.Errorf("the cancel was never heard")
			}
		}
		if _, err := s.ClaimCancel(ctx, key, "c1", "h1"); err != nil {
			return err
		}
		_, err := s.ClaimCancel(ctx, key, "c1", "h2") // a second claimant: held by none
		return err
	})

	for _, k := range order {
		t.Errorf("key %s has no TTL (left so by %q)", k, found[k])
	}
}
