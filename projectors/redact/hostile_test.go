package redact_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

func redactAll(r *redact.Redactor) func([][]byte) {
	var buf []byte
	return func(msgs [][]byte) {
		for _, m := range msgs {
			buf = r.Append(buf[:0], m)
		}
	}
}

// The redactor costs the same per byte on 64 KiB and on 1 MiB of every
// hostile shape. A message of "pid=" repeated once took 418 ms for 64 KiB
// and grew with the square of its length.
func TestRedactLinearOnHostileInput(t *testing.T) {
	projtest.CheckLinear(t, "redact", projtest.HostileCases(redact.Vocabulary()), nil, redactAll(redact.New()))
}

// Each literal of the vocabulary alone, repeated as a key, an assignment
// and a phrase, and glued to '=', ':' or ' ': at 8 KiB and 32 KiB, so that
// every one is tried without the run taking minutes. A quadratic cost shows
// as a ratio near 4.
func TestRedactLinearPerLiteral(t *testing.T) {
	run := redactAll(redact.New())
	vocab := redact.Vocabulary()
	tried := 0
	for _, class := range slices.Sorted(maps.Keys(vocab)) {
		for _, w := range vocab[class] {
			for _, unit := range []string{fmt.Sprintf("%s=%s: \"%s\":%s=>%s ", w, w, w, w, w), w + "=", w + ":", w + " "} {
				msg := func(size int) [][]byte { return [][]byte{[]byte(strings.Repeat(unit, size/len(unit)+1))} }
				small, large := msg(8<<10), msg(32<<10)
				s := projtest.PerByte(small, projtest.Bytes(small), 2, run)
				l := projtest.PerByte(large, projtest.Bytes(large), 2, run)
				if l > 3*s {
					if s2, l2 := projtest.PerByte(small, projtest.Bytes(small), 8, run), projtest.PerByte(large, projtest.Bytes(large), 8, run); l2 > 3*s2 {
						t.Errorf("%s %q: %.2f ns/B at 32 KiB is over 3x the %.2f ns/B at 8 KiB", class, unit, l2, s2)
					}
				}
				tried++
			}
		}
	}
	t.Logf("redact: %d literal shapes each linear from 8 KiB to 32 KiB", tried)
}

// BenchmarkRedactHostile reports the MB/s of the slowest hostile shape at
// 1 MiB, and of ordinary log lines for comparison.
func BenchmarkRedactHostile(b *testing.B) {
	cases := projtest.HostileCases(redact.Vocabulary())
	run := redactAll(redact.New())
	worst, worstNs := projtest.Hostile{}, 0.0
	for _, c := range cases {
		in := c.Messages(projtest.LargeSize)
		if ns := projtest.PerByte(in, projtest.Bytes(in), 1, run); ns > worstNs {
			worst, worstNs = c, ns
		}
	}
	in := worst.Messages(projtest.LargeSize)
	b.Run("worst="+worst.Name, func(b *testing.B) {
		b.SetBytes(int64(projtest.Bytes(in)))
		for b.Loop() {
			run(in)
		}
	})
}

// Vocabulary lists, by rule, every literal the redactor keys on, so that
// tests and fuzzers can build inputs from what it looks for.
func ExampleVocabulary() {
	v := redact.Vocabulary()
	fmt.Println(slices.Contains(v["keys"], "pid"), slices.Contains(v["vendor-prefixes"], "ghp_"), slices.Contains(v["webhook-markers"], "webhooks"))
	// Output: true true true
}

// The credential-position gate reads the words around the literals it
// meets: refused keywords, cloud path words and literal prefixes repeated
// cost the same per byte at 8 KiB and at 32 KiB.
func TestRedactLinearPositionGate(t *testing.T) {
	run := redactAll(redact.New())
	for _, unit := range []string{"session ", "sessions ", "keys ", "passwords ", "Session.", "orders/", "s/", "projects/",
		"se", "sessionsessions ", "pa to co pr lo ", "identifie "} {
		msg := func(size int) [][]byte { return [][]byte{[]byte(strings.Repeat(unit, size/len(unit)+1))} }
		small, large := msg(8<<10), msg(32<<10)
		s := projtest.PerByte(small, projtest.Bytes(small), 2, run)
		l := projtest.PerByte(large, projtest.Bytes(large), 2, run)
		if l > 3*s {
			if s2, l2 := projtest.PerByte(small, projtest.Bytes(small), 8, run), projtest.PerByte(large, projtest.Bytes(large), 8, run); l2 > 3*s2 {
				t.Errorf("%q: %.2f ns/B at 32 KiB is over 3x the %.2f ns/B at 8 KiB", unit, l2, s2)
			}
		}
	}
}

// The shapes that the credential-position gate reads past: angle brackets
// and placeholders, which hasElement looks at one by one, and colons in
// one run or spread over words, which hasPgpassRun counts.
func TestRedactLinearOnPositionGateShapes(t *testing.T) {
	unit := func(s string) func(int) [][]byte {
		return func(size int) [][]byte { return [][]byte{[]byte(strings.Repeat(s, max(1, size/len(s))))} }
	}
	projtest.CheckLinear(t, "redact", []projtest.Hostile{
		{Name: "open brackets", Messages: unit("<a")},
		{Name: "placeholders", Messages: unit("<SECRET>")},
		{Name: "elements", Messages: unit("<abcdefghijklmnopqrstuvwxyz0123456789 ")},
		{Name: "colons in one run", Messages: unit("a:b*")},
		{Name: "colons over words", Messages: unit("a:b:c ")},
	}, nil, redactAll(redact.New()))
}

// An authorization header's value ends at the line's end only when it runs
// there: a line of many short values ("authorization: x" again and again)
// read each to the line's end, and cost the square of its length.
func TestRedactLinearOnShortAuthorizationValues(t *testing.T) {
	for _, unit := range []string{"authorization: : ", "Authorization: x ", "proxy-authorization: Bearer , "} {
		expectLinearUnit(t, unit, 8<<10, 32<<10, 4)
	}
}

// A line of many slash flags named for a secret, on no Windows program's
// line, looks for the program once: each flag read the line before it
// again and cost the square of the line's length (17 ms at 64 KiB, 245 ms
// at 256 KiB; the square shows only past 32 KiB, as the search is fast).
func TestRedactLinearOnSlashFlags(t *testing.T) {
	for _, unit := range []string{" /password abc1", " /token Kq8zz22m", "run.exe /pass x9y8z7 "} {
		expectLinearUnit(t, unit, 64<<10, 256<<10, 2)
	}
}

// expectLinearUnit fails t when unit repeated to large bytes costs more
// than three times as much per byte as repeated to small bytes (fastest of
// reps runs each).
func expectLinearUnit(t *testing.T, unit string, small, large, reps int) {
	t.Helper()
	run := redactAll(redact.New())
	msg := func(size int) [][]byte { return [][]byte{[]byte(strings.Repeat(unit, size/len(unit)+1))} }
	sm, lg := msg(small), msg(large)
	s := projtest.PerByte(sm, projtest.Bytes(sm), reps, run)
	l := projtest.PerByte(lg, projtest.Bytes(lg), reps, run)
	if l > 3*s {
		t.Errorf("%q: %.2f ns/B at %d KiB is over 3x the %.2f ns/B at %d KiB", unit, l, large>>10, s, small>>10)
	}
}

// A SQL statement is read from the first of its keywords whose shape
// follows it: many keywords whose shape stands only before them (" from t
// " then "select " again and again) must not each search the rest of the
// text.
func TestRedactLinearOnSQLHeads(t *testing.T) {
	for _, c := range []struct{ head, unit string }{
		{"a from b ", "select "}, {"x = 1 ", "where "}, {"t set a ", "update "}, {"a+from+b+", "select+"},
	} {
		run := redactAll(redact.New())
		msg := func(size int) [][]byte { return [][]byte{[]byte(c.head + strings.Repeat(c.unit, size/len(c.unit)+1))} }
		sm, lg := msg(16<<10), msg(128<<10)
		s := projtest.PerByte(sm, projtest.Bytes(sm), 2, run)
		l := projtest.PerByte(lg, projtest.Bytes(lg), 2, run)
		if l > 3*s {
			t.Errorf("%q then %q: %.2f ns/B at 128 KiB is over 3x the %.2f ns/B at 16 KiB", c.head, c.unit, l, s)
		}
	}
}

// This release's readings, each repeated: a document's number, a
// traveller's name, a card's number, a home share, a down-level name, a
// hasher's flags, an IBAN, a secret's key before a colon.
func TestRedactLinearOnDocumentsAndFormats(t *testing.T) {
	for _, unit := range []string{"passport number 533812749 ", "pax MULLER/ANNA MR pnr XTB1HT ", "badge #448812 ",
		`\\filer01\homes\alice `, `logged on as CORP\jsmith `, "mkpasswd -m sha-512 -R 5 ", "GB82 WEST 1234 5698 7654 32 ",
		"enrolment key for course x: ", "password for \"x\" y: ", "community string set to ", "Wi-Fi connected to "} {
		expectLinearUnit(t, unit, 16<<10, 128<<10, 2)
	}
}
