package redisstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/internal/storeimpl"
	"github.com/toolcanon/toolcanon/internal/auditrec"
	"github.com/toolcanon/toolcanon/internal/record"
)

// DefaultClosedRunRetention is Options.ClosedRunRetention when it is zero.
const DefaultClosedRunRetention = 24 * time.Hour

// DefaultTimeout is Options.Timeout when it is zero.
const DefaultTimeout = 5 * time.Second

// Options configure a Store. The same options reach a standalone server or a
// Redis Cluster: the topology is discovered from the addresses.
type Options struct {
	// Addrs are the server's address, or some nodes of a cluster
	// ("127.0.0.1:6379"). Required unless Client is set.
	Addrs []string
	// Username and Password authenticate with AUTH / ACL (optional).
	Username string
	Password string
	// TLS enables TLS with this configuration (optional).
	TLS *tls.Config
	// Standalone skips cluster discovery; use it with a server that is known
	// not to be a cluster, e.g. under an ACL user that may not run CLUSTER.
	Standalone bool
	// Cluster requires Addrs to be nodes of a Redis Cluster: New fails
	// rather than use one server alone when they are not.
	Cluster bool
	// SentinelMaster, when set, is the master set that Redis Sentinel
	// watches: Addrs are then the sentinels', and the store follows the
	// master they name through failovers. Sentinels are reached with TLS
	// when it is set, and without a password.
	SentinelMaster string
	// Prefix is the key prefix ("" means canonical.DefaultPrefix).
	Prefix string
	// DefaultTTL is used by a Begin whose TTL is zero (0: every Begin must
	// give its own TTL). Otherwise at least 1ms, and at most
	// canonical.MaxTTL.
	DefaultTTL time.Duration
	// ClosedRunRetention is how long a closed run stays closed at least,
	// whatever its records' TTLs (default DefaultClosedRunRetention).
	// Otherwise at least 1ms, and at most canonical.MaxTTL.
	ClosedRunRetention time.Duration
	// Durability, when Replicas is set, makes every state change wait for
	// that many replicas to acknowledge it before it succeeds.
	Durability Durability
	// Client, when set, is used instead of dialing Addrs. The Store does not
	// close it.
	Client rueidis.Client
	// Timeout bounds each store call, retries included, when the caller's
	// context allows longer (default DefaultTimeout). Lifecycle scripts are
	// resent after a lost connection until this runs out, so a server that is
	// down answers STORE_UNAVAILABLE instead of blocking the caller.
	Timeout time.Duration
	// Audit, when set, turns the audit stream on: every transition appends
	// a canonical.AuditEvent in its own script, which waits in the run's
	// slot until an exporter has it acknowledged (canonical.AuditSource).
	// Audit.MaxBacklog bounds the events waiting per cluster slot (a
	// standalone server has the slots too): DefaultSlotBacklog when zero,
	// so that the store holds at most 16,384 times that.
	Audit *canonical.AuditOptions
}

// Durability asks that a state change be on Replicas replicas before the
// store reports it done. Redis replicates asynchronously: without it, a
// master that acknowledges a Begin and dies before replicating it loses the
// record, and the same call may then run again.
//
// With Replicas > 0, each script is followed on the same connection by WAIT
// Replicas Timeout, and every script that succeeds has written on that
// connection (a retry that finds its stored outcome rewrites it unchanged):
// since Redis 7.2, and on Valkey, WAIT counts only what its own connection
// propagated. When fewer replicas confirm in time the call fails with
// STORE_UNAVAILABLE although the change was made on the master: a Begin then
// runs no tool, a Complete shows the agent nothing, and a retry by the same
// owner finds the stored outcome and waits again.
//
// With AOF, the wait is WAITAOF 1 Replicas Timeout instead: the change is
// fsynced to the master's append-only file and to those of Replicas
// replicas (Redis 7.2+ or Valkey, appendonly yes on each), so that it also
// survives the restart of every server that has it. On a server without
// WAITAOF, or without appendonly, every change fails with STORE_UNAVAILABLE.
type Durability struct {
	Replicas int           // replicas that must acknowledge each change (0: do not wait, unless AOF)
	Timeout  time.Duration // how long to wait for them: at least 1ms (whole ms count), below Options.Timeout
	AOF      bool          // wait for the change to be fsynced on the master and the replicas (WAITAOF)
}

// waits reports whether a state change waits for anything.
func (d Durability) waits() bool { return d.Replicas > 0 || d.AOF }

// Store is the canonical Store on Redis. It is safe for concurrent use.
type Store struct {
	c         rueidis.Client
	keys      canonical.Keys
	ttl       time.Duration
	retention time.Duration
	timeout   time.Duration
	durable   Durability
	tls       *tls.Config // as Options.TLS, for Check
	user      string      // as Options.Username, for Check
	own       bool
	inflight  atomic.Int64              // commands sent through do and doMulti and not answered yet
	lastTag   atomic.Pointer[[2]string] // the last principal a Begin named and its tag: one SHA-256 less per call of a run
	audit     *canonical.AuditOptions   // nil: audit off
	macs      sync.Pool                 // HMACs under audit.Key (digest)
}

var (
	_ canonical.Store            = (*Store)(nil)
	_ canonical.ProgressObserver = (*Store)(nil)
	_ canonical.DefaultTTLer     = (*Store)(nil)
	_ canonical.OwnedReader      = (*Store)(nil)
)

