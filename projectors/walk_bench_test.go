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
// as the query-log projector does: one pass over the top-level members
// that reads the entries as it passes them.
func walkOwn(raw []byte) entryFields {
	var f entryFields
	var at [1]int
	member := func(k, v []byte) {
		switch {
		case projectors.KeyEquals(k, "timestamp"):
			f.ts += len(v)
		case projectors.KeyEquals(k, "level"):
			f.level += len(v)
		case projectors.KeyEquals(k, "message"):
			f.msg += len(v)
		}
	}
	end := func(bool) bool { f.n++; return true }
	projectors.LocateManyVisit(raw, []string{"entries"}, at[:], "entries", func(start int) int {
		return projectors.EachObjectMemberEnd(raw, start, member, end)
	})
	return f
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

// TestWalkersAgree checks that both walkers read the same entries.
func TestWalkersAgree(t *testing.T) {
	for _, size := range []int{1 << 10, 64 << 10} {
		raw := makeLogs(5, size)
		a, b := walkOwn(raw), walkJSONParser(raw)
		if a != b || a.n == 0 {
			t.Fatalf("%d bytes: own %+v, jsonparser %+v", len(raw), a, b)
		}
	}
}

// BenchmarkEntryWalk compares the walkers on a 1 MiB log response. Neither
// validates: strict validation (projectors.Valid, measured on its own) is
// needed with either, since jsonparser does not reject malformed input.
func BenchmarkEntryWalk(b *testing.B) {
	raw := makeLogs(1, 1<<20)
	for _, w := range []struct {
		name string
		f    func([]byte) entryFields
	}{{"own", walkOwn}, {"jsonparser", walkJSONParser}, {"strict_validation", func(raw []byte) entryFields {
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
