package redisstore

import (
	"context"
	"crypto/tls"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
)

// DefaultClosedRunTTL is how long a run closed before any call began keeps
// its closed state when the store has no DefaultTTL.
const DefaultClosedRunTTL = 24 * time.Hour

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
	// Prefix is the key prefix ("" means canonical.DefaultPrefix).
	Prefix string
	// DefaultTTL is used by a Begin whose TTL is zero (0: every Begin must
	// give its own TTL), and for the closed state of a run that has no state
	// yet.
	DefaultTTL time.Duration
	// Client, when set, is used instead of dialing Addrs. The Store does not
	// close it.
	Client rueidis.Client
	// Timeout bounds each store call, retries included, when the caller's
	// context allows longer (default DefaultTimeout). Lifecycle scripts are
	// resent after a lost connection until this runs out, so a server that is
	// down answers STORE_UNAVAILABLE instead of blocking the caller.
	Timeout time.Duration
}

// DefaultTimeout is Options.Timeout when it is zero.
const DefaultTimeout = 5 * time.Second

// Store is the canonical Store on Redis. It is safe for concurrent use.
type Store struct {
	c       rueidis.Client
	keys    canonical.Keys
	ttl     time.Duration
	timeout time.Duration
	own     bool
}

var _ canonical.Store = (*Store)(nil)

// New connects to Redis and returns a Store. It fails with INVALID_ARGUMENT
// for bad options and STORE_UNAVAILABLE when no server answers.
func New(opts Options) (*Store, error) {
	keys, err := canonical.NewKeys(opts.Prefix)
	if err != nil {
		return nil, err
	}
	if opts.DefaultTTL < 0 || opts.Timeout < 0 {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "DefaultTTL and Timeout must not be negative")
	}
	s := &Store{c: opts.Client, keys: keys, ttl: opts.DefaultTTL, timeout: opts.Timeout}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	if s.c == nil {
		if len(opts.Addrs) == 0 {
			return nil, canonical.Errorf(canonical.CodeInvalidArgument, "Options.Addrs is empty")
		}
		c, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress:       opts.Addrs,
			Username:          opts.Username,
			Password:          opts.Password,
			TLSConfig:         opts.TLS,
			ForceSingleClient: opts.Standalone,
			// Records are read once by their owner; server-assisted client-side
			// caching would only add CLIENT TRACKING traffic.
			DisableCache: true,
		})
		if err != nil {
			return nil, canonical.Wrap(canonical.CodeStoreUnavailable, err, "connect to Redis")
		}
		s.c, s.own = c, true
	}
	return s, nil
}

// Close releases the connections the Store opened.
func (s *Store) Close() error {
	if s.own {
		s.c.Close()
	}
	return nil
}

// Keys returns the key layout the store uses.
func (s *Store) Keys() canonical.Keys { return s.keys }

