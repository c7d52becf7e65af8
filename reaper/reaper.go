// Package reaper closes stuck calls as a service: it runs a store's Reap
// pass (canonical.Store.Reap) at an interval, logs what each pass did, and
// stops with its context, as river's job rescuer does for stuck jobs.
//
// A call whose worker died stays PROJECTING — counted in its run's budgets
// and answered TOOL_CALL_IN_PROGRESS to a retry — until its lease passes
// and something abandons it. Any number of hosts may run a reaper over one
// store: each pass takes the store's reap lease (ReapOptions.Every) for
// nine tenths of the interval, so that the store sees one pass per
// interval between them, and a pass another one yields to does nothing;
// the abandon script is atomic, so each call is closed, and logged, by one
// of them.
package reaper

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// DefaultInterval is Options.Interval when it is zero: a stuck call waits
// at most this long after its lease before it is closed.
const DefaultInterval = 30 * time.Second

// MinInterval is the shortest interval Run accepts.
const MinInterval = 10 * time.Millisecond

// Options configure Run.
type Options struct {
	// Interval is the time between the start of one pass and the next
	// (0: DefaultInterval; at least MinInterval). Each wait is shortened by
	// up to a tenth at random, so that reapers started together spread out.
	Interval time.Duration
	// Reap bounds each pass. Reap.Every, when zero, is nine tenths of
	// Interval: the shortest wait between two passes of one reaper, so
	// that a reaper alone passes every time.
	Reap canonical.ReapOptions
	// Logger receives a line per abandoned call and per pass that did
	// something, at Info, and per failed pass at Warn; nil discards them.
	// Lines carry ids and counts, never a payload.
	Logger *slog.Logger
	// OnPass, when set, is told of every pass when it ends.
	OnPass func(canonical.ReapReport, error)
}

// Run reaps s at once and then every Interval until ctx ends; it returns
// nil then. A pass that fails is logged and the next one runs as planned.
// It fails with INVALID_ARGUMENT only for bad options, before any pass.
func Run(ctx context.Context, s canonical.Store, o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for {
		Pass(ctx, s, o.Reap, log, o.OnPass)
		wait := o.Interval - time.Duration(rand.Int64N(int64(o.Interval)/10+1))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Start checks o and runs Run in a goroutine until stop is called; stop
// ends the wait, or the pass in progress, and returns when Run has
// returned. Bad options are INVALID_ARGUMENT, and nothing starts.
func Start(s canonical.Store, o Options) (stop func(), err error) {
	if _, err := o.withDefaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Run(ctx, s, o)
	}()
	var once sync.Once
	return func() {
		once.Do(cancel)
		<-done
	}, nil
}

// Validate checks o as Run and Start do: INVALID_ARGUMENT for an interval
// under MinInterval or bad Reap bounds.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

func (o Options) withDefaults() (Options, error) {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Interval < MinInterval {
		return o, canonical.Errorf(canonical.CodeInvalidArgument, "reaper: interval must be at least %v (got %v)", MinInterval, o.Interval)
	}
	if o.Reap.Every == 0 {
		o.Reap.Every = (o.Interval - o.Interval/10).Truncate(time.Millisecond)
	}
	if _, err := o.Reap.WithDefaults(); err != nil {
		return o, err
	}
	return o, nil
}

// Pass runs one pass of s.Reap, logs it to log (nil: nowhere) and tells
// onPass (if set), and returns what the pass returned.
func Pass(ctx context.Context, s canonical.Store, opts canonical.ReapOptions, log *slog.Logger,
	onPass func(canonical.ReapReport, error)) (canonical.ReapReport, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	rep, err := s.Reap(ctx, opts)
	elapsed := time.Since(start)
	for _, c := range rep.Abandoned {
		log.Info("reaper: call abandoned", "run_id", c.RunID, "tool_call_id", c.ToolCallID, "tool", c.Tool,
			"lease_passed", c.AbandonedAt.Sub(c.LeaseUntil).Round(time.Millisecond))
	}
	attrs := []any{"nodes", rep.Nodes, "steps", rep.Steps, "runs", rep.Runs, "expired", rep.Expired,
		"abandoned", len(rep.Abandoned), "gone", rep.Gone, "skipped", rep.Skipped, "errors", rep.Errors,
		"truncated", rep.Truncated, "duration", elapsed.Round(time.Millisecond)}
	switch {
	case rep.Yielded && err == nil:
		log.Debug("reaper: pass yielded to another reaper's", "duration", elapsed.Round(time.Millisecond))
	case err != nil && ctx.Err() == nil:
		log.Warn("reaper: pass failed", append(attrs, "code", canonical.CodeOf(err), "error", err)...)
	case len(rep.Abandoned) > 0 || rep.Gone > 0 || rep.Truncated:
		log.Info("reaper: pass", attrs...)
	default:
		log.Debug("reaper: pass", attrs...)
	}
	if onPass != nil {
		onPass(rep, err)
	}
	return rep, err
}
