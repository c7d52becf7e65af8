package redact

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors/internal/redacteval"
)

// callLog is a Masker that writes what canonical.Placeholders writes and
// logs every call, so that two redactors' calls can be compared.
type callLog struct{ calls []string }

func (l *callLog) AppendMask(dst []byte, kind canonical.Kind, value []byte) []byte {
	l.calls = append(l.calls, string(kind)+" "+string(value))
	return canonical.Placeholders.AppendMask(dst, kind, value)
}

// countingDetector masks every "zzz" and counts the messages it reads.
type countingDetector struct{ reads int }

func (d *countingDetector) Spans(dst [][2]int, msg []byte) [][2]int {
	d.reads++
	for off := 0; ; {
		k := bytes.Index(msg[off:], []byte("zzz"))
		if k < 0 {
			return dst
		}
		dst = append(dst, [2]int{off + k, off + k + 3})
		off += k + 3
	}
}

// evalLines returns every line of the evaluation sets.
func evalLines(t *testing.T) []string {
	t.Helper()
	sets, err := redacteval.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, s := range sets {
		for _, p := range s.Planted {
			lines = append(lines, p.Line)
		}
		lines = append(lines, s.Ordinary...)
		lines = append(lines, s.Verbatim...)
	}
	if len(lines) < 1000 {
		t.Fatalf("only %d evaluation lines", len(lines))
	}
	return lines
}

// remembered reports whether r remembers msg, without looking for it as
// AppendMasked does (which counts the look).
func remembered(r *Redactor, msg []byte) bool {
	m := &r.memo
	if m.at == nil {
		return false
	}
	i, ok := m.at[maphash.Bytes(m.seed, msg)]
	if !ok {
		return false
	}
	e := m.entries[i]
	return bytes.Equal(m.text[e.text[0]:e.text[1]], msg)
}

// TestRememberChangesNothing redacts every evaluation line, each met up to
// three times in a shuffled order, then all of them again in one order,
// with a remembering redactor and with a fresh one: the output and the
// Masker's calls are the same, and most repeats were masked from memory.
// The repeats are shuffled within blocks of 256 lines, so that each
// window finds enough of them for the memo to go on looking.
func TestRememberChangesNothing(t *testing.T) {
	lines := evalLines(t)
	r := rand.New(rand.NewPCG(3, 4))
	var seq []string
	for k := 0; k < len(lines); k += 256 {
		var block []string
		for _, l := range lines[k:min(k+256, len(lines))] {
			for range 1 + r.IntN(3) {
				block = append(block, l)
			}
		}
		r.Shuffle(len(block), func(i, j int) { block[i], block[j] = block[j], block[i] })
		seq = append(seq, block...)
	}
	seq = append(seq, lines...)
	mem, plain := New(), New()
	mem.Remember(64 << 20)
	var memLog, plainLog callLog
	var a, b []byte
	found, seen := 0, map[string]bool{}
	repeats := 0
	for i, l := range seq {
		msg := []byte(l)
		if seen[l] && len(msg) <= maxRememberedMessage {
			repeats++
			if remembered(mem, msg) {
				found++
			}
		}
		seen[l] = true
		a = mem.AppendMasked(a[:0], msg, &memLog)
		b = plain.AppendMasked(b[:0], msg, &plainLog)
		if !bytes.Equal(a, b) {
			t.Fatalf("line %d %q:\n remembering: %q\n fresh:       %q", i, l, a, b)
		}
	}
	if len(memLog.calls) != len(plainLog.calls) {
		t.Fatalf("the Masker was called %d times, %d without remembering", len(memLog.calls), len(plainLog.calls))
	}
	for i := range memLog.calls {
		if memLog.calls[i] != plainLog.calls[i] {
			t.Fatalf("call %d: %q, without remembering %q", i, memLog.calls[i], plainLog.calls[i])
		}
	}
	if 10*found < 9*repeats {
		t.Fatalf("%d of %d repeats masked from memory", found, repeats)
	}
	t.Logf("%d messages, %d repeats, %d masked from memory", len(seq), repeats, found)
}

