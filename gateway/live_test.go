package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
)

// observed keeps what the gateway's Observe hook saw, by tool_call_id.
type observed struct {
	mu  sync.Mutex
	res map[string]boundary.Result
}

func (o *observed) hook(_ context.Context, _ *gateway.Call, res boundary.Result, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.res == nil {
		o.res = map[string]boundary.Result{}
	}
	o.res[res.ToolCallID()] = res
}

func (o *observed) get(id string) (boundary.Result, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.res[id]
	return r, ok
}

// liveGateway is a gateway opened in process over cfg, with a go-sdk
// client joined to it in memory.
type liveGateway struct {
	g     *gateway.Gateway
	store canonical.Store
	obs   *observed
	log   *syncBuffer
}

func openLive(t *testing.T, cfg configDoc, opts gateway.OpenOptions) *liveGateway {
	t.Helper()
	return openLiveOn(t, cfg, memstore.New(), opts)
}

// openLiveOn is openLive over store.
func openLiveOn(t *testing.T, cfg configDoc, store canonical.Store, opts gateway.OpenOptions) *liveGateway {
	t.Helper()
	c, err := gateway.LoadConfig(cfg.write(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	lg := &liveGateway{store: store, obs: &observed{}, log: &syncBuffer{}}
	opts.Observe = lg.obs.hook
	opts.Logger = slog.New(slog.NewTextHandler(lg.log, nil))
	opts.NoReaper = true
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if lg.g, err = gateway.Open(ctx, c, lg.store, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lg.g.Close() })
	return lg
}

// agent joins a go-sdk client with the given options to the gateway's
// server in memory.
func (lg *liveGateway) agent(t *testing.T, copts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	return connectWith(t, lg.g.Server(), copts, sopts)
}

func (lg *liveGateway) record(t *testing.T, run, id string) canonical.Record {
	t.Helper()
	rec, err := lg.store.Get(context.Background(), agentRun(run), id)
	if err != nil {
		t.Fatalf("record %s/%s: %v", run, id, err)
	}
	return rec
}

// An upstream that cannot be started or reached is UPSTREAM_UNAVAILABLE,
// with executed=false and a hint that says nothing ran; the record keeps
// the call, so its id stays spent (one record per id).
func TestUnreachableUpstreamIsUpstreamUnavailable(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]map[string]any{
		"missing program": {"command": []string{filepath.Join(dir, "no-such-server")}},
		"exits at once":   {"command": []string{"/bin/false"}},
		"closed port":     {"url": fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t))},
	}
	for name, up := range cases {
		t.Run(name, func(t *testing.T) {
			lg := openLive(t, baseConfig(t, up, "echo"), gateway.OpenOptions{})
			cs := lg.agent(t, nil, nil)
			ctx := context.Background()
			o := mustCall(ctx, t, cs, "echo", "call_u1", "run-u", map[string]any{"text": "hi"})
			if o.code != string(canonical.CodeUpstreamUnavailable) {
				t.Fatalf("unreachable upstream: %s", o.text)
			}
			if hint, _ := o.obj["hint"].(string); hint != boundary.Hint(canonical.CodeUpstreamUnavailable) {
				t.Fatalf("hint %q", hint)
			}
			res, ok := lg.obs.get("call_u1")
			if !ok || res.Executed() {
				t.Fatalf("observed %+v (seen %v): want executed=false", res, ok)
			}
			if rec := lg.record(t, "run-u", "call_u1"); rec.Status != canonical.StatusError || rec.Error != canonical.CodeUpstreamUnavailable {
				t.Fatalf("record %s/%s", rec.Status, rec.Error)
			}
			if o := mustCall(ctx, t, cs, "echo", "call_u1", "run-u", map[string]any{"text": "hi"}); o.code != string(canonical.CodeDuplicateToolCall) {
				t.Fatalf("the same id again: %s", o.text)
			}
		})
	}
}

// liveTools are the test upstream's tools these tests expose.
var liveTools = []string{"echo", "wait", "progress", "media", "chatty", "note", "sample", "elicit"}

// liveConfig exposes liveTools of the test upstream as a command logging
// to logPath.
func liveConfig(t *testing.T, logPath string) configDoc {
	return baseConfig(t, stdioUpstream(t, logPath, ""), liveTools...)
}

