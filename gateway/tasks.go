package gateway

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

// Tasks. MCP 2025-11-25 let a client ask for a task (params.task on a
// tools/call of a tool listed with execution.taskSupport); the current
// revision moved tasks to the extension io.modelcontextprotocol/tasks, where
// the server decides. Either way a task is the call's canonical record: the
// gateway answers with the task once Begin has created the record, the call
// runs on, and tasks/get reads the record — from any gateway on the store,
// after a restart too. Its TTL is the record's, its result the projection a
// direct call returns, and a re-sent call with the same tool_call_id and
// request gets the same task (Begin never runs it twice).
const (
	// ExtensionTasks identifies MCP's tasks extension.
	ExtensionTasks = "io.modelcontextprotocol/tasks"
	// MetaTask is the _meta key under which the gateway's transports carry
	// a 2025-11-25 request's params.task (which the SDK does not read) to
	// the call; a client may send it there itself.
	MetaTask = "io.github.toolcanon/task"
	// DefaultTaskPollInterval is the pollInterval the gateway suggests.
	DefaultTaskPollInterval = time.Second

	metaRelatedTask = "io.modelcontextprotocol/related-task"

	methodTasksGet    = "tasks/get"
	methodTasksResult = "tasks/result"
	methodTasksCancel = "tasks/cancel"
	methodTasksUpdate = "tasks/update"
)

// Task statuses.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// taskForm is the revision whose shape a task takes.
type taskForm int

const (
	formNone   taskForm = iota
	formLegacy          // 2025-11-25: {task: {…, ttl, pollInterval}}, tasks/result
	formExt             // the extension: {resultType: "task", …, ttlMs, pollIntervalMs}
)

// tasks runs and answers the gateway's tasks.
type tasks struct {
	longRunning map[string]bool // agent-facing tool names answered with a task when the agent takes one

	mu      sync.Mutex
	running sync.WaitGroup
	cancel  map[*taskRun]context.CancelCauseFunc
	closed  bool
}

// taskRun is one task running in this process (not of size zero: each
// has its own address).
type taskRun struct{ _ byte }

// errGatewayClosing is the cause of a task the gateway stopped on Close.
var errGatewayClosing = errors.New("gateway: the gateway closed while the task ran")

// begunKey marks, in a task's context, the function its bound tool calls
// when the boundary runs it: the record exists then.
type begunKey struct{}

// begunTool is a bound tool that tells its task that the record exists.
type begunTool struct{ boundary.Tool }

// Call tells the task, if any, that the record exists, and calls the tool.
func (t begunTool) Call(ctx context.Context, input []byte) ([]byte, error) {
	if f, ok := ctx.Value(begunKey{}).(func()); ok {
		f()
	}
	return t.Tool.Call(ctx, input)
}

// taskParams are the params of tasks/get, tasks/result, tasks/cancel and
// tasks/update.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string          `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// rawResult is a result the gateway wrote itself.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

// MarshalJSON writes the result as written.
func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

func raw(v any) (*rawResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &rawResult{raw: b}, nil
}

// taskID is a task's id: the call's run and tool_call_id and the owner
// token of the invocation that began it (random, kept in the record), so
// that an id is unguessable; base64url, so that it is a header value
// (Mcp-Name). Whoever presents it must still be the run's principal.
func taskID(rec *canonical.Record) string {
	return "t1." + base64.RawURLEncoding.EncodeToString([]byte(rec.RunID+"\n"+rec.ToolCallID+"\n"+rec.Owner))
}

