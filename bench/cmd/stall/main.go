// Command stall completes one large record through redisstore and reports
// how long the server was blocked by it: the longest script command in
// SLOWLOG (slowlog-log-slower-than 0), the growth of INFO commandstats usec,
// the largest LATENCY LATEST event, the longest round trip of a PING sent
// meanwhile on another connection, and the growth of used_memory_lua.
//
// Usage:
//
//	go run ./bench/cmd/stall [-redis ADDR] [-sizes 1MiB,8MiB,16MiB] [-timeout 5m] [-json]
//
// The default sizes are the default MaxRecordBytes, 8 MiB and
// MaxRecordBytesCeiling (bench.DefaultStallSizes). Without -redis it starts
// a redis-server of its own on a free loopback port. With -redis it changes
// the slowlog and latency-monitor settings of that server for the time of
// each measurement and restores them; it removes its own keys afterwards.
//
// It reads only the server's accounts, never the record's keys, so it
// measures any record layout alike.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func main() {
	addr := flag.String("redis", "", "address of a standalone Redis server (default: start a redis-server on a free loopback port)")
	sizes := flag.String("sizes", "", "record sizes, comma-separated, in bytes or with KiB/MiB (default: the default MaxRecordBytes, 8MiB and MaxRecordBytesCeiling)")
	timeout := flag.Duration("timeout", 5*time.Minute, "time limit of each store call")
	asJSON := flag.Bool("json", false, "print the results as JSON ([]bench.StallResult)")
	flag.Parse()
	ns := bench.DefaultStallSizes()
	if *sizes != "" {
		var err error
		if ns, err = parseSizes(*sizes); err != nil {
			fmt.Fprintln(os.Stderr, "stall:", err)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *addr, ns, *timeout, *asJSON, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stall:", err)
		os.Exit(1)
	}
}

// parseSizes reads "1048576,8MiB,64KiB".
func parseSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		unit := int64(1)
		if v, ok := strings.CutSuffix(f, "MiB"); ok {
			f, unit = v, 1<<20
		} else if v, ok := strings.CutSuffix(f, "KiB"); ok {
			f, unit = v, 1<<10
		}
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil || v < 1 || v > (1<<40)/unit {
			return nil, fmt.Errorf("bad size %q", f)
		}
		out = append(out, v*unit)
	}
	return out, nil
}

// run measures on addr (on a server of its own when empty) and prints the
// results to w.
func run(ctx context.Context, addr string, sizes []int64, timeout time.Duration, asJSON bool, w io.Writer) error {
	if addr == "" {
		srv, err := redistest.StartServer()
		if err != nil {
			return err
		}
		defer srv.Stop()
		addr = srv.Addr
	}
	res, err := bench.Stall(ctx, bench.StallOptions{Addr: addr, Timeout: timeout}, sizes)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "record bytes\tcomplete\tscript (SLOWLOG)\tcommandstats\tLATENCY max\tmax PING\tpings\tBUSY\tLua memory\t")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	var refused []string
	for _, r := range res {
		if r.Err != "" {
			fmt.Fprintf(tw, "%d\trefused\t\t\t\t\t\t\t\t\n", r.Bytes)
			refused = append(refused, fmt.Sprintf("%d bytes refused: %s", r.Bytes, r.Err))
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s %s\t%s\t%s\t%s\t%d\t%d\t%+d B\t\n", r.Bytes, ms(r.Complete), ms(r.Script), r.ScriptCommand,
			ms(time.Duration(r.CommandstatsUsec)*time.Microsecond), ms(r.Latency), ms(r.MaxPing), r.Pings, r.Busy, r.LuaMemory)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range refused {
		fmt.Fprintln(w, r)
	}
	return nil
}
