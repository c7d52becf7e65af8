package projectors_test

import (
	"testing"

	"github.com/buger/jsonparser"

	"github.com/toolcanon/toolcanon/projectors"
)

// entryFields is what the query-log projection reads from each entry.
type entryFields struct {
	n              int
	ts, level, msg int // total bytes seen, so that no walk can skip the work
}

// walkOwn reads the entries of a log response with the package's walker,
// as the query-log projector does: one pass that checks the response
// strictly and reads the entries as it passes them. It reports -1 entries
// for an invalid response.
func walkOwn(raw []byte) entryFields {
	var f entryFields
	var at [1]int
	if !projectors.WalkValid(raw, []string{"entries"}, at[:], "entries", f.member, f.end) {
		return entryFields{n: -1}
	}
	return f
}

// walkUnchecked reads the same entries without the check, as a
// projector does after Valid: it finds the array, then reads it.
func walkUnchecked(raw []byte) entryFields {
	var f entryFields
	projectors.EachObjectMember(raw, projectors.Locate(raw, "entries"), f.member, f.end)
	return f
}

func (f *entryFields) end(bool) bool { f.n++; return true }

func (f *entryFields) member(k, v []byte) {
	switch {
	case projectors.KeyEquals(k, "timestamp"):
		f.ts += len(v)
	case projectors.KeyEquals(k, "level"):
		f.level += len(v)
	case projectors.KeyEquals(k, "message"):
		f.msg += len(v)
	}
}

var entryPaths = [][]string{{"timestamp"}, {"level"}, {"message"}}

// walkJSONParser reads the same fields with github.com/buger/jsonparser.
func walkJSONParser(raw []byte) entryFields {
	var f entryFields
	_, _ = jsonparser.ArrayEach(raw, func(v []byte, _ jsonparser.ValueType, _ int, _ error) {
		f.n++
		jsonparser.EachKey(v, func(idx int, val []byte, _ jsonparser.ValueType, _ error) {
			switch idx {
			case 0:
				f.ts += len(val) + 2
			case 1:
				f.level += len(val) + 2
			case 2:
				f.msg += len(val) + 2
			}
		}, entryPaths...)
	}, "entries")
	return f
}

// TestWalkersAgree checks that the walkers read the same entries, and
// that the checking walk refuses what Valid refuses.
func TestWalkersAgree(t *testing.T) {
	for _, size := range []int{1 << 10, 64 << 10} {
		raw := makeLogs(5, size)
		a, b, c := walkOwn(raw), walkJSONParser(raw), walkUnchecked(raw)
		if a != b || a != c || a.n <= 0 {
			t.Fatalf("%d bytes: own %+v, jsonparser %+v, unchecked %+v", len(raw), a, b, c)
		}
		bad := append(raw[:len(raw)-1:len(raw)-1], ',', '}')
		if projectors.Valid(bad) || walkOwn(bad).n != -1 {
			t.Fatalf("%d bytes: a trailing comma is accepted", len(raw))
		}
	}
}

// BenchmarkEntryWalk compares the walkers on a 1 MiB log response: own
// checks the response as it reads it; unchecked and jsonparser do not,
// and need strict validation (projectors.Valid, measured on its own)
// before them, since jsonparser does not reject malformed input.
func BenchmarkEntryWalk(b *testing.B) {
	raw := makeLogs(1, 1<<20)
	for _, w := range []struct {
		name string
		f    func([]byte) entryFields
	}{{"own", walkOwn}, {"unchecked", walkUnchecked}, {"jsonparser", walkJSONParser}, {"strict_validation", func(raw []byte) entryFields {
		if !projectors.Valid(raw) {
			b.Fatal("invalid")
		}
		return entryFields{}
	}}} {
		b.Run(w.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				w.f(raw)
			}
		})
	}
}
