package redact

import (
	"math/rand/v2"
	"testing"
)

// savingGates are gates that carry no meaning: when one refuses a text, its
// pass would have left that text as it is.
var savingGates = []struct {
	name  string
	gate  func(src []byte, f features) bool
	apply func(rw *rewriter)
}{
	{"positions", gatePositions, redactPositions},
	{"announced values", gateAnnounced, redactAnnounced},
	{"values fed to input", gateStdin, redactStdin},
}

// gateRefusesChange fails when a saving gate refuses msg although its pass
// changes it.
func gateRefusesChange(t *testing.T, msg []byte) {
	t.Helper()
	for _, g := range savingGates {
		if g.gate(msg, scanFeatures(msg)) {
			continue
		}
		rw := &rewriter{src: msg, keys: &keyCache{}}
		g.apply(rw)
		if len(rw.spans) > 0 {
			t.Fatalf("the %s gate refuses %q, which its pass masks at %v", g.name, msg, rw.spans)
		}
	}
}

// TestSavingGates checks the saving gates on the corpora, their redacted
// forms (which hold placeholders), every literal the redactor keys on and
// random splices of them.
func TestSavingGates(t *testing.T) {
	lines := append(readLines(t, "testdata/planted.txt"), readLines(t, "testdata/ordinary.txt")...)
	lines = append(lines, readLines(t, "testdata/round2/planted.txt")...)
	for _, lits := range Vocabulary() {
		for _, l := range lits {
			lines = append(lines, []byte(l), []byte("x "+l+" 10.0.0.1 y"), []byte(l+"s3cr3tValue=1\tz"))
		}
	}
	r := New()
	for _, l := range lines[:len(lines):len(lines)] {
		lines = append(lines, r.Append(nil, l))
	}
	for _, l := range lines {
		gateRefusesChange(t, l)
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 20000; n++ {
		gateRefusesChange(t, splice(rnd, lines, " \t\n=:-(@<>*/"))
	}
}

// FuzzSavingGates checks the saving gates on any text.
func FuzzSavingGates(f *testing.F) {
	for _, s := range []string{"<password>hunter2</password>", "db:5432:orders:app:pw", "*:*:*:app:pw", "scott/tiger@ORCL",
		"/subscriptions/3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b/x", "password hunter2", "<SECRET>:1:2:3", "a:b \"c:d:e:f",
		// A key's path before a quoted value, named by its last segment,
		// which no literal starts (quotedPair).
		"ead-only at /etc/inve/quirepass \"qHDwCAPXpmR6m\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) { gateRefusesChange(t, msg) })
}

// The positions pass is skipped on the shapes of ordinary lines that hold
// its trigger bytes without anything it can replace: a placeholder or an
// address in angle brackets, a SQL '*', colons spread over several words.
func TestPositionsGateRefusesOrdinaryLines(t *testing.T) {
	for _, s := range []string{
		"slow query SELECT * FROM orders WHERE customer_id = <NUM> took 5120ms",
		"Receiving block blk_-4711238567390192833 src: /<IP>:45121 dest: /<IP>:50010",
		`user "bob" <<EMAIL>> retried`,
		"at 10:41:02 worker: done: ok",
	} {
		if gatePositions([]byte(s), scanFeatures([]byte(s))) {
			t.Errorf("the positions gate lets %q through", s)
		}
	}
	for _, s := range []string{"<password>hunter2</password>", "pg:5432:orders:app:pw", "x *:5432:db:app:pw"} {
		if !gatePositions([]byte(s), scanFeatures([]byte(s))) {
			t.Errorf("the positions gate refuses %q", s)
		}
	}
}

// gatePositions looks for a cloud path word only before a '/' that
// follows an 's'.
func TestCloudPathWordsArePlurals(t *testing.T) {
	for _, w := range cloudPathWords {
		if lower(w[len(w)-1]) != 's' {
			t.Errorf("cloud path word %q does not end in 's'", w)
		}
	}
}
