package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
)

// StallResult is what one completion of a large record cost the server:
// how long the server ran it without serving anyone else, as the server
// and a concurrent client saw it. It reads only the server's own accounts
// (SLOWLOG, INFO, LATENCY), never the record's keys, so it measures any
// record layout alike.
type StallResult struct {
	// Bytes are the record's request+raw+result bytes; the raw response
	// takes all but a small request and result.
	Bytes int64 `json:"bytes"`
	// Complete is the Complete call as its caller saw it: sending the
	// payload, the script and the reply.
	Complete time.Duration `json:"complete_ns"`
	// Script is the longest script command (EVALSHA, EVAL, FCALL) in SLOWLOG
	// during the completion, logged with slowlog-log-slower-than 0: the time
	// the server ran it, during which it served no other client.
	Script time.Duration `json:"script_ns"`
	// ScriptCommand is that entry's command name.
	ScriptCommand string `json:"script_command"`
	// CommandstatsUsec is the growth of INFO commandstats usec of the
	// script commands over the completion.
	CommandstatsUsec int64 `json:"commandstats_usec"`
	// Latency is the largest LATENCY LATEST event over the completion
	// (latency-monitor-threshold 1 ms); 0 when none passed 1 ms.
	Latency time.Duration `json:"latency_ns"`
	// MaxPing is the longest PING round trip of a client that pings
	// without pause on a connection of its own during the completion.
	MaxPing time.Duration `json:"max_ping_ns"`
	// Pings is how many PINGs that client finished; Busy how many of them
	// were answered BUSY (a script past lua-time-limit).
	Pings int `json:"pings"`
	Busy  int `json:"busy"`
	// LuaMemory is the growth of INFO memory used_memory_lua from before
	// the completion to right after it.
	LuaMemory int64 `json:"lua_memory_bytes"`
	// Err is set when the completion was refused or failed (for example a
	// size above canonical.MaxRecordBytesCeiling).
	Err string `json:"error,omitempty"`
}

// StallOptions configure Stall.
type StallOptions struct {
	Addr    string        // a standalone server
	Prefix  string        // the records' key prefix (default: one of its own)
	Timeout time.Duration // bounds each store call and each measurement (default 5 minutes)
}

// scriptCommands are the commands that run a script on the server.
var scriptCommands = []string{"evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro"}

// DefaultStallSizes are the default MaxRecordBytes, 8 MiB and
// MaxRecordBytesCeiling, in increasing order without repeats.
func DefaultStallSizes() []int64 {
	out := []int64{}
	for _, n := range []int64{canonical.DefaultLimits.MaxRecordBytes, 8 << 20, canonical.MaxRecordBytesCeiling} {
		if len(out) == 0 || n > out[len(out)-1] {
			out = append(out, n)
		}
	}
	return out
}

// Stall completes one record of each size through redisstore on o.Addr and
// reports what each completion cost the server. For the time of each
// measurement it sets slowlog-log-slower-than 0, slowlog-max-len and
// latency-monitor-threshold, resets SLOWLOG and LATENCY, and restores the
// three settings afterwards; the record's keys are removed at the end. A
// size the store refuses gives a result with Err, not an error.
func Stall(ctx context.Context, o StallOptions, sizes []int64) ([]StallResult, error) {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	admin, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{o.Addr}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	prefix := o.Prefix
	if prefix == "" {
		prefix = fmt.Sprintf("stall%d", time.Now().UnixNano()%1e9)
	}
	store, err := redisstore.New(redisstore.Options{Addrs: []string{o.Addr}, Standalone: true, Prefix: prefix, Timeout: o.Timeout})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	restore, err := stallConfig(ctx, admin)
	if err != nil {
		return nil, err
	}
	defer restore()
	// A small record first loads the scripts, so that no measured
	// completion is sent twice (EVALSHA refused NOSCRIPT, then EVAL).
	if _, err := stallOne(ctx, o, admin, store, "warm-up", 1<<10); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	if err := unlinkPrefix(ctx, admin, prefix); err != nil {
		return nil, err
	}
	out := make([]StallResult, 0, len(sizes))
	for i, n := range sizes {
		r, err := stallOne(ctx, o, admin, store, fmt.Sprintf("run-%d", i), n)
		if err != nil {
			return out, fmt.Errorf("%d bytes: %w", n, err)
		}
		out = append(out, r)
		if err := unlinkPrefix(ctx, admin, prefix); err != nil {
			return out, err
		}
	}
	return out, nil
}

