package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/observe"
	"github.com/toolcanon/toolcanon/progress"
	"github.com/toolcanon/toolcanon/projectors/querylog"
	"github.com/toolcanon/toolcanon/projectors/rag"
	"github.com/toolcanon/toolcanon/registry"
)

// The demo's tools, as the registry knows them.
var (
	kbSearchDef = registry.Definition{
		Name: "kb.search", Version: "1.2.0", Description: "Search the support knowledge base.",
		InputSchema: []byte(`{"type":"object","additionalProperties":false,"required":["query"],
			"properties":{"query":{"type":"string","minLength":1,"maxLength":256}}}`),
		Effect: registry.EffectRead, Risk: registry.RiskLow, Timeout: 5 * time.Second,
		Permissions: []string{"kb.read"},
	}
	logsQueryDef = registry.Definition{
		Name: "logs.query", Version: "2.0.1", Description: "Query a service's recent logs.",
		InputSchema: []byte(`{"type":"object","additionalProperties":false,"required":["topic","query"],
			"properties":{"topic":{"type":"string","minLength":1,"maxLength":128},
				"query":{"type":"string","minLength":1,"maxLength":512},
				"lookback_minutes":{"type":"integer","minimum":1,"maximum":10080}}}`),
		Effect: registry.EffectRead, Risk: registry.RiskMedium, Timeout: 5 * time.Second,
		Permissions: []string{"logs.read"},
	}
	ticketUpdateDef = registry.Definition{
		Name: "ticket.update", Version: "1.0.0", Description: "Change a support ticket.",
		InputSchema: []byte(`{"type":"object","additionalProperties":false,"required":["id"],
			"properties":{"id":{"type":"string","minLength":1,"maxLength":64}}}`),
		Effect: registry.EffectWrite, Risk: registry.RiskHigh, Timeout: 5 * time.Second,
	}
)

// demoSecrets are planted in the tools' raw responses. None may reach what an
// agent sees; the demo's test checks its whole output for each.
var demoSecrets = []string{
	"hunter2-Pr0d", "AKIAIOSFODNN7EXAMPLE", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZW1vIn0.c2lnbmF0dXJl",
	"sk_live_51HdemoDEMOdemo0000", "10.20.30.41", "alice.smith+ops@example.com", "S3cretDbPass",
	"payments-api-7d9f8b6c5d-x2k4p", "INTERNAL-CONTEXT-PACK",
}

