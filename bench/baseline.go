package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/lua"
)

// newGoRedis connects go-redis to addrs: one address is a standalone server,
// more are the nodes of a cluster.
func newGoRedis(addrs []string) redis.UniversalClient {
	return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs})
}

// Seed is the seed's design ported as a naive port would: the whole record
// is one JSON string at prefix:runId:toolCallId. Begin checks EXISTS, then
// SETs with PX (two commands: two callers can both see "absent"). Complete
// GETs the record, checks its state in Go, reads the remaining PTTL and SETs
// the new JSON with that PTTL (a read-modify-write: concurrent completers all
// win, the last write stays, and the time between PTTL and SET is added to
// the record's life).
type Seed struct {
	roundTrips
	c     redis.UniversalClient
	cfg   Config
	probe *Probe
}

// seedRecord is the seed's JSON call record.
type seedRecord struct {
	RunID          string          `json:"run_id"`
	ToolCallID     string          `json:"tool_call_id"`
	Tool           string          `json:"tool"`
	Owner          string          `json:"owner"`
	Status         string          `json:"status"`
	EvidenceStatus string          `json:"evidence_status"`
	Request        json.RawMessage `json:"request"`
	RawResponse    json.RawMessage `json:"raw_response,omitempty"`
	AgentResult    json.RawMessage `json:"agent_result,omitempty"`
	CreatedMs      int64           `json:"created_ms"`
	UpdatedMs      int64           `json:"updated_ms"`
}

// NewSeed connects the seed baseline to addrs.
func NewSeed(addrs []string, cfg Config) *Seed {
	s := &Seed{cfg: cfg, probe: NewProbe(addrs)}
	s.c = newCountedGoRedis(addrs, &s.roundTrips)
	return s
}

func (s *Seed) key(c Call) string { return s.cfg.Prefix + ":" + c.RunID + ":" + c.ToolCallID }

// Name implements Impl.
func (s *Seed) Name() string { return "seed" }

// Begin implements Impl.
func (s *Seed) Begin(ctx context.Context, c Call, request []byte) (bool, error) {
	key := s.key(c)
	n, err := s.c.Exists(ctx, key).Result()
	if err != nil || n > 0 {
		return false, err
	}
	now := time.Now().UnixMilli()
	b, err := json.Marshal(seedRecord{
		RunID: c.RunID, ToolCallID: c.ToolCallID, Tool: Tool, Owner: c.Owner,
		Status: string(canonical.StatusProjecting), EvidenceStatus: string(canonical.EvidenceUnknown),
		Request: request, CreatedMs: now, UpdatedMs: now,
	})
	if err != nil {
		return false, err
	}
	return true, s.c.Set(ctx, key, b, s.cfg.TTL).Err()
}

// Complete implements Impl.
func (s *Seed) Complete(ctx context.Context, c Call, raw, result []byte) (bool, error) {
	key := s.key(c)
	b, err := s.c.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var rec seedRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return false, err
	}
	if rec.Status != string(canonical.StatusProjecting) || rec.Owner != c.Owner {
		return false, nil
	}
	ttl, err := s.c.PTTL(ctx, key).Result()
	if err != nil {
		return false, err
	}
	if ttl <= 0 {
		return false, nil // expired, or no TTL to keep
	}
	rec.Status, rec.EvidenceStatus = string(canonical.StatusReady), string(canonical.EvidenceFound)
	rec.RawResponse, rec.AgentResult, rec.UpdatedMs = raw, result, time.Now().UnixMilli()
	if b, err = json.Marshal(rec); err != nil {
		return false, err
	}
	return true, s.c.Set(ctx, key, b, ttl).Err()
}

// Raw implements Impl.
func (s *Seed) Raw(ctx context.Context, c Call) ([]byte, error) {
	b, err := s.c.Get(ctx, s.key(c)).Bytes()
	if err != nil {
		return nil, err
	}
	var rec seedRecord
	err = json.Unmarshal(b, &rec)
	return rec.RawResponse, err
}

// Expiry implements Impl.
func (s *Seed) Expiry(ctx context.Context, c Call) (Expiry, error) {
	return s.probe.Expiry(ctx, s.key(c))
}

// Close implements Impl.
func (s *Seed) Close() error { return errors.Join(s.c.Close(), s.probe.Close()) }

// WatchAttempts bounds the optimistic retries of one Watch transition.
const WatchAttempts = 64

// ErrWatchAttempts is returned when a Watch transition lost every one of its
// WatchAttempts optimistic attempts.
var ErrWatchAttempts = errors.New("bench: WATCH transaction failed on every attempt")

// errRefused ends a Watch transaction without writing: the record is not in
// the state the transition needs.
var errRefused = errors.New("refused")

// Watch keeps the record as a HASH, like toolcanon, and makes each
// transition an optimistic compare-and-set with WATCH/MULTI/EXEC: Begin
// watches the key, checks EXISTS and writes HSET+PEXPIRE in MULTI; Complete
// watches it, checks status and owner and writes HSET in MULTI (which keeps
// the TTL). A transaction that loses a race is retried, up to WatchAttempts.
type Watch struct {
	roundTrips
	c     redis.UniversalClient
	keys  canonical.Keys
	cfg   Config
	probe *Probe
}

