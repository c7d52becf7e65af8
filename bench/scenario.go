package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Scenario sizes used by the comparison unless told otherwise.
const (
	DefaultBeginners  = 200 // goroutines beginning one id at once
	DefaultCompleters = 32  // goroutines completing one record at once
	DefaultRecords    = 200 // records completed at once while their expiry is watched
)

// DuplicateResult is what Duplicates saw.
type DuplicateResult struct {
	Beginners int // goroutines that began the same id
	Executed  int // of them, told they may execute the tool
	Errors    int // Begins that failed with an error
}

// Duplicates returns the executions beyond the one that is allowed.
func (r DuplicateResult) Duplicates() int { return max(r.Executed-1, 0) }

// Duplicates has n goroutines, each its own invocation, Begin the same fresh
// id at the same moment, and counts how many were told they may execute.
func Duplicates(ctx context.Context, impl Impl, calls *Calls, request []byte, n int) (DuplicateResult, error) {
	c := calls.Next()
	res := DuplicateResult{Beginners: n}
	var executed, failed atomic.Int64
	var firstErr error
	var once sync.Once
	run(n, func(i int) {
		mine := c
		mine.Owner = fmt.Sprintf("%s-b%d", c.Owner, i)
		ok, err := impl.Begin(ctx, mine, request)
		switch {
		case err != nil:
			failed.Add(1)
			once.Do(func() { firstErr = err })
		case ok:
			executed.Add(1)
		}
	})
	res.Executed, res.Errors = int(executed.Load()), int(failed.Load())
	if res.Errors == n {
		return res, firstErr
	}
	return res, nil
}

// LostUpdateResult is what LostUpdates saw.
type LostUpdateResult struct {
	Completers     int  // goroutines that completed the same record
	Succeeded      int  // of them, told their completion was made
	Errors         int  // Completes that failed with an error
	StoredByWinner bool // the stored raw response is that of a completer told it succeeded
}

// Lost returns the completions reported successful beyond the first: each
// one overwrote, or was overwritten by, another that was also told it won.
func (r LostUpdateResult) Lost() int { return max(r.Succeeded-1, 0) }

// LostUpdates begins one record and has n goroutines of its invocation (say,
// parallel projectors) complete it at the same moment, each with its own raw
// response. Then it reads the stored raw response and checks that it came
// from a completer that was told it succeeded.
func LostUpdates(ctx context.Context, impl Impl, calls *Calls, p Payload, n int) (LostUpdateResult, error) {
	c := calls.Next()
	res := LostUpdateResult{Completers: n}
	ok, err := impl.Begin(ctx, c, p.Request)
	if err != nil {
		return res, err
	}
	if !ok {
		return res, fmt.Errorf("%s: begin of a fresh id was refused", impl.Name())
	}
	raws := make([][]byte, n)
	for i := range raws {
		raws[i] = fmt.Appendf(nil, `{"completer":%d,"body":%s}`, i, p.Raw)
	}
	won := make([]bool, n)
	var failed atomic.Int64
	var firstErr error
	var once sync.Once
	run(n, func(i int) {
		ok, err := impl.Complete(ctx, c, raws[i], p.Result)
		if err != nil {
			failed.Add(1)
			once.Do(func() { firstErr = err })
		}
		won[i] = ok
	})
	res.Errors = int(failed.Load())
	for _, w := range won {
		if w {
			res.Succeeded++
		}
	}
	if res.Errors == n {
		return res, firstErr
	}
	stored, err := impl.Raw(ctx, c)
	if err != nil {
		return res, fmt.Errorf("%s: read the stored raw response: %w", impl.Name(), err)
	}
	for i, raw := range raws {
		if won[i] && bytes.Equal(stored, raw) {
			res.StoredByWinner = true
		}
	}
	return res, nil
}

// TTLResult is what TTLExtended saw.
type TTLResult struct {
	Records  int   // records completed
	Extended int   // of them, records whose expiry moved later across Complete
	MaxMs    int64 // the largest certain extension, in milliseconds
	Errors   int   // records whose Complete or expiry read failed, or whose Complete was refused
}

