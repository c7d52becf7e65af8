package ui

import (
	"context"
	"fmt"
	"html/template"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/progress"
)

// runRow reads one run of the runs list: its Usage and, when it has calls
// in flight, the passed ones among them.
func (s *server) runRow(ctx context.Context, ri canonical.RunInfo, now time.Time) runRow {
	row := runRow{RunID: ri.RunID, Principal: shortTag(ri.Principal), Created: ri.CreatedAt}
	u, err := s.store.Usage(ctx, ri.RunID)
	if err != nil {
		row.Err, row.State = canonical.CodeOf(err), "unknown"
		return row
	}
	row.fill(u)
	row.LastActivity = s.lastActivity(ctx, ri.RunID, u.Completed)
	if u.InFlight > 0 {
		ids, err := s.store.ExpiredLeases(ctx, ri.RunID, expiredShown)
		if err != nil {
			row.Err = canonical.CodeOf(err)
		}
		row.Expired, row.ExpiredMax = len(ids), len(ids) == expiredShown
	}
	return row
}

// lastActivity is when the run's last completed call completed: the
// index's last id (CompletedRange) and its record without payloads
// (GetMany), two round trips; zero when there is none or a read fails.
func (s *server) lastActivity(ctx context.Context, runID string, completed int64) time.Time {
	if s.browser == nil || completed == 0 {
		return time.Time{}
	}
	ids, _, err := s.browser.CompletedRange(ctx, runID, int(completed-1), 1)
	if err != nil || len(ids) == 0 {
		return time.Time{}
	}
	recs, err := s.store.GetMany(ctx, runID, ids, canonical.ReadOptions{})
	if err != nil || recs[0] == nil {
		return time.Time{}
	}
	return recs[0].UpdatedAt
}

// fill copies a run's usage into its row.
func (row *runRow) fill(u canonical.RunUsage) {
	row.State = runState(u)
	row.Calls, row.CallsLimit = u.Calls, u.Limits.MaxCallsPerRun
	row.Bytes, row.BytesLimit = u.Bytes, u.Limits.MaxRunBytes
	row.InFlight, row.TTL = u.InFlight, u.TTL
	row.Near = near(u.Calls, u.Limits.MaxCallsPerRun) || near(u.Bytes, u.Limits.MaxRunBytes)
}

func near(used, limit int64) bool { return limit > 0 && float64(used) >= nearBudget*float64(limit) }

// runState names a run's state as the list shows it.
func runState(u canonical.RunUsage) string {
	switch {
	case u.Lost:
		return "lost"
	case u.Closed:
		return "closed"
	}
	return "active"
}

// shortTag shortens a PrincipalTag for display.
func shortTag(tag string) string {
	if len(tag) > 12 {
		return tag[:12]
	}
	return tag
}

// callRow is one call on a run's page.
type callRow struct {
	Pos        int // place in the completion index; -1 for a call in flight
	ToolCallID string
	Tool       string
	Status     canonical.Status
	Evidence   canonical.Evidence
	Code       canonical.Code
	RequestLen int
	RawLen     int
	ResultLen  int
	Created    time.Time
	Duration   time.Duration // begin to completion; to now while in flight
	LeaseUntil time.Time
	Expired    bool // in flight with its lease passed: Abandon may close it
	Gone       bool // the record has expired
	// Fact is what progress.Project makes of a completed call's index
	// entry: "fact", or the reason it is left out; "" in flight.
	Fact string
}

// runView is a run's page.
type runView struct {
	RunID     string
	Usage     canonical.RunUsage
	Row       runRow
	Protocol  canonical.ProtocolState
	Release   string // what the protocol state alone decides of the release
	InFlight  []callRow
	InFlightN int
	// InFrom is the position of the page's first call in flight, in lease
	// order; InPrev and InNext link to the neighbouring pages of them.
	InFrom, InLast int
	InPrev, InNext template.URL
	Calls          []callRow
	From, Last     int // positions of the page's first and last completed call
	Completed      int
	// Facts and Excluded count the page's completed calls that progress
	// facts are made of and those left out, by reason.
	Facts      int
	Excluded   map[progress.Reason]int
	Prev, Next template.URL // links to the neighbouring pages; "" when none
	First, End template.URL // links to the first and the last page; "" on them
	Timeline   timeline
	Outcomes   []outcomeBar
	NoBrowser  bool
	// Reapable says that some lease of the run has passed, on this page
	// of calls in flight or not: the reap action abandons them all.
	Reapable bool
}