// cancelMidCall starts a wait call with the agent's context, cancels it
// once the upstream runs it, and returns what the call returned.
func cancelMidCall(t *testing.T, cs *mcp.ClientSession, logPath, id, run string) error {
	t.Helper()
	return cancelMidCallFor(t, cs, logPath, id, run, 0)
}

// cancelMidCallFor is cancelMidCall of a wait of ms milliseconds (0: a
// minute).
func cancelMidCallFor(t *testing.T, cs *mcp.ClientSession, logPath, id, run string, ms int) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := callTool(ctx, t, cs, "wait", id, run, map[string]any{"query": id, "ms": ms})
		errc <- err
	}()
	waitFor(t, func() bool { return countExecutions(t, logPath, "wait", id) == 1 }, "the call to reach the upstream")
	cancel()
	select {
	case err := <-errc:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	return nil
}

// checkCancelled waits for the record of a cancelled call: ERROR/CANCELLED.
func checkCancelled(t *testing.T, get func() (canonical.Record, error), what string) {
	t.Helper()
	waitFor(t, func() bool {
		rec, err := get()
		return err == nil && rec.Status == canonical.StatusError
	}, what+": the record to be completed")
	if rec, _ := get(); rec.Error != canonical.CodeCancelled {
		t.Fatalf("%s: record %s/%s, want ERROR/CANCELLED", what, rec.Status, rec.Error)
	}
}

// An agent's notifications/cancelled reaches the upstream (its tool sees
// its context end), and the call ends CANCELLED with executed=true; a call
// cancelled while the upstream is still being started ends CANCELLED with
// executed=false.
func TestCancelReachesTheUpstream(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "upstream.log")
	lg := openLive(t, liveConfig(t, logPath), gateway.OpenOptions{})
	cs := lg.agent(t, nil, nil)
	if err := cancelMidCall(t, cs, logPath, "call_c1", "run-c"); err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	waitFor(t, func() bool { return countExecutions(t, logPath, "cancelled", "call_c1") == 1 }, "the upstream to see the cancel")
	checkCancelled(t, func() (canonical.Record, error) {
		return lg.store.Get(context.Background(), agentRun("run-c"), "call_c1")
	}, "in memory")
	waitFor(t, func() bool { _, ok := lg.obs.get("call_c1"); return ok }, "the outcome to be observed")
	if res, _ := lg.obs.get("call_c1"); res.Code() != canonical.CodeCancelled || !res.Executed() {
		t.Fatalf("observed %s executed=%v, want CANCELLED executed=true", res.Code(), res.Executed())
	}

	// An upstream that never answers its initialize: the call is cancelled
	// before anything was sent.
	hung := openLive(t, baseConfig(t, map[string]any{"command": []string{"/bin/sleep", "60"}}, "echo"), gateway.OpenOptions{ConnectTimeout: 3 * time.Second})
	acs := hung.agent(t, nil, nil)
	time.Sleep(300 * time.Millisecond) // past the pause between two connection attempts
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	if o, err := callTool(ctx, t, acs, "echo", "call_c2", "run-c", map[string]any{"text": "hi"}); err == nil {
		t.Fatalf("the cancelled call returned a result: %s\n%s", o.text, hung.log)
	}
	waitFor(t, func() bool { _, ok := hung.obs.get("call_c2"); return ok }, "the outcome to be observed")
	if res, _ := hung.obs.get("call_c2"); res.Code() != canonical.CodeCancelled || res.Executed() {
		t.Fatalf("observed %s executed=%v, want CANCELLED executed=false", res.Code(), res.Executed())
	}
}

// progressSeen collects the progress notifications an agent receives.
type progressSeen struct {
	mu   sync.Mutex
	msgs []*mcp.ProgressNotificationParams
}

func (p *progressSeen) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, req.Params)
}

func (p *progressSeen) all() []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), p.msgs...)
}

// callWithProgress calls the progress tool with steps, under the agent's
// progress token tok (none when nil).
func callWithProgress(t *testing.T, cs *mcp.ClientSession, id, run string, steps int, tok any) outcome {
	t.Helper()
	p := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": steps},
		Meta: mcp.Meta{gateway.MetaToolCallID: id, gateway.MetaRunID: run}}
	if tok != nil {
		p.SetProgressToken(tok)
	}
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatalf("call %s: %v", id, err)
	}
	return decode(t, res)
}