// New connects to Redis and returns a Store. It fails with INVALID_ARGUMENT
// for bad options and STORE_UNAVAILABLE when no server answers.
func New(opts Options) (*Store, error) {
	keys, err := canonical.NewKeys(opts.Prefix)
	if err != nil {
		return nil, err
	}
	if opts.DefaultTTL < 0 || opts.Timeout < 0 || opts.ClosedRunRetention < 0 {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "DefaultTTL, ClosedRunRetention and Timeout must not be negative")
	}
	// Expiries are whole milliseconds: a shorter one would be PEXPIRE 0,
	// which deletes the key at once (a close that closes nothing).
	if opts.DefaultTTL > 0 && opts.DefaultTTL < time.Millisecond || opts.ClosedRunRetention > 0 && opts.ClosedRunRetention < time.Millisecond {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "DefaultTTL and ClosedRunRetention must be 0 or at least 1ms")
	}
	if opts.DefaultTTL > canonical.MaxTTL || opts.ClosedRunRetention > canonical.MaxTTL {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "DefaultTTL and ClosedRunRetention must be at most %v", canonical.MaxTTL)
	}
	if opts.Cluster && opts.Standalone || opts.SentinelMaster != "" && (opts.Cluster || opts.Standalone) {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "Standalone, Cluster and SentinelMaster exclude each other")
	}
	s := &Store{c: opts.Client, keys: keys, ttl: opts.DefaultTTL, retention: opts.ClosedRunRetention,
		timeout: opts.Timeout, durable: opts.Durability, tls: opts.TLS, user: opts.Username}
	if opts.Audit != nil {
		if err := opts.Audit.Validate(); err != nil {
			return nil, err
		}
		a := *opts.Audit
		a.Key = append([]byte(nil), a.Key...)
		if a.MaxBacklog == 0 {
			a.MaxBacklog = DefaultSlotBacklog
		}
		s.audit = &a
	}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	if s.retention == 0 {
		s.retention = DefaultClosedRunRetention
	}
	// WAIT takes whole milliseconds and reads 0 as "forever": a Timeout
	// under 1 ms would be no bound at all.
	if d := opts.Durability; d.Replicas < 0 || d.waits() && (d.Timeout < time.Millisecond || d.Timeout >= s.timeout) {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument,
			"Durability needs Replicas >= 0 and, with replicas or AOF, a Timeout in [1ms, %v)", s.timeout)
	}
	if s.c == nil {
		if len(opts.Addrs) == 0 {
			return nil, canonical.Errorf(canonical.CodeInvalidArgument, "Options.Addrs is empty")
		}
		c, err := rueidis.NewClient(opts.ClientOption())
		if err != nil {
			return nil, canonical.Wrap(canonical.CodeStoreUnavailable, err, "connect to Redis")
		}
		if opts.Cluster && c.Mode() != rueidis.ClientModeCluster {
			c.Close()
			return nil, canonical.Errorf(canonical.CodeInvalidArgument,
				"Cluster is set, but %s is not a Redis Cluster node (cluster_enabled:0)", strings.Join(opts.Addrs, ","))
		}
		s.c, s.own = c, true
	}
	return s, nil
}

// ClientOption is the rueidis configuration New dials Addrs with. A caller
// that builds the Client itself (to wrap it, say) and wants the store's
// speed at one caller starts from it: the store pipelines a command only
// while others are waiting (see do), which needs DisableAutoPipelining.
func (opts Options) ClientOption() rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress:       opts.Addrs,
		Username:          opts.Username,
		Password:          opts.Password,
		TLSConfig:         opts.TLS,
		ForceSingleClient: opts.Standalone,
		Sentinel:          rueidis.SentinelOption{MasterSet: opts.SentinelMaster, TLSConfig: opts.TLS},
		// Records are read once by their owner; server-assisted client-side
		// caching would only add CLIENT TRACKING traffic.
		DisableCache: true,
		// Commands go on a pooled connection, written and read by the
		// caller's goroutine, unless do marks them for the shared pipeline.
		DisableAutoPipelining: true,
	}
}

// do sends cmd alone on a pooled connection when no other command of the
// store is waiting, else on the client's shared pipeline. A pipelined
// command is written and read by the pipeline's goroutines; once a client
// has pipelined concurrent commands it keeps doing so, and the hand-off
// made a lone caller's lifecycle take about 1.7 times go-redis's, while
// many callers at once gain from sharing writes and reads. A Client given
// in Options that pipelines everything is used as it is.
func (s *Store) do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if s.inflight.Add(1) > 1 {
		cmd = cmd.ToPipe()
	}
	defer s.inflight.Add(-1)
	return s.c.Do(ctx, cmd)
}

// doMulti is do for a pipeline of commands.
func (s *Store) doMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	if s.inflight.Add(1) > 1 {
		for i := range cmds {
			cmds[i] = cmds[i].ToPipe()
		}
	}
	defer s.inflight.Add(-1)
	return s.c.DoMulti(ctx, cmds...)
}

// Close releases the connections the Store opened.
func (s *Store) Close() error {
	if s.own {
		s.c.Close()
	}
	return nil
}

// DefaultTTL implements canonical.DefaultTTLer: Options.DefaultTTL.
func (s *Store) DefaultTTL() time.Duration { return s.ttl }

// Keys returns the key layout the store uses.
func (s *Store) Keys() canonical.Keys { return s.keys }

