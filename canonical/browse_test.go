package canonical_test

import (
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

// FuzzParseCursor holds ParseCursor to the cursors FormatCursor writes:
// anything else is INVALID_ARGUMENT, so a listing never starts from a place
// no page named.
func FuzzParseCursor(f *testing.F) {
	for _, c := range []string{"", "0-0", "2-184467", "3-1", "0-", "-0", "01-2", "0-18446744073709551616", "1-2-3"} {
		f.Add(c, 3)
	}
	f.Fuzz(func(t *testing.T, c string, parts int) {
		part, pos, err := canonical.ParseCursor(c, parts)
		switch {
		case err != nil:
			if canonical.CodeOf(err) != canonical.CodeInvalidArgument {
				t.Fatalf("%q: %v", c, err)
			}
		case c == "":
			if part != 0 || pos != 0 {
				t.Fatalf("the start is %d-%d", part, pos)
			}
		case part < 0 || part >= parts || canonical.FormatCursor(part, pos) != c:
			t.Fatalf("%q read as %d-%d of %d parts", c, part, pos, parts)
		}
	})
}