// parseTaskID reads a task id; ok is false for anything taskID does not
// write.
func parseTaskID(id string) (run, call, owner string, ok bool) {
	rest, found := strings.CutPrefix(id, "t1.")
	if !found || len(id) > 1024 {
		return "", "", "", false
	}
	if !base64URLOnly(rest) {
		return "", "", "", false // the decoder skips CR and LF: one string per id
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(rest) // and no stray bits
	if err != nil {
		return "", "", "", false
	}
	parts := strings.Split(string(b), "\n")
	if len(parts) != 3 || canonical.ValidateRunID(parts[0]) != nil || canonical.ValidateToolCallID(parts[1]) != nil || parts[2] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// taskKey is the name a task's cancel goes by (see cancels): its run and
// call, never the JSON-RPC id of the call that created it.
func taskKey(run, call string) string { return "task:" + run + "\x00" + call }

// formOf says whether a tools/call asks for a task, and in which form: the
// 2025-11-25 params.task (carried in _meta under MetaTask), or an agent of
// the extension calling a long-running tool.
func (t *tasks) formOf(req *mcp.CallToolRequest, bound func(string) bool) taskForm {
	if t == nil || req.Params == nil || !bound(req.Params.Name) {
		return formNone
	}
	if _, ok := req.Params.Meta[MetaTask]; ok && legacyClient(req) {
		return formLegacy // the current revision ignores params.task
	}
	if !t.longRunning[req.Params.Name] {
		return formNone
	}
	if caps := req.ClientCapabilities(); caps != nil {
		if _, ok := caps.Extensions[ExtensionTasks]; ok {
			return formExt
		}
	}
	return formNone
}

// taskMiddleware answers a tools/call that asks for a task, and adds the
// 2025-11-25 task declarations (the capability, each tool's taskSupport) to
// what an agent of that revision is told.
func (h *handler) taskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case methodCallTool:
			if r, ok := req.(*mcp.CallToolRequest); ok {
				if form := h.tasks.formOf(r, func(tool string) bool { _, ok := h.b.Definition(tool); return ok }); form != formNone {
					return h.callTask(ctx, r, form)
				}
			}
		case methodTasksGet, methodTasksResult, methodTasksCancel, methodTasksUpdate:
			ctx = context.WithValue(ctx, taskReqKey{}, req)
		case "initialize", methodListTools:
			res, err := next(ctx, method, req)
			if err != nil || !legacyClient(req) {
				return res, err
			}
			return declareTasks(method, res, func(tool string) bool { _, ok := h.b.Definition(tool); return ok })
		}
		return next(ctx, method, req)
	}
}

// taskReqKey carries a tasks/* request in its context, for its handler.
type taskReqKey struct{}

// legacyClient reports whether req's client speaks a revision before
// 2026-07-28, where tasks are declared in capabilities and per tool.
func legacyClient(req mcp.Request) bool {
	if v, ok := req.(interface{ ProtocolVersion() string }); ok {
		if p := v.ProtocolVersion(); p != "" {
			return p < "2026-07-28"
		}
	}
	if ir, ok := req.GetParams().(*mcp.InitializeParams); ok && ir != nil {
		return ir.ProtocolVersion < "2026-07-28"
	}
	return true
}

// declareTasks adds the 2025-11-25 tasks capability to an initialize
// result, and execution.taskSupport "optional" to every bound tool of a
// list: every call of one is a record, so any may be a task.
func declareTasks(method string, res mcp.Result, bound func(tool string) bool) (mcp.Result, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return res, nil
	}
	switch method {
	case "initialize":
		var caps map[string]json.RawMessage
		if json.Unmarshal(doc["capabilities"], &caps) != nil || caps == nil {
			return res, nil
		}
		caps["tasks"] = json.RawMessage(`{"cancel":{},"requests":{"tools":{"call":{}}}}`)
		doc["capabilities"], _ = json.Marshal(caps)
	default:
		var tools []map[string]json.RawMessage
		if json.Unmarshal(doc["tools"], &tools) != nil {
			return res, nil
		}
		for _, t := range tools {
			var name string
			if json.Unmarshal(t["name"], &name) == nil && bound(name) {
				t["execution"] = json.RawMessage(`{"taskSupport":"optional"}`)
			}
		}
		doc["tools"], _ = json.Marshal(tools)
	}
	return raw(doc)
}