// NewWatch connects the WATCH/MULTI baseline to addrs.
func NewWatch(addrs []string, cfg Config) (*Watch, error) {
	keys, err := canonical.NewKeys(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	w := &Watch{keys: keys, cfg: cfg, probe: NewProbe(addrs)}
	w.c = newCountedGoRedis(addrs, &w.roundTrips)
	return w, nil
}

// Name implements Impl.
func (w *Watch) Name() string { return "watch" }

// tx runs fn as an optimistic transaction on key, retrying lost races.
func (w *Watch) tx(ctx context.Context, key string, fn func(*redis.Tx) error) (bool, error) {
	for i := 0; i < WatchAttempts; i++ {
		err := w.c.Watch(ctx, fn, key)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, errRefused):
			return false, nil
		case !errors.Is(err, redis.TxFailedErr):
			return false, err
		}
	}
	return false, ErrWatchAttempts
}

// Begin implements Impl.
func (w *Watch) Begin(ctx context.Context, c Call, request []byte) (bool, error) {
	key := w.keys.Record(c.RunID, c.ToolCallID)
	return w.tx(ctx, key, func(tx *redis.Tx) error {
		n, err := tx.Exists(ctx, key).Result()
		if err != nil {
			return err
		}
		if n > 0 {
			return errRefused
		}
		now := time.Now().UnixMilli()
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, "run_id", c.RunID, "tool_call_id", c.ToolCallID, "tool", Tool, "owner", c.Owner,
				"status", string(canonical.StatusProjecting), "evidence", string(canonical.EvidenceUnknown),
				"request", request, "created_ms", now, "updated_ms", now)
			p.PExpire(ctx, key, w.cfg.TTL)
			return nil
		})
		return err
	})
}

// Complete implements Impl.
func (w *Watch) Complete(ctx context.Context, c Call, raw, result []byte) (bool, error) {
	key := w.keys.Record(c.RunID, c.ToolCallID)
	return w.tx(ctx, key, func(tx *redis.Tx) error {
		cur, err := tx.HMGet(ctx, key, "status", "owner").Result()
		if err != nil {
			return err
		}
		if cur[0] != string(canonical.StatusProjecting) || cur[1] != c.Owner {
			return errRefused
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, "status", string(canonical.StatusReady), "evidence", string(canonical.EvidenceFound),
				"raw", raw, "result", result, "updated_ms", time.Now().UnixMilli())
			return nil
		})
		return err
	})
}

// Raw implements Impl.
func (w *Watch) Raw(ctx context.Context, c Call) ([]byte, error) {
	return w.c.HGet(ctx, w.keys.Record(c.RunID, c.ToolCallID), "raw").Bytes()
}

// Expiry implements Impl.
func (w *Watch) Expiry(ctx context.Context, c Call) (Expiry, error) {
	return w.probe.Expiry(ctx, w.keys.Record(c.RunID, c.ToolCallID))
}

// Close implements Impl.
func (w *Watch) Close() error { return errors.Join(w.c.Close(), w.probe.Close()) }

// Scripts run by GoRedisLua: toolcanon's own, through go-redis (EVALSHA,
// falling back to EVAL when the server does not have them).
var (
	goRedisBegin    = redis.NewScript(lua.Source("begin.lua"))
	goRedisComplete = redis.NewScript(lua.Source("complete.lua"))
)

// GoRedisLua runs toolcanon's Lua scripts through go-redis with the KEYS
// and ARGV of the generated rueidis wrappers: the same server-side work as
// redisstore, a different client.
type GoRedisLua struct {
	roundTrips
	c     redis.UniversalClient
	keys  canonical.Keys
	cfg   Config
	probe *Probe
}

// NewGoRedisLua connects the go-redis script runner to addrs.
func NewGoRedisLua(addrs []string, cfg Config) (*GoRedisLua, error) {
	keys, err := canonical.NewKeys(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	g := &GoRedisLua{keys: keys, cfg: cfg, probe: NewProbe(addrs)}
	g.c = newCountedGoRedis(addrs, &g.roundTrips)
	return g, nil
}

// Name implements Impl.
func (g *GoRedisLua) Name() string { return "goredis-lua" }

// Begin implements Impl.
func (g *GoRedisLua) Begin(ctx context.Context, c Call, request []byte) (bool, error) {
	args := make([]any, 0, 21)
	for _, a := range beginArgs(c, request, g.cfg) {
		args = append(args, a)
	}
	o, err := scriptOutcome(goRedisBegin.Run(ctx, g.c,
		beginKeys(g.keys, c), args...))
	return o == "OK" || o == "EXISTS", err
}

// Complete implements Impl.
func (g *GoRedisLua) Complete(ctx context.Context, c Call, raw, result []byte) (bool, error) {
	var args []any
	for _, a := range completeArgs(c, raw, result) {
		args = append(args, a)
	}
	o, err := scriptOutcome(goRedisComplete.Run(ctx, g.c,
		completeKeys(g.keys, c), args...))
	return o == "OK" || o == "EXISTS", err
}

func scriptOutcome(cmd *redis.Cmd) (string, error) {
	v, err := cmd.Slice()
	if err != nil {
		return "", err
	}
	if len(v) == 0 {
		return "", fmt.Errorf("empty script reply")
	}
	s, ok := v[0].(string)
	if !ok {
		return "", fmt.Errorf("script reply starts with %T", v[0])
	}
	return s, nil
}

// Raw implements Impl.
func (g *GoRedisLua) Raw(ctx context.Context, c Call) ([]byte, error) {
	return g.probe.Raw(ctx, g.keys.Record(c.RunID, c.ToolCallID))
}

// Expiry implements Impl.
func (g *GoRedisLua) Expiry(ctx context.Context, c Call) (Expiry, error) {
	return g.probe.Expiry(ctx, g.keys.Record(c.RunID, c.ToolCallID))
}

// Close implements Impl.
func (g *GoRedisLua) Close() error { return errors.Join(g.c.Close(), g.probe.Close()) }
