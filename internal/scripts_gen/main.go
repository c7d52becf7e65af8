// Command scripts_gen reads the headers of the lifecycle Lua scripts and writes
// typed Go wrappers for them, so that the Go callers and the scripts cannot
// drift in key or argument order.
//
// A header is the leading block of "--" comment lines of a script:
//
//	-- KEYS[1] record  <prefix>:{<run_id>}:call:<tool_call_id>  HASH
//	-- ARGV[1] owner   string  description...
//	-- RETURNS array ...
//
// KEYS and ARGV must be numbered 1..n without gaps; an ARGV type is string,
// bytes or int. scripts_gen refuses a script whose body reaches a key that is
// not one of its declared KEYS — a key built inside Lua (from ARGV or by
// concatenation) breaks Redis Cluster, which routes a script by the keys it is
// given.
//
// Usage (from a go:generate line):
//
//	go run ../../internal/scripts_gen -lua ../../lua -out scripts_gen.go -pkg redisstore -format ../../lua/format.lib
//
// With -format, it first writes the record layout's Lua constants
// (record.LuaLib, from internal/record) to that file, which the scripts
// include: the layout's one definition is Go's.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/toolcanon/toolcanon/internal/record"
	"github.com/toolcanon/toolcanon/lua"
)

// readScript returns the script at path with its includes read from dir
// and expanded: the generator checks the script Redis runs.
func readScript(dir, path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return lua.Expand(string(raw), func(name string) ([]byte, error) {
		return os.ReadFile(filepath.Join(dir, name))
	})
}

func main() {
	luaDir := flag.String("lua", "lua", "directory of *.lua scripts")
	out := flag.String("out", "scripts_gen.go", "output Go file")
	pkg := flag.String("pkg", "redisstore", "package name of the output")
	formatLib := flag.String("format", "", "write the record layout's Lua constants to this file first")
	flag.Parse()

	if *formatLib != "" {
		if err := os.WriteFile(*formatLib, []byte(record.LuaLib()), 0o644); err != nil {
			fatalf("%v", err)
		}
	}

	paths, err := filepath.Glob(filepath.Join(*luaDir, "*.lua"))
	if err != nil || len(paths) == 0 {
		fatalf("no scripts in %s", *luaDir)
	}
	sort.Strings(paths)
	var scripts []*Script
	for _, p := range paths {
		src, err := readScript(*luaDir, p)
		if err != nil {
			fatalf("%s: %v", p, err)
		}
		s, err := Parse(filepath.Base(p), src)
		if err != nil {
			fatalf("%v", err)
		}
		scripts = append(scripts, s)
	}
	code, err := Generate(*pkg, scripts)
	if err != nil {
		fatalf("%v", err)
	}
	if err := os.WriteFile(*out, code, 0o644); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scripts_gen: "+format+"\n", args...)
	os.Exit(1)
}
