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
//     server itself can do with them.
//
// Compare runs them all on one server: throughput as a ratio to redisstore
// and p50/p99 lifecycle latency at each caller count (1 and 64 by default),
// round trips per lifecycle counted in each client (RoundTripCounter), and
// correctness columns measured by contention scenarios that every Impl runs
// through the same code: duplicates executed (Duplicates), lost updates
// (LostUpdates) and TTLs extended by a transition (TTLExtended).
//
// The baselines do less work than redisstore: no run counters, limits or
// completion index. The ratios show what those guarantees cost, and the
// correctness columns what the baselines give up.
//
// The testing.B benchmarks are in this package's tests; the side-by-side
// tables are printed by `go run ./bench/cmd/compare` (`-json` for a
// Comparison, `-check` for the smoke test of `make bench-smoke`).
//
// Stall measures the other cost of a record, its size: how long one
// completion of a large record keeps the server from serving anyone else
// (`go run ./bench/cmd/stall`, `make bench-stall`).
package bench
