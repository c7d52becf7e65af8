// Package lua holds the Lua scripts that make every lifecycle transition of a
// canonical record: the single source of truth of the state machine on Redis.
//
// Each script opens with a header naming every KEYS[i] and ARGV[i] it takes
// and the shape it returns; internal/scripts_gen reads those headers and writes
// the typed Go wrappers that the Redis store calls, so Go and Lua cannot drift
// in key or argument order.
//
// Code that several scripts share lives once, in a *.lib file, and a script
// takes it with a line that is exactly "-- #include NAME.lib". Source returns
// the script with that line replaced by the file's text: what Redis runs,
// what the store hashes for EVALSHA and what the generator checks is always
// the whole script.
package lua

import (
	"embed"
	"fmt"
	"strings"
)

// FS holds every *.lua script of this package and the *.lib files they
// include.
//
//go:embed *.lua *.lib
var FS embed.FS

// includePrefix starts a line that includes a *.lib file.
const includePrefix = "-- #include "

// Source returns the text of the named script (e.g. "begin.lua") with its
// includes expanded, or "" when there is none or an include cannot be
// expanded (a test checks that every shipped script expands).
func Source(name string) string {
	b, err := FS.ReadFile(name)
	if err != nil {
		return ""
	}
	src, err := Expand(string(b), FS.ReadFile)
	if err != nil {
		return ""
	}
	return src
}

// Expand replaces each line of src that is exactly "-- #include NAME.lib"
// with the text of NAME.lib, as read returns it. Includes do not nest: an
// included file that includes is an error, as is a name that is not a plain
// *.lib file name or that read cannot find. One pass over src and the
// included text.
func Expand(src string, read func(name string) ([]byte, error)) (string, error) {
	if !strings.Contains(src, includePrefix) {
		return src, nil
	}
	var b strings.Builder
	b.Grow(len(src))
	for line := range strings.SplitAfterSeq(src, "\n") {
		body := strings.TrimSuffix(line, "\n")
		name, ok := strings.CutPrefix(body, includePrefix)
		if !ok {
			b.WriteString(line)
			continue
		}
		if !strings.HasSuffix(name, ".lib") || strings.ContainsAny(name, "/\\ \t") || len(name) <= len(".lib") {
			return "", fmt.Errorf("lua: include %q: not a plain *.lib file name", name)
		}
		lib, err := read(name)
		if err != nil {
			return "", fmt.Errorf("lua: include %q: %w", name, err)
		}
		text := string(lib)
		if strings.Contains(text, "\n"+includePrefix) || strings.HasPrefix(text, includePrefix) {
			return "", fmt.Errorf("lua: include %q: included files do not include", name)
		}
		b.WriteString(text)
		if !strings.HasSuffix(text, "\n") && strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}
