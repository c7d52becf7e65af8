package audit

import (
	"fmt"
	"os"
	"sort"

	"github.com/toolcanon/toolcanon/canonical"
	"golang.org/x/mod/sumdb/note"
)

// VerifyOptions say what a Verifier accepts.
type VerifyOptions struct {
	// Verifiers check the checkpoints' signatures (note.VerifierList of
	// the exporters' verifier keys). Nil: signatures are not checked, and
	// the report says so.
	Verifiers note.Verifiers
	// Partial accepts an export whose beginning was removed (files past
	// the retention): a stream may start after its first event, a
	// checkpoint after the first, and a replay's first call may be gone.
	Partial bool
	// Latest is a checkpoint kept apart from the export (the last one an
	// operator copied elsewhere): the export must reach it, and hold it
	// unchanged, so that a tail cut at a checkpoint is told too.
	Latest *Checkpoint
}

// Verifier checks an export as it is read, event by event and checkpoint
// by checkpoint, in the order the sink keeps them: each stream's events in
// sequence order without a gap or a repeat, each event's Prev the Hash of
// the one before (Genesis for the first) and its Hash its ChainHash; every
// replay after a completion of the same call, begun with the same request
// digest under the same key; the checkpoints numbered without a gap, each
// naming the one before by its digest and signed by a known key, each head
// it names an event read before it, with that hash; and, at the end, every
// event covered by a checkpoint after it (else the tail was cut).
type Verifier struct {
	opts     VerifyOptions
	streams  map[string]*stream
	lastCP   *Checkpoint
	firstCP  int64
	cpText   map[int64]string // each checkpoint's text, by number
	problems []string
	report   VerifyReport
}

// stream is what a Verifier keeps of one (run, generation).
type stream struct {
	run, gen  string
	first     int64
	seq       int64
	hash      string
	hashes    map[int64]string // seq -> hash, for the checkpoints' heads
	covered   int64            // the highest seq a checkpoint named
	calls     map[string]*callSeen
	partial   bool
	firstSeen string // where the stream's first event was read
}

// callSeen is what a stream's events say of one call.
type callSeen struct {
	requestDigest, keyID string
	completed            bool
}

// VerifyReport is the outcome of a verification.
type VerifyReport struct {
	Events      int      // events read
	Streams     int      // (run, generation) streams
	Checkpoints int      // checkpoints read
	Signed      bool     // the checkpoints' signatures were checked
	Replays     int      // replay events whose first call was found
	Partial     int      // streams that start after their first event (VerifyOptions.Partial)
	Problems    []string // each fault found, where it was; empty when the export verifies
}

// OK reports whether the export verified.
func (r VerifyReport) OK() bool { return len(r.Problems) == 0 }

// maxProblems bounds the faults a report lists.
const maxProblems = 100

// NewVerifier returns a Verifier.
func NewVerifier(opts VerifyOptions) *Verifier {
	return &Verifier{opts: opts, streams: map[string]*stream{}, cpText: map[int64]string{}}
}

func (v *Verifier) fail(at, format string, args ...any) {
	if len(v.problems) < maxProblems {
		v.problems = append(v.problems, at+": "+fmt.Sprintf(format, args...))
	}
}

// Fail records a fault found at the place at, by a reader of the export
// (a line or a row it could not read).
func (v *Verifier) Fail(at, format string, args ...any) { v.fail(at, format, args...) }

// Line checks one line read at the place at.
func (v *Verifier) Line(at string, l Line) {
	switch {
	case l.Event != nil:
		v.Event(at, *l.Event)
	case l.Checkpoint != nil:
		v.Checkpoint(at, *l.Checkpoint)
	}
}

// Event checks the next event of the export.
func (v *Verifier) Event(at string, e Event) {
	v.report.Events++
	k := streamKey(e.RunID, e.Gen)
	s := v.streams[k]
	if s == nil {
		s = &stream{run: e.RunID, gen: e.Gen, hashes: map[int64]string{}, calls: map[string]*callSeen{}, firstSeen: at}
		v.streams[k] = s
		s.first = e.Seq
		switch {
		case e.Seq == 1:
		case v.opts.Partial:
			s.partial = true
			v.report.Partial++
		default:
			v.fail(at, "%s: the stream starts at seq %d: events 1..%d are missing", e.ID(), e.Seq, e.Seq-1)
		}
	} else {
		switch {
		case e.Seq == s.seq:
			v.fail(at, "%s: seq %d again", e.ID(), e.Seq)
			return
		case e.Seq < s.seq:
			v.fail(at, "%s: seq %d after seq %d: out of order", e.ID(), e.Seq, s.seq)
			return
		case e.Seq > s.seq+1:
			v.fail(at, "%s: seq %d after seq %d: events %d..%d are missing", e.ID(), e.Seq, s.seq, s.seq+1, e.Seq-1)
		}
	}
	want, err := e.ChainHash()
	switch {
	case err != nil:
		v.fail(at, "%s: %v", e.ID(), err)
	case want != e.Hash:
		v.fail(at, "%s: hash %s, but its fields and prev hash to %s: the event was changed", e.ID(), short(e.Hash), short(want))
	}
	switch {
	case e.Seq == 1 && e.Prev != Genesis:
		v.fail(at, "%s: the first event of a stream has prev %s, not the genesis", e.ID(), short(e.Prev))
	case s.seq > 0 && e.Seq == s.seq+1 && e.Prev != s.hash:
		v.fail(at, "%s: prev %s is not the hash %s of seq %d: the chain is broken", e.ID(), short(e.Prev), short(s.hash), s.seq)
	}
	if e.Seq > s.seq {
		s.seq, s.hash = e.Seq, e.Hash
	}
	s.hashes[e.Seq] = e.Hash
	v.call(at, s, &e)
}

// call checks what an event says of its call against the stream so far.
func (v *Verifier) call(at string, s *stream, e *Event) {
	switch e.Type {
	case canonical.AuditBegin:
		s.calls[e.ToolCallID] = &callSeen{requestDigest: e.RequestDigest, keyID: e.KeyID}
	case canonical.AuditComplete, canonical.AuditAbandon:
		if c := s.calls[e.ToolCallID]; c != nil {
			c.completed = true
		} else if !s.partial {
			// A call begun in another generation's stream: a completion
			// that found the run's state lost.
			s.calls[e.ToolCallID] = &callSeen{completed: true}
		}
	case canonical.AuditReplay:
		c := s.calls[e.ToolCallID]
		switch {
		case c == nil || !c.completed:
			if !s.partial {
				v.fail(at, "%s: a replay of %s, which no completion before it in the stream finished", e.ID(), e.ToolCallID)
			}
		case c.requestDigest == "" && c.keyID == "":
			v.report.Replays++ // begun in another stream: its digest is not here to compare
		case c.keyID == e.KeyID && c.requestDigest != e.RequestDigest:
			v.fail(at, "%s: a replay of %s with another request digest than its begin", e.ID(), e.ToolCallID)
		default:
			v.report.Replays++
		}
	}
}

// Checkpoint checks the next checkpoint of the export.
func (v *Verifier) Checkpoint(at string, cp Checkpoint) {
	v.report.Checkpoints++
	if v.opts.Verifiers != nil {
		if _, err := Open(cp.Note, v.opts.Verifiers); err != nil {
			v.fail(at, "checkpoint %d: %v", cp.N, err)
		}
	}
	switch {
	case v.lastCP == nil && cp.N != 1 && !v.opts.Partial:
		v.fail(at, "checkpoint %d is the first: checkpoints 1..%d are missing", cp.N, cp.N-1)
	case v.lastCP != nil && cp.N != v.lastCP.N+1:
		v.fail(at, "checkpoint %d after checkpoint %d", cp.N, v.lastCP.N)
	case v.lastCP != nil && cp.Prev != v.lastCP.Digest():
		v.fail(at, "checkpoint %d does not name checkpoint %d's digest", cp.N, v.lastCP.N)
	}
	if v.lastCP == nil {
		v.firstCP = cp.N
	}
	for _, h := range cp.Heads {
		s := v.streams[streamKey(h.RunID, h.Gen)]
		var got string
		if s != nil {
			got = s.hashes[h.Seq]
		}
		switch {
		case got == "":
			v.fail(at, "checkpoint %d names %s/%s/%d, which is not before it in the export", cp.N, h.RunID, h.Gen, h.Seq)
		case got != h.Hash:
			v.fail(at, "checkpoint %d names %s/%s/%d with hash %s, the export holds %s", cp.N, h.RunID, h.Gen, h.Seq,
				short(h.Hash), short(got))
		default:
			s.covered = max(s.covered, h.Seq)
		}
	}
	c := cp
	v.lastCP = &c
	v.cpText[cp.N] = cp.Text()
}

// Finish ends the verification and reports.
func (v *Verifier) Finish() VerifyReport {
	keys := make([]string, 0, len(v.streams))
	for k := range v.streams {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := v.streams[k]
		if s.covered < s.seq {
			from := max(s.covered+1, s.first)
			v.fail("end", "%s/%s: events %d..%d follow the last checkpoint that covers them: the export was cut, or is still being written",
				s.run, s.gen, from, s.seq)
		}
	}
	if l := v.opts.Latest; l != nil {
		switch {
		case v.lastCP == nil || v.lastCP.N < l.N:
			n := int64(0)
			if v.lastCP != nil {
				n = v.lastCP.N
			}
			v.fail("end", "the export ends at checkpoint %d, before the latest checkpoint %d kept apart: its tail was cut", n, l.N)
		case v.cpText[l.N] != "" && v.cpText[l.N] != l.Text() || v.cpText[l.N] == "" && !v.opts.Partial:
			v.fail("end", "checkpoint %d of the export differs from the one kept apart", l.N)
		}
	}
	v.report.Streams = len(v.streams)
	v.report.Signed = v.opts.Verifiers != nil
	v.report.Problems = append([]string(nil), v.problems...)
	return v.report
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}

// VerifyJSONL verifies an export written by a JSONL sink: a file, or a
// directory of files in order. A line that does not parse ends the
// verification there, as a problem of the report.
func VerifyJSONL(path string, opts VerifyOptions) (VerifyReport, error) {
	if _, err := os.Stat(path); err != nil {
		return VerifyReport{}, err
	}
	v := NewVerifier(opts)
	if err := ReadJSONL(path, func(at string, l Line) error {
		v.Line(at, l)
		return nil
	}); err != nil {
		v.Fail("read", "%v", err)
	}
	return v.Finish(), nil
}