// callTask runs a tools/call as a task: the answer is the task once the
// record exists (Begin), and the call runs on. A call refused before its
// record exists is answered as a direct call is (the extension), or with a
// JSON-RPC error naming the code (2025-11-25, whose client waits for a
// task). A call whose id has a record already gets that record's task when
// it is the same request of the same principal.
func (h *handler) callTask(ctx context.Context, req *mcp.CallToolRequest, form taskForm) (mcp.Result, error) {
	if p := h.opts.Propagator; p != nil {
		ctx = p.Extract(ctx, req.Params.Meta)
	}
	c := &Call{Tool: req.Params.Name}
	h.opts.Identity.read(req.Params.Meta, c)
	if extra := req.Extra; extra != nil {
		c.Header, c.Token = extra.Header, extra.TokenInfo
	}
	ctx = withCallToken(ctx, c.Token) // the policy reads an OAuth token's scopes
	run, err := h.opts.Runs.ResolveRun(ctx, c)
	if err != nil {
		return nil, h.rpcError(c, err)
	}
	start := time.Now()
	release, err := h.caps.acquire(run.Principal.Subject, run.ID, h.liveFor(run), start)
	if err != nil {
		return h.taskRefused(ctx, c, run, boundary.Refuse(c.ToolCallID, canonical.CodeOf(err), err), form, start)
	}
	// The call runs past its request: its context keeps the request's
	// values (trace context) but not its end; a tasks/cancel or the
	// gateway's Close end it.
	tctx, done, ok := h.tasks.start(context.WithoutCancel(ctx))
	if !ok {
		release()
		return h.taskRefused(ctx, c, run, boundary.Refuse(c.ToolCallID, canonical.CodeUpstreamUnavailable, errGatewayClosing), form, start)
	}
	begun := make(chan struct{})
	var once sync.Once
	tctx = context.WithValue(tctx, begunKey{}, func() { once.Do(func() { close(begun) }) })
	tctx, untrack := h.cancels.track(tctx, run.Principal.Subject, taskKey(run.ID, c.ToolCallID))
	finished := make(chan boundary.Result, 1)
	go func() {
		defer done()
		res := h.invoke(tctx, c, run, req.Params.Arguments, nil)
		untrack()
		release()
		h.logOutcome(tctx, c, run, res, start)
		finished <- res
	}()
	select {
	case <-begun:
		return h.taskAnswer(ctx, run, c.ToolCallID, form)
	case res := <-finished:
		select {
		case <-begun: // the tool ran and the call is over already
			return h.taskAnswer(ctx, run, c.ToolCallID, form)
		default:
		}
		if code := res.Code(); code == canonical.CodeToolCallInProgress || code == canonical.CodeDuplicateToolCall {
			if r, ok := h.sameTask(ctx, run, c, req.Params.Arguments, form); ok {
				return r, nil
			}
		}
		return h.taskRefused(ctx, c, run, res, form, time.Time{})
	}
}

// logOutcome logs a failed call and tells the observer, as call does.
func (h *handler) logOutcome(ctx context.Context, c *Call, run boundary.RunContext, res boundary.Result, start time.Time) {
	if res.Status() == canonical.StatusError {
		h.log.LogAttrs(ctx, slog.LevelWarn, "tool call refused or failed",
			slog.String("tool", c.Tool), slog.String("tool_call_id", res.ToolCallID()), slog.String("run_id", run.ID),
			slog.String("code", string(res.Code())), slog.Bool("executed", res.Executed()), slog.String("cause", causeText(res.Err())))
	}
	if h.opts.Observe != nil && !start.IsZero() {
		h.opts.Observe(ctx, c, res, time.Since(start))
	}
}

// taskRefused answers a task-asking call refused before its record
// existed.
func (h *handler) taskRefused(ctx context.Context, c *Call, run boundary.RunContext, res boundary.Result, form taskForm, start time.Time) (mcp.Result, error) {
	h.logOutcome(ctx, c, run, res, start)
	if form == formExt {
		return toolResult(res), nil
	}
	e := failure(res.Code())
	e.Data = json.RawMessage(res.AgentJSON())
	return nil, e
}

// start counts a task as running in this process; ok is false once the
// gateway closes.
func (t *tasks) start(ctx context.Context) (context.Context, func(), bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	me := &taskRun{}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		cancel(errGatewayClosing)
		return ctx, nil, false
	}
	if t.cancel == nil {
		t.cancel = map[*taskRun]context.CancelCauseFunc{}
	}
	t.cancel[me] = cancel
	t.running.Add(1)
	return ctx, func() {
		t.mu.Lock()
		delete(t.cancel, me)
		t.mu.Unlock()
		cancel(nil)
		t.running.Done()
	}, true
}

// taskDrain is how long Close lets running tasks finish before it cancels
// them.
const taskDrain = 5 * time.Second

// close lets the running tasks finish for taskDrain, then cancels the rest
// (their records end CANCELLED) and waits for them.
func (t *tasks) close() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	idle := make(chan struct{})
	go func() { t.running.Wait(); close(idle) }()
	select {
	case <-idle:
		return
	case <-time.After(taskDrain):
	}
	t.mu.Lock()
	for _, cancel := range t.cancel {
		cancel(errGatewayClosing)
	}
	t.mu.Unlock()
	<-idle
}

