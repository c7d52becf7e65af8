package test

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
	"github.com/toolcanon/toolcanon/lua"
	"github.com/toolcanon/toolcanon/progress"
)

// ttlCommands set, change or drop a key's expiry.
var ttlCommands = map[string]bool{
	"expire": true, "pexpire": true, "expireat": true, "pexpireat": true, "persist": true, "getex": true,
}

// A record's expiry is set once, by the script that creates it. The test
// watches every command the server runs, on a server of its own, through a
// whole lifecycle and then through every read the store and the progress
// projection make: MONITOR shows each command, those a script runs included,
// and INFO commandstats counts them.
func TestReadsIssueNoExpireOrRefresh(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	s := open(t, redisstore.Options{Addrs: []string{srv.Addr}})
	ctx := context.Background()
	run := "reads-" + canonical.NewOwner()[:12]
	mon := startMonitor(t, srv.Addr)

	// The lifecycle: three records, one READY, one ERROR, one PROJECTING.
	for _, id := range []string{"c1", "c2", "c3"} {
		if _, err := s.Begin(ctx, begin(run, id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Complete(ctx, readyFor(run, "c1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "c2", Owner: "o-c2",
		Status: canonical.StatusError, Code: canonical.CodeProjectionFailed, Raw: []byte(`{"r":2}`)}); err != nil {
		t.Fatal(err)
	}
	lifecycle := mon.until(t, "lifecycle")
	before := commandStats(t, srv.Addr)

	// Every read.
	for _, id := range []string{"c1", "c2", "c3"} {
		if _, err := s.Get(ctx, run, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Get(ctx, run, "missing"); canonical.CodeOf(err) != canonical.CodeNotFound {
		t.Fatalf("missing record: %v", err)
	}
	ids := []string{"c1", "c2", "c3", "missing"}
	for _, o := range []canonical.ReadOptions{{}, {Request: true}, {Raw: true}, {Request: true, Raw: true}} {
		if _, err := s.GetMany(ctx, run, ids, o); err != nil {
			t.Fatal(err)
		}
	}
	if done, n, err := s.Completed(ctx, run, 100); err != nil || len(done) != 2 || n != 2 {
		t.Fatalf("completion index %v (length %d), %v", done, n, err)
	}
	if _, err := s.ExpiredLeases(ctx, run, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Usage(ctx, run); err != nil {
		t.Fatal(err)
	}
	facts, err := progress.Project(ctx, s, run, progress.Options{})
	if err != nil || len(facts.Facts) != 1 {
		t.Fatalf("progress projection: %+v, %v", facts, err)
	}
	after := commandStats(t, srv.Addr)
	reads := mon.until(t, "reads")

	// The watch works: the creating script's PEXPIRE of each record is seen,
	// attributed to that script, and counted.
	names := scriptNames(t)
	recordExpiries := 0
	for _, c := range attribute(lifecycle, names) {
		if !ttlCommands[c.name] {
			continue
		}
		onRecord := len(c.args) > 0 && strings.Contains(c.args[0], ":call:")
		switch {
		case c.script == "":
			t.Errorf("lifecycle: %s outside any script: %s", c.name, c.line)
		case onRecord && c.script != "begin.lua":
			t.Errorf("lifecycle: %s of a record by %s, not by the creating script: %s", c.name, c.script, c.line)
		case onRecord:
			recordExpiries++
		}
	}
	if recordExpiries != 3 {
		t.Fatalf("saw %d record expiries set by begin.lua, want 3: the watch does not see what it must", recordExpiries)
	}

	// Reads: no script runs, no expiry is touched, and the reads were seen.
	seen := map[string]int{}
	for _, c := range attribute(reads, names) {
		seen[c.name]++
		if ttlCommands[c.name] {
			t.Errorf("a read sent %s: %s", c.name, c.line)
		}
		if c.script != "" || c.name == "eval" || c.name == "evalsha" || c.name == "eval_ro" || c.name == "evalsha_ro" || c.name == "fcall" {
			t.Errorf("a read ran a script: %s", c.line)
		}
	}
	for _, read := range []string{"hmget", "pttl", "zrange", "hgetall"} {
		if seen[read] == 0 {
			t.Errorf("no %s seen among the reads %v: the watch missed them", read, seen)
		}
	}
	for cmd := range ttlCommands {
		if d := after[cmd] - before[cmd]; d != 0 {
			t.Errorf("commandstats: %s ran %d times during the reads", cmd, d)
		}
	}
	for _, cmd := range []string{"eval", "evalsha"} {
		if d := after[cmd] - before[cmd]; d != 0 {
			t.Errorf("commandstats: %s ran %d times during the reads", cmd, d)
		}
	}
	if after["hmget"] <= before["hmget"] || after["pttl"] <= before["pttl"] {
		t.Errorf("commandstats saw no reads: hmget %d -> %d, pttl %d -> %d", before["hmget"], after["hmget"], before["pttl"], after["pttl"])
	}
	t.Logf("lifecycle: %d commands, %d record expiries by begin.lua; reads: %d commands %v", len(lifecycle), recordExpiries, len(reads), seen)
}

// monitor is a MONITOR connection: every command the server runs, one line
// each, in order.
type monitor struct {
	addr  string
	lines chan string
}

func startMonitor(t *testing.T, addr string) *monitor {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := conn.Write([]byte("*1\r\n$7\r\nMONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if ok, err := r.ReadString('\n'); err != nil || ok != "+OK\r\n" {
		t.Fatalf("MONITOR: %q, %v", ok, err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	m := &monitor{addr: addr, lines: make(chan string, 1024)}
	go func() {
		defer close(m.lines)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			m.lines <- strings.TrimSuffix(l, "\r\n")
		}
	}()
	return m
}

// until sends a marker through the server and returns every line seen
// before it: all commands run up to now.
func (m *monitor) until(t *testing.T, name string) []string {
	t.Helper()
	marker := "toolcanon-mark-" + name + "-" + canonical.NewOwner()
	if _, err := redistest.Command(m.addr, "ECHO", marker); err != nil {
		t.Fatal(err)
	}
	var out []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-m.lines:
			if !ok {
				t.Fatal("MONITOR connection closed")
			}
			if strings.Contains(l, marker) {
				return out
			}
			out = append(out, l)
		case <-timeout:
			t.Fatalf("marker %s never seen", name)
		}
	}
}

// command is one monitored command: its lower-case name, its arguments,
// and the script it ran inside ("" for a client's own command).
type command struct {
	line, name, script string
	args               []string
}

// attribute parses MONITOR lines and names the script each command inside
// a script belongs to: the script command line comes first, then the lines
// of the commands it runs, marked "lua".
func attribute(lines []string, names map[string]string) []command {
	var out []command
	current := ""
	for _, l := range lines {
		src, args, ok := parseMonitorLine(l)
		if !ok || len(args) == 0 {
			continue
		}
		c := command{line: l, name: strings.ToLower(args[0]), args: args[1:]}
		switch {
		case src == "lua":
			c.script = current
			if c.script == "" {
				c.script = "an unknown script"
			}
		case (c.name == "evalsha" || c.name == "eval") && len(c.args) > 0:
			sha := c.args[0]
			if c.name == "eval" {
				sum := sha1.Sum([]byte(sha))
				sha = hex.EncodeToString(sum[:])
			}
			current = names[strings.ToLower(sha)]
			if current == "" {
				current = "an unknown script"
			}
		default:
			current = ""
		}
		out = append(out, c)
	}
	return out
}

// scriptNames maps the SHA-1 of each of the store's scripts to its file name.
func scriptNames(t *testing.T) map[string]string {
	t.Helper()
	entries, err := lua.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lua") {
			continue // an included *.lib is part of the scripts, not one
		}
		sum := sha1.Sum([]byte(lua.Source(e.Name())))
		names[hex.EncodeToString(sum[:])] = e.Name()
	}
	if names[sha1hex(lua.Source("begin.lua"))] != "begin.lua" {
		t.Fatal("begin.lua is not among the scripts")
	}
	return names
}

func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// parseMonitorLine splits `+1700000000.123456 [0 127.0.0.1:5000] "CMD" "arg"`
// into its source ("127.0.0.1:5000", or "lua" inside a script) and its
// unquoted arguments.
func parseMonitorLine(l string) (src string, args []string, ok bool) {
	l = strings.TrimPrefix(l, "+")
	open := strings.IndexByte(l, '[')
	end := strings.Index(l, "] ")
	if open < 0 || end < open {
		return "", nil, false
	}
	_, src, _ = strings.Cut(l[open+1:end], " ")
	rest := l[end+2:]
	for len(rest) > 0 {
		if rest[0] == ' ' {
			rest = rest[1:]
			continue
		}
		arg, n, ok := unquoteRepr(rest)
		if !ok {
			return "", nil, false
		}
		args = append(args, arg)
		rest = rest[n:]
	}
	return src, args, true
}

// unquoteRepr reads one string quoted the way Redis' MONITOR quotes it
// (sdscatrepr) and returns it with the bytes consumed.
func unquoteRepr(s string) (string, int, bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", 0, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), i + 1, true
		case c != '\\':
			b.WriteByte(c)
		case i+1 >= len(s):
			return "", 0, false
		default:
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'x':
				if i+2 >= len(s) {
					return "", 0, false
				}
				v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
				if err != nil {
					return "", 0, false
				}
				b.WriteByte(byte(v))
				i += 2
			default:
				b.WriteByte(s[i])
			}
		}
	}
	return "", 0, false
}

// commandStats returns the calls of every command from INFO commandstats,
// by lower-case name.
func commandStats(t *testing.T, addr string) map[string]int64 {
	t.Helper()
	info, err := redistest.Command(addr, "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, l := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("commandstats line %q: %v", l, err)
				}
				out[strings.TrimPrefix(name, "cmdstat_")] = n
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("INFO commandstats has no counts: %q", info)
	}
	return out
}

