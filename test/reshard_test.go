package test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// Resharding under load: while 8 workers run lifecycles in 12 runs and two
// reapers close the calls a dead worker left in each run, the slots of
// those runs move between the masters of a 3-master cluster, one at a time,
// as an operator's reshard does (SETSLOT IMPORTING/MIGRATING, MIGRATE of
// its keys in batches, SETSLOT NODE). Afterwards every acknowledged call has
// exactly one record, on one node, READY and once in its run's index; each
// stuck call was abandoned by one reaper pass, once; every run's budget
// counted exactly its calls and never more than its limit; no key lacks a
// TTL. What a caller sees of a move is at most a bounded STORE_UNAVAILABLE,
// which the same owner's retry clears.
func TestReshardingUnderLoad(t *testing.T) {
	masters, err := redistest.StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range masters {
			m.Stop()
		}
	})
	const (
		prefix   = "tcresh"
		runs     = 12
		workers  = 8
		small    = 20    // calls of each of the first two runs: reached, so that refusals are exercised too
		large    = 10000 // calls of each other run: not reached
		load     = 3 * time.Second
		attempts = 40 // a call's tries before the test calls it lost
	)
	s, err := redisstore.New(redisstore.Options{Addrs: []string{masters[0].Addr}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	keys, _ := canonical.NewKeys(prefix)
	runID := func(i int) string { return fmt.Sprintf("reshard-%02d", i) }
	limitOf := func(run string) int64 {
		if run == runID(0) || run == runID(1) {
			return small
		}
		return large
	}

	// Which master holds which slot, as the harness assigned them.
	owner := map[int]int{}
	ids := make([]string, len(masters))
	for i, m := range masters {
		if ids[i], err = redistest.Command(m.Addr, "CLUSTER", "MYID"); err != nil {
			t.Fatal(err)
		}
	}
	slots := make([]int, runs)
	for i := range slots {
		v, err := redistest.Command(masters[0].Addr, "CLUSTER", "KEYSLOT", keys.Run(runID(i)))
		if err != nil {
			t.Fatal(err)
		}
		slots[i], _ = strconv.Atoi(v)
		owner[slots[i]] = slots[i] * len(masters) / 16384
	}

	type result struct {
		acked    map[string][]string // run -> acknowledged (begun and completed) call ids
		refused  map[string]int      // run -> BUDGET_EXHAUSTED refusals
		surfaced map[canonical.Code]int
		lost     []string
	}
	// Calls a dead worker left in every run, for reapers to close while the
	// slots move.
	const stuckPerRun = 3
	for i := 0; i < runs; i++ {
		for j := 0; j < stuckPerRun; j++ {
			if _, err := s.Begin(context.Background(), canonical.BeginRequest{RunID: runID(i), ToolCallID: fmt.Sprintf("stuck_%d", j),
				Tool: "kb.search", Owner: canonical.NewOwner(), Request: []byte(`{}`), TTL: time.Hour, Lease: 200 * time.Millisecond,
				Limits: canonical.Limits{MaxCallsPerRun: limitOf(runID(i)), MaxCallsPerTool: limitOf(runID(i))}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	results := make([]result, workers)
	ctx, stop := context.WithTimeout(context.Background(), load)
	defer stop()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := result{acked: map[string][]string{}, refused: map[string]int{}, surfaced: map[canonical.Code]int{}}
			defer func() { results[w] = r }()
			// try runs op until it succeeds, is refused for good, or has
			// failed attempts times; every failure is counted by code.
			try := func(op func() error) error {
				var err error
				for i := 0; i < attempts; i++ {
					if err = op(); err == nil {
						return nil
					}
					r.surfaced[canonical.CodeOf(err)]++
					if canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
						return err
					}
					time.Sleep(10 * time.Millisecond)
				}
				return err
			}
			for n := 0; ctx.Err() == nil; n++ {
				run := runID((w + n) % runs)
				id := fmt.Sprintf("call_w%d_%d", w, n)
				token := canonical.NewOwner()
				err := try(func() error {
					_, err := s.Begin(context.Background(), canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search",
						Owner: token, Request: []byte(`{"q":"` + id + `"}`), TTL: time.Hour, Lease: time.Hour,
						Limits: canonical.Limits{MaxCallsPerRun: limitOf(run), MaxCallsPerTool: limitOf(run)}})
					return err
				})
				switch canonical.CodeOf(err) {
				case "":
				case canonical.CodeBudgetExhausted:
					r.refused[run]++
					continue
				default:
					r.lost = append(r.lost, run+"/"+id+" begin: "+err.Error())
					continue
				}
				err = try(func() error {
					_, err := s.Complete(context.Background(), canonical.Completion{RunID: run, ToolCallID: id, Owner: token,
						Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Raw: []byte(`{"r":1}`), Result: []byte(`{"r":1}`)})
					return err
				})
				if err != nil {
					r.lost = append(r.lost, run+"/"+id+" complete: "+err.Error())
					continue
				}
				r.acked[run] = append(r.acked[run], id)
			}
		}()
	}

	// Two reapers, passing over every master again and again.
	var reaps sync.WaitGroup
	var reapMu sync.Mutex
	reapedBy := map[string]int{}
	reapErrs := map[canonical.Code]int{}
	reapPasses := 0
	reapPass := func() {
		rep, err := s.Reap(context.Background(), canonical.ReapOptions{Batch: 16})
		reapMu.Lock()
		defer reapMu.Unlock()
		reapPasses++
		if err != nil {
			reapErrs[canonical.CodeOf(err)]++
		}
		for _, c := range rep.Abandoned {
			reapedBy[c.RunID+"/"+c.ToolCallID]++
		}
	}
	for r := 0; r < 2; r++ {
		reaps.Add(1)
		go func() {
			defer reaps.Done()
			for ctx.Err() == nil {
				reapPass()
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}

	// The operator: move the slot of one run after another to the next
	// master, while the workers run.
	var moves atomic.Int64
	moveErr := make(chan error, 1)
	go func() {
		defer close(moveErr)
		for i := 0; ctx.Err() == nil; i++ {
			slot := slots[i%runs]
			from := owner[slot]
			to := (from + 1) % len(masters)
			if err := migrateSlot(slot, masters, ids, from, to); err != nil {
				moveErr <- err
				return
			}
			owner[slot] = to
			moves.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	wg.Wait()
	reaps.Wait()
	if err := <-moveErr; err != nil {
		t.Fatalf("moving a slot: %v", err)
	}

	// Tally, then check through a fresh client, which learns the slots anew.
	acked := map[string][]string{}
	refused := map[string]int{}
	surfaced := map[canonical.Code]int{}
	var lost []string
	lifecycles := 0
	for _, r := range results {
		for run, calls := range r.acked {
			acked[run] = append(acked[run], calls...)
			lifecycles += len(calls)
		}
		for run, n := range r.refused {
			refused[run] += n
		}
		for c, n := range r.surfaced {
			surfaced[c] += n
		}
		lost = append(lost, r.lost...)
	}
	// The servers' own count of the redirections they answered (ASK, MOVED,
	// TRYAGAIN): the moves met the load, and the client followed them. (ERR
	// counts the CLIENT SETINFO a Redis 7.0 does not know, one a connection.)
	redirects := map[string]int{}
	for _, m := range masters {
		info, err := redistest.Command(m.Addr, "INFO", "errorstats")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			name, rest, ok := strings.Cut(strings.TrimPrefix(line, "errorstat_"), ":count=")
			if ok && strings.HasPrefix(line, "errorstat_") {
				n, _ := strconv.Atoi(rest)
				redirects[name] += n
			}
		}
	}
	t.Logf("%d lifecycles acknowledged in %v over %d runs, %d slot moves; refusals at the limit %d; errors surfaced by code %v; "+
		"replies of the servers by error %v", lifecycles, load, runs, moves.Load(), sum(refused), surfaced, redirects)
	if redirects["ASK"]+redirects["TRYAGAIN"]+redirects["MOVED"] == 0 {
		t.Fatal("no call met a slot in a move: the test judged nothing")
	}
	if len(lost) > 0 {
		t.Fatalf("%d calls never acknowledged after %d tries each, e.g. %s", len(lost), attempts, lost[0])
	}
	if moves.Load() < 3 || lifecycles < workers {
		t.Fatalf("too little happened to judge: %d moves, %d lifecycles", moves.Load(), lifecycles)
	}
	reapPass() // after the moves: whatever a failed step left
	t.Logf("reapers: %d passes, %d calls abandoned, failed passes by code %v", reapPasses, len(reapedBy), reapErrs)
	for code := range reapErrs {
		if code != canonical.CodeStoreUnavailable {
			t.Fatalf("a reap pass failed with %s", code)
		}
	}
	for i := 0; i < runs; i++ {
		for j := 0; j < stuckPerRun; j++ {
			if c := fmt.Sprintf("%s/stuck_%d", runID(i), j); reapedBy[c] != 1 {
				t.Fatalf("%s abandoned %d times, want once", c, reapedBy[c])
			}
		}
	}
	if len(reapedBy) != runs*stuckPerRun {
		t.Fatalf("%d calls abandoned, want the %d stuck ones", len(reapedBy), runs*stuckPerRun)
	}
	for code := range surfaced {
		if code != canonical.CodeStoreUnavailable && code != canonical.CodeBudgetExhausted {
			t.Fatalf("a move surfaced %s to a caller (errors by code: %v)", code, surfaced)
		}
	}
	check, err := redisstore.New(redisstore.Options{Addrs: []string{masters[1].Addr}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	bg := context.Background()
	for i := 0; i < runs; i++ {
		run := runID(i)
		u, err := check.Usage(bg, run)
		if err != nil {
			if len(acked[run]) == 0 && refused[run] == 0 && canonical.CodeOf(err) == canonical.CodeNotFound {
				continue
			}
			t.Fatalf("usage of %s: %v", run, err)
		}
		if u.Calls != int64(len(acked[run])+stuckPerRun) || u.Completed != u.Calls || u.InFlight != 0 || u.Calls > limitOf(run) ||
			(refused[run] > 0 && u.Calls != limitOf(run)) {
			t.Fatalf("%s: usage %+v; %d calls acknowledged, %d refused at the limit %d", run, u, len(acked[run]), refused[run], limitOf(run))
		}
		index, n, err := check.Completed(bg, run, canonical.MaxIndexRead)
		if err != nil || n != len(acked[run])+stuckPerRun {
			t.Fatalf("%s: index of %d ids, %v; want the %d acknowledged calls and the %d abandoned", run, n, err, len(acked[run]), stuckPerRun)
		}
		once := map[string]int{}
		for _, id := range index {
			once[id]++
		}
		recs, err := check.GetMany(bg, run, acked[run], canonical.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for j, id := range acked[run] {
			if once[id] != 1 || recs[j] == nil || recs[j].Status != canonical.StatusReady {
				t.Fatalf("%s/%s: %d index entries, record %+v", run, id, once[id], recs[j])
			}
		}
		for j := 0; j < stuckPerRun; j++ {
			id := fmt.Sprintf("stuck_%d", j)
			if rec, err := check.Get(bg, run, id); err != nil || rec.Error != canonical.CodeExecutionAbandoned || once[id] != 1 {
				t.Fatalf("%s/%s: %d index entries, record %+v, %v", run, id, once[id], rec, err)
			}
		}
	}
	// Each key lives on one master only, with a TTL.
	where := map[string][]string{}
	for _, m := range masters {
		ttls, err := redistest.KeyTTLs([]string{m.Addr}, prefix+":*")
		if err != nil {
			t.Fatal(err)
		}
		for k, ms := range ttls {
			where[k] = append(where[k], m.Addr)
			if ms < 0 {
				t.Errorf("%s on %s has no TTL", k, m.Addr)
			}
		}
	}
	for k, nodes := range where {
		if len(nodes) != 1 {
			t.Errorf("%s is on %d masters: %v", k, len(nodes), nodes)
		}
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// migrateSlot moves slot from masters[from] to masters[to] as redis-cli's
// reshard does: the target imports, the source migrates, its keys move in
// batches (MIGRATE ... KEYS keeps their TTLs), and the slot's new owner is
// announced to the target, the source and the third master.
func migrateSlot(slot int, masters []*redistest.Server, ids []string, from, to int) error {
	src, dst := masters[from], masters[to]
	sl := strconv.Itoa(slot)
	if err := settled(slot, masters, ids[from]); err != nil {
		return err
	}
	if _, err := redistest.Command(dst.Addr, "CLUSTER", "SETSLOT", sl, "IMPORTING", ids[from]); err != nil {
		return fmt.Errorf("IMPORTING: %w", err)
	}
	if _, err := redistest.Command(src.Addr, "CLUSTER", "SETSLOT", sl, "MIGRATING", ids[to]); err != nil {
		return fmt.Errorf("MIGRATING: %w", err)
	}
	for {
		out, err := redistest.Command(src.Addr, "CLUSTER", "GETKEYSINSLOT", sl, "50")
		if err != nil {
			return fmt.Errorf("GETKEYSINSLOT: %w", err)
		}
		if out == "" {
			break
		}
		args := append([]string{"MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), "", "0", "5000", "KEYS"}, strings.Split(out, "\n")...)
		if _, err := redistest.Command(src.Addr, args...); err != nil {
			return fmt.Errorf("MIGRATE: %w", err)
		}
	}
	for _, i := range []int{to, from, 3 - from - to} {
		if _, err := redistest.Command(masters[i].Addr, "CLUSTER", "SETSLOT", sl, "NODE", ids[to]); err != nil {
			return fmt.Errorf("SETSLOT NODE on %s: %w", masters[i].Addr, err)
		}
	}
	return nil
}

// settled waits, as an operator's cluster check between two reshards does,
// until every master names owner for slot and all share one current epoch:
// a master whose view of the epochs lags may otherwise take a claim its
// gossip still carries from before the last move for a newer one, and
// give the slot back to a master that no longer holds it.
func settled(slot int, masters []*redistest.Server, owner string) error {
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		owners, epochs := map[string]bool{}, map[string]bool{}
		for _, m := range masters {
			nodes, err := redistest.Command(m.Addr, "CLUSTER", "NODES")
			if err != nil {
				return err
			}
			owners[slotOwner(nodes, slot)] = true
			info, err := redistest.Command(m.Addr, "CLUSTER", "INFO")
			if err != nil {
				return err
			}
			for _, l := range strings.Split(info, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(l), "cluster_current_epoch:"); ok {
					epochs[v] = true
				}
			}
		}
		if len(owners) == 1 && owners[owner] && len(epochs) == 1 {
			return nil
		}
		last = fmt.Sprintf("owners %v, current epochs %v", owners, epochs)
	}
	return fmt.Errorf("slot %d: the masters do not agree that %s owns it: %s", slot, owner, last)
}

// slotOwner returns the id of the master that CLUSTER NODES' reply gives
// slot, "" when none.
func slotOwner(nodes string, slot int) string {
	for _, l := range strings.Split(nodes, "\n") {
		f := strings.Fields(l)
		if len(f) < 9 {
			continue
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being imported or migrated
			}
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil && a <= slot && slot <= b {
				return f[0]
			}
		}
	}
	return ""
}

// A reaper that meets a run in the middle of a move follows it: the run's
// leases are already on the target, which SCAN finds but does not serve
// yet (MOVED), its record still on the source. The pass reads the leases
// through the cluster client (ASK) and abandons the call once the move
// ends.
func TestReapFollowsARunMidMove(t *testing.T) {
	masters, err := redistest.StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range masters {
			m.Stop()
		}
	})
	const prefix, run = "tcmove", "run-moving"
	s, err := redisstore.New(redisstore.Options{Addrs: []string{masters[0].Addr}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: "stuck", Tool: "kb.search", Owner: canonical.NewOwner(),
		Request: []byte(`{}`), TTL: time.Hour, Lease: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	keys, _ := canonical.NewKeys(prefix)
	v, err := redistest.Command(masters[0].Addr, "CLUSTER", "KEYSLOT", keys.Calls(run))
	if err != nil {
		t.Fatal(err)
	}
	slot, _ := strconv.Atoi(v)
	from := slot * len(masters) / 16384
	to := (from + 1) % len(masters)
	ids := make([]string, len(masters))
	for i, m := range masters {
		ids[i], _ = redistest.Command(m.Addr, "CLUSTER", "MYID")
	}
	src, dst := masters[from], masters[to]
	for _, c := range [][]string{
		{dst.Addr, "CLUSTER", "SETSLOT", v, "IMPORTING", ids[from]},
		{src.Addr, "CLUSTER", "SETSLOT", v, "MIGRATING", ids[to]},
		{src.Addr, "MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), keys.Calls(run), "0", "5000"},
	} {
		if _, err := redistest.Command(c[0], c[1:]...); err != nil {
			t.Fatalf("%v: %v", c[1:], err)
		}
	}
	// Finish the move while the pass runs into it.
	moved := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		moved <- migrateSlot(slot, masters, ids, from, to)
	}()
	rep, err := s.Reap(ctx, canonical.ReapOptions{})
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	if err != nil || len(rep.Abandoned) != 1 || rep.Abandoned[0].ToolCallID != "stuck" || rep.Runs != 1 || rep.Nodes != 3 {
		t.Fatalf("pass over a run mid-move: %+v, %v", rep, err)
	}
	if rec, err := s.Get(ctx, run, "stuck"); err != nil || rec.Error != canonical.CodeExecutionAbandoned {
		t.Fatalf("record %+v, %v", rec, err)
	}
}