// Begin implements canonical.Store.
func (s *Store) Begin(ctx context.Context, req canonical.BeginRequest) (canonical.Record, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	ttl, lim, err := req.Validate(s.ttl)
	if err != nil {
		return canonical.Record{}, err
	}
	digest := canonical.RequestDigest(req.Request)
	arr, err := s.array(execBegin(ctx, s.c,
		beginKeys{Record: s.keys.Record(req.RunID, req.ToolCallID), Run: s.keys.Run(req.RunID)},
		beginArgs{
			RunID: req.RunID, ToolCallID: req.ToolCallID, Tool: req.Tool, Owner: req.Owner,
			Request: req.Request, RequestSHA256: digest, TTLMs: ttl.Milliseconds(),
			MaxCallsRun: lim.MaxCallsPerRun, MaxCallsTool: lim.MaxCallsPerTool, MaxRunBytes: lim.MaxRunBytes,
			MaxRecordBytes: lim.MaxRecordBytes, MaxResultBytes: lim.MaxResultBytes,
		}), "begin")
	if err != nil {
		return canonical.Record{}, err
	}
	rec := canonical.Record{
		RunID: req.RunID, ToolCallID: req.ToolCallID, Tool: req.Tool, Owner: req.Owner,
		Request: req.Request, RequestDigest: digest, RequestLen: len(req.Request),
	}
	switch str(arr, 0) {
	case "OK":
		rec.Status, rec.Evidence = canonical.StatusProjecting, canonical.EvidenceUnknown
		rec.CreatedAt = msTime(num(arr, 1))
		rec.UpdatedAt = rec.CreatedAt
		rec.TTL = time.Duration(num(arr, 2)) * time.Millisecond
		return rec, nil
	case "EXISTS":
		rec.Status, rec.Evidence, rec.Error = canonical.Status(str(arr, 1)), canonical.Evidence(str(arr, 2)), canonical.Code(str(arr, 3))
		rec.CreatedAt, rec.UpdatedAt = msTime(num(arr, 4)), msTime(num(arr, 5))
		rec.TTL = time.Duration(num(arr, 6)) * time.Millisecond
		return rec, nil
	}
	return canonical.Record{}, refusal(arr, "begin")
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
	arr, err := s.array(execComplete(ctx, s.c,
		completeKeys{
			Record: s.keys.Record(c.RunID, c.ToolCallID), Run: s.keys.Run(c.RunID), Index: s.keys.Index(c.RunID),
		},
		completeArgs{
			Owner: c.Owner, Status: string(c.Status), Evidence: string(c.Evidence), Code: string(c.Code),
			Raw: c.Raw, Result: c.Result, Digest: c.Digest(),
		}), "complete")
	if err != nil {
		return canonical.Record{}, err
	}
	outcome := str(arr, 0)
	if outcome != "OK" && outcome != "EXISTS" && outcome != "RESULT_TOO_LARGE" {
		return canonical.Record{}, refusal(arr, "complete")
	}
	rec := canonical.Record{
		RunID: c.RunID, ToolCallID: c.ToolCallID, Owner: c.Owner,
		Status: canonical.Status(str(arr, 1)), Evidence: canonical.Evidence(str(arr, 2)), Error: canonical.Code(str(arr, 3)),
		CreatedAt: msTime(num(arr, 4)), UpdatedAt: msTime(num(arr, 5)),
		TTL:  time.Duration(num(arr, 6)) * time.Millisecond,
		Tool: str(arr, 7), RequestDigest: str(arr, 8),
	}
	return canonical.FinishCompletion(rec, c, num(arr, 9) == 1)
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

var baseFields = []string{"run_id", "tool_call_id", "tool", "status", "evidence", "error",
	"request_sha256", "result", "owner", "created_ms", "updated_ms"}

// GetMany implements canonical.Store: one pipelined round trip of HMGET,
// PTTL and HSTRLEN per id, all on the run's slot.
func (s *Store) GetMany(ctx context.Context, runID string, ids []string, opts canonical.ReadOptions) ([]*canonical.Record, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRead(runID, ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return []*canonical.Record{}, nil
	}
	fields := baseFields
	if opts.Request {
		fields = append(fields[:len(fields):len(fields)], "request")
	}
	if opts.Raw {
		fields = append(fields[:len(fields):len(fields)], "raw")
	}
	const per = 4 // HMGET, PTTL and the two payload lengths, per id
	cmds := make(rueidis.Commands, 0, per*len(ids))
	for _, id := range ids {
		key := s.keys.Record(runID, id)
		cmds = append(cmds, s.c.B().Hmget().Key(key).Field(fields...).Build(), s.c.B().Pttl().Key(key).Build(),
			s.c.B().Hstrlen().Key(key).Field("request").Build(), s.c.B().Hstrlen().Key(key).Field("raw").Build())
	}
	res := s.c.DoMulti(ctx, cmds...)
	out := make([]*canonical.Record, len(ids))
	for i := range ids {
		vals, err := res[per*i].ToArray()
		if err != nil {
			return nil, unavailable(err, "read records")
		}
		pttl, err1 := res[per*i+1].AsInt64()
		reqLen, err2 := res[per*i+2].AsInt64()
		rawLen, err3 := res[per*i+3].AsInt64()
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, unavailable(err, "read records")
		}
		get := func(name string) (string, bool) {
			for j, f := range fields {
				if f == name {
					v, err := vals[j].ToString()
					return v, err == nil
				}
			}
			return "", false
		}
		status, ok := get("status")
		if !ok || pttl == -2 {
			continue // missing or expired between the two commands
		}
		rec := &canonical.Record{Status: canonical.Status(status), TTL: time.Duration(pttl) * time.Millisecond,
			RequestLen: int(reqLen), RawLen: int(rawLen)}
		rec.RunID, _ = get("run_id")
		rec.ToolCallID, _ = get("tool_call_id")
		rec.Tool, _ = get("tool")
		ev, _ := get("evidence")
		code, _ := get("error")
		rec.Evidence, rec.Error = canonical.Evidence(ev), canonical.Code(code)
		rec.RequestDigest, _ = get("request_sha256")
		rec.Owner, _ = get("owner")
		c, _ := get("created_ms")
		u, _ := get("updated_ms")
		rec.CreatedAt, rec.UpdatedAt = msTime(atoi(c)), msTime(atoi(u))
		if v, ok := get("result"); ok {
			rec.Result = []byte(v)
		}
		if v, ok := get("request"); ok {
			rec.Request = []byte(v)
		}
		if v, ok := get("raw"); ok && v != "" {
			rec.Raw = []byte(v)
		}
		out[i] = rec
	}
	return out, nil
}