// parseRunQuery reads ?run=ID[&from=N][&inflight=M]: the page of the
// completion index from position N, and of the calls in flight from M.
func parseRunQuery(q url.Values) (run string, from, inFrom int, err error) {
	for k, v := range q {
		if len(v) != 1 || (k != "run" && k != "from" && k != "inflight") {
			return "", 0, 0, canonical.Errorf(CodeBadRequest, "unexpected parameter %q", k)
		}
	}
	run = q.Get("run")
	if err := canonical.ValidateRunID(run); err != nil {
		return "", 0, 0, canonical.Errorf(CodeBadRequest, "run must be 1-%d bytes of [A-Za-z0-9_.-]", canonical.MaxIDLen)
	}
	position := func(name string) (int, error) {
		f := q.Get(name)
		if f == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > canonical.MaxIndexRead || strconv.Itoa(n) != f {
			return 0, canonical.Errorf(CodeBadRequest, "%s must be a position in 0..%d", name, canonical.MaxIndexRead)
		}
		return n, nil
	}
	if from, err = position("from"); err != nil {
		return "", 0, 0, err
	}
	if inFrom, err = position("inflight"); err != nil {
		return "", 0, 0, err
	}
	return run, from, inFrom, nil
}

// runView reads a run: its usage, one page of its calls in flight, one
// page of its completion index, and their timeline and outcome codes.
func (s *server) runView(ctx context.Context, q url.Values) (string, any, error) {
	runID, from, inFrom, err := parseRunQuery(q)
	if err != nil {
		return "", nil, err
	}
	u, err := s.store.Usage(ctx, runID)
	if err != nil {
		return "", nil, err
	}
	now := s.opts.Now()
	v := runView{RunID: runID, Usage: u, Protocol: u.Protocol, From: from, InFrom: inFrom, Release: releaseNote(u.Protocol)}
	v.Row.fill(u)
	size := s.opts.PageSize
	var leases []canonical.Lease
	var ids []string
	if s.browser != nil {
		if leases, v.InFlightN, err = s.browser.InFlight(ctx, runID, inFrom, size); err == nil {
			ids, v.Completed, err = s.browser.CompletedRange(ctx, runID, from, size)
		}
	} else {
		v.NoBrowser = true
		ids, v.Completed, err = s.store.Completed(ctx, runID, min(from+size, canonical.MaxIndexRead))
		ids = ids[min(from, len(ids)):]
	}
	if err != nil {
		return "", nil, err
	}
	want := make([]string, 0, len(leases)+len(ids))
	for _, l := range leases {
		want = append(want, l.ToolCallID)
	}
	want = append(want, ids...)
	var recs []*canonical.Record
	if len(want) > 0 {
		if recs, err = s.store.GetMany(ctx, runID, want, canonical.ReadOptions{}); err != nil {
			return "", nil, err
		}
	}
	for i, l := range leases {
		c := rowOf(recs[i], l.ToolCallID, -1, now)
		c.LeaseUntil, c.Expired = l.Until, !l.Until.After(now)
		v.InFlight = append(v.InFlight, c)
		if c.Expired {
			v.Row.Expired++
		}
	}
	// Leases come earliest first, so the first page of calls in flight
	// shows a passed lease whenever the run has one; a later page, or a
	// store that lists none, asks the store for the earliest one.
	v.Reapable = v.Row.Expired > 0
	if !v.Reapable && u.InFlight > 0 && (inFrom > 0 || v.NoBrowser) {
		passed, err := s.store.ExpiredLeases(ctx, runID, 1)
		if err != nil {
			return "", nil, err
		}
		v.Reapable = len(passed) > 0
	}
	for i, id := range ids {
		rec := recs[len(leases)+i]
		c := rowOf(rec, id, from+i, now)
		if reason, ok := progress.Classify(rec, runID, id); ok {
			c.Fact = "fact"
			v.Facts++
		} else {
			c.Fact = string(reason)
			if v.Excluded == nil {
				v.Excluded = map[progress.Reason]int{}
			}
			v.Excluded[reason]++
		}
		v.Calls = append(v.Calls, c)
	}
	page := func(at int) template.URL {
		q := url.Values{"run": {runID}, "from": {strconv.Itoa(at)}}
		if inFrom > 0 {
			q.Set("inflight", strconv.Itoa(inFrom))
		}
		return template.URL("/run?" + q.Encode())
	}
	inPage := func(at int) template.URL {
		q := url.Values{"run": {runID}, "inflight": {strconv.Itoa(at)}}
		if from > 0 {
			q.Set("from", strconv.Itoa(from))
		}
		return template.URL("/run?" + q.Encode())
	}
	v.InLast = inFrom + len(leases) - 1
	if inFrom > 0 {
		v.InPrev = inPage(max(inFrom-size, 0))
	}
	if inFrom+len(leases) < v.InFlightN {
		v.InNext = inPage(inFrom + len(leases))
	}
	if from > 0 {
		v.Prev, v.First = page(max(from-size, 0)), page(0)
	}
	if from+len(ids) < v.Completed {
		v.Next, v.End = page(from+len(ids)), page(max(v.Completed-size, 0))
	}
	v.Last = from + len(ids) - 1
	all := append(slices.Clone(v.Calls), v.InFlight...)
	v.Timeline = drawTimeline(all, now)
	v.Outcomes = outcomes(all)
	return "Run " + runID, v, nil
}