// record reads the task's record for principal p: the task must be one of
// p's runs and its id must carry the owner token the record holds.
func (h *handler) taskRecord(ctx context.Context, p registry.Principal, id string, opts canonical.ReadOptions) (*canonical.Record, error) {
	run, call, owner, ok := parseTaskID(id)
	if !ok {
		return nil, errNoTask
	}
	recs, err := h.b.Records(ctx, boundary.RunContext{ID: run, Principal: p}, []string{call}, opts)
	switch {
	case canonical.CodeOf(err) == canonical.CodeStoreUnavailable:
		return nil, failure(canonical.CodeStoreUnavailable)
	case err != nil || len(recs) != 1 || recs[0] == nil:
		// Another principal's run, or none: the task does not exist for p.
		return nil, errNoTask
	case subtle.ConstantTimeCompare([]byte(recs[0].Owner), []byte(owner)) != 1:
		return nil, errNoTask
	}
	return recs[0], nil
}

// errNoTask answers a task id that is malformed, unknown, expired, or not
// the caller's: all the same to the caller.
var errNoTask = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "toolcanon: no such task (unknown, expired, or not yours)"}

// taskAnswer is the answer to a task-creating call: the task as its record
// now stands.
func (h *handler) taskAnswer(ctx context.Context, run boundary.RunContext, call string, form taskForm) (mcp.Result, error) {
	recs, err := h.b.Records(ctx, run, []string{call}, canonical.ReadOptions{})
	if err != nil || len(recs) != 1 || recs[0] == nil {
		// The record was written, and cannot be read back now.
		return nil, failure(canonical.CodeStoreUnavailable)
	}
	return taskCreated(recs[0], form)
}

func taskCreated(rec *canonical.Record, form taskForm) (mcp.Result, error) {
	t := taskOf(rec, form)
	if form == formExt {
		t["resultType"] = "task"
		return raw(t)
	}
	return raw(map[string]any{"task": t})
}