// Completed implements canonical.Store.
func (s *Store) Completed(ctx context.Context, runID string) ([]string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRunID(runID); err != nil {
		return nil, err
	}
	ids, err := s.c.Do(ctx, s.c.B().Lrange().Key(s.keys.Index(runID)).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		return nil, unavailable(err, "read completion index")
	}
	return ids, nil
}

// CloseRun implements canonical.Store.
func (s *Store) CloseRun(ctx context.Context, runID string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRunID(runID); err != nil {
		return err
	}
	ttl := s.ttl
	if ttl == 0 {
		ttl = DefaultClosedRunTTL
	}
	_, err := s.array(execCloseRun(ctx, s.c, closeRunKeys{Run: s.keys.Run(runID)}, closeRunArgs{TTLMs: ttl.Milliseconds()}), "close run")
	return err
}

// Usage implements canonical.Store.
func (s *Store) Usage(ctx context.Context, runID string) (canonical.RunUsage, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRunID(runID); err != nil {
		return canonical.RunUsage{}, err
	}
	run := s.keys.Run(runID)
	res := s.c.DoMulti(ctx,
		s.c.B().Hgetall().Key(run).Build(),
		s.c.B().Pttl().Key(run).Build(),
		s.c.B().Llen().Key(s.keys.Index(runID)).Build())
	m, err := res[0].AsStrMap()
	if err != nil {
		return canonical.RunUsage{}, unavailable(err, "read run")
	}
	pttl, err1 := res[1].AsInt64()
	n, err2 := res[2].AsInt64()
	if err := errors.Join(err1, err2); err != nil {
		return canonical.RunUsage{}, unavailable(err, "read run")
	}
	if len(m) == 0 {
		return canonical.RunUsage{}, canonical.Errorf(canonical.CodeNotFound, "no state for run %s", runID)
	}
	u := canonical.RunUsage{
		RunID: runID, ToolCalls: map[string]int64{}, Completed: n,
		Calls: atoi(m["calls"]), Bytes: atoi(m["bytes"]), Closed: m["state"] == "closed",
		TTL: time.Duration(pttl) * time.Millisecond,
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

// ObserveProgress implements canonical.Store.
func (s *Store) ObserveProgress(ctx context.Context, runID string, valid bool, threshold int64) (canonical.ProtocolState, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := canonical.ValidateRunID(runID); err != nil {
		return canonical.ProtocolState{}, err
	}
	if threshold <= 0 {
		return canonical.ProtocolState{}, canonical.Errorf(canonical.CodeInvalidArgument, "progress threshold must be positive")
	}
	ttl := s.ttl
	if ttl == 0 {
		ttl = DefaultClosedRunTTL
	}
	v := int64(0)
	if valid {
		v = 1
	}
	arr, err := s.array(execObserveProgress(ctx, s.c, observeProgressKeys{Run: s.keys.Run(runID)},
		observeProgressArgs{Valid: v, Threshold: threshold, TTLMs: ttl.Milliseconds()}), "observe progress")
	if err != nil {
		return canonical.ProtocolState{}, err
	}
	return canonical.ProtocolState{Reports: num(arr, 1), Pending: num(arr, 2), Violations: num(arr, 3), Violated: num(arr, 4) == 1}, nil
}

// bound applies the store's timeout to ctx.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// array runs a script result to its array reply, mapping transport and
// server errors to STORE_UNAVAILABLE.
func (s *Store) array(res rueidis.RedisResult, op string) ([]rueidis.RedisMessage, error) {
	arr, err := res.ToArray()
	if err != nil {
		return nil, unavailable(err, op)
	}
	if len(arr) == 0 {
		return nil, canonical.Errorf(canonical.CodeStoreUnavailable, "%s: empty script reply", op)
	}
	return arr, nil
}

func unavailable(err error, op string) error {
	return canonical.Wrap(canonical.CodeStoreUnavailable, err, op)
}

// refusal maps a script's refusal outcome to its typed error.
func refusal(arr []rueidis.RedisMessage, op string) error {
	code := canonical.Code(str(arr, 0))
	if !code.Valid() {
		return canonical.Errorf(canonical.CodeStoreUnavailable, "%s: unexpected script outcome %q", op, code)
	}
	if code == canonical.CodeInvalidTransition {
		return canonical.Errorf(code, "%s: record is %s or owned by another invocation", op, str(arr, 1))
	}
	return &canonical.Error{Code: code, Msg: op}
}

func str(arr []rueidis.RedisMessage, i int) string {
	if i >= len(arr) {
		return ""
	}
	v, _ := arr[i].ToString()
	return v
}

func num(arr []rueidis.RedisMessage, i int) int64 {
	if i >= len(arr) {
		return 0
	}
	v, _ := arr[i].AsInt64()
	return v
}

func atoi(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }
