package projtest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/internal/cputime"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// Hostile is one shape of adversarial log text: Messages returns messages
// of about size bytes in all, built the same way at every size, so that a
// cost that grows faster than the input shows as a ratio of ns/byte.
type Hostile struct {
	Name     string
	Messages func(size int) [][]byte
}

// Sizes at which CheckLinear compares the cost per byte.
const (
	SmallSize = 64 << 10
	LargeSize = 1 << 20
)

// one returns a single message: unit repeated to size bytes.
func one(unit string) func(int) [][]byte {
	return func(size int) [][]byte {
		return [][]byte{[]byte(strings.Repeat(unit, max(1, size/len(unit))))}
	}
}

// keyedUnit writes each word as a key with each way of assigning to it,
// and as a phrase: w=, w: , "w":, w=>, w <space>.
func keyedUnit(words []string) string {
	var b strings.Builder
	for _, w := range words {
		fmt.Fprintf(&b, "%s=%s: \"%s\":%s=>%s ", w, w, w, w, w)
	}
	return b.String()
}

// HostileCases returns the adversarial shapes built from the redactor's
// vocabulary (see redact.Vocabulary): for each class of literals, one
// message of all of them, each repeated as a key, an assignment and a
// phrase, and messages of them glued and followed by '=', ':' or ' ' (as in
// pid=pid=pid=); for each separator, one message of nothing else; long runs of
// digits, grouped digits, hex, hex pairs and base64; one message of
// realistic log text full of sensitive values; and 100k tiny messages per
// MiB.
func HostileCases(vocab map[string][]string) []Hostile {
	var cases []Hostile
	for _, class := range slices.Sorted(maps.Keys(vocab)) {
		if class == "separators" {
			for _, sep := range vocab[class] {
				cases = append(cases, Hostile{fmt.Sprintf("run of %q", sep), one(sep)})
			}
			continue
		}
		cases = append(cases, Hostile{"keys: " + class, one(keyedUnit(vocab[class]))})
		cases = append(cases, Hostile{"glued: " + class, one(strings.Join(vocab[class], ""))})
		for _, sep := range []string{"=", ":", " "} {
			cases = append(cases, Hostile{fmt.Sprintf("each%q: %s", sep, class), one(strings.Join(vocab[class], sep) + sep)})
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	random := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	cases = append(cases,
		Hostile{"digits", one("1234567890")},
		Hostile{"grouped digits", one("4111 ")},
		Hostile{"hex", one(random("0123456789abcdef", 4096))},
		Hostile{"hex pairs", one("0a:")},
		Hostile{"base64", one(random("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 4096))},
		Hostile{"dotted quads", one("10.0.0.")},
		Hostile{"quotes and brackets", one(`"[{('=:')}]"`)},
		Hostile{"log text", one("login failed password=hunter2 for user=alice@example.com from 10.0.4.17:5432 " +
			"token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln pod checkout-api-7d9f8b6c5d-x2k4p " +
			"SELECT * FROM t WHERE id = 42 AND name = 'x' at com.acme.Svc.run(Svc.java:42) ")},
		Hostile{"distinct templates", func(size int) [][]byte {
			// Same length, same first token, no two alike: every one
			// lands in one leaf of the miner's tree as a new cluster.
			r := rand.New(rand.NewPCG(3, 4))
			var out [][]byte
			for n := 0; n < size; {
				var b strings.Builder
				b.WriteString("event")
				for range 12 {
					b.WriteByte(' ')
					for range 3 + r.IntN(5) {
						b.WriteByte(byte('a' + r.IntN(26)))
					}
				}
				out = append(out, []byte(b.String()))
				n += b.Len()
			}
			return out
		}},
		Hostile{"tiny messages", func(size int) [][]byte {
			tiny := []string{"ok", "a=1", "pid 7", "x:y", "10.0.0.1", "u@h.io", "'", "k=\"", "user a"}
			var out [][]byte
			for n, i := 0, 0; n < size; i++ {
				m := []byte(tiny[i%len(tiny)])
				out = append(out, m)
				n += len(m) + 10 // as if each came with its own record
			}
			return out
		}},
	)
	return cases
}

// Bytes returns the total length of msgs.
func Bytes(msgs [][]byte) int {
	n := 0
	for _, m := range msgs {
		n += len(m)
	}
	return n
}

// PerByte times run on input, best of reps runs, and returns ns per byte of
// size. It counts the processor time of the running thread (package
// cputime), so that other processes on a loaded machine, which take more
// from a long run than from a short one, do not distort the comparison.
func PerByte(input [][]byte, size, reps int, run func([][]byte)) float64 {
	best := time.Duration(1 << 62)
	for range reps {
		best = min(best, cputime.Measure(func() { run(input) }))
	}
	return float64(best.Nanoseconds()) / float64(size)
}

// CheckLinear runs each case at SmallSize and LargeSize in this process,
// takes the best of several runs of each (interleaved, and in thread
// processor time, so that load on a shared machine does not tell), logs ns/byte at both sizes and their
// ratio, and fails when the large figure is more than 3x the small one. It
// returns the name and MB/s of the slowest case at LargeSize. size gives
// the bytes a run processes for messages msgs (0: their own length).
func CheckLinear(t *testing.T, what string, cases []Hostile, size func(msgs [][]byte) int, run func(msgs [][]byte)) (string, float64) {
	t.Helper()
	if size == nil {
		size = Bytes
	}
	worst, worstMBps := "", 0.0
	for _, c := range cases {
		small, large := c.Messages(SmallSize), c.Messages(LargeSize)
		ss, ls := size(small), size(large)
		s, l := 1e18, 1e18
		for range 2 {
			s = min(s, PerByte(small, ss, 3, run))
			l = min(l, PerByte(large, ls, 1, run))
		}
		t.Logf("%s %-34s %8.2f ns/B at 64 KiB %8.2f ns/B at 1 MiB  ratio %.2f", what, c.Name, s, l, l/s)
		if l > 3*s {
			// One more, longer look before failing: a burst of load on a
			// shared machine can slow a single large run.
			s2 := PerByte(small, ss, 10, run)
			l2 := PerByte(large, ls, 5, run)
			t.Logf("%s %-34s %8.2f ns/B at 64 KiB %8.2f ns/B at 1 MiB  ratio %.2f (second, longer look)", what, c.Name, s2, l2, l2/s2)
			if l2 > 3*s2 {
				t.Errorf("%s %s: %.2f ns/B at 1 MiB is over 3x the %.2f ns/B at 64 KiB", what, c.Name, l2, s2)
			}
			l = min(l, l2)
		}
		if mbps := 1e3 / l; worst == "" || mbps < worstMBps {
			worst, worstMBps = c.Name, mbps
		}
	}
	t.Logf("%s: worst case %q at %.1f MB/s (1 MiB)", what, worst, worstMBps)
	return worst, worstMBps
}

// LogResponse renders msgs as the legacy log-query response, one ERROR
// entry per message.
func LogResponse(msgs [][]byte) []byte {
	out := []byte(`{"success":true,"window":{"from":"2026-03-01T09:00:00Z","to":"2026-03-01T10:00:00Z"},"entries":[`)
	for i, m := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"timestamp":"2026-03-01T09:30:00.000Z","level":"ERROR","service":"checkout-api","message":`...)
		out = strictjson.AppendQuoted(out, string(m))
		out = append(out, '}')
	}
	return append(out, "]}"...)
}

// RAGResponse renders msgs as the legacy RAG response, one block per
// message, each its own document.
func RAGResponse(msgs [][]byte) []byte {
	out := []byte(`{"success":true,"blocks":[`)
	for i, m := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"source":"kb","document_id":"doc-`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `","title":"t","excerpt":`...)
		out = strictjson.AppendQuoted(out, string(m))
		out = append(out, '}')
	}
	return append(out, "]}"...)
}

// AsResponses turns each case into one raw response built by render, of
// about the case's size in bytes of response (not of message text), so
// that a projector is measured end to end on what it is given.
func AsResponses(cases []Hostile, render func([][]byte) []byte) []Hostile {
	out := make([]Hostile, len(cases))
	for i, c := range cases {
		out[i] = Hostile{c.Name, func(size int) [][]byte {
			raw := render(c.Messages(size))
			if len(raw) > size+size/2 {
				raw = render(c.Messages(max(1, int(int64(size)*int64(size)/int64(len(raw))))))
			}
			return [][]byte{raw}
		}}
	}
	return out
}
