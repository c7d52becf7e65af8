package drain_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/toolcanon/toolcanon/projectors/drain"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

// redactedLogs returns n realistic log messages after redaction, as the
// query-log projector mines them: the eight message shapes of the
// projection benchmarks' log responses, with random values.
func redactedLogs(seed uint64, n int) [][]byte {
	r := rand.New(rand.NewPCG(seed, 2))
	shapes := []func() string{
		func() string {
			return fmt.Sprintf("payment timeout after %dms for order %d", 3000+r.IntN(900), 80000+r.IntN(9999))
		},
		func() string {
			return fmt.Sprintf("GET /api/v1/orders/%d took %dms status=%d", r.IntN(99999), r.IntN(900), 200)
		},
		func() string {
			return fmt.Sprintf("login failed password=%s for user=%s from 10.%d.%d.%d", fmt.Sprintf("pw%dX!", r.IntN(1e6)), "alice", r.IntN(255), r.IntN(255), r.IntN(255))
		},
		func() string {
			return fmt.Sprintf("connection to 10.%d.%d.%d:5432 refused after %d retries", r.IntN(255), r.IntN(255), r.IntN(255), r.IntN(9))
		},
		func() string {
			return fmt.Sprintf("cache miss for session %x on shard %d", r.Uint64(), r.IntN(64))
		},
		func() string {
			return fmt.Sprintf("Receiving block blk_%d src: /10.250.%d.%d:%d dest: /10.250.%d.%d:50010", r.Int64(), r.IntN(255), r.IntN(255), 40000+r.IntN(9999), r.IntN(255), r.IntN(255))
		},
		func() string {
			return fmt.Sprintf("slow query SELECT * FROM orders WHERE customer_id = %d took %dms", r.IntN(1e6), r.IntN(9000))
		},
		func() string {
			return fmt.Sprintf("user \"bob\" <bob@example.com> retried \u00e9tape %d\ttwice", r.IntN(50))
		},
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(redact.String(shapes[r.IntN(len(shapes))]()))
	}
	return out
}

// BenchmarkMinerLogs mines realistic redacted log lines with the miner as
// the query-log projector configures it. One operation is one Add; the
// miner is reset after every pass over the 4096 messages, as the projector
// resets it for every response, so that creating clusters is measured too.
func BenchmarkMinerLogs(b *testing.B) {
	msgs := redactedLogs(1, 4096)
	n := 0
	for _, msg := range msgs {
		n += len(msg)
	}
	m := drain.New(projectorConfig())
	b.SetBytes(int64(n / len(msgs)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(msgs) {
			m.Reset()
			i = 0
		}
		m.Add(msgs[i])
		i++
	}
}
