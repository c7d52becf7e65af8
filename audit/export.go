package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"golang.org/x/mod/sumdb/note"
)

// Defaults of an Exporter.
const (
	DefaultInterval     = 10 * time.Second
	DefaultRunsPerBatch = 256
	DefaultEventsPerRun = 256
	DefaultPassEvents   = 1 << 20
)

// Exporter drains a store's audit stream to a sink: at most one pass per
// interval over every exporter of the store (the store's export lease),
// whatever the number of processes that run one.
//
// A pass takes the lease, lists the runs with pending events, and for a
// batch of runs at a time reads their chain heads and pending events,
// chains them (the exporter is the one ordered writer of every chain: each
// event's Prev is the hash the store kept for the run's last acknowledged
// event, or the one before it in the batch), writes them and a signed
// checkpoint to the sink, and only then acknowledges them to the store,
// which deletes them and keeps the new head. The chain is computed here
// rather than in the store's scripts because it is a function of the
// events and the acknowledged head alone: any exporter that reads the same
// pending events computes the same hashes, so a pass that dies anywhere,
// or two exporters that overlap after a lease passed, deliver the same
// events again, never a different chain, and the sink's dedupe on (run,
// generation, sequence number) makes that a no-op.
//
// A batch written and not acknowledged (the pass died between the two, or
// the store refused the acknowledgement) is always the sink's last one,
// because a pass stops at the first failure. The first pass of an exporter,
// and the first after a failed acknowledgement, therefore settles the runs
// of the sink's last checkpoint before anything else: it delivers their
// pending events again at once, while the sink still remembers that batch
// (a JSONL sink remembers the events of its last two files only), and
// acknowledges them. A run left unacknowledged is never delivered again
// after a sink forgot it.
type Exporter struct {
	Source canonical.AuditSource
	Sink   Sink
	Signer note.Signer // signs the checkpoints (Ed25519: GenerateKey)
	Origin string      // names the store in every event's CloudEvents source and every checkpoint (ValidOrigin)

	Interval     time.Duration // between passes (DefaultInterval); the lease lasts three of them
	RunsPerBatch int           // runs per batch (DefaultRunsPerBatch)
	EventsPerRun int           // events of one run per batch (DefaultEventsPerRun)
	PassEvents   int           // the most events one pass exports (DefaultPassEvents); the next pass goes on
	Logger       *slog.Logger  // nil: slog.Default()

	holder string
	last   *Checkpoint // the sink's last checkpoint, once read
	settle bool        // the batch of last may be unacknowledged: deliver its runs again first
	now    func() time.Time
}

// PassReport is what one export pass did.
type PassReport struct {
	Leased      bool      // the pass held the store's export lease; false: another exporter did, and this pass did nothing
	Runs        int       // runs whose events it exported
	Exported    int       // events it exported (a sink may have held some already)
	Batches     int       // batches written to the sink, each with its checkpoint
	Acked       int       // runs whose events the store acknowledged
	Broken      int       // events whose chain could not be continued from the store's head (it was lost): chained from genesis, so that verification reports the break
	Pending     int       // events left pending by a pass that stopped at PassEvents (else 0: it drained what it found)
	OldestEvent time.Time // the oldest of them
}

func (x *Exporter) init() error {
	if x.Source == nil || x.Sink == nil || x.Signer == nil {
		return errors.New("audit: an Exporter needs a Source, a Sink and a Signer")
	}
	if !ValidOrigin(x.Origin) {
		return fmt.Errorf("audit: origin %q is not 1-64 bytes of [A-Za-z0-9_.-]", x.Origin)
	}
	if x.Interval <= 0 {
		x.Interval = DefaultInterval
	}
	if x.RunsPerBatch <= 0 {
		x.RunsPerBatch = DefaultRunsPerBatch
	}
	if x.EventsPerRun <= 0 {
		x.EventsPerRun = DefaultEventsPerRun
	}
	if x.PassEvents <= 0 {
		x.PassEvents = DefaultPassEvents
	}
	if x.Logger == nil {
		x.Logger = slog.Default()
	}
	if x.holder == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		x.holder = hex.EncodeToString(b[:])
	}
	if x.now == nil {
		x.now = time.Now
	}
	return nil
}

