package canonical

import "time"

// Reap pass bounds: the defaults of ReapOptions and their ceilings.
const (
	DefaultReapBatch      = 256
	MaxReapBatch          = 4096
	DefaultReapMaxAbandon = 10000
)

// ReapOptions bound one pass of Store.Reap.
type ReapOptions struct {
	// Batch is how much one step of the pass looks at: the most due runs
	// read of one slot at a time on Redis, and the most leases read of one
	// run at a time. 0 means DefaultReapBatch; at most MaxReapBatch.
	Batch int
	// MaxAbandon ends the pass once it has abandoned this many calls (the
	// next pass goes on). 0 means DefaultReapMaxAbandon; at most
	// MaxIndexRead.
	MaxAbandon int
	// Every, when set, makes the pass take the store's reap lease for this
	// long first: a pass that finds the lease taken (another reaper's pass
	// began less than Every ago) yields, looking at nothing, so that any
	// number of reapers over one store make one pass per Every between
	// them. 0: the pass always runs (an operator's one-off pass).
	Every time.Duration
}

// WithDefaults checks o and fills its zero fields, or fails with
// INVALID_ARGUMENT.
func (o ReapOptions) WithDefaults() (ReapOptions, error) {
	if o.Batch == 0 {
		o.Batch = DefaultReapBatch
	}
	if o.MaxAbandon == 0 {
		o.MaxAbandon = DefaultReapMaxAbandon
	}
	if o.Batch < 1 || o.Batch > MaxReapBatch {
		return o, Errorf(CodeInvalidArgument, "reap batch must be in 1..%d (got %d)", MaxReapBatch, o.Batch)
	}
	if o.Every < 0 || o.Every > 0 && o.Every < time.Millisecond || o.Every > MaxTTL {
		return o, Errorf(CodeInvalidArgument, "reap lease must be 0 or in 1ms..%v (got %v)", MaxTTL, o.Every)
	}
	if o.MaxAbandon < 1 || o.MaxAbandon > MaxIndexRead {
		return o, Errorf(CodeInvalidArgument, "reap max must be in 1..%d (got %d)", MaxIndexRead, o.MaxAbandon)
	}
	return o, nil
}

// ReapReport is what one pass of Store.Reap did.
type ReapReport struct {
	// Yielded is true when the pass did nothing because another pass of
	// the store holds the reap lease (ReapOptions.Every).
	Yielded bool
	Nodes   int // servers the pass read: every master of a cluster, the one server otherwise
	Steps   int // bounded steps taken: one per pipeline of slots read on Redis, one per shard in memory
	// Runs are the runs the pass found due: in memory those with a passed
	// lease; on Redis those their slot's due set scored at or before the
	// server's time (the earliest lease of the run's as last recorded,
	// which a completion may since have ended).
	Runs    int
	Expired int // leases found passed
	// Abandoned are the calls this pass closed as ERROR/EXECUTION_ABANDONED,
	// in the order it closed them. A call another reaper closed first is
	// not among them: across reapers, each call is reported once.
	Abandoned []ReapedCall
	Gone      int  // passed leases whose record had expired: the entry was dropped
	Skipped   int  // passed leases left alone: completed, closed by another reaper, or still running on the server's clock
	Errors    int  // steps or calls that failed; the pass went on without them
	Truncated bool // the pass ended at MaxAbandon or at its context's end, before it looked at every run
}

// ReapedCall is one call a reap pass abandoned.
type ReapedCall struct {
	RunID, ToolCallID, Tool string
	LeaseUntil              time.Time // when its lease passed
	AbandonedAt             time.Time // when it was abandoned, by the store's clock
}