// stallConfig sets what the measurement needs and returns what restores it.
func stallConfig(ctx context.Context, c rueidis.Client) (func(), error) {
	set := map[string]string{"slowlog-log-slower-than": "0", "slowlog-max-len": "1000000", "latency-monitor-threshold": "1"}
	old := map[string]string{}
	for k := range set {
		m, err := c.Do(ctx, c.B().ConfigGet().Parameter(k).Build()).AsStrMap()
		if err != nil || m[k] == "" {
			return nil, fmt.Errorf("CONFIG GET %s: %v", k, err)
		}
		old[k] = m[k]
	}
	restore := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for k, v := range old {
			c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue(k, v).Build())
		}
	}
	for k, v := range set {
		if err := c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue(k, v).Build()).Error(); err != nil {
			restore()
			return nil, fmt.Errorf("CONFIG SET %s %s: %w", k, v, err)
		}
	}
	return restore, nil
}

// stallOne begins one record in a run of its own and measures its
// completion with n bytes.
func stallOne(ctx context.Context, o StallOptions, admin rueidis.Client, store *redisstore.Store, run string, n int64) (StallResult, error) {
	res := StallResult{Bytes: n}
	request := []byte(`{"tool":"stall"}`)
	result := []byte(`{"ok":true}`)
	owner := canonical.NewOwner()
	_, err := store.Begin(ctx, canonical.BeginRequest{
		RunID: run, ToolCallID: "call", Tool: "stall", Owner: owner, Request: request, TTL: 10 * time.Minute,
		Limits: canonical.Limits{MaxRecordBytes: n, MaxRunBytes: max(2*n, canonical.DefaultLimits.MaxRunBytes)},
	})
	if err != nil {
		if canonical.CodeOf(err) == canonical.CodeInvalidArgument {
			res.Err = err.Error()
			return res, nil
		}
		return res, err
	}
	raw := make([]byte, max(0, n-int64(len(request)+len(result))))
	_, _ = rand.NewChaCha8([32]byte{}).Read(raw) // fills the slice; never fails
	before, err := serverCounters(ctx, admin)
	if err != nil {
		return res, err
	}
	for _, cmd := range []rueidis.Completed{admin.B().SlowlogReset().Build(), admin.B().LatencyReset().Build()} {
		if err := admin.Do(ctx, cmd).Error(); err != nil {
			return res, err
		}
	}
	pinger, err := startPinger(ctx, o.Addr, o.Timeout)
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	_, err = store.Complete(ctx, canonical.Completion{
		RunID: run, ToolCallID: "call", Owner: owner, Status: canonical.StatusReady,
		Evidence: canonical.EvidenceFound, Raw: raw, Result: result,
	})
	res.Complete = time.Since(t0)
	res.MaxPing, res.Pings, res.Busy = pinger.stop()
	if err != nil {
		if canonical.CodeOf(err) == canonical.CodeResultTooLarge {
			res.Err = err.Error()
		} else {
			return res, err
		}
	}
	after, err := serverCounters(ctx, admin)
	if err != nil {
		return res, err
	}
	res.CommandstatsUsec, res.LuaMemory = after.scriptUsec-before.scriptUsec, after.luaMemory-before.luaMemory
	if res.Script, res.ScriptCommand, err = longestScript(ctx, admin); err != nil {
		return res, err
	}
	res.Latency, err = latestLatency(ctx, admin)
	return res, err
}

// counters are the INFO figures Stall reads before and after.
type counters struct {
	scriptUsec int64 // commandstats usec of the script commands
	luaMemory  int64 // used_memory_lua
}

func serverCounters(ctx context.Context, c rueidis.Client) (counters, error) {
	var out counters
	info, err := c.Do(ctx, c.B().Info().Section("commandstats", "memory").Build()).ToString()
	if err != nil {
		return out, err
	}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "used_memory_lua:"); ok {
			out.luaMemory, _ = strconv.ParseInt(v, 10, 64)
		}
		name, stats, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") || !isScriptCommand(name) {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				u, _ := strconv.ParseInt(v, 10, 64)
				out.scriptUsec += u
			}
		}
	}
	return out, nil
}

