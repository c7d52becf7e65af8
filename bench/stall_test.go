package bench_test

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// TestStall measures one completion and one size above the ceiling, then
// checks that the server's settings are back and the records' keys gone.
func TestStall(t *testing.T) {
	addr := redistest.Addr(t)
	ctx := context.Background()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	get := func(k string) string {
		m, err := c.Do(ctx, c.B().ConfigGet().Parameter(k).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		return m[k]
	}
	before := get("slowlog-log-slower-than")
	res, err := bench.Stall(ctx, bench.StallOptions{Addr: addr, Prefix: "stalltest"}, []int64{256 << 10, canonical.MaxRecordBytesCeiling + 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("%d results, want 2", len(res))
	}
	r := res[0]
	if r.Bytes != 256<<10 || r.Err != "" || r.Script <= 0 || r.ScriptCommand != "EVALSHA" || r.CommandstatsUsec <= 0 || r.Pings < 1 || r.Complete < r.Script {
		t.Errorf("256 KiB: %+v", r)
	}
	if res[1].Err == "" {
		t.Errorf("above the ceiling: %+v, want refused", res[1])
	}
	if got := get("slowlog-log-slower-than"); got != before {
		t.Errorf("slowlog-log-slower-than %s after, %s before", got, before)
	}
	keys, err := c.Do(ctx, c.B().Keys().Pattern("stalltest*").Build()).AsStrSlice()
	if err != nil || len(keys) != 0 {
		t.Errorf("keys left: %v, %v", keys, err)
	}
}