// Begin implements canonical.Store.
func (s *Store) Begin(ctx context.Context, req canonical.BeginRequest) (canonical.Record, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	a, err := storeimpl.ValidateBegin(&req, s.ttl)
	if err != nil {
		return canonical.Record{}, err
	}
	digest := canonical.RequestDigest(req.Request)
	head, mid, tail, err := record.BeginHeader(req.Owner, req.Tool, record.IdentityTag(req.RunID, req.ToolCallID), digest,
		int64(len(req.Request)))
	if err != nil {
		return canonical.Record{}, canonical.Wrap(canonical.CodeInvalidArgument, err, "begin")
	}
	given, err := packLimits(a.Limits)
	if err != nil {
		return canonical.Record{}, err
	}
	newRun, err := packLimits(a.NewRun)
	if err != nil {
		return canonical.Record{}, err
	}
	tag := s.principalTag(req.Principal)
	ident, err := record.PackIdent(tag, record.NewGeneration(), record.NewRunSecret())
	if err != nil {
		return canonical.Record{}, canonical.Wrap(canonical.CodeInvalidArgument, err, "begin")
	}
	auditCall, err := s.callRest(ctx, &req, tag)
	if err != nil {
		return canonical.Record{}, canonical.Wrap(canonical.CodeInvalidArgument, err, "begin")
	}
	var auditMax int64
	if s.audit != nil {
		auditMax = s.audit.MaxBacklog
	}
	events, pending, count := s.auditKeys(req.RunID)
	inHeader, parts := record.CutRequest(len(head)+record.OffOwner-record.OffUpdated+len(tail), req.Request)
	r, err := execBegin(ctx, s, beginKeys{
		Record: s.keys.Record(req.RunID, req.ToolCallID), Run: s.keys.Run(req.RunID),
		Calls: s.keys.Calls(req.RunID), Live: s.keys.Live(req.RunID),
		Due: s.keys.RunSlotIndex(req.RunID, canonical.SlotDue), Events: events, Pending: pending, Count: count,
	}, beginArgs{
		ToolCallID: req.ToolCallID, Tool: req.Tool, Head: head, Mid: mid, Tail: tail,
		Request: inHeader, Request1: parts[0], Request2: parts[1], Request3: parts[2],
		TTLMs: a.TTL.Milliseconds(), LeaseMs: a.Lease.Milliseconds(), Limits: given, NewLimits: newRun,
		Ident: ident, RunID: req.RunID, AuditCall: auditCall, AuditMax: auditMax,
	})
	if err != nil {
		return canonical.Record{}, unavailable(err, "begin")
	}
	rec := canonical.Record{
		RunID: req.RunID, ToolCallID: req.ToolCallID, Tool: req.Tool, Owner: req.Owner,
		Request: req.Request, RequestDigest: digest, RequestLen: len(req.Request),
	}
	if r.Outcome == "OK" || r.Outcome == "EXISTS" {
		if rec.Limits, err = unpackLimits(r.Limits); err != nil {
			return canonical.Record{}, err
		}
	}
	if r.Secret != "" {
		rec.RunSecret = []byte(r.Secret)
	}
	switch r.Outcome {
	case "OK":
		rec.Status, rec.Evidence = canonical.StatusProjecting, canonical.EvidenceUnknown
		rec.CreatedAt, rec.UpdatedAt = msTime(r.CreatedMs), msTime(r.CreatedMs)
		rec.LeaseUntil, rec.TTL = msTime(r.CreatedMs+a.Lease.Milliseconds()), a.TTL
		return rec, nil
	case "EXISTS":
		h, err := s.header(r.Header, "begin")
		if err != nil {
			return canonical.Record{}, err
		}
		result := append(append(r.Result, r.Result2...), r.Result3...)
		if int64(len(result)) != h.ResultLen {
			return canonical.Record{}, canonical.Errorf(canonical.CodeStoreUnavailable,
				"begin: the result's parts hold %d bytes, the header says %d", len(result), h.ResultLen)
		}
		rec.Status, rec.Evidence, rec.Error = canonical.Status(h.Status), canonical.Evidence(h.Evidence), canonical.Code(h.Error)
		rec.CreatedAt, rec.UpdatedAt, rec.LeaseUntil = msTime(h.Created), msTime(h.Updated), leaseTime(h.Lease)
		rec.TTL, rec.RawLen = msDuration(r.PTTL), int(h.RawLen)
		if len(result) > 0 {
			rec.Result = result
		}
		return rec, nil
	case "REPLAYABLE":
		h, err := s.header(r.Header, "begin")
		if err != nil {
			return canonical.Record{}, err
		}
		result := append(append(r.Result, r.Result2...), r.Result3...)
		if int64(len(result)) != h.ResultLen {
			return canonical.Record{}, canonical.Errorf(canonical.CodeStoreUnavailable,
				"begin: the result's parts hold %d bytes, the header says %d", len(result), h.ResultLen)
		}
		first := canonical.Record{RunID: req.RunID, ToolCallID: req.ToolCallID, Tool: h.Tool, Owner: h.Owner,
			RequestDigest: h.RequestSHA256, RequestLen: int(h.RequestLen), RawLen: int(h.RawLen),
			Status: canonical.Status(h.Status), Evidence: canonical.Evidence(h.Evidence), Error: canonical.Code(h.Error),
			CreatedAt: msTime(h.Created), UpdatedAt: msTime(h.Updated), LeaseUntil: leaseTime(h.Lease), TTL: msDuration(r.PTTL)}
		if len(result) > 0 {
			first.Result = result
		}
		return canonical.Record{}, &canonical.Error{Code: canonical.CodeDuplicateToolCall, Msg: "begin",
			Err: &canonical.Replayable{Record: first}}
	case "RUN_INACTIVE":
		return canonical.Record{}, canonical.Errorf(canonical.CodeRunInactive, "begin: the run is %s", r.Reason)
	case "INVALID_ARGUMENT":
		return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidArgument, "begin: limit %s differs from the run's", r.Field)
	}
	return canonical.Record{}, refusal(r.Outcome, "begin")
}

// principalTag is canonical.PrincipalTag(p), computed once for the
// principal the last Begin named.
func (s *Store) principalTag(p string) string {
	if last := s.lastTag.Load(); last != nil && last[0] == p {
		return last[1]
	}
	tag := canonical.PrincipalTag(p)
	s.lastTag.Store(&[2]string{p, tag})
	return tag
}

// packLimits packs limits as begin.lua takes them.
func packLimits(l canonical.Limits) (string, error) {
	p, err := record.PackLimits(l.MaxCallsPerRun, l.MaxCallsPerTool, l.MaxRunBytes, l.MaxResultBytes, l.MaxRecordBytes)
	if err != nil {
		return "", canonical.Wrap(canonical.CodeInvalidArgument, err, "begin")
	}
	return p, nil
}

// unpackLimits reads limits a script returned packed: none ("") are zero,
// anything else not packed is STORE_UNAVAILABLE.
func unpackLimits(p string) (canonical.Limits, error) {
	if p == "" {
		return canonical.Limits{}, nil
	}
	run, tool, runBytes, result, recordBytes, ok := record.UnpackLimits(p)
	if !ok {
		return canonical.Limits{}, canonical.Errorf(canonical.CodeStoreUnavailable, "begin: the run's limits %q are not packed limits", p)
	}
	return canonical.Limits{MaxCallsPerRun: run, MaxCallsPerTool: tool, MaxRunBytes: runBytes, MaxResultBytes: result,
		MaxRecordBytes: recordBytes}, nil
}

// header decodes a header a script returned: a header that is not one is
// STORE_UNAVAILABLE, as any reply not as declared.
func (s *Store) header(h, op string) (record.Header, error) {
	d, err := record.Decode(h)
	if err != nil {
		return d, canonical.Wrap(canonical.CodeStoreUnavailable, err, op)
	}
	return d, nil
}

// leaseTime is a header's lease: the zero time when it has none.
func leaseTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return msTime(ms)
}

// Complete implements canonical.Store.
func (s *Store) Complete(ctx context.Context, c canonical.Completion) (canonical.Record, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if c.Status == canonical.StatusError && c.Evidence == "" {
		c.Evidence = canonical.EvidenceError
	}
	if err := c.Validate(); err != nil {
		return canonical.Record{}, err
	}
	digest := record.CompletionDigest(c.Digest())
	code := string(c.Code)
	segment, err := record.Segment(string(c.Status), string(c.Evidence), code, false, int64(len(c.Raw)), int64(len(c.Result)), digest)
	if err != nil {
		return canonical.Record{}, canonical.Wrap(canonical.CodeInvalidArgument, err, "complete")
	}
	raw, result := record.Cut(c.Raw), record.Cut(c.Result)
	auditHead, auditRest, err := s.completeParts(ctx, &c)
	if err != nil {
		return canonical.Record{}, canonical.Wrap(canonical.CodeInvalidArgument, err, "complete")
	}
	events, pending, count := s.auditKeys(c.RunID)
	r, err := execComplete(ctx, s, completeKeys{
		Record: s.keys.Record(c.RunID, c.ToolCallID), Run: s.keys.Run(c.RunID), Calls: s.keys.Calls(c.RunID),
		Events: events, Pending: pending, Count: count,
	}, completeArgs{
		ToolCallID: c.ToolCallID, Owner: record.OwnerWord(c.Owner), Segment: segment,
		Raw: raw[0], Raw2: raw[1], Raw3: raw[2], Result: result[0], Result2: result[1], Result3: result[2],
		Handles: strings.Join(c.Handles, " "), Audit: auditRest, AuditHead: auditHead, RunID: c.RunID,
		Generation: s.auditGeneration(),
	})
	if err != nil {
		return canonical.Record{}, unavailable(err, "complete")
	}
	switch r.Outcome {
	case "OK", "EXISTS", "RESULT_TOO_LARGE":
	case "INVALID_TRANSITION":
		return canonical.Record{}, canonical.Errorf(canonical.CodeInvalidTransition, "complete: record is %s or owned by another invocation", statusOf(r.Header))
	default:
		return canonical.Record{}, refusal(r.Outcome, "complete")
	}
	h, err := s.header(r.Header, "complete")
	if err != nil {
		return canonical.Record{}, err
	}
	rec := canonical.Record{
		RunID: c.RunID, ToolCallID: c.ToolCallID, Owner: c.Owner, Tool: h.Tool, RequestDigest: h.RequestSHA256,
		Status: canonical.Status(h.Status), Evidence: canonical.Evidence(h.Evidence), Error: canonical.Code(h.Error),
		CreatedAt: msTime(h.Created), UpdatedAt: msTime(h.Updated), LeaseUntil: leaseTime(h.Lease),
		TTL: msDuration(r.PTTL), RequestLen: int(h.RequestLen),
	}
	rec, err = storeimpl.FinishCompletion(rec, c, h.Overflow)
	rec.RawLen = int(h.RawLen)
	return rec, err
}

