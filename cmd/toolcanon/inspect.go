package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// inspectView is what inspect prints, and what --json encodes.
type inspectView struct {
	Run     runView      `json:"run"`
	Index   []string     `json:"completion_index"`
	Records []recordView `json:"records"`
}

type runView struct {
	RunID     string           `json:"run_id"`
	Settings  settingsView     `json:"settings"`
	Calls     int64            `json:"calls"`
	ToolCalls map[string]int64 `json:"tool_calls"`
	Completed int64            `json:"completed"`
	InFlight  int64            `json:"in_flight"`
	Bytes     int64            `json:"bytes"`
	Closed    bool             `json:"closed"`
	Lost      bool             `json:"lost"`
	TTLMs     int64            `json:"ttl_ms"`
	Protocol  protocolView     `json:"protocol"`
}

// settingsView is the run's limits, as its first Begin fixed them (all zero
// before any Begin, or after the run's state was lost).
type settingsView struct {
	MaxCallsPerRun  int64 `json:"max_calls_per_run"`
	MaxCallsPerTool int64 `json:"max_calls_per_tool"`
	MaxRunBytes     int64 `json:"max_run_bytes"`
	MaxRecordBytes  int64 `json:"max_record_bytes"`
	MaxResultBytes  int64 `json:"max_result_bytes"`
}

type protocolView struct {
	Reports    int64 `json:"reports"`
	Pending    int64 `json:"pending"`
	Violations int64 `json:"violations"`
	Violated   bool  `json:"violated"`
}

// recordView names a record's fields as the record's export does
// (raw_response, agent_result, evidence_status).
type recordView struct {
	ToolCallID   string          `json:"tool_call_id"`
	Tool         string          `json:"tool"`
	Status       string          `json:"status"`
	Evidence     string          `json:"evidence_status"`
	Error        string          `json:"error,omitempty"`
	Owner        string          `json:"owner,omitempty"`
	RequestSHA   string          `json:"request_sha256,omitempty"`
	RequestBytes int             `json:"request_bytes"`
	RawBytes     int             `json:"raw_response_bytes"`
	ResultBytes  int             `json:"agent_result_bytes"`
	TTLMs        int64           `json:"ttl_ms"`
	Created      string          `json:"created"`
	Updated      string          `json:"updated"`
	LeaseUntil   string          `json:"lease_until,omitempty"`
	Result       json.RawMessage `json:"agent_result,omitempty"`
	Request      json.RawMessage `json:"request,omitempty"`
	Raw          string          `json:"raw_response,omitempty"`
}

func inspectCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var rf redisFlags
	rf.register(fs)
	runID := fs.String("run", "", "run id (required)")
	call := fs.String("call", "", "show only this tool_call_id (also one not yet completed)")
	raw := fs.Bool("raw", false, "include request and raw payloads (harness-only data)")
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	principal := fs.String("principal", "", "read on behalf of this principal: refused (exit 4) unless the run is theirs")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	onBehalf := false
	fs.Visit(func(f *flag.Flag) { onBehalf = onBehalf || f.Name == "principal" })
	if err := rf.check(); err != nil {
		fmt.Fprintf(stderr, "toolcanon inspect: %v\n", err)
		return exitUsage
	}
	if !rf.given() || *runID == "" {
		fmt.Fprintln(stderr, "toolcanon inspect: --redis and --run are required")
		return exitUsage
	}
	if err := canonical.ValidateRunID(*runID); err != nil {
		fmt.Fprintf(stderr, "toolcanon inspect: invalid --run %q: use 1-128 characters of [A-Za-z0-9_.-]\n", *runID)
		return exitUsage
	}
	if *call != "" && canonical.ValidateToolCallID(*call) != nil {
		fmt.Fprintf(stderr, "toolcanon inspect: invalid --call %q: use 1-128 characters of [A-Za-z0-9_.-]\n", *call)
		return exitUsage
	}
	store, err := rf.open()
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon inspect: %v\n", err)
		return codeExit(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var on *string
	if onBehalf {
		on = principal
	}
	view, err := collect(ctx, store, *runID, *call, *raw, on)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon inspect: %v\n", err)
		return codeExit(err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(view); err != nil {
			return exitFailure
		}
		return exitOK
	}
	printView(stdout, view, *raw)
	return exitOK
}