// Run makes a pass every Interval until ctx ends, logging each pass that
// exported something and each failure; it returns ctx's error.
func (x *Exporter) Run(ctx context.Context) error {
	if err := x.init(); err != nil {
		return err
	}
	t := time.NewTicker(x.Interval)
	defer t.Stop()
	for {
		rep, err := x.Pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			x.Logger.Error("audit: export pass failed", "err", err, "exported", rep.Exported)
		case rep.Exported > 0 || rep.Broken > 0:
			x.Logger.Info("audit: export pass", "runs", rep.Runs, "exported", rep.Exported, "pending", rep.Pending,
				"broken", rep.Broken)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Pass makes one export pass: see Exporter. It fails, having acknowledged
// nothing of the batch at hand, when the store or the sink fails.
func (x *Exporter) Pass(ctx context.Context) (PassReport, error) {
	var rep PassReport
	if err := x.init(); err != nil {
		return rep, err
	}
	ok, err := x.Source.AuditLease(ctx, x.holder, 3*x.Interval)
	if err != nil || !ok {
		return rep, err
	}
	rep.Leased = true
	if x.last == nil {
		cp, ok, err := x.Sink.LastCheckpoint(ctx)
		if err != nil {
			return rep, fmt.Errorf("audit: read the sink's last checkpoint: %w", err)
		}
		if ok {
			x.last = &cp
		} else {
			x.last = &Checkpoint{}
		}
		x.settle = true
	}
	if x.settle {
		x.settle = false
		if runs := x.last.runs(); len(runs) > 0 {
			if _, err := x.batch(ctx, runs, &rep); err != nil {
				return rep, err
			}
		}
	}
	// Rounds over the pending runs, until none is left or the pass has
	// exported its share: a run with more pending events than a batch
	// takes is read again in the next round.
	errEnough := errors.New("the pass has exported its share")
	for more := true; more && rep.Exported < x.PassEvents; {
		more = false
		err := x.Source.AuditRuns(ctx, x.RunsPerBatch, func(runs []string) error {
			full, err := x.batch(ctx, runs, &rep)
			if err != nil {
				return err
			}
			more = more || full
			if _, err := x.Source.AuditLease(ctx, x.holder, 3*x.Interval); err != nil {
				return err
			}
			if rep.Exported >= x.PassEvents {
				return errEnough
			}
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return rep, err
		}
	}
	if rep.Exported >= x.PassEvents {
		// Stopped at its share: what is left is read, for the status.
		x.left(ctx, &rep)
	}
	err = x.Source.AuditReport(ctx, canonical.AuditStatus{LastPass: x.now(), Exported: int64(rep.Exported),
		Pending: int64(rep.Pending), OldestEvent: rep.OldestEvent})
	return rep, err
}

// left counts what the pass leaves pending: the events of the first batch
// of runs still listed.
func (x *Exporter) left(ctx context.Context, rep *PassReport) {
	stop := errors.New("counted")
	_ = x.Source.AuditRuns(ctx, x.RunsPerBatch, func(runs []string) error {
		pend, err := x.Source.AuditRead(ctx, runs, x.EventsPerRun)
		if err != nil {
			return err
		}
		for _, p := range pend {
			rep.Pending += len(p.Events)
			if len(p.Events) > 0 && (rep.OldestEvent.IsZero() || p.Events[0].Time.Before(rep.OldestEvent)) {
				rep.OldestEvent = p.Events[0].Time
			}
		}
		return stop
	})
}

// batch exports the pending events of runs: reads, chains, writes with a
// checkpoint, acknowledges. full reports whether a run had more pending
// events than one batch reads.
func (x *Exporter) batch(ctx context.Context, runs []string, rep *PassReport) (full bool, _ error) {
	pend, err := x.Source.AuditRead(ctx, runs, x.EventsPerRun)
	if err != nil {
		return false, err
	}
	type ack struct {
		run      string
		from, to canonical.AuditHead
		n        int
	}
	var events []Event
	var acks []ack
	heads := map[[2]string]Head{}
	for _, p := range pend {
		if len(p.Events) == 0 {
			continue
		}
		full = full || len(p.Events) == x.EventsPerRun
		head := p.Head
		for _, ev := range p.Events {
			prev := Genesis
			switch {
			case ev.Gen == head.Gen && ev.Seq == head.Seq+1:
				prev = head.Hash
			case ev.Seq == 1:
			default:
				// The head this event continues is gone: export it all
				// the same, chained from genesis, so that nothing is
				// lost and verification reports the break.
				rep.Broken++
				x.Logger.Error("audit: an event does not continue its run's chain head", "run", ev.RunID, "gen", ev.Gen,
					"seq", ev.Seq, "head_gen", head.Gen, "head_seq", head.Seq)
			}
			e := Event{AuditEvent: ev}
			if err := e.Chain(prev); err != nil {
				return false, err
			}
			events = append(events, e)
			head = canonical.AuditHead{Gen: ev.Gen, Seq: ev.Seq, Hash: e.Hash}
			heads[[2]string{ev.RunID, ev.Gen}] = Head{RunID: ev.RunID, Gen: ev.Gen, Seq: ev.Seq, Hash: e.Hash}
		}
		acks = append(acks, ack{run: p.RunID, from: p.Head, to: head, n: len(p.Events)})
	}
	if len(events) == 0 {
		return false, nil
	}
	cp := Checkpoint{Origin: x.Origin, N: x.last.N + 1, Time: x.now().UTC().Truncate(time.Millisecond)}
	if x.last.N > 0 {
		cp.Prev = x.last.Digest()
	}
	for _, h := range heads {
		cp.Heads = append(cp.Heads, h)
	}
	sort.Slice(cp.Heads, func(i, j int) bool {
		a, b := cp.Heads[i], cp.Heads[j]
		return a.RunID < b.RunID || a.RunID == b.RunID && a.Gen < b.Gen
	})
	if err := cp.Sign(x.Signer); err != nil {
		return false, err
	}
	if err := x.Sink.Write(ctx, events, cp); err != nil {
		x.last = nil // read again: another exporter may have written since
		return false, fmt.Errorf("audit: the sink refused a batch (nothing of it acknowledged): %w", err)
	}
	x.last = &cp
	rep.Batches++
	rep.Exported += len(events)
	rep.Runs += len(acks)
	var failed error
	for _, a := range acks {
		ok, err := x.Source.AuditAck(ctx, a.run, a.from, a.n, a.to)
		if err != nil {
			// Delivered again by the next pass: the sink skips what it holds.
			failed = errors.Join(failed, err)
			continue
		}
		if ok {
			rep.Acked++
		}
	}
	if failed != nil {
		x.settle = true // this batch is the sink's last: the next pass settles it first
	}
	return full, failed
}
