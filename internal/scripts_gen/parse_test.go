package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/lua"
)

const header = `-- demo: a test script.
--
-- KEYS[1] record  the record
-- KEYS[2] run     the run
--
-- ARGV[1] owner   string  who
-- ARGV[2] ttl_ms  int     how long
--
-- RETRY safe  by nature
-- RETURNS {"OK"}
`

func TestParseAcceptsDeclaredKeys(t *testing.T) {
	s, err := Parse("demo.lua", header+`
local rec = KEYS[1]
local t = redis.call('TIME')
redis.call('HSET', rec, 'owner', ARGV[1])
redis.call("PEXPIRE", KEYS[2], tonumber(ARGV[2]))
redis.call('DEL', KEYS[1], KEYS[2])
return {'OK'}
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Keys) != 2 || len(s.Args) != 2 || s.Args[1].Type != "int" || s.Summary != "a test script." || !s.Retryable {
		t.Fatalf("parsed %+v", s)
	}
}

func TestParseReturnsShapes(t *testing.T) {
	src := strings.Replace(header, `-- RETURNS {"OK"}`, `-- RETURNS
--   {"OK"|"EXISTS", status string, created_ms int, raw bytes}  made, or made before
--     the record as it is
--   {"NOT_FOUND"} | {"INVALID_TRANSITION", status string}
--   refusals write nothing`, 1) + "\nreturn {'OK'}\n"
	s, err := Parse("demo.lua", src)
	if err != nil {
		t.Fatal(err)
	}
	want := []Shape{
		{Outcomes: []string{"OK", "EXISTS"}, Fields: []Field{{"status", "string"}, {"created_ms", "int"}, {"raw", "bytes"}}},
		{Outcomes: []string{"NOT_FOUND"}},
		{Outcomes: []string{"INVALID_TRANSITION"}, Fields: []Field{{"status", "string"}}},
	}
	if fmt.Sprint(s.Shapes) != fmt.Sprint(want) {
		t.Fatalf("shapes = %v\nwant     %v", s.Shapes, want)
	}
	if len(s.Returns) != 5 {
		t.Fatalf("RETURNS kept %d lines for the doc: %q", len(s.Returns), s.Returns)
	}
}

func TestParseRefusesBadReturns(t *testing.T) {
	cases := map[string]string{
		"no shape":           `-- RETURNS array of things`,
		"unterminated":       `-- RETURNS {"OK", a int`,
		"unquoted outcome":   `-- RETURNS {OK, a int}`,
		"lower-case outcome": `-- RETURNS {"ok"}`,
		"untyped element":    `-- RETURNS {"OK", a}`,
		"unknown type":       `-- RETURNS {"OK", a float}`,
		"outcome twice":      "-- RETURNS {\"OK\"}\n--   {\"OK\", a int}",
		"element twice":      `-- RETURNS {"OK", a int, a int}`,
		"two types":          `-- RETURNS {"OK", a int} | {"NO", a string}`,
		"named outcome":      `-- RETURNS {"OK", outcome string}`,
		"nested":             `-- RETURNS {"OK", {a int}}`,
		"dangling bar":       `-- RETURNS {"OK"} | then text`,
	}
	for name, ret := range cases {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(header, `-- RETURNS {"OK"}`, ret, 1) + "\nreturn 1\n"
			if _, err := Parse("demo.lua", src); err == nil {
				t.Fatalf("accepted %q", ret)
			}
		})
	}
}

func TestParseRefusesUndeclaredKeys(t *testing.T) {
	cases := map[string]string{
		"key from ARGV":          `redis.call('HSET', ARGV[1], 'a', 1)`,
		"key built by concat":    `redis.call('HSET', KEYS[1] .. ':x', 'a', 1)`,
		"key built from prefix":  `redis.call('GET', 'tc:{run}:run')`,
		"undeclared index":       `redis.call('GET', KEYS[3])`,
		"computed index":         `redis.call('GET', KEYS[i])`,
		"second key of DEL":      `redis.call('DEL', KEYS[1], ARGV[1])`,
		"multi-key command":      `redis.call('RENAME', KEYS[1], KEYS[2])`,
		"dynamic command":        `redis.call(cmd, KEYS[1])`,
		"pcall with ARGV key":    `redis.pcall('GET', ARGV[2])`,
		"unterminated call":      `redis.call('GET', KEYS[1]`,
		"key-taking without key": `redis.call('HGETALL')`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse("demo.lua", header+"\n"+body+"\n"); err == nil {
				t.Fatalf("accepted %q", body)
			}
		})
	}
}

func TestParseRefusesBadHeaders(t *testing.T) {
	cases := map[string]string{
		"no keys":        "-- x\n-- ARGV[1] a string\n-- RETRY safe\n-- RETURNS {\"X\"}\nreturn 1\n",
		"no retry":       "-- x\n-- KEYS[1] a\n-- RETURNS {\"X\"}\nreturn 1\n",
		"bad retry":      "-- x\n-- KEYS[1] a\n-- RETRY maybe\n-- RETURNS {\"X\"}\nreturn 1\n",
		"gap in keys":    "-- x\n-- KEYS[1] a\n-- KEYS[3] b\n-- RETURNS {\"X\"}\nreturn 1\n",
		"untyped argv":   "-- x\n-- KEYS[1] a\n-- ARGV[1] b\n-- RETURNS {\"X\"}\nreturn 1\n",
		"no returns":     "-- x\n-- KEYS[1] a\nreturn 1\n",
		"duplicate name": "-- x\n-- KEYS[1] a\n-- KEYS[2] a\n-- RETURNS {\"X\"}\nreturn 1\n",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse("demo.lua", src); err == nil {
				t.Fatalf("accepted header %q", src)
			}
		})
	}
}

// The shipped scripts must pass the checker, and the committed wrappers must
// be what the generator writes today.
func TestShippedScriptsAndGeneratedCode(t *testing.T) {
	paths, _ := filepath.Glob("../../lua/*.lua")
	if len(paths) < 3 {
		t.Fatalf("found %d scripts", len(paths))
	}
	var scripts []*Script
	for _, p := range paths {
		src, err := readScript("../../lua", p)
		if err != nil {
			t.Fatal(err)
		}
		if src != lua.Source(filepath.Base(p)) {
			t.Fatalf("%s: the generator and the store see different scripts", p)
		}
		s, err := Parse(filepath.Base(p), src)
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, s)
	}
	code, err := Generate("redisstore", scripts)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../../canonical/redisstore/scripts_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != string(code) {
		t.Fatal("canonical/redisstore/scripts_gen.go is stale: run go generate ./...")
	}
	if !strings.Contains(string(code), "func execBegin(") {
		t.Fatal("no begin wrapper generated")
	}
}
