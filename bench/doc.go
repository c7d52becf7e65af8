// Package bench measures the canonical record lifecycle against the designs
// it replaces, on one server and in one run.
//
// A lifecycle is what the boundary does for every tool call: Begin (the
// record is created in PROJECTING) and Complete (READY, with a ~2 KiB raw
// response and a ~300 B agent result). Each Impl runs it one way:
//
//   - toolcanon's stores: redisstore (rueidis and the Lua scripts) and memstore;
//   - Seed: the seed's design, one JSON string per record; begin is EXISTS
//     then SET PX, complete is GET, PTTL, then SET with the PTTL just read;
//   - Watch: go-redis WATCH/MULTI optimistic compare-and-set on a HASH;
//   - GoRedisLua: go-redis running the same Lua scripts as redisstore;
//   - Ceiling: the same scripts as fully pipelined EVALSHA, the most the
//     server itself can do with them;
//   - Floor: the same bytes with no logic, one plain HSET per transition
//     through redisstore's client: what the server can do at all;
//   - Postgres: an idempotency table in PostgreSQL, what many teams would
//     build instead, on a server the comparison starts (internal/pgtest).
//
// Compare runs them all on one Redis server (and Postgres on PostgreSQL):
// throughput as a ratio to redisstore, redisstore ÷ floor and redisstore ÷
// postgres, and p50/p99 lifecycle latency at each caller count (1 and 64 by default),
// round trips per lifecycle counted in each client (RoundTripCounter), and
// correctness columns measured by contention scenarios that every Impl runs
// through the same code: duplicates executed (Duplicates), lost updates
// (LostUpdates) and TTLs extended by a transition (TTLExtended); the floor
// promises nothing and is not checked.
//
// The baselines do less work than redisstore: no completion index, no
// lease index, no per-tool counts, and but for postgres (a run's calls and
// bytes against its limits) no run counters or limits. The ratios show what
// those guarantees cost, and the correctness columns what the baselines
// give up.
//
// The testing.B benchmarks are in this package's tests; the side-by-side
// tables are printed by `go run ./bench/cmd/compare` (`-json` for a
// Comparison, `-check` for the smoke test of `make bench-smoke`).
//
// Stall measures the other cost of a record, its size: how long one
// completion of a large record keeps the server from serving anyone else
// (`go run ./bench/cmd/stall`, `make bench-stall`).
package bench
