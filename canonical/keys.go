package canonical

// Keys builds the storage keys of one prefix. Every key of a run carries the
// run id as a cluster hash tag, so that all of a run's keys live in one slot
// and one script can touch them atomically on Redis Cluster:
//
//	record:           <prefix>:{<run_id>}:call:<tool_call_id>   HASH
//	run:              <prefix>:{<run_id>}:run                    HASH
//	calls:            <prefix>:{<run_id>}:calls                  ZSET  in flight by lease (ms), completed by completion (µs)
//	live marker:      <prefix>:{<run_id>}:live                   STRING the run has begun calls (see Live)
//	audit events:     <prefix>:{<run_id>}:audit                  LIST   chain head and pending audit events (see Audit)
//
// The "call:" namespace keeps a tool_call_id from ever colliding with the
// run's own keys.
//
// Beside them, per slot of Redis Cluster, an index of the slot's runs that
// one script writes with the run's keys (SlotIndex), and per store the
// lease of a periodic pass (PassLease):
//
//	slot index:       <prefix>:{<slot tag>}:<kind>               ZSET   run ids by a time (ms), e.g. due
//	pass lease:       <prefix>:lease:<pass>                      STRING the reaper (or exporter) whose pass it is
type Keys struct {
	prefix string
}

// NewKeys returns the key layout for prefix ("" means DefaultPrefix).
func NewKeys(prefix string) (Keys, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := ValidatePrefix(prefix); err != nil {
		return Keys{}, err
	}
	return Keys{prefix: prefix}, nil
}

// Prefix returns the configured prefix.
func (k Keys) Prefix() string { return k.prefix }

// Record returns the key of one call's record. Identities must be valid.
func (k Keys) Record(runID, toolCallID string) string {
	return k.prefix + ":{" + runID + "}:call:" + toolCallID
}

// Run returns the key of the run's counters and state.
func (k Keys) Run(runID string) string { return k.prefix + ":{" + runID + "}:run" }

// Calls returns the key of the run's calls: each PROJECTING call scored by
// the server time (ms) at which its lease passes, each finished one by the
// server time (µs) at which it finished, so that the completion index is
// the members scored from CompletedFrom on, in completion order.
func (k Keys) Calls(runID string) string { return k.prefix + ":{" + runID + "}:calls" }

// CompletedFrom is the least score of a finished call in a run's calls
// (Keys.Calls): microseconds since the epoch are at least this since 2001,
// and leases, in milliseconds, are below it until the year 33658.
const CompletedFrom = 1_000_000_000_000_000

// Live returns the key of the run's live marker: written by every Begin
// and kept exactly as long as the run's state should live (never longer),
// apart from that state, so that a run whose state is gone while its
// records live is told from a new run.
func (k Keys) Live(runID string) string { return k.prefix + ":{" + runID + "}:live" }

// Audit returns the key of the run's audit events waiting for export,
// behind its chain head (a LIST; see package internal/auditrec).
func (k Keys) Audit(runID string) string { return k.prefix + ":{" + runID + "}:audit" }

// SlotIndex returns the key of the index of kind (SlotDue) of the runs in
// slot (0 <= slot < Slots): it carries the slot's tag (SlotTag), so that it
// lives in the slot of its runs' keys.
func (k Keys) SlotIndex(slot int, kind string) string {
	return k.prefix + ":{" + SlotTag(slot) + "}:" + kind
}

// RunSlotIndex returns the key of the index of kind of the slot the run's
// keys live in.
func (k Keys) RunSlotIndex(runID, kind string) string { return k.SlotIndex(Slot(runID), kind) }

// PassLease returns the key of the lease of a store's periodic pass (e.g.
// "reap"): the pass that sets it (SET NX PX) runs, and every other one
// yields until it expires, so that however many hosts run the pass, the
// store sees one per interval.
func (k Keys) PassLease(pass string) string { return k.prefix + ":lease:" + pass }