// checkProgress calls the progress tool as an agent with a progress token
// and without one: the upstream gets a token only in the first case, and
// the agent gets the upstream's progress under its own token, redacted,
// and within the rate limit when the upstream floods.
func checkProgress(t *testing.T, cs *mcp.ClientSession, seen *progressSeen, logPath, run string) {
	t.Helper()
	withToken, without := countExecutions(t, logPath, "progress", "5 token=string"), countExecutions(t, logPath, "progress", "3 token=<nil>")
	if o := callWithProgress(t, cs, "call_p1", run, 5, "agent-tok-1"); !o.ready {
		t.Fatal(o.text)
	}
	if n := countExecutions(t, logPath, "progress", "5 token=string") - withToken; n != 1 {
		t.Fatalf("the upstream got no progress token (%d)", n)
	}
	waitFor(t, func() bool { return len(seen.all()) == 5 }, "5 progress notifications")
	for i, m := range seen.all() {
		if m.ProgressToken != "agent-tok-1" || m.Progress != float64(i+1) || m.Total != 5 {
			t.Fatalf("progress %d: %+v", i, m)
		}
		for _, secret := range []string{"hunter2", "10.251.73.220"} {
			if strings.Contains(m.Message, secret) {
				t.Fatalf("progress message shows %q: %q", secret, m.Message)
			}
		}
		if !strings.HasPrefix(m.Message, fmt.Sprintf("step %d of 5", i+1)) {
			t.Fatalf("progress message %q", m.Message)
		}
	}
	if o := callWithProgress(t, cs, "call_p2", run, 3, nil); !o.ready {
		t.Fatal(o.text)
	}
	if n := countExecutions(t, logPath, "progress", "3 token=<nil>") - without; n != 1 {
		t.Fatalf("a call without a progress token was given one upstream (%d)", n)
	}
	before := len(seen.all())
	if o := callWithProgress(t, cs, "call_p3", run, 200, 7); !o.ready {
		t.Fatal(o.text)
	}
	time.Sleep(200 * time.Millisecond)
	if got := len(seen.all()) - before; got < 10 || got >= 100 {
		t.Fatalf("200 progress notifications at once: %d relayed, want the burst of 10 and a few more", got)
	}
}

// Progress flows both ways over stdio (the agent in memory, the upstream a
// process).
func TestProgressIsRelayed(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "upstream.log")
	lg := openLive(t, liveConfig(t, logPath), gateway.OpenOptions{})
	seen := &progressSeen{}
	cs := lg.agent(t, &mcp.ClientOptions{ProgressNotificationHandler: seen.handler}, nil)
	checkProgress(t, cs, seen, logPath, "run-p")
}

