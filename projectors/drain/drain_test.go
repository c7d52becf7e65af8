package drain_test

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/projectors/drain"
)

func TestMinerMasksVariables(t *testing.T) {
	m := drain.New(drain.DefaultConfig())
	var ids []int
	for i := 0; i < 5; i++ {
		id, ok := m.AddString(fmt.Sprintf("payment timeout after %dms for order %d", 3000+i, 81720+i))
		if !ok {
			t.Fatal("not mined")
		}
		ids = append(ids, id)
	}
	other, _ := m.AddString("cache miss for key <SECRET>")
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("ids %v", ids)
		}
	}
	if other == ids[0] || m.Len() != 2 {
		t.Fatalf("clusters %d", m.Len())
	}
	if got := m.TemplateString(ids[0]); got != "payment timeout after <*> for order <*>" {
		t.Fatalf("template %q", got)
	}
	if c := m.Cluster(ids[0]); c.Size != 5 || c.ID != ids[0] {
		t.Fatalf("cluster %+v", c)
	}
}

func TestMinerSimilarityThreshold(t *testing.T) {
	m := drain.New(drain.Config{Depth: 4, Similarity: 0.8})
	a, _ := m.AddString("user login ok from web")
	b, _ := m.AddString("user login failed from app")
	if a == b {
		t.Fatal("2 of 5 tokens equal joined at threshold 0.8")
	}
	m = drain.New(drain.Config{Depth: 4, Similarity: 0.4})
	a, _ = m.AddString("user login ok from web")
	b, _ = m.AddString("user login failed from app")
	if a != b {
		t.Fatal("3 of 5 tokens equal did not join at threshold 0.4")
	}
}

func TestMinerRoutesByLengthAndFirstToken(t *testing.T) {
	m := drain.New(drain.DefaultConfig())
	a, _ := m.AddString("connected to a")
	b, _ := m.AddString("connected to a b")
	c, _ := m.AddString("disconnected to a")
	if a == b || a == c || m.Len() != 3 {
		t.Fatalf("routing merged different lengths or first tokens: %d clusters", m.Len())
	}
}

func TestMinerBounds(t *testing.T) {
	m := drain.New(drain.Config{MaxClusters: 3, MaxTokens: 4})
	for i := 0; i < 10; i++ {
		_, ok := m.AddString(fmt.Sprintf("w%c x y z extra tokens ignored", 'a'+i))
		if ok != (i < 3) {
			t.Fatalf("message %d mined=%v", i, ok)
		}
	}
	if m.Len() != 3 || len(m.Cluster(0).Template) != 4 {
		t.Fatalf("len %d template %v", m.Len(), m.Cluster(0).Template)
	}
	m.Reset()
	if m.Len() != 0 {
		t.Fatal("reset kept clusters")
	}
}

func TestTokenize(t *testing.T) {
	got := drain.Tokenize(nil, []byte("  a\tb\u00a0c  d\n"))
	want := []string{"a", "b", "c", "d"}
	if len(got) != len(want) {
		t.Fatalf("%q", got)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Fatalf("%q", got)
		}
	}
}

// FuzzMiner checks the miner's invariants on arbitrary messages: bounded
// clusters, sizes that add up, templates as long as their messages.
func FuzzMiner(f *testing.F) {
	f.Add([]byte("a b c\na b d\n1 2 3\n\n<*> x"), uint8(4), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, depth, sim uint8) {
		cfg := drain.Config{Depth: 3 + int(depth)%4, Similarity: float64(sim%10+1) / 10, MaxClusters: 16, MaxTokens: 32, MaxChildren: 4}
		m := drain.New(cfg)
		mined := 0
		for _, line := range bytes.Split(data, []byte("\n")) {
			id, ok := m.Add(line)
			if !ok {
				continue
			}
			mined++
			n := min(len(drain.Tokenize(nil, line)), 32)
			if got := len(m.Cluster(id).Template); got != n {
				t.Fatalf("template of %d tokens for a message of %d", got, n)
			}
		}
		total := 0
		for _, c := range m.Clusters() {
			total += c.Size
			for _, tok := range c.Template {
				if tok == "" || strings.ContainsAny(tok, " \t\n") {
					t.Fatalf("bad token %q", tok)
				}
			}
		}
		if m.Len() > 16 || total != mined {
			t.Fatalf("clusters %d, sizes %d, mined %d", m.Len(), total, mined)
		}
	})
}