func codeExit(err error) int {
	switch canonical.CodeOf(err) {
	case canonical.CodeNotFound:
		return exitNotFound
	case canonical.CodeInvalidArgument, canonical.CodeInvalidRunID, canonical.CodeInvalidToolCallID:
		return exitUsage
	case canonical.CodeInvalidTransition, canonical.CodeRunForbidden:
		return exitRefused
	}
	return exitFailure
}

// maxInspect bounds the calls one inspect reads.
const maxInspect = 10000

// inspectStore is what inspect reads: a Store, and its reads on a
// principal's behalf.
type inspectStore interface {
	canonical.Store
	canonical.OwnedReader
}

// collect reads a run: usage, index (at most maxInspect entries), records.
// With principal, it reads on the principal's behalf: each read checks the
// run's owner in the read itself (the first one refuses another
// principal's run before anything of it is shown), and only records of the
// generation of the run's state the index read found are read, so that a
// run that expires and is begun again by someone else between two reads
// never shows the newcomer's records.
func collect(ctx context.Context, store inspectStore, runID, call string, withRaw bool, principal *string) (*inspectView, error) {
	var u canonical.RunUsage
	var err error
	if principal != nil {
		u, err = store.ReadUsage(ctx, runID, *principal)
	} else {
		u, err = store.Usage(ctx, runID)
	}
	if err != nil {
		if canonical.CodeOf(err) == canonical.CodeNotFound {
			return nil, canonical.Errorf(canonical.CodeNotFound, "run %s is unknown (never begun, or expired)", runID)
		}
		return nil, err
	}
	var idx []string
	var length int
	var gen string
	if principal != nil {
		ri, err := store.ReadIndex(ctx, runID, *principal, maxInspect)
		if err != nil {
			return nil, err
		}
		idx, length, gen = ri.IDs, ri.Length, ri.Gen
	} else if idx, length, err = store.Completed(ctx, runID, maxInspect); err != nil {
		return nil, err
	}
	if length > len(idx) {
		return nil, canonical.Errorf(canonical.CodeBudgetExhausted,
			"run %s has %d completed calls, more than inspect shows (%d): use --call", runID, length, maxInspect)
	}
	ids := idx
	if call != "" {
		ids = []string{call}
	}
	opts := canonical.ReadOptions{Request: withRaw, Raw: withRaw}
	var recs []*canonical.Record
	if principal != nil {
		recs, err = store.ReadRecords(ctx, runID, *principal, gen, ids, opts)
	} else {
		recs, err = store.GetMany(ctx, runID, ids, opts)
	}
	if err != nil {
		return nil, err
	}
	v := &inspectView{
		Run: runView{RunID: runID, Calls: u.Calls, ToolCalls: u.ToolCalls, Completed: u.Completed, InFlight: u.InFlight,
			Bytes: u.Bytes, Closed: u.Closed, Lost: u.Lost, TTLMs: u.TTL.Milliseconds(), Protocol: protocolView{
				Reports: u.Protocol.Reports, Pending: u.Protocol.Pending, Violations: u.Protocol.Violations, Violated: u.Protocol.Violated},
			Settings: settingsView{
				MaxCallsPerRun: u.Limits.MaxCallsPerRun, MaxCallsPerTool: u.Limits.MaxCallsPerTool, MaxRunBytes: u.Limits.MaxRunBytes,
				MaxRecordBytes: u.Limits.MaxRecordBytes, MaxResultBytes: u.Limits.MaxResultBytes,
			}},
		Index:   idx,
		Records: []recordView{},
	}
	for i, r := range recs {
		if r == nil {
			if call != "" {
				return nil, canonical.Errorf(canonical.CodeNotFound, "no record %s in run %s (never begun, or expired)", call, runID)
			}
			v.Records = append(v.Records, recordView{ToolCallID: ids[i], Status: "EXPIRED"})
			continue
		}
		rv := recordView{
			ToolCallID: r.ToolCallID, Tool: r.Tool, Status: string(r.Status), Evidence: string(r.Evidence),
			Error: string(r.Error), Owner: r.Owner, RequestSHA: r.RequestDigest, RequestBytes: r.RequestLen, RawBytes: r.RawLen, ResultBytes: len(r.Result),
			TTLMs: r.TTL.Milliseconds(), Created: r.CreatedAt.UTC().Format(time.RFC3339Nano),
			Updated: r.UpdatedAt.UTC().Format(time.RFC3339Nano), Result: jsonOrNil(r.Result),
		}
		if r.Status == canonical.StatusProjecting && !r.LeaseUntil.IsZero() {
			rv.LeaseUntil = r.LeaseUntil.UTC().Format(time.RFC3339Nano)
		}
		if withRaw {
			rv.Request, rv.Raw = jsonOrNil(r.Request), string(r.Raw)
		}
		v.Records = append(v.Records, rv)
	}
	return v, nil
}