// TTLExtended begins n records and then, for all of them at once (so that
// every completion's read→write window is open while the others run), reads
// the record's expiry by the store's clock, completes it and reads its
// expiry again. It counts the records whose expiry certainly moved later:
// the design keeps the remaining TTL exactly, so there should be none.
func TTLExtended(ctx context.Context, impl Impl, calls *Calls, p Payload, n int) (TTLResult, error) {
	res := TTLResult{Records: n}
	cs := make([]Call, n)
	for i := range cs {
		cs[i] = calls.Next()
		ok, err := impl.Begin(ctx, cs[i], p.Request)
		if err != nil {
			return res, err
		}
		if !ok {
			return res, fmt.Errorf("%s: begin of a fresh id was refused", impl.Name())
		}
	}
	var extended, failed, maxMs atomic.Int64
	var errMu sync.Mutex
	var errs []error
	run(n, func(i int) {
		fail := func(err error) {
			failed.Add(1)
			errMu.Lock()
			errs = append(errs, err)
			errMu.Unlock()
		}
		before, err := impl.Expiry(ctx, cs[i])
		if err != nil {
			fail(err)
			return
		}
		ok, err := impl.Complete(ctx, cs[i], p.Raw, p.Result)
		if err != nil || !ok {
			fail(fmt.Errorf("complete %s: ok=%v err=%v", cs[i].ToolCallID, ok, err))
			return
		}
		after, err := impl.Expiry(ctx, cs[i])
		if err != nil {
			fail(err)
			return
		}
		if after.Later(before) {
			extended.Add(1)
			d := after.Lo - before.Hi
			for m := maxMs.Load(); d > m && !maxMs.CompareAndSwap(m, d); m = maxMs.Load() {
			}
		}
	})
	res.Extended, res.Errors, res.MaxMs = int(extended.Load()), int(failed.Load()), maxMs.Load()
	if res.Errors > 0 {
		return res, fmt.Errorf("%s: %d of %d records failed: %w", impl.Name(), res.Errors, n, errors.Join(errs[:min(len(errs), 3)]...))
	}
	return res, nil
}

// Correctness sums the three scenarios over rounds.
type Correctness struct {
	Rounds     int
	Duplicates DuplicateResult // summed over rounds
	LostUpdate LostUpdateResult
	// WinnerStored counts the rounds in which the stored data was that of a
	// completer told it succeeded.
	WinnerStored int
	TTL          TTLResult // summed over rounds; MaxMs is the largest
}

// Sizes are the scenario sizes of one round of Check.
type Sizes struct {
	Beginners  int `json:"beginners"`
	Completers int `json:"completers"`
	Records    int `json:"records"`
	Rounds     int `json:"rounds"`
}

// DefaultSizes are the sizes the comparison uses.
var DefaultSizes = Sizes{Beginners: DefaultBeginners, Completers: DefaultCompleters, Records: DefaultRecords, Rounds: 3}

// Check runs Duplicates, LostUpdates and TTLExtended rounds times on impl and
// sums what they saw. Every Impl is checked by this same code.
func Check(ctx context.Context, impl Impl, p Payload, sz Sizes) (Correctness, error) {
	calls := NewCalls("chk")
	out := Correctness{Rounds: sz.Rounds}
	for r := 0; r < sz.Rounds; r++ {
		d, err := Duplicates(ctx, impl, calls, p.Request, sz.Beginners)
		if err != nil {
			return out, fmt.Errorf("%s duplicates: %w", impl.Name(), err)
		}
		out.Duplicates.Beginners += d.Beginners
		out.Duplicates.Executed += d.Executed
		out.Duplicates.Errors += d.Errors

		l, err := LostUpdates(ctx, impl, calls, p, sz.Completers)
		if err != nil {
			return out, fmt.Errorf("%s lost updates: %w", impl.Name(), err)
		}
		out.LostUpdate.Completers += l.Completers
		out.LostUpdate.Succeeded += l.Succeeded
		out.LostUpdate.Errors += l.Errors
		if l.StoredByWinner {
			out.WinnerStored++
		}

		t, err := TTLExtended(ctx, impl, calls, p, sz.Records)
		if err != nil {
			return out, fmt.Errorf("%s TTL: %w", impl.Name(), err)
		}
		out.TTL.Records += t.Records
		out.TTL.Extended += t.Extended
		out.TTL.Errors += t.Errors
		out.TTL.MaxMs = max(out.TTL.MaxMs, t.MaxMs)
	}
	return out, nil
}

// DuplicatesExecuted returns the executions beyond one per id, over all
// rounds.
func (c Correctness) DuplicatesExecuted() int { return max(c.Duplicates.Executed-c.Rounds, 0) }

// LostUpdates returns the successful completions beyond one per record, over
// all rounds.
func (c Correctness) LostUpdates() int { return max(c.LostUpdate.Succeeded-c.Rounds, 0) }

// run starts n goroutines that wait at one gate, opens it, and waits for all
// of them: as close to "at once" as the scheduler allows.
func run(n int, f func(i int)) {
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			f(i)
		}()
	}
	close(gate)
	wg.Wait()
}

// Rate is the outcome of one Throughput measurement.
type Rate struct {
	Lifecycles int           // lifecycles made
	Elapsed    time.Duration // wall time
	// Latencies holds the time each lifecycle took, from the call of its
	// Begin to the return of its Complete, in no particular order. The
	// lifecycles a Batcher ran in one batch each took the batch's time.
	Latencies []time.Duration
	// RoundTrips is how many round trips the Impl made during the
	// measurement, or -1 when it is not a RoundTripCounter.
	RoundTrips int64
}

// PerSecond returns lifecycles per second.
func (r Rate) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Lifecycles) / r.Elapsed.Seconds()
}

