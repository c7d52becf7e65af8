// Package redisstore is the canonical Store on Redis and Redis Cluster,
// through rueidis.
//
// Records are HASHes of a fixed-width header and the payloads' parts
// (internal/record defines them, once, for Go and for the scripts: run_id
// and tool_call_id are the key's, a payload is cut in Go where an allocator
// size class ends); every transition is one Lua script
// from package lua, called through wrappers generated from the scripts'
// headers, whose replies
// are decoded into typed structs exactly as each script's RETURNS declares;
// every key a script touches carries the run's hash tag, so a run lives in
// one cluster slot and each script runs atomically there. Every key a script
// writes has a TTL. Reads are plain pipelined commands and never extend a
// TTL. Timestamps come from the server's clock. Scripts are sent by SHA and
// reloaded by themselves after SCRIPT FLUSH or a restart.
//
// Round trips: Begin, Complete, Abandon, CloseRun and ObserveProgress one
// each, with Durability too (the script and its WAIT go in one pipeline,
// one more to follow a cluster redirect);
// Completed, Usage and ExpiredLeases one; GetMany ceil(len(ids) /
// GetManyBatch), or ceil(len(ids) / GetManyPayloadBatch) when Request or
// Raw is read. A script the server has lost (SCRIPT FLUSH, restart) costs
// one more, once. A Reap pass where nothing has expired costs a TIME and
// 16 pipelines of 1,024 ZRANGEs (the due set of every slot), whatever the
// keyspace holds; each run found due adds a read of its leases (pipelined
// with the others found), its abandons and a reschedule.
//
// The guarantees assume a server with maxmemory-policy noeviction,
// persistence and, for failover, replicas; Check (and `toolcanon doctor`)
// reports each of these settings and what it means.
//
// A command that is the store's only one waiting goes on a pooled
// connection, written and read by its caller; one sent while others wait
// joins the client's shared pipeline (Options.ClientOption, Store.do).
//
// Options are one struct, as a client's are: a store that dials a server
// has addresses, credentials and timeouts to say, all at once, and none of
// them changes afterwards.
package redisstore

//go:generate go run ../../internal/scripts_gen -lua ../../lua -out scripts_gen.go -pkg redisstore -format ../../lua/format.lib