// sameTask returns the task of the call's existing record when it is the
// same request (tool, input) of the same principal: a re-sent
// task-creating call gets the same task, and never runs twice.
func (h *handler) sameTask(ctx context.Context, run boundary.RunContext, c *Call, args json.RawMessage, form taskForm) (mcp.Result, bool) {
	recs, err := h.b.Records(ctx, run, []string{c.ToolCallID}, canonical.ReadOptions{Request: true})
	if err != nil || len(recs) != 1 || recs[0] == nil || recs[0].Tool != c.Tool {
		return nil, false
	}
	var stored struct {
		Tool    string          `json:"agent_tool"`
		Input   json.RawMessage `json:"input"`
		Subject string          `json:"subject"`
	}
	if json.Unmarshal(recs[0].Request, &stored) != nil {
		return nil, false
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	input, err := registry.Canonicalize(args)
	if err != nil || !bytes.Equal(input, stored.Input) || stored.Subject != run.Principal.Subject || stored.Tool != c.Tool {
		return nil, false
	}
	r, err := taskCreated(recs[0], form)
	return r, err == nil
}

// taskStatus is the status a record stands for, in form.
func taskStatus(rec *canonical.Record, form taskForm) string {
	switch {
	case rec.Status == canonical.StatusProjecting:
		return taskWorking
	case rec.Status == canonical.StatusReady:
		return taskCompleted
	case rec.Error == canonical.CodeCancelled:
		return taskCancelled
	case form == formLegacy:
		return taskFailed // 2025-11-25: a tool result with isError fails its task
	}
	return taskCompleted // the extension: a tool result with isError completes it
}

// taskOf is a task as the record stands, in form.
func taskOf(rec *canonical.Record, form taskForm) map[string]any {
	now := time.Now()
	ttl := (rec.TTL + now.Sub(rec.CreatedAt)).Round(time.Second).Milliseconds()
	t := map[string]any{
		"taskId":        taskID(rec),
		"status":        taskStatus(rec, form),
		"createdAt":     rec.CreatedAt.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt": rec.UpdatedAt.UTC().Format(time.RFC3339Nano),
	}
	if rec.Status == canonical.StatusError {
		t["statusMessage"] = string(rec.Error) + ": " + boundary.Hint(rec.Error)
	}
	if form == formExt {
		t["ttlMs"], t["pollIntervalMs"] = ttl, DefaultTaskPollInterval.Milliseconds()
		if rec.Status.Terminal() && t["status"] != taskCancelled {
			t["result"] = recordResult(rec)
		}
	} else {
		t["ttl"], t["pollInterval"] = ttl, DefaultTaskPollInterval.Milliseconds()
	}
	return t
}

// recordResult is what a direct call of the record's tool returned: the
// same projection, from the record.
func recordResult(rec *canonical.Record) *mcp.CallToolResult {
	if rec.Status == canonical.StatusReady && len(rec.Result) > 0 {
		return toolResultOf(canonical.StatusReady, rec.Result)
	}
	code := rec.Error
	if !code.Valid() {
		code = canonical.CodeExecutionFailed
	}
	return toolResult(boundary.Refuse(rec.ToolCallID, code, nil))
}

// taskPrincipal is the principal a tasks/* request for task id acts for,
// found as a call's is. A task is reached as its run is: the resolver,
// asked for the task's run on the caller's behalf, must give that run, as
// it must give a call the run the call names; a caller it binds to
// another run (a run token's holder, a run header naming another run)
// finds no task (errNoTask, with the request's form), exactly as for an
// id that names nothing.
func (h *handler) taskPrincipal(ctx context.Context, id string) (registry.Principal, taskForm, error) {
	req, _ := ctx.Value(taskReqKey{}).(mcp.Request)
	if req == nil {
		return registry.Principal{}, formNone, errUnauthenticated
	}
	c := &Call{RunID: "task", Meta: metaOf(req.GetParams())}
	if extra := req.GetExtra(); extra != nil {
		c.Header, c.Token = extra.Header, extra.TokenInfo
	}
	run, err := h.opts.Runs.ResolveRun(ctx, c)
	if err != nil {
		return registry.Principal{}, formNone, errUnauthenticated
	}
	form := formExt
	if legacyClient(req) {
		form = formLegacy
	}
	if taskRun, _, _, ok := parseTaskID(id); ok {
		c.RunID = taskRun
		bound, err := h.opts.Runs.ResolveRun(ctx, c)
		if err != nil || !sameRun(taskRun, bound) || bound.Principal.Subject != run.Principal.Subject {
			return registry.Principal{}, form, errNoTask
		}
	}
	return run.Principal, form, nil
}

// registerTaskMethods adds the tasks/* methods to the server.
func (h *handler) registerTaskMethods(s *mcp.Server) error {
	type handlerFunc = func(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (*rawResult, error)
	for method, f := range map[string]handlerFunc{
		methodTasksGet:    h.tasksGet,
		methodTasksResult: h.tasksResult,
		methodTasksCancel: h.tasksCancel,
		methodTasksUpdate: h.tasksUpdate,
	} {
		if err := mcp.AddReceivingCustomMethod(s, method, f); err != nil {
			return err
		}
	}
	return nil
}

func (h *handler) tasksGet(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*rawResult, error) {
	who, form, err := h.taskPrincipal(ctx, p.TaskID)
	if err != nil {
		return nil, err
	}
	rec, err := h.taskRecord(ctx, who, p.TaskID, canonical.ReadOptions{})
	if err != nil {
		return nil, err
	}
	t := taskOf(rec, form)
	if form == formExt {
		t["resultType"] = "complete"
	}
	return raw(t)
}

// Waiting for a task to end: how often its record is read, and how long
// past its lease a tasks/result waits for a reaper.
const (
	taskWaitPoll  = 100 * time.Millisecond
	taskWaitSlack = time.Minute
)

// waitTask reads the task's record until it is terminal, ctx ends, or
// until passes.
func (h *handler) waitTask(ctx context.Context, who registry.Principal, id string, until time.Time) (*canonical.Record, error) {
	pause := taskWaitPoll
	for {
		rec, err := h.taskRecord(ctx, who, id, canonical.ReadOptions{})
		if err != nil || rec.Status.Terminal() {
			return rec, err
		}
		if !until.IsZero() && time.Now().After(until) {
			return rec, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return rec, nil
		case <-t.C:
		}
		pause = min(2*pause, DefaultTaskPollInterval)
	}
}

// tasksResult (2025-11-25) waits until the task ends and returns what the
// call returned, with the related-task _meta.
func (h *handler) tasksResult(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*rawResult, error) {
	who, form, err := h.taskPrincipal(ctx, p.TaskID)
	if err != nil && err != errNoTask {
		return nil, err
	}
	if form == formExt {
		// The extension removed tasks/result: tasks/get carries the result.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "toolcanon: tasks/result is not a method of the tasks extension; tasks/get carries the result"}
	}
	if err != nil {
		return nil, err
	}
	rec, err := h.taskRecord(ctx, who, p.TaskID, canonical.ReadOptions{})
	if err != nil {
		return nil, err
	}
	if !rec.Status.Terminal() {
		if rec, err = h.waitTask(ctx, who, p.TaskID, rec.LeaseUntil.Add(taskWaitSlack)); err != nil {
			return nil, err
		}
		if !rec.Status.Terminal() {
			return nil, failure(canonical.CodeToolCallInProgress)
		}
	}
	res := recordResult(rec)
	res.Meta = mcp.Meta{metaRelatedTask: map[string]any{"taskId": p.TaskID}}
	return raw(res)
}

// taskCancelWait bounds how long a 2025-11-25 tasks/cancel waits for the
// cancelled call's record to end, so that its answer says cancelled.
const taskCancelWait = 10 * time.Second

// tasksCancel cancels the task's call wherever it runs (here, or through
// the cancel relay on the replica running it). 2025-11-25 answers with the
// task once its record ends (a finished task cannot be cancelled); the
// extension acknowledges at once.
func (h *handler) tasksCancel(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*rawResult, error) {
	who, form, err := h.taskPrincipal(ctx, p.TaskID)
	if err != nil {
		return nil, err
	}
	rec, err := h.taskRecord(ctx, who, p.TaskID, canonical.ReadOptions{})
	if err != nil {
		return nil, err
	}
	if rec.Status.Terminal() {
		if form == formLegacy {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "toolcanon: the task has ended and cannot be cancelled"}
		}
		return raw(map[string]any{"resultType": "complete"})
	}
	if !h.cancels.cancel(ctx, who.Subject, taskKey(rec.RunID, rec.ToolCallID)) {
		h.log.Info("a task's cancel found it running nowhere", slog.String("run_id", rec.RunID), slog.String("tool_call_id", rec.ToolCallID))
	}
	if form == formExt {
		return raw(map[string]any{"resultType": "complete"})
	}
	if rec, err = h.waitTask(ctx, who, p.TaskID, time.Now().Add(taskCancelWait)); err != nil {
		return nil, err
	}
	return raw(taskOf(rec, form))
}

// tasksUpdate acknowledges input for a task: no gateway task waits for
// any, so every key is one no request is outstanding for, which the
// extension says to ignore.
func (h *handler) tasksUpdate(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*rawResult, error) {
	who, _, err := h.taskPrincipal(ctx, p.TaskID)
	if err != nil {
		return nil, err
	}
	if _, err := h.taskRecord(ctx, who, p.TaskID, canonical.ReadOptions{}); err != nil {
		return nil, err
	}
	return raw(map[string]any{"resultType": "complete"})
}

// liftTask moves a tools/call's params.task, which the SDK does not read,
// into its _meta under MetaTask, where the call finds it. Anything else
// comes back unchanged; so does a message that holds no "task".
func liftTask(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"task"`)) {
		return msg
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || string(m["method"]) != `"tools/call"` {
		return msg
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(m["params"], &p) != nil || p["task"] == nil {
		return msg
	}
	meta := map[string]json.RawMessage{}
	if raw := p["_meta"]; len(raw) > 0 && string(raw) != "null" && json.Unmarshal(raw, &meta) != nil {
		return msg
	}
	meta[MetaTask] = p["task"]
	delete(p, "task")
	var err error
	if p["_meta"], err = marshalVerbatim(meta); err != nil {
		return msg
	}
	if m["params"], err = marshalVerbatim(p); err != nil {
		return msg
	}
	out, err := marshalVerbatim(m)
	if err != nil {
		return msg
	}
	return out
}

// marshalVerbatim encodes v as json.Marshal does but without escaping <, >
// and &: a raw member the gateway only moves keeps the agent's bytes, and
// what an operator reads stays as written.
func marshalVerbatim(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
