package canonical

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// MaxRunsPage is the most runs one ListRuns page asks for.
const MaxRunsPage = 1000

// Browser is implemented by stores an operator can browse without knowing a
// run id: list the runs, and read a slice of a run's completion index and
// of its calls in flight. Every method only reads, and each reads a bounded
// amount (see each store for its cost per call).
type Browser interface {
	// ListRuns returns a page of about max (1..MaxRunsPage) runs, from
	// cursor ("" for the first page), and the cursor of the next page
	// ("" after the last). Runs come in the store's order, not by time; a
	// run created or expired during a walk may be listed or not. A cursor
	// the store did not write is INVALID_ARGUMENT. A store that can tell a
	// lost run (no state, while its live marker lives) lists it too, with
	// no principal and no creation time.
	ListRuns(ctx context.Context, cursor string, max int) (RunPage, error)
	// CompletedRange returns up to max (1..MaxIndexRead) ids of the run's
	// completion index from position start (>= 0), and the index's length.
	CompletedRange(ctx context.Context, runID string, start, max int) (ids []string, length int, err error)
	// InFlight returns up to max (1..MaxIndexRead) of the run's PROJECTING
	// calls, earliest lease first, from position start (>= 0) in that
	// order, and how many there are.
	InFlight(ctx context.Context, runID string, start, max int) (calls []Lease, count int, err error)
}

// RunInfo is one run as a listing finds it.
type RunInfo struct {
	RunID     string
	Principal string    // the owner's PrincipalTag; "" when the run has none
	CreatedAt time.Time // server time the run's state was created; zero for a lost run
}

// RunPage is one page of Browser.ListRuns.
type RunPage struct {
	Runs  []RunInfo
	Next  string // cursor of the next page; "" after the last
	Steps int    // bounded steps the page took: SCANs on Redis, shards in memory
}

// Lease is one call in flight and when its lease passes.
type Lease struct {
	ToolCallID string
	Until      time.Time
}

// FormatCursor writes a listing cursor: a part (a server of a cluster, a
// shard in memory) and a position in it.
func FormatCursor(part int, pos uint64) string {
	return strconv.Itoa(part) + "-" + strconv.FormatUint(pos, 10)
}

// ParseCursor reads what FormatCursor wrote, with part in 0..parts-1; ""
// is the start (0, 0). Anything else is INVALID_ARGUMENT.
func ParseCursor(c string, parts int) (part int, pos uint64, err error) {
	if c == "" {
		return 0, 0, nil
	}
	p, q, ok := strings.Cut(c, "-")
	bad := Errorf(CodeInvalidArgument, "invalid run listing cursor")
	if !ok || len(p) == 0 || len(p) > 4 || len(q) == 0 || len(q) > 20 || !digits(p) || !digits(q) {
		return 0, 0, bad
	}
	n, err1 := strconv.Atoi(p)
	v, err2 := strconv.ParseUint(q, 10, 64)
	if err1 != nil || err2 != nil || n >= parts || FormatCursor(n, v) != c {
		return 0, 0, bad
	}
	return n, v, nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ValidateRunsPage checks the size of a ListRuns page: 1..MaxRunsPage.
func ValidateRunsPage(max int) error {
	if max < 1 || max > MaxRunsPage {
		return Errorf(CodeInvalidArgument, "max must be in 1..%d (got %d)", MaxRunsPage, max)
	}
	return nil
}
