package bench

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// RoundTripCounter is implemented by an Impl that counts the round trips it
// makes to the server. Every Impl of this package implements it.
//
// A round trip is one wait of a caller for the server: one command sent on
// its own, or one pipeline (a go-redis Pipelined or TxPipelined, a rueidis
// DoMulti) whose replies come back together. It is counted in the client,
// where the caller waits, by a go-redis hook or by a wrapper around the
// rueidis client: a script that the server must be sent again after
// NOSCRIPT counts twice, a WATCH transaction counts each of its commands and
// its MULTI/EXEC pipeline. Commands that several callers' waits share on one
// connection (rueidis pipelines concurrent callers) are still one round trip
// per caller. An in-process store makes none. Expiries, read to judge the
// contention scenarios, go through a separate client and are not counted;
// a stored raw response is read through the Impl's own client, except by
// GoRedisLua and Ceiling, which read it with Probe.Raw. Throughput reports
// only the round trips made while its lifecycles ran.
type RoundTripCounter interface {
	// RoundTrips returns the round trips made since the Impl was created.
	RoundTrips() int64
}

// roundTrips is a RoundTripCounter's count.
type roundTrips struct{ n atomic.Int64 }

// RoundTrips implements RoundTripCounter.
func (r *roundTrips) RoundTrips() int64 { return r.n.Load() }

// countHook is a go-redis hook that counts one round trip per command and
// one per pipeline or transaction pipeline.
type countHook struct{ r *roundTrips }

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.r.n.Add(1)
		return next(ctx, cmds)
	}
}

// newCountedGoRedis connects go-redis to addrs (one address: a standalone
// server; more: the nodes of a cluster) with r counting its round trips.
func newCountedGoRedis(addrs []string, r *roundTrips) redis.UniversalClient {
	c := newGoRedis(addrs)
	c.AddHook(countHook{r})
	return c
}

// countingClient is a rueidis.Client that counts one round trip per call
// that sends commands and waits for their replies.
type countingClient struct {
	rueidis.Client
	r *roundTrips
}

// countRueidis wraps c so that r counts its round trips.
func countRueidis(c rueidis.Client, r *roundTrips) rueidis.Client { return countingClient{c, r} }

func (c countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.r.n.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c countingClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.r.n.Add(1)
	return c.Client.DoMulti(ctx, multi...)
}

func (c countingClient) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c.r.n.Add(1)
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c countingClient) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	c.r.n.Add(1)
	return c.Client.DoMultiCache(ctx, multi...)
}

func (c countingClient) DoStream(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResultStream {
	c.r.n.Add(1)
	return c.Client.DoStream(ctx, cmd)
}

func (c countingClient) DoMultiStream(ctx context.Context, multi ...rueidis.Completed) rueidis.MultiRedisResultStream {
	c.r.n.Add(1)
	return c.Client.DoMultiStream(ctx, multi...)
}

func (c countingClient) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.Client.Dedicated(func(dc rueidis.DedicatedClient) error { return fn(countingDedicated{dc, c.r}) })
}

func (c countingClient) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := c.Client.Dedicate()
	return countingDedicated{dc, c.r}, release
}

// countingDedicated counts the round trips of a dedicated connection.
type countingDedicated struct {
	rueidis.DedicatedClient
	r *roundTrips
}

func (c countingDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.r.n.Add(1)
	return c.DedicatedClient.Do(ctx, cmd)
}

func (c countingDedicated) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.r.n.Add(1)
	return c.DedicatedClient.DoMulti(ctx, multi...)
}