// TestRememberFinds checks that a log that repeats its messages has them
// found, and that one that does not is let pass unlooked for (nothing new
// is kept then), then looked in again.
func TestRememberFinds(t *testing.T) {
	lines := evalLines(t)[:200]
	r := New()
	r.Remember(1 << 20)
	found := 0
	for i := range 4000 {
		msg := []byte(lines[i%len(lines)])
		if remembered(r, msg) {
			found++
		}
		r.AppendMasked(nil, msg, nil)
	}
	if found < 4000-2*len(lines) {
		t.Fatalf("%d of %d repeats found", found, 4000-len(lines))
	}
	r.Forget()
	for i := range window {
		r.AppendMasked(nil, fmt.Appendf(nil, "request %d served", i), nil)
	}
	skipped := []byte("request served during the stretch")
	r.AppendMasked(nil, skipped, nil)
	if r.memo.skip != skipAfter-1 || remembered(r, skipped) {
		t.Fatalf("after %d messages none of which repeats, %d to let pass, kept %v", window, r.memo.skip, remembered(r, skipped))
	}
	for range skipAfter - 1 {
		r.AppendMasked(nil, []byte("request 0 served"), nil)
	}
	after := []byte("request served after the stretch")
	r.AppendMasked(nil, after, nil)
	if r.memo.skip != 0 || !remembered(r, after) {
		t.Fatal("the memo did not look again")
	}
}

// TestRememberBounds checks the room Remember gives: what it keeps stays
// within it, a message over 4 KiB is not kept, Forget drops everything
// and zeroes the bytes it kept, and Remember(0) stops it.
func TestRememberBounds(t *testing.T) {
	r := New()
	r.Remember(2000)
	for i := range 200 {
		r.AppendMasked(nil, fmt.Appendf(nil, "login failed password=Hunter%d! for user=alice", i), nil)
		if r.memo.used > 2000 {
			t.Fatalf("after %d messages, %d bytes kept of 2000", i+1, r.memo.used)
		}
	}
	if n := len(r.memo.entries); n == 0 || n >= 200 {
		t.Fatalf("%d of 200 messages kept in 2000 bytes", n)
	}
	r.Remember(1 << 20)
	long := []byte("token=" + strings.Repeat("a1B2", maxRememberedMessage/4))
	r.AppendMasked(nil, long, nil)
	if remembered(r, long) {
		t.Fatal("a message over 4 KiB was kept")
	}
	short := []byte("login failed password=Hunter2! for user=alice")
	r.AppendMasked(nil, short, nil)
	if !remembered(r, short) {
		t.Fatal("a short message was not kept")
	}
	text := r.memo.text[:cap(r.memo.text)]
	r.Forget()
	if remembered(r, short) || r.memo.used != 0 || len(r.memo.entries) != 0 {
		t.Fatal("Forget kept a message")
	}
	if bytes.Contains(text, []byte("Hunter2!")) {
		t.Fatal("Forget left a message's bytes in its buffer")
	}
	r.AppendMasked(nil, short, nil)
	if !remembered(r, short) {
		t.Fatal("after Forget, a message was not kept")
	}
	r.Remember(0)
	r.AppendMasked(nil, short, nil)
	if remembered(r, short) || r.memo.at != nil {
		t.Fatal("Remember(0) went on remembering")
	}
}

// TestRememberSameHash plants another message under a message's hash: it is
// read, not taken for the one remembered.
func TestRememberSameHash(t *testing.T) {
	r := New()
	r.Remember(1 << 20)
	first := []byte("login failed password=Hunter2! for user=alice")
	other := []byte("login failed for user=alice password=Hunter3?")
	want := New().AppendMasked(nil, other, nil)
	r.AppendMasked(nil, first, nil)
	h := maphash.Bytes(r.memo.seed, other)
	r.memo.at[h] = r.memo.at[maphash.Bytes(r.memo.seed, first)]
	if _, found := r.memo.find(nil, h, other); found {
		t.Fatal("a message of another's hash was found")
	}
	if got := r.AppendMasked(nil, other, nil); !bytes.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestRememberExtraDetectors checks that the extra detectors read a message
// found again.
func TestRememberExtraDetectors(t *testing.T) {
	d := &countingDetector{}
	r := New(d)
	r.Remember(1 << 20)
	msg := []byte("cache key zzz for session 9f8e7d6c5b4a3210")
	first := r.AppendMasked(nil, msg, nil)
	second := r.AppendMasked(nil, msg, nil)
	if !bytes.Equal(first, second) || d.reads != 2 || bytes.Contains(second, []byte("zzz")) {
		t.Fatalf("reads %d, outputs %q and %q", d.reads, first, second)
	}
}