// statusOf is the status a header says, for a message; "unknown" when it
// is no header.
func statusOf(h string) string {
	if d, err := record.Decode(h); err == nil {
		return d.Status
	}
	return "unknown"
}

// Abandon implements canonical.Store.
func (s *Store) Abandon(ctx context.Context, runID, toolCallID string) (canonical.Record, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRead(runID, []string{toolCallID}); err != nil {
		return canonical.Record{}, err
	}
	rec, _, err := s.abandon(ctx, runID, toolCallID, record.NewClaim())
	return rec, err
}

// abandon runs abandon.lua on valid ids under claim (record.NewClaim);
// fresh is true when the record was abandoned under this claim, by this
// call or by an earlier send of it whose reply was lost (OK), false when
// under another (EXISTS).
func (s *Store) abandon(ctx context.Context, runID, toolCallID, claim string) (_ canonical.Record, fresh bool, _ error) {
	rec := s.keys.Record(runID, toolCallID)
	events, pending, count := s.auditKeys(runID)
	runKey := rec
	if s.audit != nil {
		runKey = s.keys.Run(runID)
	}
	r, err := execAbandon(ctx, s, abandonKeys{
		Record: rec, Calls: s.keys.Calls(runID), Run: runKey, Events: events, Pending: pending, Count: count,
	}, abandonArgs{ToolCallID: toolCallID, Claim: claim, Audit: s.auditArg(auditrec.AbandonBody(toolCallID)), RunID: runID,
		Generation: s.auditGeneration()})
	if err != nil {
		return canonical.Record{}, false, unavailable(err, "abandon")
	}
	switch r.Outcome {
	case "OK", "EXISTS":
		h, err := s.header(r.Header, "abandon")
		if err != nil {
			return canonical.Record{}, false, err
		}
		return canonical.Record{
			RunID: runID, ToolCallID: toolCallID, Tool: h.Tool, Owner: h.Owner, RequestDigest: h.RequestSHA256,
			Status: canonical.Status(h.Status), Evidence: canonical.Evidence(h.Evidence), Error: canonical.Code(h.Error),
			CreatedAt: msTime(h.Created), UpdatedAt: msTime(h.Updated), LeaseUntil: leaseTime(h.Lease),
			TTL: msDuration(r.PTTL), RequestLen: int(h.RequestLen), RawLen: int(h.RawLen),
		}, r.Outcome == "OK", nil
	case "LEASE_ACTIVE":
		return canonical.Record{}, false, canonical.Errorf(canonical.CodeInvalidTransition, "abandon: the lease runs for %v more", msDuration(r.RemainingMs))
	case "INVALID_TRANSITION":
		return canonical.Record{}, false, canonical.Errorf(canonical.CodeInvalidTransition, "abandon: record is %s", statusOf(r.Header))
	}
	return canonical.Record{}, false, refusal(r.Outcome, "abandon")
}

// ExpiredLeases implements canonical.Store: one round trip of TIME and a
// ZRANGE of the first max leases, earliest first, kept when passed. Abandon
// checks the lease again against its own node's clock.
func (s *Store) ExpiredLeases(ctx context.Context, runID string, max int) ([]string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRunID(runID); err != nil {
		return nil, err
	}
	if err := canonical.ValidateMax(max); err != nil {
		return nil, err
	}
	res := s.doMulti(ctx, s.inFlight(s.keys.Calls(runID), 0, max), s.c.B().Time().Build())
	leases, err := res[0].AsZScores()
	if err != nil {
		return nil, unavailable(err, "read leases")
	}
	t, err := res[1].AsStrSlice()
	if err != nil || len(t) != 2 {
		return nil, unavailable(errors.Join(err, errors.New("TIME reply")), "read leases")
	}
	now := atoi(t[0])*1000 + atoi(t[1])/1000
	ids := []string{}
	for _, l := range leases {
		if l.Score > float64(now) {
			break
		}
		ids = append(ids, l.Member)
	}
	return ids, nil
}

// Get implements canonical.Store.
func (s *Store) Get(ctx context.Context, runID, toolCallID string) (canonical.Record, error) {
	recs, err := s.GetMany(ctx, runID, []string{toolCallID}, canonical.ReadOptions{Request: true, Raw: true})
	if err != nil {
		return canonical.Record{}, err
	}
	if recs[0] == nil {
		return canonical.Record{}, canonical.Errorf(canonical.CodeNotFound, "no record %s in run %s", toolCallID, runID)
	}
	return *recs[0], nil
}

// GetMany batches: ids per pipelined round trip. A read of the payloads
// (Request or Raw, up to MaxRecordBytes each) takes fewer ids at a time, so
// that one reply stays bounded too.
const (
	GetManyBatch        = 256
	GetManyPayloadBatch = 8
)

// GetMany implements canonical.Store: per id an HMGET (the meta line and
// the parts of the payloads read) and a PTTL, pipelined GetManyBatch ids at
// a time (GetManyPayloadBatch when Request or Raw is read), all on the
// run's slot. Round trips: ceil(len(ids) / batch).
func (s *Store) GetMany(ctx context.Context, runID string, ids []string, opts canonical.ReadOptions) ([]*canonical.Record, error) {
	return s.getMany(ctx, runID, ids, opts, &ownerRead{})
}

