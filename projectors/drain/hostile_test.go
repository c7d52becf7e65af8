package drain_test

import (
	"fmt"
	"testing"

	"github.com/toolcanon/toolcanon/projectors/drain"
	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

// projectorConfig is the miner as the query-log projector runs it.
func projectorConfig() drain.Config {
	cfg := drain.DefaultConfig()
	cfg.MaxClusters, cfg.MaxTokens = 512, 64
	return cfg
}

func mineAll(m *drain.Miner) func([][]byte) {
	return func(msgs [][]byte) {
		m.Reset()
		for _, msg := range msgs {
			m.Add(msg)
		}
	}
}

// The miner costs the same per byte on 64 KiB and on 1 MiB of every
// hostile shape. It used to compare each message with every cluster of
// its leaf (up to 512 clusters of 64 tokens): "distinct templates" fills
// one leaf.
func TestMinerLinearOnHostileInput(t *testing.T) {
	projtest.CheckLinear(t, "drain", projtest.HostileCases(redact.Vocabulary()), nil, mineAll(drain.New(projectorConfig())))
}

// A leaf with more clusters than MaxCandidates is searched through its
// most recently used clusters: a message like a recent one still joins it.
func TestLargeLeafFindsRecentClusters(t *testing.T) {
	m := drain.New(projectorConfig())
	msgs := projtest.HostileCases(nil)
	var distinct [][]byte
	for _, c := range msgs {
		if c.Name == "distinct templates" {
			distinct = c.Messages(32 << 10)
		}
	}
	if len(distinct) < 200 {
		t.Fatalf("%d messages", len(distinct))
	}
	for _, msg := range distinct {
		m.Add(msg)
	}
	if m.Len() != len(distinct) {
		t.Fatalf("%d distinct messages made %d clusters", len(distinct), m.Len())
	}
	last := distinct[len(distinct)-1]
	if id, ok := m.Add(last); !ok || id != len(distinct)-1 || m.Len() != len(distinct) {
		t.Fatalf("the newest template was not found: id %d ok %v, %d clusters", id, ok, m.Len())
	}
}

// BenchmarkMinerHostile reports the miner's MB/s on the slowest hostile
// shape at 1 MiB and on ordinary log lines.
func BenchmarkMinerHostile(b *testing.B) {
	cases := projtest.HostileCases(redact.Vocabulary())
	run := mineAll(drain.New(projectorConfig()))
	worst, worstNs := projtest.Hostile{}, 0.0
	for _, c := range cases {
		in := c.Messages(projtest.LargeSize)
		if ns := projtest.PerByte(in, projtest.Bytes(in), 1, run); ns > worstNs {
			worst, worstNs = c, ns
		}
	}
	for _, c := range []projtest.Hostile{worst, logLines} {
		in := c.Messages(projtest.LargeSize)
		b.Run(c.Name, func(b *testing.B) {
			b.SetBytes(int64(projtest.Bytes(in)))
			for b.Loop() {
				run(in)
			}
		})
	}
}

var logLines = projtest.Hostile{Name: "ordinary log lines", Messages: func(size int) [][]byte {
	lines := []string{
		"Receiving block <*> src: /<IP> dest: /<IP>",
		"PacketResponder <NUM> for block <*> terminating",
		"payment timeout after 3000ms for order 81723 on checkout-api",
		"Connection reset by peer; reconnecting to the primary",
		"GET /api/v1/orders/123 took 35ms status=200 bytes=1234",
	}
	var out [][]byte
	for n, i := 0, 0; n < size; i++ {
		out = append(out, []byte(lines[i%len(lines)]))
		n += len(out[len(out)-1])
	}
	return out
}}

func ExampleTokenizeN() {
	for _, tok := range drain.TokenizeN(nil, []byte("GET /orders took 35ms and then some more"), 4) {
		fmt.Printf("%s|", tok)
	}
	fmt.Println()
	// Output: GET|/orders|took|35ms|
}
