package canonical

import "time"

// Limits bound what one run and one record may hold. They are the run's:
// the first Begin of a run fixes them in the run's state (a zero field takes
// DefaultLimits), and every later Begin and Complete of the run is checked
// against those, whichever worker sends it. A later Begin may leave fields
// zero ("the run's"); a non-zero field that differs is refused. A negative
// field is refused.
type Limits struct {
	MaxCallsPerRun  int64 // calls a run may begin; overflow is BUDGET_EXHAUSTED
	MaxCallsPerTool int64 // calls of one tool a run may begin; overflow is BUDGET_EXHAUSTED
	MaxRunBytes     int64 // request+raw+result bytes of all of a run's records; overflow is RESULT_TOO_LARGE
	MaxRecordBytes  int64 // request+raw+result bytes of one record; overflow is RESULT_TOO_LARGE
	MaxResultBytes  int64 // bytes of the agent-facing result; overflow is RESULT_TOO_LARGE
}

// Hard ceilings. A record is written by one script, and the server serves
// no one else while a script runs: a completion of MaxRecordBytesCeiling
// bytes blocks it for hundreds of milliseconds (a 256 MiB one for seconds,
// past a cluster's node timeout). A run's counters must stay exact in a Lua
// number.
const (
	MaxRecordBytesCeiling = 16 << 20
	MaxRunBytesCeiling    = 1 << 40
	MaxCallsCeiling       = 1 << 30
)

// MaxTTL bounds a record's TTL and lease, a store's default TTL and its
// closed-run retention: ten years (of 365 days). A record keeps its times
// as milliseconds since the epoch in fixed-width fields, which a longer
// lifetime could overflow; no agent's call needs a longer one.
const MaxTTL = 10 * 365 * 24 * time.Hour

// ExpiryGranule is how much later than its latest record a run's own keys
// (its state, leases, index, live marker) may expire on a store that
// extends them a granule at a time, so that the calls of the next granule
// extend none of them: a sixteenth of the record's TTL, at most a second.
// memstore extends them exactly.
func ExpiryGranule(ttl time.Duration) time.Duration {
	return min(ttl/16, time.Second).Truncate(time.Millisecond)
}

// MaxIndexRead is the most ids one read of a run may name or return
// (Completed, ExpiredLeases, GetMany).
const MaxIndexRead = 1 << 20

// DefaultLimits are applied to zero fields of Limits.
var DefaultLimits = Limits{
	MaxCallsPerRun:  256,
	MaxCallsPerTool: 64,
	MaxRunBytes:     64 << 20,
	MaxRecordBytes:  1 << 20, // a completion this large blocks the server a few milliseconds
	MaxResultBytes:  16 << 10,
}

// WithDefaults returns l with zero fields replaced by DefaultLimits (a zero
// MaxResultBytes never exceeds MaxRecordBytes).
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	if l.MaxCallsPerRun == 0 {
		l.MaxCallsPerRun = d.MaxCallsPerRun
	}
	if l.MaxCallsPerTool == 0 {
		l.MaxCallsPerTool = d.MaxCallsPerTool
	}
	if l.MaxRunBytes == 0 {
		l.MaxRunBytes = d.MaxRunBytes
	}
	if l.MaxRecordBytes == 0 {
		l.MaxRecordBytes = d.MaxRecordBytes
	}
	if l.MaxResultBytes == 0 {
		l.MaxResultBytes = min(d.MaxResultBytes, l.MaxRecordBytes)
	}
	return l
}

// Validate checks l after defaults are applied.
func (l Limits) Validate() error {
	l = l.WithDefaults()
	switch {
	case l.MaxCallsPerRun < 0 || l.MaxCallsPerRun > MaxCallsCeiling:
		return Errorf(CodeInvalidArgument, "MaxCallsPerRun must be in 1..%d", MaxCallsCeiling)
	case l.MaxCallsPerTool < 0 || l.MaxCallsPerTool > MaxCallsCeiling:
		return Errorf(CodeInvalidArgument, "MaxCallsPerTool must be in 1..%d", MaxCallsCeiling)
	case l.MaxRunBytes < 0 || l.MaxRunBytes > MaxRunBytesCeiling:
		return Errorf(CodeInvalidArgument, "MaxRunBytes must be in 1..%d", int64(MaxRunBytesCeiling))
	case l.MaxRecordBytes < 0 || l.MaxRecordBytes > MaxRecordBytesCeiling:
		return Errorf(CodeInvalidArgument, "MaxRecordBytes must be in 1..%d", MaxRecordBytesCeiling)
	case l.MaxResultBytes < 0 || l.MaxResultBytes > l.MaxRecordBytes:
		return Errorf(CodeInvalidArgument, "MaxResultBytes must be in 1..MaxRecordBytes")
	}
	return nil
}

// Conflict returns the name of the first non-zero field of l that differs
// from the run's limits, or "" when l agrees with them.
func (l Limits) Conflict(run Limits) string {
	switch {
	case l.MaxCallsPerRun != 0 && l.MaxCallsPerRun != run.MaxCallsPerRun:
		return "MaxCallsPerRun"
	case l.MaxCallsPerTool != 0 && l.MaxCallsPerTool != run.MaxCallsPerTool:
		return "MaxCallsPerTool"
	case l.MaxRunBytes != 0 && l.MaxRunBytes != run.MaxRunBytes:
		return "MaxRunBytes"
	case l.MaxRecordBytes != 0 && l.MaxRecordBytes != run.MaxRecordBytes:
		return "MaxRecordBytes"
	case l.MaxResultBytes != 0 && l.MaxResultBytes != run.MaxResultBytes:
		return "MaxResultBytes"
	}
	return ""
}