func TestParseMonitorLine(t *testing.T) {
	src, args, ok := parseMonitorLine(`+1796120269.654993 [0 127.0.0.1:45148] "eval" "redis.call('SET', KEYS[1], \"x\")\n" "1" "k\x00\xff"`)
	if !ok || src != "127.0.0.1:45148" || len(args) != 4 || args[0] != "eval" ||
		args[1] != "redis.call('SET', KEYS[1], \"x\")\n" || args[3] != "k\x00\xff" {
		t.Fatalf("%q %q %v", src, args, ok)
	}
	src, args, ok = parseMonitorLine(`1796120269.655139 [0 lua] "PEXPIRE" "tc:{r}:call:c1" "3600000"`)
	if !ok || src != "lua" || fmt.Sprint(args) != "[PEXPIRE tc:{r}:call:c1 3600000]" {
		t.Fatalf("%q %q %v", src, args, ok)
	}
	for _, bad := range []string{``, `+1 no brackets "x"`, `+1 [0 lua] "unterminated`, `+1 [0 lua] "bad \x4"`} {
		if _, _, ok := parseMonitorLine(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	// Attribution: lua lines belong to the script line before them.
	names := map[string]string{sha1hex("S"): "s.lua"}
	cs := attribute([]string{
		`+1 [0 1.2.3.4:5] "EVALSHA" "` + sha1hex("S") + `" "1" "k"`,
		`+2 [0 lua] "PEXPIRE" "k" "5"`,
		`+3 [0 1.2.3.4:5] "HMGET" "k" "a"`,
		`+4 [0 lua] "PERSIST" "k"`,
	}, names)
	if len(cs) != 4 || cs[1].script != "s.lua" || cs[2].script != "" || cs[3].script != "an unknown script" {
		t.Fatalf("%+v", cs)
	}
}

// repr quotes s as Redis' sdscatrepr does for MONITOR.
func repr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		default:
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// The MONITOR parser reads back whatever arguments the server quotes, and
// never panics on anything else.
func FuzzParseMonitorLine(f *testing.F) {
	f.Add("PEXPIRE", "tc:{r}:call:c1", "3600000", false)
	f.Add("eval", "redis.call('SET', KEYS[1], \"x\")\n", "k\x00\xff", true)
	f.Add("", "\\", "\"", false)
	f.Fuzz(func(t *testing.T, cmd, a, b string, inScript bool) {
		src := "127.0.0.1:6000"
		if inScript {
			src = "lua"
		}
		line := "+1700000000.000001 [0 " + src + "] " + repr(cmd) + " " + repr(a) + " " + repr(b)
		gotSrc, args, ok := parseMonitorLine(line)
		if !ok || gotSrc != src || len(args) != 3 || args[0] != cmd || args[1] != a || args[2] != b {
			t.Fatalf("%q: got %q %q %v", line, gotSrc, args, ok)
		}
		parseMonitorLine(cmd + a + b) // arbitrary text: any answer, no panic
	})
}
