package test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// lossyClient loses the replies of the first n scripts it sends: the
// server runs each, the caller is told the connection broke.
type lossyClient struct {
	rueidis.Client
	n atomic.Int32
}

func (c *lossyClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	script := len(cmd.Commands()) > 0 && (cmd.Commands()[0] == "EVALSHA" || cmd.Commands()[0] == "EVAL")
	res := c.Client.Do(ctx, cmd)
	if script && res.Error() == nil && c.n.Add(-1) >= 0 {
		return rueidis.NewErrorResult(errors.New("connection reset by peer (test)"))
	}
	return res
}

// An abandonment whose reply is lost is still reported, once: a reaper that
// loses the reply of its abandon sends it again with the same claim and is
// told the abandonment is its own, and no other reaper reports it.
func TestReaperReportsAnAbandonmentWhoseReplyIsLost(t *testing.T) {
	addr := redistest.Addr(t)
	prefix := "tclost" + canonical.NewOwner()[:8]
	plain := open(t, redisstore.Options{Addrs: []string{addr}, Prefix: prefix})
	ctx := context.Background()
	run := "lost-reply-" + canonical.NewOwner()[:8]
	const calls = 6
	for i := range calls {
		req := begin(run, fmt.Sprintf("c%d", i))
		req.Lease = time.Millisecond
		if _, err := plain.Begin(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Millisecond)
	const reapers = 4
	var mu sync.Mutex
	reported := map[string]int{}
	var wg sync.WaitGroup
	for range reapers {
		c, err := rueidis.NewClient(redisstore.Options{Addrs: []string{addr}, Standalone: true}.ClientOption())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		lossy := &lossyClient{Client: c}
		lossy.n.Store(2) // the first two abandons of each reaper lose their replies
		s := open(t, redisstore.Options{Client: lossy, Prefix: prefix})
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := s.Reap(ctx, canonical.ReapOptions{})
			if err != nil {
				t.Logf("reap: %v (%+v)", err, rep)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, a := range rep.Abandoned {
				reported[a.ToolCallID]++
			}
		}()
	}
	wg.Wait()
	for i := range calls {
		id := fmt.Sprintf("c%d", i)
		if reported[id] != 1 {
			t.Errorf("%s reported %d times, want once (reports: %v)", id, reported[id], reported)
		}
		rec, err := plain.Get(ctx, run, id)
		if err != nil || rec.Error != canonical.CodeExecutionAbandoned {
			t.Errorf("%s: %+v, %v", id, rec, err)
		}
	}
}
