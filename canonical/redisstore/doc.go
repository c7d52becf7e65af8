// Package redisstore is the canonical Store on Redis and Redis Cluster,
// through rueidis.
//
// Records are HASHes; every transition is one Lua script from package lua,
// called through wrappers generated from the scripts' headers; every key a
// script touches carries the run's hash tag, so a run lives in one cluster
// slot and each script runs atomically there. Reads are plain pipelined
// commands and never extend a TTL. Timestamps come from the server's clock.
// Scripts are sent by SHA and reloaded by themselves after SCRIPT FLUSH or a
// restart.
package redisstore

//go:generate go run ../../internal/scripts_gen -lua ../../lua -out scripts_gen.go -pkg redisstore