// ReadRecords implements canonical.OwnedReader: GetMany, with the run's
// owner and generation read in its first pipeline.
func (s *Store) ReadRecords(ctx context.Context, runID, principal, gen string, ids []string, opts canonical.ReadOptions) ([]*canonical.Record, error) {
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return nil, err
	}
	return s.getMany(ctx, runID, ids, opts, &ownerRead{on: true, principal: principal, gen: gen, first: true})
}

// getMany is GetMany, on a principal's behalf when owner says so.
func (s *Store) getMany(ctx context.Context, runID string, ids []string, opts canonical.ReadOptions, owner *ownerRead) ([]*canonical.Record, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRead(runID, ids); err != nil {
		return nil, err
	}
	fields := append([]string{record.HeaderField}, record.ResultFields...)
	if opts.Request {
		fields = append(fields, record.RequestFields...) // a request the header's field does not keep
	}
	if opts.Raw {
		fields = append(fields, record.RawFields...)
	}
	batch := GetManyBatch
	if opts.Request || opts.Raw {
		batch = GetManyPayloadBatch
	}
	out := make([]*canonical.Record, len(ids))
	for from := 0; from < len(ids); from += batch {
		to := min(from+batch, len(ids))
		if err := s.getBatch(ctx, runID, ids[from:to], fields, opts, out[from:to], owner); err != nil {
			return nil, err
		}
		// The owner is checked once, in the first batch; the generation it
		// found is required of every record.
		owner.first = false
	}
	return out, nil
}

// ownerRead is what a read on a principal's behalf checks: the run's owner,
// in the first batch of the read, and the generation of every record.
type ownerRead struct {
	on        bool   // the read is on a principal's behalf
	principal string // the reader
	gen       string // the generation every record must have ("": the run's, as the first batch finds it)
	first     bool   // the next batch is the first
}

// ownerCommands are the reads of a run's owner check: its identity (its
// owner and generation; HMGET of the state) and whether it has calls
// (EXISTS of its calls and live marker).
func (s *Store) ownerCommands(runID string) []rueidis.Completed {
	return []rueidis.Completed{
		s.c.B().Hmget().Key(s.keys.Run(runID)).Field(record.RunIdentField, stateField, record.RunLayoutField).Build(),
		s.c.B().Exists().Key(s.keys.Calls(runID), s.keys.Live(runID)).Build(),
	}
}

// checkOwnerReply checks principal against the replies of ownerCommands and
// returns the run's generation ("" when it has none).
func checkOwnerReply(state, calls rueidis.RedisResult, principal string) (string, error) {
	vals, err := state.ToArray()
	if err != nil || len(vals) != 3 {
		return "", unavailable(replyErr(err, "HMGET of the run"), "read run owner")
	}
	n, err := calls.AsInt64()
	if err != nil {
		return "", unavailable(err, "read run owner")
	}
	if err := checkLayout(vals[1], vals[2]); err != nil {
		return "", err
	}
	owner, gen, _ := runIdent(vals[0])
	if err := canonical.CheckOwner(owner, owner != "", n > 0, principal); err != nil {
		return "", err
	}
	return gen, nil
}

// runIdent reads a run state's identity field: its owner's principal tag,
// its generation and its secret, all "" when it has none.
func runIdent(v rueidis.RedisMessage) (owner, gen, secret string) {
	s, err := v.ToString()
	if err != nil {
		return "", "", ""
	}
	owner, gen, secret, _ = record.UnpackIdent(s)
	return owner, gen, secret
}

// checkLayout refuses, with LAYOUT_MISMATCH, a run state (its fields state
// and record.RunLayoutField, as read) of another layout.
func checkLayout(state, layout rueidis.RedisMessage) error {
	if _, err := state.ToString(); err != nil {
		return nil // no state
	}
	v, _ := layout.ToString()
	if _, ok := record.ParseRunLayout(v); !ok {
		return errLayout("the run's state")
	}
	return nil
}

// errLayout is the LAYOUT_MISMATCH of what, written by another layout.
func errLayout(what string) error {
	return canonical.Errorf(canonical.CodeLayoutMismatch,
		"%s is of another layout (an earlier release's): see the README's Upgrading", what)
}

// getBatch reads one pipeline of records into out; on a principal's
// behalf, the first batch checks the run's owner too, and every record of
// another generation is left nil.
func (s *Store) getBatch(ctx context.Context, runID string, ids, fields []string, opts canonical.ReadOptions, out []*canonical.Record, owner *ownerRead) error {
	const per = 2 // HMGET and PTTL, per id
	cmds := make(rueidis.Commands, 0, per*len(ids)+2)
	check := owner.on && owner.first
	if check {
		cmds = append(cmds, s.ownerCommands(runID)...)
	}
	for _, id := range ids {
		key := s.keys.Record(runID, id)
		cmds = append(cmds, s.c.B().Hmget().Key(key).Field(fields...).Build(), s.c.B().Pttl().Key(key).Build())
	}
	res := s.doMulti(ctx, cmds...)
	if check {
		gen, err := checkOwnerReply(res[0], res[1], owner.principal)
		if err != nil {
			return err
		}
		if owner.gen == "" {
			owner.gen = gen
		}
		res = res[2:]
	}
	for i, id := range ids {
		vals, err := res[per*i].ToArray()
		if err != nil {
			return unavailable(err, "read records")
		}
		pttl, err := res[per*i+1].AsInt64()
		if err != nil {
			return unavailable(err, "read records")
		}
		if len(vals) != len(fields) {
			return canonical.Errorf(canonical.CodeStoreUnavailable, "read records: HMGET returned %d values for %d fields", len(vals), len(fields))
		}
		line, err := vals[0].ToString()
		if pttl == -2 {
			continue // missing, or expired between the two commands
		}
		if err != nil {
			return errLayout("record " + id) // a hash without a header: another layout's
		}
		h, err := record.Decode(line)
		if errors.Is(err, record.ErrLayout) {
			return errLayout("record " + id)
		}
		_, inHeader, _ := record.Split(line)
		if err != nil {
			return canonical.Wrap(canonical.CodeStoreUnavailable, err, "read records: "+s.keys.Record(runID, id)+" has no valid header")
		}
		recRun, recID := runID, id
		if h.IDTag != record.IdentityTag(runID, id) {
			// Not the record its key names: copied under this key by a writer
			// outside the store. Its own ids are unknown.
			recRun, recID = "", ""
		} else if owner.on && h.Gen != owner.gen {
			// Counted in another generation of the run's state: the run was
			// lost, or expired and was begun again, since. Not the reader's.
			continue
		}
		rec := &canonical.Record{
			RunID: recRun, ToolCallID: recID, Tool: h.Tool, Owner: h.Owner,
			Status: canonical.Status(h.Status), Evidence: canonical.Evidence(h.Evidence), Error: canonical.Code(h.Error),
			RequestDigest: h.RequestSHA256, RequestLen: int(h.RequestLen), RawLen: int(h.RawLen),
			CreatedAt: msTime(h.Created), UpdatedAt: msTime(h.Updated), TTL: msDuration(pttl), LeaseUntil: leaseTime(h.Lease),
		}
		next := 1
		payload := func(name string, size int64) ([]byte, error) {
			b, err := joinParts(vals[next:next+record.MaxParts], size)
			next += record.MaxParts
			if err != nil {
				return nil, canonical.Wrap(canonical.CodeStoreUnavailable, err, "read records: "+s.keys.Record(runID, id)+" "+name)
			}
			return b, nil
		}
		if rec.Result, err = payload("result", h.ResultLen); err != nil {
			return err
		}
		if opts.Request {
			if int64(len(inHeader)) == h.RequestLen && h.RequestLen > 0 {
				rec.Request = []byte(inHeader)
				next += record.MaxParts
			} else if rec.Request, err = payload("request", h.RequestLen); err != nil {
				return err
			}
		}
		if opts.Raw {
			if rec.Raw, err = payload("raw", h.RawLen); err != nil {
				return err
			}
		}
		out[i] = rec
	}
	return nil
}

