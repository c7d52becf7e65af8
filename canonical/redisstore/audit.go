package redisstore

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/auditrec"
	"github.com/toolcanon/toolcanon/internal/record"
)

// DefaultSlotBacklog is Options.Audit.MaxBacklog when it is zero: the most
// audit events one cluster slot's runs keep waiting for export.
const DefaultSlotBacklog = 1024

// auditKeys returns the keys an audit event of run appends to: the run's
// events, its slot's set of runs with pending events and its slot's count.
// With audit off the scripts touch none of them, and they are "": the
// scripts name them last, and a script's trailing "" keys are not sent
// (script.command), so the server makes no string of them for KEYS. No
// script of a store without audit names a key that never exists: on a
// cluster whose slot is moving, the target runs a script only when it
// holds every key the script names (else TRYAGAIN until the move ends).
func (s *Store) auditKeys(runID string) (events, pending, count string) {
	if s.audit == nil {
		return "", "", ""
	}
	return s.exportKeys(runID)
}

// exportKeys are the audit keys of run for the exporter's scripts, which
// run whether this store's audit is on or not.
func (s *Store) exportKeys(runID string) (events, pending, count string) {
	slot := canonical.Slot(runID)
	return s.keys.Audit(runID), s.keys.SlotIndex(slot, canonical.SlotAudit), s.keys.SlotIndex(slot, canonical.SlotAuditCount)
}

// auditGeneration returns, with audit on, a new generation for the stream
// of a run state that complete.lua or abandon.lua finds lost and makes
// (record.NewGeneration), else "": only audit events name a stream, and a
// random read per call is not paid for nothing.
func (s *Store) auditGeneration() string {
	if s.audit == nil {
		return ""
	}
	return record.NewGeneration()
}

// auditArg returns body when audit is on, else "" (the scripts' off).
func (s *Store) auditArg(body string) string {
	if s.audit == nil {
		return ""
	}
	return body
}

// callRest is the begin (and replay) event of req after its type letter.
func (s *Store) callRest(ctx context.Context, req *canonical.BeginRequest, tag string) (string, error) {
	if s.audit == nil {
		return "", nil
	}
	return auditrec.CallRest(auditrec.Call{ToolCallID: req.ToolCallID, Tool: req.Tool, Definition: req.Definition,
		Principal: tag, KeyID: s.audit.KeyID, RequestMAC: s.mac(req.Request), RequestSize: int64(len(req.Request)),
		Trace: canonical.TraceOf(ctx)})
}

// completeParts are the complete event of c, cut where a completion
// refused for its size differs.
func (s *Store) completeParts(ctx context.Context, c *canonical.Completion) (head, rest string, err error) {
	if s.audit == nil {
		return "", "", nil
	}
	o := auditrec.Outcome{ToolCallID: c.ToolCallID, Status: c.Status, Evidence: c.Evidence, Code: c.Code,
		Execution: canonical.ExecutionExecuted, KeyID: s.audit.KeyID, RawMAC: s.mac(c.Raw),
		RawSize: int64(len(c.Raw)), ResultMAC: s.mac(c.Result), ResultSize: int64(len(c.Result)),
		Redactions: max(c.Redactions, 0), Handles: len(c.Handles), Trace: canonical.TraceOf(ctx)}
	if c.NotRun {
		o.Execution = canonical.ExecutionNotRun
	}
	return auditrec.CompleteParts(o)
}

// mac is the HMAC-SHA-256 of b under the audit key (AuditOptions.Digest,
// not in hex), nil for no bytes, from an HMAC of the store's pool: the
// key's pads are hashed once, not per call.
func (s *Store) mac(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	m, _ := s.macs.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, s.audit.Key)
	}
	m.Reset()
	m.Write(b)
	out := m.Sum(make([]byte, 0, sha256.Size))
	s.macs.Put(m)
	return out
}

// The methods of canonical.AuditSource read and acknowledge what the
// scripts of audited stores wrote: a store opened only to export (its own
// Options.Audit nil) serves them as well.

// AuditRuns implements canonical.AuditSource: the sweep of the slots the
// reaper makes (sweepSlots), over their sets of runs with pending events
// (canonical.SlotAudit): 16 pipelines of 1,024 ZRANGEs however many keys
// the servers hold, and what the visits of the runs found cost.
func (s *Store) AuditRuns(ctx context.Context, batch int, visit func(runs []string) error) error {
	if batch < 1 {
		return canonical.Errorf(canonical.CodeInvalidArgument, "audit runs: batch must be positive")
	}
	var failed error
	_, err := s.sweepSlots(ctx, canonical.SlotAudit, batch, func(runs []string, _ int64) bool {
		for len(runs) > 0 && failed == nil {
			n := min(batch, len(runs))
			failed = visit(runs[:n:n])
			runs = runs[n:]
		}
		return failed == nil
	})
	if failed != nil {
		return failed
	}
	if err != nil {
		return unavailable(err, "list audit runs")
	}
	return nil
}