// Images and audio reach the agent as content blocks within the media
// budget and the MIME allow-list, links as links, an embedded text resource
// redacted, a blob as a link; what is withheld is named in the text; the
// record keeps the upstream's whole result.
func TestMediaReachTheAgent(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "upstream.log")
	cfg := liveConfig(t, logPath)
	cfg["run"] = map[string]any{"max_result_bytes": 64 << 10}
	doc := mustMarshal(t, cfg) // edited as plain JSON
	var generic map[string]any
	if err := jsonUnmarshal(doc, &generic); err != nil {
		t.Fatal(err)
	}
	for _, e := range generic["tools"].([]any) {
		tool := e.(map[string]any)
		if tool["name"] == "media" {
			tool["projector"] = map[string]any{"media": map[string]any{"max_bytes": 4096, "mime_types": []string{"image/png", "audio/wav"}}}
		}
	}
	lg := openLive(t, configDoc(generic), gateway.OpenOptions{})
	cs := lg.agent(t, nil, nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "media", Arguments: map[string]any{"query": "q3"},
		Meta: mcp.Meta{gateway.MetaToolCallID: "call_m1", gateway.MetaRunID: "run-m"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 6 {
		t.Fatalf("isError %v, %d blocks: %s", res.IsError, len(res.Content), mustMarshal(t, res))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	img, ok1 := res.Content[1].(*mcp.ImageContent)
	audio, ok2 := res.Content[2].(*mcp.AudioContent)
	link, ok3 := res.Content[3].(*mcp.ResourceLink)
	embedded, ok4 := res.Content[4].(*mcp.EmbeddedResource)
	blob, ok5 := res.Content[5].(*mcp.ResourceLink)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		t.Fatalf("blocks %s", mustMarshal(t, res.Content))
	}
	if img.MIMEType != "image/png" || len(img.Data) < 8 || string(img.Data[1:4]) != "PNG" || audio.MIMEType != "audio/wav" || !strings.HasPrefix(string(audio.Data), "RIFF") {
		t.Fatalf("image %q %q, audio %q %q", img.MIMEType, img.Data, audio.MIMEType, audio.Data)
	}
	if link.URI != "file:///reports/q3.pdf" || blob.URI != "file:///blob.bin" || embedded.Resource.URI != "file:///notes.txt" {
		t.Fatalf("links %+v %+v %+v", link, blob, embedded.Resource)
	}
	for _, secret := range []string{"hunter2", "db01.internal"} {
		if strings.Contains(embedded.Resource.Text, secret) || strings.Contains(text, secret) {
			t.Fatalf("the secret %q passed: %q", secret, embedded.Resource.Text)
		}
	}
	for _, named := range []string{`"reason":"over_budget"`, `"mimeType":"image/svg+xml"`, `"reason":"mime_not_allowed"`, `"reason":"blob_sent_as_link"`} {
		if !strings.Contains(text, named) {
			t.Fatalf("the text does not name %s: %s", named, text)
		}
	}
	if strings.Contains(text, `"media":[`) || len(text) > 8<<10 {
		t.Fatalf("the media data is in the text (%d bytes)", len(text))
	}
	rec := lg.record(t, "run-m", "call_m1")
	if !strings.Contains(string(rec.Raw), "image/svg+xml") || len(rec.Raw) < 64<<10 {
		t.Fatalf("the record does not keep the raw result (%d bytes)", len(rec.Raw))
	}
}

// textOf is the text of a READY call's result: the MCP-result projection's
// content.
func textOf(t *testing.T, o outcome) string {
	t.Helper()
	if !o.ready {
		t.Fatalf("not READY: %s", o.text)
	}
	s, _ := o.obj["content"].(string)
	return s
}

// The upstream's log messages reach the agent bounded, redacted and
// rate-limited; its sampling and elicitation requests reach an agent that
// declared the capability and are refused with a JSON-RPC error for one
// that did not.
func TestUpstreamRequestsAndLogsAreRelayed(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "upstream.log")
	lg := openLive(t, liveConfig(t, logPath), gateway.OpenOptions{})
	var mu sync.Mutex
	var logs []*mcp.LoggingMessageParams
	able := lg.agent(t, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, req.Params)
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "the model says hi"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
		},
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	ctx := context.Background()
	if err := able.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, mustCall(ctx, t, able, "sample", "call_r1", "run-r", map[string]any{"query": "hello"})); got != "sampled: the model says hi" {
		t.Fatalf("sampling through the gateway: %q", got)
	}
	if got := textOf(t, mustCall(ctx, t, able, "elicit", "call_r2", "run-r", map[string]any{"query": "ok?"})); got != "elicited: accept yes" {
		t.Fatalf("elicitation through the gateway: %q", got)
	}
	if o := mustCall(ctx, t, able, "chatty", "call_r3", "run-r", map[string]any{"query": "job"}); !o.ready {
		t.Fatal(o.text)
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(logs) >= 10 }, "the upstream's log messages")
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	n := len(logs)
	for _, l := range logs {
		data, _ := l.Data.(string)
		if strings.Contains(data, "hunter2") || !strings.Contains(data, "working") || l.Level != "info" {
			t.Fatalf("log message %+v", l)
		}
	}
	mu.Unlock()
	if n >= 30 {
		t.Fatalf("30 log messages at once: %d relayed, want the rate limit's", n)
	}

	// An agent that declared neither has no connection of its own: a
	// request on the shared one cannot be told to be its call's.
	plain := lg.agent(t, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	for _, c := range []struct{ tool, want string }{{"sample", "sampling refused: "}, {"elicit", "elicitation refused: "}} {
		got := textOf(t, mustCall(ctx, t, plain, c.tool, "call_r4_"+c.tool, "run-r", map[string]any{"query": "q"}))
		if !strings.HasPrefix(got, c.want) || !strings.Contains(got, "cannot tell which call") {
			t.Fatalf("%s from an agent without the capability: %q", c.tool, got)
		}
	}
}