// joinParts concatenates the parts of a payload of size bytes: nil for an
// absent payload, an error when the parts do not add up to size.
func joinParts(parts []rueidis.RedisMessage, size int64) ([]byte, error) {
	var b []byte
	for _, p := range parts {
		v, err := p.ToString()
		if err != nil {
			break // the first absent part ends the payload
		}
		if b == nil {
			b = make([]byte, 0, size)
		}
		b = append(b, v...)
	}
	if int64(len(b)) != size {
		return nil, fmt.Errorf("parts hold %d bytes, the header says %d", len(b), size)
	}
	return b, nil
}

// Completed implements canonical.Store: ZRANGE of the first max finished
// calls and their ZCOUNT, in one round trip.
func (s *Store) Completed(ctx context.Context, runID string, limit int) ([]string, int, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRunID(runID); err != nil {
		return nil, 0, err
	}
	if err := canonical.ValidateMax(limit); err != nil {
		return nil, 0, err
	}
	key := s.keys.Calls(runID)
	res := s.doMulti(ctx, s.completed(key, 0, limit), s.completedCount(key))
	ids, err := res[0].AsStrSlice()
	if err != nil {
		return nil, 0, unavailable(err, "read completion index")
	}
	n, err := res[1].AsInt64()
	if err != nil {
		return nil, 0, unavailable(err, "read completion index")
	}
	return ids, int(max(n, int64(len(ids)))), nil
}

// CloseRun implements canonical.Store.
func (s *Store) CloseRun(ctx context.Context, runID, principal string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRunID(runID); err != nil {
		return err
	}
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return err
	}
	tag := canonical.PrincipalTag(principal)
	body, err := auditrec.CloseBody(tag)
	if err != nil {
		return canonical.Wrap(canonical.CodeInvalidArgument, err, "close run")
	}
	events, pending, count := s.auditKeys(runID)
	r, err := execCloseRun(ctx, s, closeRunKeys{Run: s.keys.Run(runID), Live: s.keys.Live(runID), Events: events,
		Pending: pending, Count: count},
		closeRunArgs{RetentionMs: s.retention.Milliseconds(), Principal: tag, Audit: s.auditArg(body), RunID: runID})
	if err != nil {
		return unavailable(err, "close run")
	}
	if r.Outcome != "OK" {
		return refusal(r.Outcome, "close run")
	}
	return nil
}

// Usage implements canonical.Store: HGETALL and PTTL of the run's state, the
// index's LLEN, the leases' ZCARD and the live marker's EXISTS, in one round
// trip. A run whose state is gone while its live marker, index or leases
// live is reported lost (and closed), as Begin refuses it.
func (s *Store) Usage(ctx context.Context, runID string) (canonical.RunUsage, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRunID(runID); err != nil {
		return canonical.RunUsage{}, err
	}
	return s.usage(ctx, runID, nil)
}

// ReadUsage implements canonical.OwnedReader: Usage's round trip, whose
// HGETALL of the run's state has its owner, and whose LLEN, ZCARD and
// EXISTS say whether it has calls.
func (s *Store) ReadUsage(ctx context.Context, runID, principal string) (canonical.RunUsage, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRunID(runID); err != nil {
		return canonical.RunUsage{}, err
	}
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return canonical.RunUsage{}, err
	}
	return s.usage(ctx, runID, &principal)
}

// usage is Usage; on principal's behalf when principal is not nil.
func (s *Store) usage(ctx context.Context, runID string, principal *string) (canonical.RunUsage, error) {
	run, calls := s.keys.Run(runID), s.keys.Calls(runID)
	res := s.doMulti(ctx,
		s.c.B().Hgetall().Key(run).Build(),
		s.c.B().Pttl().Key(run).Build(),
		s.completedCount(calls),
		s.inFlightCount(calls),
		s.c.B().Exists().Key(s.keys.Live(runID), calls).Build()) // calls kept while the run lives
	m, err := res[0].AsStrMap()
	if err != nil {
		return canonical.RunUsage{}, unavailable(err, "read run")
	}
	pttl, err1 := res[1].AsInt64()
	n, err2 := res[2].AsInt64()
	open, err3 := res[3].AsInt64()
	live, err4 := res[4].AsInt64()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return canonical.RunUsage{}, unavailable(err, "read run")
	}
	packed, thisLayout := record.ParseRunLayout(m[record.RunLayoutField])
	if _, has := m[stateField]; has && !thisLayout {
		return canonical.RunUsage{}, errLayout("the run's state")
	}
	owner, _, _, _ := record.UnpackIdent(m[record.RunIdentField])
	if principal != nil {
		if err := canonical.CheckOwner(owner, owner != "", n > 0 || open > 0 || live > 0, *principal); err != nil {
			return canonical.RunUsage{}, err
		}
	}
	// What Begin reads as a lost run: no limits (no state, or one a
	// complete made after a loss) while a key only a begun run has lives.
	lost := packed == "" && (live > 0 || n > 0 || open > 0)
	if len(m) == 0 {
		if lost {
			return canonical.RunUsage{RunID: runID, ToolCalls: map[string]int64{}, Completed: n, InFlight: open,
				Closed: true, Lost: true}, nil
		}
		return canonical.RunUsage{}, canonical.Errorf(canonical.CodeNotFound, "no state for run %s", runID)
	}
	var limits canonical.Limits
	if packed != "" {
		var ok bool
		limits.MaxCallsPerRun, limits.MaxCallsPerTool, limits.MaxRunBytes, limits.MaxResultBytes, limits.MaxRecordBytes, ok =
			record.UnpackLimits(packed)
		if !ok {
			return canonical.RunUsage{}, canonical.Errorf(canonical.CodeStoreUnavailable, "read run: limits %q", packed)
		}
	}
	// The run's bytes are what its room lost since the limit.
	var bytes int64
	if room, has := m["room"]; has && packed != "" {
		bytes = limits.MaxRunBytes - atoi(room)
	}
	u := canonical.RunUsage{
		RunID: runID, ToolCalls: map[string]int64{}, Completed: n, InFlight: open,
		Calls: atoi(m["calls"]), Bytes: bytes, Closed: m[stateField] == "closed" || m[stateField] == record.RunStateLost || lost,
		Lost: m[stateField] == record.RunStateLost || lost, TTL: msDuration(pttl), Limits: limits,
		Protocol: canonical.ProtocolState{
			Reports: atoi(m["pp_reports"]), Pending: atoi(m["pp_pending"]),
			Violations: atoi(m["pp_violations"]), Violated: m["pp_violated"] == "1",
		},
	}
	for f, v := range m {
		if tool, ok := strings.CutPrefix(f, "tool:"); ok {
			u.ToolCalls[tool] = atoi(v)
		}
	}
	return u, nil
}

