package bench

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/record"
	"github.com/toolcanon/toolcanon/lua"
)

// Store runs the lifecycle through a canonical.Store: toolcanon itself.
type Store struct {
	roundTrips
	name  string
	store canonical.Store
	keys  canonical.Keys
	cfg   Config
	probe *Probe // nil: expiry is read through the store
	close func() error
}

// NewRedisStore returns toolcanon's redisstore on addrs (one server, or the
// nodes of a cluster) as an Impl. Its rueidis client has the options
// redisstore.New gives its own, wrapped to count round trips.
func NewRedisStore(name string, addrs []string, cfg Config) (*Store, error) {
	c, err := rueidis.NewClient(redisstore.Options{Addrs: addrs}.ClientOption())
	if err != nil {
		return nil, err
	}
	x := &Store{name: name, cfg: cfg, probe: NewProbe(addrs)}
	s, err := redisstore.New(redisstore.Options{Client: countRueidis(c, &x.roundTrips), Prefix: cfg.Prefix, Audit: cfg.Audit})
	if err != nil {
		c.Close()
		x.probe.Close()
		return nil, err
	}
	x.store, x.keys = s, s.Keys()
	x.close = func() error {
		err := s.Close()
		c.Close()
		return err
	}
	return x, nil
}

// NewMemStore returns toolcanon's memstore as an Impl.
func NewMemStore(name string, cfg Config) *Store {
	return &Store{name: name, store: memstore.New(), cfg: cfg}
}

// Name implements Impl.
func (s *Store) Name() string { return s.name }

// Begin implements Impl.
func (s *Store) Begin(ctx context.Context, c Call, request []byte) (bool, error) {
	_, err := s.store.Begin(ctx, canonical.BeginRequest{
		RunID: c.RunID, ToolCallID: c.ToolCallID, Tool: Tool, Owner: c.Owner,
		Request: request, TTL: s.cfg.TTL, Limits: s.cfg.Limits,
	})
	switch canonical.CodeOf(err) {
	case "":
		return true, nil
	case canonical.CodeDuplicateToolCall, canonical.CodeToolCallInProgress:
		return false, nil
	}
	return false, err
}

// Complete implements Impl.
func (s *Store) Complete(ctx context.Context, c Call, raw, result []byte) (bool, error) {
	_, err := s.store.Complete(ctx, canonical.Completion{
		RunID: c.RunID, ToolCallID: c.ToolCallID, Owner: c.Owner,
		Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Raw: raw, Result: result,
	})
	switch canonical.CodeOf(err) {
	case "":
		return true, nil
	case canonical.CodeInvalidTransition:
		return false, nil
	}
	return false, err
}

// Raw implements Impl.
func (s *Store) Raw(ctx context.Context, c Call) ([]byte, error) {
	rec, err := s.store.Get(ctx, c.RunID, c.ToolCallID)
	return rec.Raw, err
}

// Expiry implements Impl: from the server for redisstore, bracketed by the
// local clock for memstore (whose clock it is).
func (s *Store) Expiry(ctx context.Context, c Call) (Expiry, error) {
	if s.probe != nil {
		return s.probe.Expiry(ctx, s.keys.Record(c.RunID, c.ToolCallID))
	}
	t0 := time.Now().UnixMilli()
	rec, err := s.store.Get(ctx, c.RunID, c.ToolCallID)
	t1 := time.Now().UnixMilli()
	if err != nil {
		return Expiry{}, err
	}
	ttl := rec.TTL.Milliseconds()
	return Expiry{Lo: t0 + ttl, Hi: t1 + ttl}, nil
}

// Close implements Impl.
func (s *Store) Close() error {
	var err error
	if s.probe != nil {
		err = s.probe.Close()
	}
	if s.close != nil {
		if e := s.close(); err == nil {
			err = e
		}
	}
	return err
}

// Probe looks at a Redis server (or cluster) without going through the
// implementation under test: it reads expiries by the server's clock and
// removes a comparison's keys.
type Probe struct {
	c redis.UniversalClient
}

// NewProbe connects to addrs: one address is a standalone server, more are
// the nodes of a cluster.
func NewProbe(addrs []string) *Probe {
	return &Probe{c: redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs})}
}

// Expiry returns when key expires, by the server's clock: TIME, PTTL and
// TIME again, pipelined on one connection to the key's node. The server
// counts the PTTL from a clock reading taken between the two TIMEs, so the
// expiry lies between the first TIME plus the PTTL and the second TIME plus
// the PTTL, however long the server paused in between.
func (p *Probe) Expiry(ctx context.Context, key string) (Expiry, error) {
	var c redis.Cmdable = p.c
	if cc, ok := p.c.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return Expiry{}, err
		}
		c = node
	}
	var t1, t2 *redis.TimeCmd
	var ttl *redis.DurationCmd
	if _, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		t1, ttl, t2 = pipe.Time(ctx), pipe.PTTL(ctx, key), pipe.Time(ctx)
		return nil
	}); err != nil {
		return Expiry{}, err
	}
	d := ttl.Val()
	if d < 0 {
		return Expiry{}, fmt.Errorf("%s: no expiry (PTTL %d)", key, d)
	}
	ms := d.Milliseconds()
	return Expiry{Lo: t1.Val().UnixMilli() + ms, Hi: t2.Val().UnixMilli() + ms}, nil
}