// rowOf is the row of a record read for id (nil: gone).
func rowOf(rec *canonical.Record, id string, pos int, now time.Time) callRow {
	if rec == nil {
		return callRow{Pos: pos, ToolCallID: id, Gone: true}
	}
	c := callRow{Pos: pos, ToolCallID: id, Tool: rec.Tool, Status: rec.Status, Evidence: rec.Evidence, Code: rec.Error,
		RequestLen: max(rec.RequestLen, len(rec.Request)), RawLen: max(rec.RawLen, len(rec.Raw)), ResultLen: len(rec.Result),
		Created: rec.CreatedAt, LeaseUntil: rec.LeaseUntil}
	if rec.Status == canonical.StatusProjecting {
		c.Duration = now.Sub(rec.CreatedAt)
	} else {
		c.Duration = rec.UpdatedAt.Sub(rec.CreatedAt)
	}
	return c
}

// releaseNote says what the run's protocol state decides of its release.
// The final report is not stored, so the rest of the decision is not known
// here.
func releaseNote(p canonical.ProtocolState) string {
	if p.Violated {
		return "WITHHELD: the run's invalid progress reports reached the threshold (PROTOCOL_VIOLATED); no claim is released"
	}
	if p.Pending > 0 {
		return fmt.Sprintf("open: %d invalid report(s) since the last valid one; a valid report repairs them", p.Pending)
	}
	return "open: the protocol is not violated; the decision depends on the final report, which the store does not hold"
}

// callView is a call's page.
type callView struct {
	RunID  string
	Rec    canonical.Record
	Row    callRow
	Result string
	// RawShown and RequestShown are redacted and capped; set only with
	// Options.ShowRaw.
	RawShown, RequestShown string
	RawCut, RequestCut     bool
}

// parseCallQuery reads ?run=ID&call=ID.
func parseCallQuery(q url.Values) (run, call string, err error) {
	for k, v := range q {
		if len(v) != 1 || (k != "run" && k != "call") {
			return "", "", canonical.Errorf(CodeBadRequest, "unexpected parameter %q", k)
		}
	}
	run, call = q.Get("run"), q.Get("call")
	if canonical.ValidateRunID(run) != nil || canonical.ValidateToolCallID(call) != nil {
		return "", "", canonical.Errorf(CodeBadRequest, "run and call must each be 1-%d bytes of [A-Za-z0-9_.-]", canonical.MaxIDLen)
	}
	return run, call, nil
}

// callView reads one call: one GetMany, with the raw response and request
// only when they are shown.
func (s *server) callView(ctx context.Context, q url.Values) (string, any, error) {
	runID, callID, err := parseCallQuery(q)
	if err != nil {
		return "", nil, err
	}
	recs, err := s.store.GetMany(ctx, runID, []string{callID}, canonical.ReadOptions{Raw: s.opts.ShowRaw, Request: s.opts.ShowRaw})
	if err == nil && recs[0] == nil {
		err = canonical.Errorf(canonical.CodeNotFound, "no record of call %s in run %s", callID, runID)
	}
	if err != nil {
		return "", nil, err
	}
	rec := *recs[0]
	rec.Owner = "" // never shown, not even to a template
	now := s.opts.Now()
	v := callView{RunID: runID, Rec: rec, Row: rowOf(&rec, callID, -1, now)}
	v.Row.Expired = rec.Status == canonical.StatusProjecting && !rec.LeaseUntil.After(now)
	v.Result, _ = capped(rec.Result, s.opts.RawCap)
	if s.opts.ShowRaw {
		v.RawShown, v.RawCut = redacted(rec.Raw, s.opts.RawCap)
		v.RequestShown, v.RequestCut = redacted(rec.Request, s.opts.RawCap)
	}
	return "Call " + callID, v, nil
}