// ObserveProgress implements canonical.ProgressObserver.
func (s *Store) ObserveProgress(ctx context.Context, runID, principal string, valid bool, threshold int64) (canonical.ProtocolState, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRunID(runID); err != nil {
		return canonical.ProtocolState{}, err
	}
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return canonical.ProtocolState{}, err
	}
	if threshold <= 0 {
		return canonical.ProtocolState{}, canonical.Errorf(canonical.CodeInvalidArgument, "progress threshold must be positive")
	}
	v := int64(0)
	if valid {
		v = 1
	}
	r, err := execObserveProgress(ctx, s, observeProgressKeys{Run: s.keys.Run(runID)},
		observeProgressArgs{Valid: v, Threshold: threshold, Principal: canonical.PrincipalTag(principal)})
	if err != nil {
		return canonical.ProtocolState{}, unavailable(err, "observe progress")
	}
	switch r.Outcome {
	case "OK":
	case "RUN_INACTIVE":
		return canonical.ProtocolState{}, canonical.Errorf(canonical.CodeRunInactive, "observe progress: the run is %s", r.Reason)
	default:
		return canonical.ProtocolState{}, refusal(r.Outcome, "observe progress")
	}
	return canonical.ProtocolState{Reports: r.Reports, Pending: r.Pending, Violations: r.Violations, Violated: r.Violated == 1}, nil
}

// ReadIndex implements canonical.OwnedReader: the run's owner and
// generation (HMGET), whether it has calls (EXISTS), and the index's ZRANGE
// and ZCOUNT, in one round trip on the run's slot.
func (s *Store) ReadIndex(ctx context.Context, runID, principal string, limit int) (canonical.RunIndex, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRunID(runID); err != nil {
		return canonical.RunIndex{}, err
	}
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return canonical.RunIndex{}, err
	}
	if err := canonical.ValidateMax(limit); err != nil {
		return canonical.RunIndex{}, err
	}
	key := s.keys.Calls(runID)
	cmds := append(s.ownerCommands(runID), s.completed(key, 0, limit), s.completedCount(key))
	res := s.doMulti(ctx, cmds...)
	gen, err := checkOwnerReply(res[0], res[1], principal)
	if err != nil {
		return canonical.RunIndex{}, err
	}
	ids, err := res[2].AsStrSlice()
	if err != nil {
		return canonical.RunIndex{}, unavailable(err, "read completion index")
	}
	n, err := res[3].AsInt64()
	if err != nil {
		return canonical.RunIndex{}, unavailable(err, "read completion index")
	}
	return canonical.RunIndex{IDs: ids, Length: int(max(n, int64(len(ids)))), Gen: gen}, nil
}

// CheckPrincipal implements canonical.Store: an HGET of the run's owner and
// an EXISTS of its index, leases and live marker, in one round trip on the
// run's slot.
func (s *Store) CheckPrincipal(ctx context.Context, runID, principal string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRunID(runID); err != nil {
		return err
	}
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return err
	}
	res := s.doMulti(ctx, s.ownerCommands(runID)...)
	_, err := checkOwnerReply(res[0], res[1], principal)
	return err
}

// HandleSources implements canonical.HandleIndex: the run's owner, its
// secret and its handle index (fields "h:<id>" of the run's state) in one
// HMGET, and whether the run has calls (EXISTS), in one round trip on the
// run's slot; the index is answered only when the owner is principal.
func (s *Store) HandleSources(ctx context.Context, runID, principal string, ids []string) (canonical.HandleSources, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := storeimpl.ValidateHandleRead(runID, principal, ids); err != nil {
		return canonical.HandleSources{}, err
	}
	fields := make([]string, 0, 3+len(ids))
	fields = append(fields, record.RunIdentField, stateField, record.RunLayoutField)
	for _, id := range ids {
		fields = append(fields, handleField+id)
	}
	res := s.doMulti(ctx,
		s.c.B().Hmget().Key(s.keys.Run(runID)).Field(fields...).Build(),
		s.c.B().Exists().Key(s.keys.Calls(runID), s.keys.Live(runID)).Build())
	vals, err := res[0].ToArray()
	if err != nil || len(vals) != len(fields) {
		return canonical.HandleSources{}, unavailable(replyErr(err, "HMGET of the run"), "read handles")
	}
	calls, err := res[1].AsInt64()
	if err != nil {
		return canonical.HandleSources{}, unavailable(err, "read handles")
	}
	if err := checkLayout(vals[1], vals[2]); err != nil {
		return canonical.HandleSources{}, err
	}
	owner, _, secret := runIdent(vals[0])
	if err := canonical.CheckOwner(owner, owner != "", calls > 0, principal); err != nil {
		return canonical.HandleSources{}, err
	}
	out := canonical.HandleSources{Calls: make([]string, len(ids))}
	if secret != "" {
		out.RunSecret = []byte(secret)
	}
	for i := range ids {
		if call, err := vals[3+i].ToString(); err == nil {
			out.Calls[i] = call
		}
	}
	return out, nil
}

// replyErr is err, or an error saying the reply of what was not as expected.
func replyErr(err error, what string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("the reply of %s is not as expected", what)
}

// The run hash's field of its state (open, closed, lost), and the prefix
// of its handle index's fields.
const (
	stateField  = "state"
	handleField = "h:"
)

// bound applies the store's timeout to ctx.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// runScript implements runner: the script alone, or, with Durability, the
// script and WAIT on one connection.
func (s *Store) runScript(ctx context.Context, sc *script, keys, args []string) rueidis.RedisResult {
	if !s.durable.waits() {
		send := func(eval bool) rueidis.RedisResult {
			cmd := sc.command(s.c.B(), eval, keys, args)
			if sc.retryable {
				cmd = cmd.ToRetryable()
			}
			return s.do(ctx, cmd)
		}
		res := send(false)
		if noScript(res) {
			res = send(true)
		}
		return res
	}
	return s.runDurable(ctx, sc, keys, args)
}