// Raw returns the raw response of the record at key as toolcanon's scripts
// lay it out: its parts joined, up to the first absent one; redis.Nil when
// the record holds none.
func (p *Probe) Raw(ctx context.Context, key string) ([]byte, error) {
	parts, err := p.c.HMGet(ctx, key, record.RawFields...).Result()
	if err != nil {
		return nil, err
	}
	var raw []byte
	for _, part := range parts {
		s, ok := part.(string)
		if !ok {
			break // the first absent part ends the payload
		}
		raw = append(raw, s...)
	}
	if raw == nil {
		return nil, redis.Nil
	}
	return raw, nil
}

// DeletePrefix removes every key that starts with prefix+":" and returns how
// many it removed.
func (p *Probe) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	var total atomic.Int64 // ForEachMaster runs the masters at once
	del := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for i := 0; i < 1<<20; i++ { // bounded: a cursor walk ends long before
			keys, next, err := c.Scan(ctx, cursor, prefix+":*", 1000).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				// One UNLINK per key (a cluster node's keys span slots), the
				// batch's in one pipeline.
				if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
					for _, k := range keys {
						p.Unlink(ctx, k)
					}
					return nil
				}); err != nil {
					return err
				}
			}
			total.Add(int64(len(keys)))
			if cursor = next; cursor == 0 {
				return nil
			}
		}
		return nil
	}
	if cc, ok := p.c.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return del(ctx, c) })
		return int(total.Load()), err
	}
	err := del(ctx, p.c)
	return int(total.Load()), err
}

// Close closes the probe's connections.
func (p *Probe) Close() error { return p.c.Close() }

// Ceiling runs the lifecycle scripts as fully pipelined EVALSHA on one
// connection: what the server itself can do with them, without any client
// round trip per call. It implements Batcher; its Begin and Complete send
// one EVALSHA each, with none of the store's argument checks.
type Ceiling struct {
	roundTrips
	name     string
	c        rueidis.Client
	keys     canonical.Keys
	cfg      Config
	probe    *Probe
	begin    string // SHA1 of begin.lua
	complete string // SHA1 of complete.lua
}

// CeilingBatch is how many lifecycles Throughput hands a Batcher at once:
// 2×CeilingBatch commands in flight on one connection.
const CeilingBatch = 128

// NewCeiling connects to a standalone server at addr and loads the scripts.
func NewCeiling(name string, addr string, cfg Config) (*Ceiling, error) {
	keys, err := canonical.NewKeys(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return nil, err
	}
	x := &Ceiling{name: name, keys: keys, cfg: cfg, probe: NewProbe([]string{addr})}
	x.c = countRueidis(c, &x.roundTrips)
	for _, f := range []struct {
		sha  *string
		file string
	}{{&x.begin, "begin.lua"}, {&x.complete, "complete.lua"}} {
		src := lua.Source(f.file)
		sum := sha1.Sum([]byte(src))
		*f.sha = hex.EncodeToString(sum[:])
		if err := c.Do(context.Background(), c.B().ScriptLoad().Script(src).Build()).Error(); err != nil {
			x.Close()
			return nil, err
		}
	}
	return x, nil
}

// Name implements Impl.
func (x *Ceiling) Name() string { return x.name }

func (x *Ceiling) beginCmd(c Call, request []byte) rueidis.Completed {
	keys := beginKeys(x.keys, c)
	return x.c.B().Evalsha().Sha1(x.begin).Numkeys(int64(len(keys))).Key(keys...).Arg(beginArgs(c, request, x.cfg)...).Build()
}

func (x *Ceiling) completeCmd(c Call, raw, result []byte) rueidis.Completed {
	keys := completeKeys(x.keys, c)
	return x.c.B().Evalsha().Sha1(x.complete).Numkeys(int64(len(keys))).Key(keys...).Arg(completeArgs(c, raw, result)...).Build()
}

// beginKeys are the KEYS of begin.lua for one call, as redisstore sends
// them with audit off: without the audit stream's, which come last.
func beginKeys(k canonical.Keys, c Call) []string {
	return []string{k.Record(c.RunID, c.ToolCallID), k.Run(c.RunID), k.Calls(c.RunID), k.Live(c.RunID),
		k.RunSlotIndex(c.RunID, canonical.SlotDue)}
}

// completeKeys are the KEYS of complete.lua for one call, audit off:
// without the audit stream's.
func completeKeys(k canonical.Keys, c Call) []string {
	return []string{k.Record(c.RunID, c.ToolCallID), k.Run(c.RunID), k.Calls(c.RunID)}
}