// knowledgeBase answers like the legacy knowledge service: more than an
// agent may see (context pack, traces, scores, full bodies).
func knowledgeBase(_ context.Context, input []byte) ([]byte, error) {
	var in struct{ Query string }
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	q := strings.ToLower(in.Query)
	switch {
	case strings.Contains(q, "refund"):
		return []byte(`{"success":true,"message":"ok","query":` + quote(in.Query) + `,"domain":"billing",
 "context_pack":"INTERNAL-CONTEXT-PACK: every body concatenated",
 "retrieval_trace":[{"stage":"bm25","document_id":"refunds-101","score":12.3}],
 "blocks":[
  {"source":"kb","document_id":"refunds-101","title":"Refund approval",
   "excerpt":"Refunds above 500 EUR need a second approver; smaller refunds are approved by the first agent.",
   "content":"full body, never shown","score":0.91,"hit_reason":"bm25+rerank"},
  {"source":"kb","document_id":"refunds-101","title":"Refund approval (copy)","excerpt":"A duplicate block of the same document.","score":0.55},
  {"source":"kb","document_id":"refunds-204","title":"Refund windows",
   "excerpt":"Card refunds are accepted within 30 days of purchase.","score":0.77}]}`), nil
	case strings.Contains(q, "everything"):
		// A response far over the record limit: refused whole, never truncated.
		var b strings.Builder
		b.WriteString(`{"success":true,"blocks":[`)
		for i := 0; i < 12000; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"source":"kb","document_id":"doc-%d","excerpt":"%s"}`, i, strings.Repeat("x", 100))
		}
		b.WriteString(`]}`)
		return []byte(b.String()), nil
	}
	return []byte(`{"success":true,"message":"no match","query":` + quote(in.Query) + `,"blocks":[]}`), nil
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// logSource is the Mock log source, with log lines full of secrets.
func logSource(now time.Time) *querylog.Mock {
	at := func(min int) time.Time { return now.Add(time.Duration(-min) * time.Minute) }
	e := func(min int, level, msg string) querylog.MockEntry {
		return querylog.MockEntry{Topic: "payments", Timestamp: at(min), Level: level, Service: "payments-api",
			Message: msg, Instance: "payments-api-7d9f8b6c5d-x2k4p", Metrics: map[string]float64{"latency_ms": 3004}}
	}
	return &querylog.Mock{Now: func() time.Time { return now }, Entries: []querylog.MockEntry{
		e(50, "ERROR", "payment timeout after 3000ms calling ledger at 10.20.30.41:5432 for order 81723"),
		e(41, "ERROR", "payment timeout after 3002ms calling ledger at 10.20.30.41:5432 for order 81731"),
		e(33, "WARN", "retrying ledger connection postgres://ledger:S3cretDbPass@10.20.30.41:5432/ledger"),
		e(30, "ERROR", "payment timeout after 2998ms calling ledger at 10.20.30.41:5432 for order 81760"),
		e(22, "ERROR", "auth failed for alice.smith+ops@example.com password=hunter2-Pr0d token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZW1vIn0.c2lnbmF0dXJl"),
		e(20, "ERROR", "stripe call failed with key sk_live_51HdemoDEMOdemo0000 and aws key AKIAIOSFODNN7EXAMPLE"),
		e(12, "INFO", "payment accepted for order 81799 in 212ms"),
	}}
}

// logTool searches src; each query it runs goes to queries, so that the
// demo can show what a tool receives for a handle.
func logTool(src *querylog.Mock, queries chan<- string) boundary.ToolFunc {
	return func(ctx context.Context, input []byte) ([]byte, error) {
		req, err := querylog.ParseRequest(input)
		if err != nil {
			return nil, err
		}
		select {
		case queries <- req.Query:
		default:
		}
		return src.Search(ctx, req)
	}
}

// allow grants everything to the demo's principal, under one policy fence.
var allow = registry.PolicyFunc(func(context.Context, string, registry.Principal, string) (registry.Decision, error) {
	return registry.Decision{Verdict: registry.VerdictAllow, Fence: registry.Fence{ProjectVersion: "7", RoleBindingVersion: "3"}}, nil
})

type demoCall struct {
	title string
	env   boundary.Envelope
}

func demoCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var rf redisFlags
	rf.register(fs)
	showRaw := fs.Bool("raw", false, "also print the raw tool responses kept in the store (harness-only data, secrets included)")
	showTrace := fs.Bool("trace", false, "also print the run's OpenTelemetry span tree (kept in memory): phases, store scripts, durations, codes")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if err := rf.check(); err != nil {
		fmt.Fprintf(stderr, "toolcanon demo: %v\n", err)
		return exitUsage
	}
	var store canonical.Store = memstore.New()
	storeName := "in-memory store (embedded default)"
	runID := "demo-run"
	dbSystem := "memory"
	if rf.given() {
		rs, err := rf.open()
		if err != nil {
			fmt.Fprintf(stderr, "toolcanon demo: %v\n", err)
			return codeExit(err)
		}
		defer rs.Close()
		store, storeName, dbSystem = rs, "Redis at "+rf.spec.String(), "redis"
		runID = "demo-run-" + canonical.NewOwner()[:8] // each demo on a shared Redis gets its own run
	}
	var tr *tracing
	if *showTrace {
		var err error
		if tr, err = newTracing(dbSystem); err != nil {
			fmt.Fprintf(stderr, "toolcanon demo: %v\n", err)
			return exitFailure
		}
		defer tr.close()
	}
	if err := runDemo(context.Background(), stdout, store, storeName, runID, *showRaw, tr); err != nil {
		fmt.Fprintf(stderr, "toolcanon demo: %v\n", err)
		return codeExit(err)
	}
	return exitOK
}

// runDemo runs the scripted calls on store. With tr, the boundary and its
// store report to OpenTelemetry and the span tree is printed at the end;
// the demo's own reads of the records stay out of it.
func runDemo(ctx context.Context, w io.Writer, store canonical.Store, storeName, runID string, showRaw bool, tr *tracing) error {
	reg, err := registry.New(kbSearchDef, logsQueryDef, ticketUpdateDef)
	if err != nil {
		return err
	}
	ragProj, err := rag.New(rag.DefaultConfig())
	if err != nil {
		return err
	}
	logProj, err := querylog.New(querylog.DefaultConfig())
	if err != nil {
		return err
	}
	runStore := store // the store the run goes through: observed under --trace
	queries := make(chan string, 8)
	opts := []boundary.Option{
		boundary.Bind("search_docs", "kb.search", "1.2.0", boundary.ToolFunc(knowledgeBase), ragProj),
		boundary.Bind("query_logs", "logs.query", "2.0.1", logTool(logSource(time.Now()), queries), logProj),
		boundary.Bind("update_ticket", "ticket.update", "1.0.0",
			boundary.ToolFunc(func(context.Context, []byte) ([]byte, error) { return []byte(`{}`), nil }), ragProj),
	}
	if tr != nil {
		runStore = observe.Store(store, tr.obs)
		opts = append(opts, boundary.WithObserver(tr.obs))
	}
	b, err := boundary.New(runStore, reg, allow, opts...)
	if err != nil {
		return err
	}
	run := boundary.RunContext{
		ID: runID, Project: "support-prod",
		Principal: registry.Principal{Subject: "agent:support-triage", ExpiresAt: time.Now().Add(time.Hour)},
		Deadline:  time.Now().Add(2 * time.Minute), Active: true, TTL: 30 * time.Minute,
		Limits: canonical.Limits{MaxCallsPerRun: 10, MaxCallsPerTool: 5, MaxRecordBytes: 1 << 20, MaxResultBytes: 16 << 10},
	}
	fmt.Fprintf(w, "toolcanon demo: run %s on the %s\n", runID, storeName)
	fmt.Fprintf(w, "tools: %s; limits: %d calls per run, %d per tool, %d B per record, %d B per agent result\n",
		strings.Join(b.Tools(), ", "), run.Limits.MaxCallsPerRun, run.Limits.MaxCallsPerTool, run.Limits.MaxRecordBytes, run.Limits.MaxResultBytes)

	env := func(id, tool, input string) boundary.Envelope {
		return boundary.Envelope{ToolCallID: id, RunID: runID, Tool: tool, Input: []byte(input)}
	}
	// Three calls the agent made in one turn, run in parallel.
	parallel := []demoCall{
		{"search the knowledge base (evidence found)", env("call_kb_1", "search_docs", `{"query":"refund approval rules"}`)},
		{"query the payment logs (a log full of secrets)", env("call_logs_1", "query_logs", `{"topic":"payments","query":"*","lookback_minutes":60}`)},
		{"search for something the knowledge base lacks", env("call_kb_2", "search_docs", `{"query":"quantum ledger sharding"}`)},
	}
	results := make([]boundary.Result, len(parallel))
	var wg sync.WaitGroup
	for i, c := range parallel {
		wg.Add(1)
		go func(i int, c demoCall) {
			defer wg.Done()
			results[i] = b.Invoke(ctx, run, c.env)
		}(i, c)
	}
	wg.Wait()
	step := 0
	for i, c := range parallel {
		step++
		if err := show(ctx, w, store, step, c, results[i], showRaw, "in parallel"); err != nil {
			return err
		}
	}
	// The agent saw the ledger's address as a handle of the run; it passes
	// the handle back, and the log tool (the group the value came from)
	// searches for the address itself.
	if h := firstHandle(results[1].AgentJSON(), canonical.KindIP); h != "" {
		for len(queries) > 0 {
			<-queries
		}
		step++
		c := demoCall{"the agent passes back a handle it saw (the ledger's address)",
			env("call_logs_2", "query_logs", `{"topic":"payments","query":"`+h+`","lookback_minutes":60}`)}
		res := b.Invoke(ctx, run, c.env)
		if err := show(ctx, w, store, step, c, res, showRaw, ""); err != nil {
			return err
		}
		select {
		case q := <-queries:
			fmt.Fprintf(w, "   tool got:   the address behind %s (%d bytes, not the handle: %v); the record keeps the handle\n",
				h, len(q), !strings.Contains(q, h))
		default:
		}
	}
	sequential := []demoCall{
		{"the framework reuses an id", env("call_kb_1", "search_docs", `{"query":"refund approval rules"}`)},
		{"an envelope from another run", boundary.Envelope{ToolCallID: "call_x_1", RunID: "other-run", Tool: "search_docs", Input: []byte(`{"query":"refunds"}`)}},
		{"a tool that returns far too much", env("call_kb_3", "search_docs", `{"query":"dump everything"}`)},
		{"input that breaks the schema", env("call_kb_4", "search_docs", `{"query":"refunds","limit":500}`)},
		{"a tool that writes", env("call_tk_1", "update_ticket", `{"id":"T-1"}`)},
		{"an unsafe tool_call_id", env("call 5; DROP", "search_docs", `{"query":"refunds"}`)},
	}
	for _, c := range sequential {
		step++
		if err := show(ctx, w, store, step, c, b.Invoke(ctx, run, c.env), showRaw, ""); err != nil {
			return err
		}
	}
	if err := b.CloseRun(ctx, run); err != nil {
		return err
	}
	step++
	late := demoCall{"a call after the run was closed", env("call_kb_9", "search_docs", `{"query":"refunds"}`)}
	if err := show(ctx, w, store, step, late, b.Invoke(ctx, run, late.env), showRaw, ""); err != nil {
		return err
	}
	if err := endOfRun(ctx, w, runStore, run); err != nil {
		return err
	}
	if tr != nil {
		return tr.write(w)
	}
	return nil
}

// firstHandle returns the first handle of kind in an agent result, or "".
func firstHandle(agent []byte, kind canonical.Kind) string {
	for b := agent; len(b) > 0; {
		off, n := canonical.IndexHandle(b)
		if off < 0 {
			return ""
		}
		if k, _, _, _ := canonical.ParseHandle(b[off:]); k == kind {
			return string(b[off : off+n])
		}
		b = b[off+n:]
	}
	return ""
}

func show(ctx context.Context, w io.Writer, store canonical.Store, step int, c demoCall, res boundary.Result, showRaw bool, note string) error {
	if note != "" {
		note = " (" + note + ")"
	}
	fmt.Fprintf(w, "\n%d. %s%s\n   %s %s(%s)\n", step, c.title, note, c.env.ToolCallID, c.env.Tool, c.env.Input)
	fmt.Fprintf(w, "   agent saw:  %s\n", res.AgentJSON())
	ran := "tool did not run"
	if res.Executed() {
		ran = "tool ran once"
	}
	if canonical.ValidateToolCallID(c.env.ToolCallID) != nil || c.env.RunID != "" && canonical.ValidateRunID(c.env.RunID) != nil {
		fmt.Fprintf(w, "   store:      nothing written (%s)\n", ran)
		return nil
	}
	rec, err := store.Get(ctx, c.env.RunID, c.env.ToolCallID)
	switch canonical.CodeOf(err) {
	case "":
	case canonical.CodeNotFound:
		fmt.Fprintf(w, "   store:      no record (%s)\n", ran)
		return nil
	default:
		return err
	}
	state := string(rec.Status) + " " + string(rec.Evidence)
	if rec.Error != "" {
		state += "/" + string(rec.Error)
	}
	fmt.Fprintf(w, "   store:      %s; request %d B, raw %d B, result %d B; TTL left %s (%s)\n",
		state, rec.RequestLen, rec.RawLen, len(rec.Result), rec.TTL.Round(time.Minute), ran)
	if showRaw && len(rec.Raw) > 0 {
		raw := string(rec.Raw)
		if len(raw) > 400 {
			raw = raw[:400] + "…"
		}
		fmt.Fprintf(w, "   raw (harness only): %s\n", raw)
	}
	return nil
}

// endOfRun projects the run's facts, checks the agent's progress reports and
// decides what may be released.
func endOfRun(ctx context.Context, w io.Writer, store canonical.Store, run boundary.RunContext) error {
	facts, err := progress.Project(ctx, store, run.ID, progress.Options{MaxSummaryBytes: 120, Principal: run.Principal.Subject})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nend of run: %d observed facts, %d excluded\n", len(facts.Facts), len(facts.Excluded))
	for _, f := range facts.Facts {
		fmt.Fprintf(w, "   fact     %-12s %-12s %s\n", f.ToolCallID, f.Tool, f.Evidence)
	}
	for _, x := range facts.Excluded {
		fmt.Fprintf(w, "   excluded %-12s %s\n", x.ToolCallID, x.Reason)
	}
	observer, ok := store.(canonical.ProgressObserver)
	if !ok {
		return fmt.Errorf("the demo's store %T does not count progress reports", store)
	}
	opts := progress.ProtocolOptions{Threshold: 3}
	first := `{"claims":[
	 {"text":"Refunds above 500 EUR need a second approver.","kind":"positive","cites":["call_kb_1"]},
	 {"text":"The full refund catalogue was retrieved.","kind":"positive","cites":["call_kb_3"]}]}`
	obs, err := progress.Observe(ctx, observer, facts, []byte(first), opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nprogress report 1: valid=%v %s\n   hint: %s\n", obs.Valid, obs.Code, oneLine(obs.Hint))
	repaired := `{"claims":[
	 {"text":"Refunds above 500 EUR need a second approver.","kind":"positive","cites":["call_kb_1"]},
	 {"text":"Payments time out calling the ledger database.","kind":"positive","cites":["call_logs_1"]},
	 {"text":"The knowledge base has nothing on ledger sharding.","kind":"negative","cites":["call_kb_2"]}]}`
	obs, err = progress.Observe(ctx, observer, facts, []byte(repaired), opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "progress report 2: valid=%v; protocol: %d reports, %d violations, violated=%v\n",
		obs.Valid, obs.State.Reports, obs.State.Violations, obs.State.Violated)
	d := progress.Release(facts, obs.Report, obs.State)
	fmt.Fprintf(w, "\nrelease decision: %s\n", d.Outcome)
	for _, c := range d.Claims {
		fmt.Fprintf(w, "   %-11s %q cites %s\n", c.Verdict, c.Text, strings.Join(c.Cites, ", "))
	}
	return nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