// AuditRead implements canonical.AuditSource: an LRANGE of each run's
// events, in one pipeline.
func (s *Store) AuditRead(ctx context.Context, runIDs []string, max int) ([]canonical.AuditPending, error) {
	if max < 1 {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "audit read: max must be positive")
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	cmds := make(rueidis.Commands, 0, len(runIDs))
	for _, run := range runIDs {
		if err := canonical.ValidateRunID(run); err != nil {
			return nil, err
		}
		cmds = append(cmds, s.c.B().Lrange().Key(s.keys.Audit(run)).Start(0).Stop(int64(max)).Build())
	}
	out := make([]canonical.AuditPending, len(runIDs))
	if len(cmds) == 0 {
		return out, nil
	}
	for i, r := range s.doMulti(ctx, cmds...) {
		els, err := r.AsStrSlice()
		if err != nil {
			return nil, unavailable(err, "read audit events")
		}
		out[i].RunID = runIDs[i]
		if len(els) == 0 {
			continue
		}
		if out[i].Head, err = auditrec.DecodeHead(els[0]); err != nil {
			return nil, canonical.Wrap(canonical.CodeStoreUnavailable, err, "read audit events of "+runIDs[i])
		}
		for _, e := range els[1:] {
			ev, err := auditrec.Decode(runIDs[i], e)
			if err != nil {
				return nil, canonical.Wrap(canonical.CodeStoreUnavailable, err, "read audit events of "+runIDs[i])
			}
			out[i].Events = append(out[i].Events, ev)
		}
	}
	return out, nil
}

// AuditAck implements canonical.AuditSource through audit_ack.lua.
func (s *Store) AuditAck(ctx context.Context, runID string, from canonical.AuditHead, n int, to canonical.AuditHead) (bool, error) {
	if err := canonical.ValidateRunID(runID); err != nil {
		return false, err
	}
	if n < 1 || to.IsZero() {
		return false, canonical.Errorf(canonical.CodeInvalidArgument, "audit ack: n must be positive and the head set")
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	events, pending, count := s.exportKeys(runID)
	r, err := execAuditAck(ctx, s, auditAckKeys{Events: events, Run: s.keys.Run(runID), Pending: pending, Count: count},
		auditAckArgs{RunID: runID, From: auditrec.Head(from), N: int64(n), To: auditrec.Head(to),
			Last: strconv.FormatInt(to.Seq, 10), Stream: to.Gen})
	if err != nil {
		return false, unavailable(err, "acknowledge audit events")
	}
	return r.Outcome == "OK", nil
}

// AuditLease implements canonical.AuditSource through audit_lease.lua, on
// the key <prefix>:lease:audit.
func (s *Store) AuditLease(ctx context.Context, holder string, ttl time.Duration) (bool, error) {
	if holder == "" || ttl < time.Millisecond {
		return false, canonical.Errorf(canonical.CodeInvalidArgument, "export lease: a holder and a TTL of at least 1ms")
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	r, err := execAuditLease(ctx, s, auditLeaseKeys{Lease: s.keys.PassLease("audit")},
		auditLeaseArgs{Holder: holder, TTLMs: ttl.Milliseconds()})
	if err != nil {
		return false, unavailable(err, "take the export lease")
	}
	return r.Outcome == "OK", nil
}

// statusKey is the key of the export's status: a STRING of four decimal
// numbers, space-separated (the last pass and the oldest pending event in
// ms since the epoch, 0 for none; the events exported and pending), written
// with its expiry by one SET, so that it never stands without one. (The
// releases before kept a HASH under ":audit:status", written by HSET and
// PEXPIRE; it expires on its own.)
func (s *Store) statusKey() string { return s.keys.Prefix() + ":audit:report" }

// statusTTL is how long the export's status is kept after its last pass.
const statusTTL = 30 * 24 * time.Hour

// AuditStatus implements canonical.AuditSource: one GET. A status this
// release did not write reads as none.
func (s *Store) AuditStatus(ctx context.Context) (canonical.AuditStatus, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	v, err := s.do(ctx, s.c.B().Get().Key(s.statusKey()).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return canonical.AuditStatus{}, nil
	}
	if err != nil {
		return canonical.AuditStatus{}, unavailable(replyErr(err, "GET of the export status"), "read the export status")
	}
	f := strings.Fields(v)
	if len(f) != 4 {
		return canonical.AuditStatus{}, nil
	}
	st := canonical.AuditStatus{Exported: atoi(f[1]), Pending: atoi(f[2])}
	if ms := atoi(f[0]); ms > 0 {
		st.LastPass = time.UnixMilli(ms)
	}
	if ms := atoi(f[3]); ms > 0 {
		st.OldestEvent = time.UnixMilli(ms)
	}
	return st, nil
}

// AuditReport implements canonical.AuditSource: one SET with the status's
// expiry.
func (s *Store) AuditReport(ctx context.Context, r canonical.AuditStatus) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	ms := func(t time.Time) string {
		if t.IsZero() {
			return "0"
		}
		return strconv.FormatInt(t.UnixMilli(), 10)
	}
	v := ms(r.LastPass) + " " + strconv.FormatInt(r.Exported, 10) + " " + strconv.FormatInt(r.Pending, 10) + " " + ms(r.OldestEvent)
	if err := s.do(ctx, s.c.B().Set().Key(s.statusKey()).Value(v).PxMilliseconds(statusTTL.Milliseconds()).Build()).Error(); err != nil {
		return unavailable(err, "keep the export status")
	}
	return nil
}

var _ canonical.AuditSource = (*Store)(nil)

// AuditEnabled reports whether this store records audit events
// (Options.Audit); other stores on the same server may, whatever it says.
func (s *Store) AuditEnabled() bool { return s.audit != nil }