// beginArgs are the ARGV of begin.lua for one call, as redisstore sends
// them: the configured limits are the run's (its first Begin fixes them).
func beginArgs(c Call, request []byte, cfg Config) []string {
	lim, ttl := cfg.Limits.WithDefaults(), strconv.FormatInt(cfg.TTL.Milliseconds(), 10)
	head, mid, tail, err := record.BeginHeader(c.Owner, Tool, record.IdentityTag(c.RunID, c.ToolCallID),
		canonical.RequestDigest(request), int64(len(request)))
	if err != nil {
		panic(err) // the bench's own calls always encode
	}
	limits, err := record.PackLimits(lim.MaxCallsPerRun, lim.MaxCallsPerTool, lim.MaxRunBytes, lim.MaxResultBytes, lim.MaxRecordBytes)
	if err != nil {
		panic(err)
	}
	// The generation and secret a new run takes: random per Begin, as
	// redisstore offers.
	ident, err := record.PackIdent(canonical.PrincipalTag(""), record.NewGeneration(), record.NewRunSecret())
	if err != nil {
		panic(err)
	}
	inHeader, parts := record.CutRequest(len(head)+record.OffOwner-record.OffUpdated+len(tail), request)
	args := []string{c.ToolCallID, Tool, head, mid, tail, rueidis.BinaryString(inHeader)}
	for _, p := range parts {
		args = append(args, rueidis.BinaryString(p))
	}
	// The caller's limits are the run's, then a new run's; the run's id
	// is its member in its slot's due set; audit is off (no event, no
	// bound).
	return append(args, ttl, ttl, limits, limits, ident, c.RunID, "", "0")
}

// completeArgs are the ARGV of complete.lua for a READY completion, as
// redisstore sends them.
func completeArgs(c Call, raw, result []byte) []string {
	comp := canonical.Completion{Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Raw: raw, Result: result}
	digest := record.CompletionDigest(comp.Digest())
	segment, err := record.Segment(string(comp.Status), string(comp.Evidence), "", false, int64(len(raw)), int64(len(result)), digest)
	if err != nil {
		panic(err)
	}
	args := []string{c.ToolCallID, record.OwnerWord(c.Owner), segment}
	r, s := record.Cut(raw), record.Cut(result)
	for _, p := range append(r[:], s[:]...) {
		args = append(args, rueidis.BinaryString(p))
	}
	// No handles; audit off (no event, its head empty, and no generation
	// for the stream of a state found lost), the run's id.
	return append(args, "", "", "", c.RunID, "")
}

// outcome is the first element of a script's reply.
func outcome(r rueidis.RedisResult) (string, error) {
	arr, err := r.ToArray()
	if err != nil {
		return "", err
	}
	if len(arr) == 0 {
		return "", fmt.Errorf("empty script reply")
	}
	return arr[0].ToString()
}

// Begin implements Impl.
func (x *Ceiling) Begin(ctx context.Context, c Call, request []byte) (bool, error) {
	o, err := outcome(x.c.Do(ctx, x.beginCmd(c, request)))
	return o == "OK" || o == "EXISTS", err
}

// Complete implements Impl.
func (x *Ceiling) Complete(ctx context.Context, c Call, raw, result []byte) (bool, error) {
	o, err := outcome(x.c.Do(ctx, x.completeCmd(c, raw, result)))
	return o == "OK" || o == "EXISTS", err
}

// Lifecycles implements Batcher: every Begin and Complete of calls in one
// pipeline on one connection, so that each Begin reaches the server before
// its Complete.
func (x *Ceiling) Lifecycles(ctx context.Context, calls []Call, p Payload) error {
	cmds := make(rueidis.Commands, 0, 2*len(calls))
	for _, c := range calls {
		cmds = append(cmds, x.beginCmd(c, p.Request), x.completeCmd(c, p.Raw, p.Result))
	}
	for i, r := range x.c.DoMulti(ctx, cmds...) {
		o, err := outcome(r)
		if err != nil {
			return err
		}
		if o != "OK" {
			return fmt.Errorf("ceiling: %s of %s: %s", [2]string{"begin", "complete"}[i%2], calls[i/2].ToolCallID, o)
		}
	}
	return nil
}

// Raw implements Impl.
func (x *Ceiling) Raw(ctx context.Context, c Call) ([]byte, error) {
	return x.probe.Raw(ctx, x.keys.Record(c.RunID, c.ToolCallID))
}

// Expiry implements Impl.
func (x *Ceiling) Expiry(ctx context.Context, c Call) (Expiry, error) {
	return x.probe.Expiry(ctx, x.keys.Record(c.RunID, c.ToolCallID))
}

// Close implements Impl.
func (x *Ceiling) Close() error {
	x.c.Close()
	return x.probe.Close()
}
