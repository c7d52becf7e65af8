package redact

import (
	"bufio"
	"bytes"
	"github.com/toolcanon/toolcanon/canonical"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
)

// appendGatesOnly is Append as it was before the features: each pass runs
// when its gate passes, and the stack-trace pass whenever the text hints at
// a trace (a tab, a line break, …), not only when a frame marker is there.
// Some gates carry meaning (a quoted string is a SQL literal only in a SQL
// statement), so they stay; the features and the narrower stack gate must
// only save time, never change a result. The passes share one rewriter,
// as in Append: a proof of the last pass makes public what earlier passes
// masked inside it (dropPublic), so a pass run alone would mean another
// redactor. Its features are unknown (0).
func appendGatesOnly(dst, msg []byte) []byte {
	stack := reflect.ValueOf(redactStack).Pointer()
	r := New()
	rw := &rewriter{src: msg, keys: &r.keys}
	for i := range stages {
		gate := stages[i].gate
		if reflect.ValueOf(stages[i].apply).Pointer() == stack {
			gate = func(src []byte, _ features) bool { return stackHint(src, scanFeatures(src)) }
		}
		if gate != nil && !gate(msg, scanFeatures(msg)) {
			continue
		}
		rw.last = 0
		stages[i].apply(rw)
	}
	rw.afterPasses()
	r.spans = rw.spans
	return r.write(dst, msg, canonical.Placeholders)
}

func readLines(tb testing.TB, path string) [][]byte {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	return out
}

// splice joins one to four random pieces of lines, each followed by one
// byte of seps.
func splice(rnd *rand.Rand, lines [][]byte, seps string) []byte {
	var msg []byte
	for k := 1 + rnd.IntN(4); k > 0; k-- {
		l := lines[rnd.IntN(len(lines))]
		a := rnd.IntN(len(l) + 1)
		b := a + rnd.IntN(len(l)-a+1)
		msg = append(msg, l[a:b]...)
		msg = append(msg, seps[rnd.IntN(len(seps))])
	}
	return msg
}

// TestGatesOnlySaveTime checks that the features and gates that let passes
// be skipped never skip one that would have changed the text: on the
// corpora, on every literal the redactor keys on, and on random splices of
// them, Append equals appendGatesOnly.
func TestGatesOnlySaveTime(t *testing.T) {
	lines := append(readLines(t, "testdata/planted.txt"), readLines(t, "testdata/ordinary.txt")...)
	for _, lits := range Vocabulary() {
		for _, l := range lits {
			lines = append(lines, []byte(l), []byte("x "+l+" 10.0.0.1 y"), []byte(l+"s3cr3tValue=1\tz"))
		}
	}
	r := New()
	check := func(msg []byte) {
		got := r.Append(nil, msg)
		want := appendGatesOnly(nil, msg)
		if !bytes.Equal(got, want) {
			t.Fatalf("gated result differs for %q:\ngated: %q\ngates only: %q", msg, got, want)
		}
	}
	changed := 0
	for _, l := range lines {
		check(l)
		if !bytes.Equal(r.Append(nil, l), l) {
			changed++
		}
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 20000; n++ {
		check(splice(rnd, lines, " \t\n=:-(@"))
	}
	// The comparison means something only if many lines are redacted.
	if changed < len(lines)/10 {
		t.Fatalf("only %d of %d lines changed", changed, len(lines))
	}
	t.Logf("%d lines (%d redacted) and 20000 splices agree", len(lines), changed)
}

// TestHoldsGateLiteralMatchesContains pins holdsGateLiteral's pair table
// to its definition, a literal of gateLiterals inside the word, on every
// literal alone, inside other bytes, with its case changed, and cut short.
func TestHoldsGateLiteralMatchesContains(t *testing.T) {
	plain := func(w []byte) bool {
		for _, l := range gateLiterals {
			if bytes.Contains(w, []byte(l)) {
				return true
			}
		}
		return bytes.IndexFunc(w, func(r rune) bool { return r >= 0x80 }) >= 0
	}
	for _, l := range gateLiterals {
		if l[0] < 'a' || l[0] > 'z' || l[1] < 'a' || l[1] > 'z' {
			t.Errorf("literal %q does not start with two lower-case letters, which the pair table needs", l)
		}
	}
	var words []string
	for _, l := range gateLiterals {
		words = append(words, l, "x_"+l+"_y", "a"+l, strings.ToUpper(l), l[:len(l)-1], "db"+l[:len(l)-1]+"z")
	}
	words = append(words, "", "a", "password", "mypasswd", "tokenizer", "käse", "hostname", "api-key")
	for _, w := range words {
		if got, want := holdsGateLiteral([]byte(w)), plain([]byte(w)); got != want {
			t.Errorf("holdsGateLiteral(%q) = %v, want %v", w, got, want)
		}
	}
}