func BenchmarkMinerAdd(b *testing.B) {
	msgs := make([][]byte, 64)
	n := 0
	for i := range msgs {
		msgs[i] = []byte(fmt.Sprintf("Receiving block blk_%d src: /<IP> dest: /<IP> size %d", i*7919, i))
		n += len(msgs[i])
	}
	m := drain.New(drain.DefaultConfig())
	b.SetBytes(int64(n / len(msgs)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m.Add(msgs[i%len(msgs)])
		i++
	}
}

func ExampleMiner() {
	m := drain.New(drain.DefaultConfig())
	for _, msg := range []string{
		"Receiving block <*> src: /<IP> dest: /<IP>",
		"PacketResponder 1 for block <*> terminating",
		"PacketResponder 0 for block <*> terminating",
	} {
		m.AddString(msg)
	}
	for _, c := range m.Clusters() {
		fmt.Println(c.Size, strings.Join(c.Template, " "))
	}
	// Output:
	// 1 Receiving block <*> src: /<IP> dest: /<IP>
	// 2 PacketResponder <*> for block <*> terminating
}

// A Similarity no message can reach (above 1, infinite, not a number)
// makes every message a cluster of its own, and costs no more than any.
func TestMinerUnreachableSimilarity(t *testing.T) {
	for _, sim := range []float64{1.5, math.Inf(1), math.NaN(), 1e300} {
		m := drain.New(drain.Config{Similarity: sim})
		for i := 0; i < 3; i++ {
			if id, ok := m.AddString("same message every time"); !ok || id != i {
				t.Fatalf("similarity %v: message %d mined as %d, %v", sim, i, id, ok)
			}
		}
	}
}

// Messages that differ only in a masked value group, whether it stands as
// a placeholder or as a handle, and the template names its kind.
func TestHandlesAreOneTokenClass(t *testing.T) {
	m := drain.New(drain.DefaultConfig())
	var ids []int
	for _, msg := range []string{
		"<SECRET:k7Qp2xA9> rejected for <USER:Ab-_1234>",
		"<SECRET:Zz9yX8w7> rejected for <USER:Cd-_5678>",
		"<SECRET> rejected for <USER>",
	} {
		id, ok := m.AddString(msg)
		if !ok {
			t.Fatal("not mined")
		}
		ids = append(ids, id)
	}
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("clusters %v: messages differing only in masked values did not group", ids)
	}
	if got := m.TemplateString(ids[0]); got != "<SECRET> rejected for <USER>" {
		t.Fatalf("template %q", got)
	}
	// A handle after placeholders and other '<' is read as its kind too.
	c, _ := m.AddString("<IP> a<b sent <SECRET:k7Qp2xA9> to <HOST:Ab-_1234>")
	d, _ := m.AddString("<IP> a<b sent <SECRET> to <HOST>")
	if c != d || m.TemplateString(c) != "<IP> a<b sent <SECRET> to <HOST>" {
		t.Fatalf("clusters %d, %d: %q", c, d, m.TemplateString(c))
	}
	// A handle-like text that is not a handle is an ordinary token.
	a, _ := m.AddString("<SECRET:short> rejected for x")
	b, _ := m.AddString("<SECRET:other> rejected for x")
	if a == ids[0] || m.TemplateString(b) != "<SECRET:other> rejected for x" {
		t.Fatalf("a malformed handle was read as a handle: %q", m.TemplateString(b))
	}
}