func jsonOrNil(b []byte) json.RawMessage {
	if len(b) == 0 || !strictjson.Valid(b) {
		return nil
	}
	return json.RawMessage(b)
}

func printView(w io.Writer, v *inspectView, withRaw bool) {
	r := v.Run
	state := "open"
	if r.Closed {
		state = "closed"
	}
	if r.Lost {
		state = "closed: its state was lost (evicted or deleted), its budgets can no longer be kept"
	}
	fmt.Fprintf(w, "run %s  (%s, state expires in %s)\n", r.RunID, state, time.Duration(r.TTLMs)*time.Millisecond)
	if st := r.Settings; st != (settingsView{}) {
		fmt.Fprintf(w, "  settings: calls per run %d, per tool %d; bytes per run %d, per record %d, per result %d\n",
			st.MaxCallsPerRun, st.MaxCallsPerTool, st.MaxRunBytes, st.MaxRecordBytes, st.MaxResultBytes)
	} else {
		fmt.Fprintln(w, "  settings: none (no call has begun, or the run's state was lost)")
	}
	fmt.Fprintf(w, "  calls begun %d, completed %d, in flight %d, bytes stored %d\n", r.Calls, r.Completed, r.InFlight, r.Bytes)
	if r.Protocol.Reports > 0 {
		fmt.Fprintf(w, "  progress reports %d, pending invalid %d, violations %d, violated %v\n",
			r.Protocol.Reports, r.Protocol.Pending, r.Protocol.Violations, r.Protocol.Violated)
	}
	fmt.Fprintf(w, "  completion index: %s\n", strings.Join(v.Index, ", "))
	for _, rec := range v.Records {
		if rec.Status == "EXPIRED" {
			fmt.Fprintf(w, "\n  %s  record expired\n", rec.ToolCallID)
			continue
		}
		ev := rec.Evidence
		if rec.Error != "" {
			ev += "/" + rec.Error
		}
		fmt.Fprintf(w, "\n  %s  %s  %s %s\n", rec.ToolCallID, rec.Tool, rec.Status, ev)
		fmt.Fprintf(w, "    sizes: request %d B, raw %d B, result %d B; TTL left %s\n",
			rec.RequestBytes, rec.RawBytes, rec.ResultBytes, time.Duration(rec.TTLMs)*time.Millisecond)
		if rec.Owner != "" {
			fmt.Fprintf(w, "    owner %s; request sha256 %s\n", rec.Owner, rec.RequestSHA)
		}
		if rec.LeaseUntil != "" {
			fmt.Fprintf(w, "    lease until %s (after it, toolcanon reap may abandon the call)\n", rec.LeaseUntil)
		}
		if len(rec.Result) > 0 {
			fmt.Fprintf(w, "    agent result: %s\n", rec.Result)
		}
		if withRaw {
			fmt.Fprintf(w, "    request: %s\n    raw: %s\n", rec.Request, rec.Raw)
		}
	}
}
