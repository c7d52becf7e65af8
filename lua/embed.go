// Package lua holds the Lua scripts that make every lifecycle transition of a
// canonical record: the single source of truth of the state machine on Redis.
//
// Each script opens with a header naming every KEYS[i] and ARGV[i] it takes
// and the shape it returns; internal/scripts_gen reads those headers and writes
// the typed Go wrappers that the Redis store calls, so Go and Lua cannot drift
// in key or argument order.
package lua

import "embed"

// FS holds every *.lua script of this package.
//
//go:embed *.lua
var FS embed.FS

// Source returns the text of the named script (e.g. "begin.lua"), or "" when
// there is none.
func Source(name string) string {
	b, err := FS.ReadFile(name)
	if err != nil {
		return ""
	}
	return string(b)
}