// RoundTripsPerLifecycle returns the round trips per lifecycle made, or -1
// when they were not counted or no lifecycle was made.
func (r Rate) RoundTripsPerLifecycle() float64 {
	if r.RoundTrips < 0 || r.Lifecycles == 0 {
		return -1
	}
	return float64(r.RoundTrips) / float64(r.Lifecycles)
}

// add sums o into r: lifecycles, time and latencies add up; the round trips
// stay uncounted (-1) once either side's are.
func (r *Rate) add(o Rate) {
	r.Lifecycles += o.Lifecycles
	r.Elapsed += o.Elapsed
	r.Latencies = append(r.Latencies, o.Latencies...)
	if r.RoundTrips < 0 || o.RoundTrips < 0 {
		r.RoundTrips = -1
	} else {
		r.RoundTrips += o.RoundTrips
	}
}

// Percentiles returns, for each q in qs (0 < q <= 1), the nearest-rank
// percentile of ds: the smallest duration that at least a fraction q of ds
// does not exceed. ds is not modified; with no durations every percentile
// is 0.
func Percentiles(ds []time.Duration, qs ...float64) []time.Duration {
	out := make([]time.Duration, len(qs))
	if len(ds) == 0 {
		return out
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	for i, q := range qs {
		rank := int(math.Ceil(q * float64(len(s))))
		out[i] = s[min(max(rank, 1), len(s))-1]
	}
	return out
}

// Throughput runs n lifecycles of fresh calls on impl from conc goroutines
// and times them, the whole and each lifecycle. Every Begin must be told to
// execute and every Complete must succeed. An Impl that is a Batcher gets
// CeilingBatch lifecycles at a time. It stops early, with an error, when ctx
// ends.
func Throughput(ctx context.Context, impl Impl, calls *Calls, p Payload, n, conc int) (Rate, error) {
	return throughput(ctx, impl, calls, p, int64(n), 0, conc)
}

// ThroughputFor is Throughput for a time instead of a count: conc
// goroutines start lifecycles (or batches) until d has passed, and every one
// started is finished and timed.
func ThroughputFor(ctx context.Context, impl Impl, calls *Calls, p Payload, d time.Duration, conc int) (Rate, error) {
	return throughput(ctx, impl, calls, p, math.MaxInt64-CeilingBatch, d, conc)
}

// throughput runs at most n lifecycles, and none started after d when d is
// positive.
func throughput(ctx context.Context, impl Impl, calls *Calls, p Payload, n int64, d time.Duration, conc int) (Rate, error) {
	var next atomic.Int64
	var errOnce sync.Once
	var firstErr error
	var stop atomic.Bool
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err })
		stop.Store(true)
	}
	batcher, batched := impl.(Batcher)
	counter, counted := impl.(RoundTripCounter)
	var trips0 int64
	if counted {
		trips0 = counter.RoundTrips()
	}
	conc = max(conc, 1)
	var latMu sync.Mutex
	capacity := 1024
	if d <= 0 {
		capacity = int(n)
	}
	latencies := make([]time.Duration, 0, capacity)
	start := time.Now()
	var deadline time.Time
	if d > 0 {
		deadline = start.Add(d)
	}
	over := func() bool { return !deadline.IsZero() && time.Now().After(deadline) }
	run(conc, func(int) {
		batch := make([]Call, 0, CeilingBatch)
		lat := make([]time.Duration, 0, capacity/conc+1)
		defer func() {
			latMu.Lock()
			latencies = append(latencies, lat...)
			latMu.Unlock()
		}()
		for ctx.Err() == nil && !stop.Load() && !over() {
			if batched {
				k := next.Add(CeilingBatch) - CeilingBatch
				if k >= n {
					return
				}
				batch = batch[:0]
				for j := k; j < min(k+CeilingBatch, n); j++ {
					batch = append(batch, calls.Next())
				}
				t0 := time.Now()
				if err := batcher.Lifecycles(ctx, batch, p); err != nil {
					fail(err)
					return
				}
				d := time.Since(t0)
				for range batch {
					lat = append(lat, d)
				}
				continue
			}
			if next.Add(1) > n {
				return
			}
			c := calls.Next()
			t0 := time.Now()
			if err := Lifecycle(ctx, impl, c, p); err != nil {
				fail(err)
				return
			}
			lat = append(lat, time.Since(t0))
		}
	})
	r := Rate{Lifecycles: len(latencies), Elapsed: time.Since(start), Latencies: latencies, RoundTrips: -1}
	if counted {
		r.RoundTrips = counter.RoundTrips() - trips0
	}
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return r, firstErr
}

// Lifecycle runs one whole lifecycle of c on impl: Begin, then Complete to
// READY. It fails unless both are made.
func Lifecycle(ctx context.Context, impl Impl, c Call, p Payload) error {
	ok, err := impl.Begin(ctx, c, p.Request)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: begin of %s was refused", impl.Name(), c.ToolCallID)
	}
	if ok, err = impl.Complete(ctx, c, p.Raw, p.Result); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: complete of %s was refused", impl.Name(), c.ToolCallID)
	}
	return nil
}