func isScriptCommand(name string) bool {
	for _, s := range scriptCommands {
		if strings.EqualFold(name, s) {
			return true
		}
	}
	return false
}

// longestScript reads SLOWLOG for the longest script command.
func longestScript(ctx context.Context, c rueidis.Client) (time.Duration, string, error) {
	entries, err := c.Do(ctx, c.B().SlowlogGet().Count(-1).Build()).ToArray()
	if err != nil {
		return 0, "", err
	}
	var best time.Duration
	name := ""
	for _, e := range entries {
		f, err := e.ToArray()
		if err != nil || len(f) < 4 {
			return 0, "", errors.New("SLOWLOG GET: an entry is not [id, time, usec, args, ...]")
		}
		usec, err1 := f[2].AsInt64()
		args, err2 := f[3].AsStrSlice()
		if err1 != nil || err2 != nil || len(args) == 0 {
			return 0, "", errors.New("SLOWLOG GET: an entry has no duration or no command")
		}
		if d := time.Duration(usec) * time.Microsecond; isScriptCommand(args[0]) && d > best {
			best, name = d, strings.ToUpper(args[0])
		}
	}
	return best, name, nil
}

// latestLatency is the largest max latency of LATENCY LATEST.
func latestLatency(ctx context.Context, c rueidis.Client) (time.Duration, error) {
	events, err := c.Do(ctx, c.B().LatencyLatest().Build()).ToArray()
	if err != nil {
		return 0, err
	}
	var best time.Duration
	for _, e := range events {
		f, err := e.ToArray()
		if err != nil || len(f) < 4 {
			return 0, errors.New("LATENCY LATEST: an event is not [name, time, latest, max]")
		}
		ms, err := f[3].AsInt64()
		if err != nil {
			return 0, fmt.Errorf("LATENCY LATEST: %w", err)
		}
		best = max(best, time.Duration(ms)*time.Millisecond)
	}
	return best, nil
}

// unlinkPrefix removes the keys under prefix, without blocking the server
// on a large value.
func unlinkPrefix(ctx context.Context, c rueidis.Client, prefix string) error {
	cursor := uint64(0)
	for {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(prefix+"*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		if len(e.Elements) > 0 {
			if err := c.Do(ctx, c.B().Unlink().Key(e.Elements...).Build()).Error(); err != nil {
				return err
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			return nil
		}
	}
}

// pinger sends PING after PING on a connection of its own, without a
// client library's pipelining in between, and keeps the longest round trip.
type pinger struct {
	conn    net.Conn
	done    chan struct{}
	wg      sync.WaitGroup
	longest time.Duration
	n, busy int
}

func startPinger(ctx context.Context, addr string, timeout time.Duration) (*pinger, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(timeout)) // a server that never answers ends the pings
	p := &pinger{conn: conn, done: make(chan struct{})}
	r := bufio.NewReader(conn)
	// One PING before the measurement starts, so that dialing is not counted.
	if _, err := pingOnce(conn, r); err != nil {
		conn.Close()
		return nil, err
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		// At least one PING is sent whenever the goroutine starts: on a
		// loaded machine it may start only after a short completion ended,
		// and a measurement without a PING would say nothing.
		for {
			t0 := time.Now()
			reply, err := pingOnce(conn, r)
			if err != nil {
				return
			}
			p.longest = max(p.longest, time.Since(t0))
			p.n++
			if strings.HasPrefix(reply, "-BUSY") {
				p.busy++
			}
			select {
			case <-p.done:
				return
			default:
			}
		}
	}()
	return p, nil
}

// pingOnce sends PING and reads its one-line reply.
func pingOnce(w io.Writer, r *bufio.Reader) (string, error) {
	if _, err := io.WriteString(w, "PING\r\n"); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

// stop ends the pings after the one in flight (at least one) and returns
// the longest round trip, the count and the BUSY replies.
func (p *pinger) stop() (time.Duration, int, int) {
	close(p.done)
	p.wg.Wait()
	p.conn.Close()
	return p.longest, p.n, p.busy
}
