package ui

import (
	"cmp"
	"context"
	"html/template"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// expiredShown bounds the expired leases counted per run on the runs list;
// a run with more shows this many and a "+".
const expiredShown = 100

// readParallel is how many runs' reads one runs page has in flight.
const readParallel = 16

// nearBudget is the share of a limit at which a run is near its budget.
const nearBudget = 0.8

// runsFilter is the runs list's query.
type runsFilter struct {
	Cursor    string
	State     string // "", "active", "closed" or "lost"
	Principal string // a principal's name: matched by its PrincipalTag
	Stuck     bool   // only runs with a passed lease
	Near      bool   // only runs near a budget
}

// parseRunsFilter reads the runs list's query, refusing anything malformed
// with UI_BAD_REQUEST.
func parseRunsFilter(q url.Values) (runsFilter, error) {
	f := runsFilter{Cursor: q.Get("cursor"), State: q.Get("state"), Principal: q.Get("principal")}
	for k, v := range q {
		if len(v) != 1 {
			return f, canonical.Errorf(CodeBadRequest, "parameter %q is given %d times", k, len(v))
		}
		switch k {
		case "cursor", "state", "principal", "stuck", "near":
		default:
			return f, canonical.Errorf(CodeBadRequest, "unknown parameter %q", k)
		}
	}
	switch f.State {
	case "", "active", "closed", "lost":
	default:
		return f, canonical.Errorf(CodeBadRequest, "state must be active, closed or lost")
	}
	if len(f.Cursor) > 64 {
		return f, canonical.Errorf(CodeBadRequest, "cursor is too long")
	}
	if err := canonical.ValidatePrincipal(f.Principal); err != nil {
		return f, canonical.Errorf(CodeBadRequest, "principal must be at most %d bytes of UTF-8", canonical.MaxPrincipalLen)
	}
	var err error
	if f.Stuck, err = flag(q, "stuck"); err != nil {
		return f, err
	}
	f.Near, err = flag(q, "near")
	return f, err
}

// flag reads a checkbox: absent, "" or "1".
func flag(q url.Values, name string) (bool, error) {
	switch q.Get(name) {
	case "":
		return false, nil
	case "1", "on":
		return true, nil
	}
	return false, canonical.Errorf(CodeBadRequest, "%s must be 1 or absent", name)
}

// query writes f back as a query string, with cursor c.
func (f runsFilter) query(c string) string {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("cursor", c)
	set("state", f.State)
	set("principal", f.Principal)
	if f.Stuck {
		q.Set("stuck", "1")
	}
	if f.Near {
		q.Set("near", "1")
	}
	return q.Encode()
}

// runRow is one run on the runs list.
type runRow struct {
	RunID      string
	Principal  string // the PrincipalTag's first 12 hex digits
	State      string
	Calls      int64
	CallsLimit int64
	Bytes      int64
	BytesLimit int64
	InFlight   int64
	Expired    int
	ExpiredMax bool // Expired is a floor: there may be more
	TTL        time.Duration
	Created    time.Time
	// LastActivity is when the run's last completed call completed (zero:
	// none yet).
	LastActivity time.Time
	Near         bool
	Err          canonical.Code // the run's reads failed with this code
}

// runsList is the runs list.
type runsList struct {
	Filter    runsFilter
	Rows      []runRow
	Scanned   int          // runs the page found before filtering
	Steps     int          // the listing's bounded steps
	Next      template.URL // link to the next page; "" after the last
	First     bool         // this is the first page
	NoListing bool         // the store cannot list runs
	Audit     *auditLine   // the audit export's lag; nil when the store has none
}

// auditLine is the audit export's state on the runs page: how far behind
// it is, as the last export pass left it (canonical.AuditStatus).
type auditLine struct {
	Never    bool          // no pass has run
	Lag      time.Duration // the oldest pending event's age, else the time since the last pass
	Pending  int64         // events the last pass left pending
	LastPass time.Time
	Warn     bool // the lag is past AuditLagWarning
	Err      canonical.Code
}

// AuditLagWarning is the export lag past which the runs page warns.
const AuditLagWarning = 10 * time.Minute

// auditLine reads the export's status, when the store has an audit stream.
func (s *server) auditLine(ctx context.Context, now time.Time) *auditLine {
	src, ok := s.store.(canonical.AuditSource)
	if !ok {
		return nil
	}
	st, err := src.AuditStatus(ctx)
	if err != nil {
		if canonical.CodeOf(err) == canonical.CodeInvalidArgument {
			return nil // audit is off
		}
		return &auditLine{Err: canonical.CodeOf(err)}
	}
	lag, ok := st.Lag(now)
	if !ok {
		// No pass has run: worth a line only where this store records
		// events (a store opened to read may not).
		if e, ok := s.store.(interface{ AuditEnabled() bool }); !ok || !e.AuditEnabled() {
			return nil
		}
		return &auditLine{Never: true}
	}
	return &auditLine{Lag: lag, Pending: st.Pending, LastPass: st.LastPass, Warn: lag > AuditLagWarning}
}

// runsView reads the runs list: one ListRuns page, newest first within
// the page, and each run's usage.
func (s *server) runsView(ctx context.Context, q url.Values) (string, any, error) {
	f, err := parseRunsFilter(q)
	if err != nil {
		return "", nil, err
	}
	v := runsList{Filter: f, First: f.Cursor == "", Rows: []runRow{}, Audit: s.auditLine(ctx, s.opts.Now())}
	if s.browser == nil {
		v.NoListing = true
		return "Runs", v, nil
	}
	pg, err := s.browser.ListRuns(ctx, f.Cursor, s.opts.PageSize)
	if err != nil {
		return "", nil, err
	}
	v.Scanned, v.Steps = len(pg.Runs), pg.Steps
	if pg.Next != "" {
		// Built from url.Values: every part is escaped.
		v.Next = template.URL("/?" + f.query(pg.Next))
	}
	tag := ""
	if f.Principal != "" {
		tag = canonical.PrincipalTag(f.Principal)
	}
	infos := pg.Runs[:0:0]
	for _, ri := range pg.Runs {
		if tag == "" || ri.Principal == tag {
			infos = append(infos, ri)
		}
	}
	rows := make([]runRow, len(infos))
	var wg sync.WaitGroup
	sem := make(chan struct{}, readParallel)
	now := s.opts.Now()
	for i, ri := range infos {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rows[i] = s.runRow(ctx, ri, now)
		}()
	}
	wg.Wait()
	for _, row := range rows {
		if f.keeps(row) {
			v.Rows = append(v.Rows, row)
		}
	}
	slices.SortStableFunc(v.Rows, func(a, b runRow) int {
		return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.RunID, b.RunID))
	})
	return "Runs", v, nil
}

// keeps reports whether row passes the filter.
func (f runsFilter) keeps(row runRow) bool {
	switch {
	case f.State != "" && row.State != f.State:
		return false
	case f.Stuck && row.Expired == 0:
		return false
	case f.Near && !row.Near:
		return false
	}
	return true
}