// runDurable sends the script and WAIT in one pipeline on one dedicated
// connection, so that WAIT counts the replicas that have this script's
// writes (every script that reports success writes, its retries included).
// A script that the server does not know (SCRIPT FLUSH, a restart) is sent
// again by its source. On a cluster whose slot has moved (MOVED) or is
// moving (ASK), the pipeline is sent once more, to the node the redirect
// names (after ASKING for ASK), instead of failing until the client's slot
// map refreshes; TRYAGAIN (a moving slot whose keys are split between two
// masters) is sent again while ctx allows. A retryable script is resent
// after a lost connection while ctx allows.
func (s *Store) runDurable(ctx context.Context, sc *script, keys, args []string) rueidis.RedisResult {
	for attempt := 1; ; attempt++ {
		res, acked := s.scriptAndWait(ctx, s.c, false, sc, keys, args)
		if rerr, ok := rueidis.IsRedisErr(res.Error()); ok {
			addr, moved := rerr.IsMoved()
			askAddr, ask := rerr.IsAsk()
			if ask {
				addr = askAddr
			}
			if node, known := s.c.Nodes()[addr]; (moved || ask) && known {
				res, acked = s.scriptAndWait(ctx, node, ask, sc, keys, args)
			}
		}
		// TRYAGAIN: the run's slot is moving and only some of the script's
		// keys have moved yet; the script did not run, so it is sent again.
		if rerr, ok := rueidis.IsRedisErr(res.Error()); ok && rerr.IsTryAgain() && pause(ctx, attempt) {
			continue
		}
		if err := res.NonRedisError(); err != nil {
			if sc.retryable && pause(ctx, attempt) {
				continue
			}
			return res
		}
		if res.Error() != nil {
			return res
		}
		if err := s.acknowledged(acked); err != nil {
			return rueidis.NewErrorResult(fmt.Errorf("%s: %w", sc.file, err))
		}
		return res
	}
}

// acknowledged checks the reply of WAIT (a count of replicas) or of
// WAITAOF (the local fsync, 0 or 1, and a count of replicas).
func (s *Store) acknowledged(acked rueidis.RedisResult) error {
	local, n := int64(1), int64(0)
	var err error
	if s.durable.AOF {
		var v []int64
		if v, err = acked.AsIntSlice(); err == nil && len(v) != 2 {
			err = fmt.Errorf("%d integers, want 2", len(v))
		}
		if err != nil {
			return fmt.Errorf("WAITAOF: %w", err)
		}
		local, n = v[0], v[1]
	} else if n, err = acked.AsInt64(); err != nil {
		return fmt.Errorf("WAIT: %w", err)
	}
	if local < 1 || n < int64(s.durable.Replicas) {
		what := "acknowledged"
		if s.durable.AOF {
			what = fmt.Sprintf("fsynced locally %d of 1 and", local)
		}
		return fmt.Errorf("%s by %d of %d replicas within %v", what, n, s.durable.Replicas, s.durable.Timeout)
	}
	return nil
}

// pause waits before the next attempt (longer after each) and reports
// whether ctx still allows one.
func pause(ctx context.Context, attempt int) bool {
	if ctx.Err() != nil {
		return false
	}
	t := time.NewTimer(time.Duration(attempt) * 20 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return ctx.Err() == nil
	}
}

// scriptAndWait sends the script and WAIT through c on one dedicated
// connection, after ASKING when asking, and returns both replies.
func (s *Store) scriptAndWait(ctx context.Context, c rueidis.Client, asking bool, sc *script, keys, args []string) (res, acked rueidis.RedisResult) {
	_ = c.Dedicated(func(dc rueidis.DedicatedClient) error {
		send := func(script rueidis.Completed) []rueidis.RedisResult {
			cmds := make(rueidis.Commands, 0, 3)
			if asking {
				cmds = append(cmds, dc.B().Asking().Build())
			}
			wait := dc.B().Wait().Numreplicas(int64(s.durable.Replicas)).Timeout(s.durable.Timeout.Milliseconds()).Build()
			if s.durable.AOF {
				wait = dc.B().Waitaof().Numlocal(1).Numreplicas(int64(s.durable.Replicas)).
					Timeout(s.durable.Timeout.Milliseconds()).Build()
			}
			cmds = append(cmds, script, wait)
			return dc.DoMulti(ctx, cmds...)[len(cmds)-2:]
		}
		resps := send(sc.command(dc.B(), false, keys, args))
		if noScript(resps[0]) {
			resps = send(sc.command(dc.B(), true, keys, args))
		}
		res, acked = resps[0], resps[1]
		return nil
	})
	return res, acked
}

func unavailable(err error, op string) error {
	var ce *canonical.Error
	if errors.As(err, &ce) {
		return err
	}
	return canonical.Wrap(canonical.CodeStoreUnavailable, err, op)
}

// refusal maps a declared refusal outcome to its typed error.
func refusal(outcome, op string) error {
	code := canonical.Code(outcome)
	if !code.Valid() {
		return canonical.Errorf(canonical.CodeStoreUnavailable, "%s: unexpected script outcome %q", op, outcome)
	}
	return &canonical.Error{Code: code, Msg: op}
}

func atoi(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// The reads of a run's calls (canonical.Keys.Calls): those in flight are
// scored by their lease (ms), the finished ones from
// canonical.CompletedFrom on (µs), and "~" at +inf.
var (
	completedFrom = strconv.FormatInt(canonical.CompletedFrom, 10)
	inFlightUpTo  = "(" + completedFrom
)

// completed reads max finished calls of the run's calls key from the
// start-th, in completion order.
func (s *Store) completed(key string, start, max int) rueidis.Completed {
	return s.c.B().Zrange().Key(key).Min(completedFrom).Max("(+inf").Byscore().Limit(int64(start), int64(max)).Build()
}

// completedCount counts the finished calls of the run's calls key.
func (s *Store) completedCount(key string) rueidis.Completed {
	return s.c.B().Zcount().Key(key).Min(completedFrom).Max("(+inf").Build()
}

// inFlight reads max calls in flight of the run's calls key from the
// start-th, earliest lease first, with their leases.
func (s *Store) inFlight(key string, start, max int) rueidis.Completed {
	return s.c.B().Zrange().Key(key).Min("-inf").Max(inFlightUpTo).Byscore().Limit(int64(start), int64(max)).Withscores().Build()
}

// inFlightCount counts the calls in flight of the run's calls key.
func (s *Store) inFlightCount(key string) rueidis.Completed {
	return s.c.B().Zcount().Key(key).Min("-inf").Max(inFlightUpTo).Build()
}
