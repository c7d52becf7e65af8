package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/observe"
	"github.com/toolcanon/toolcanon/otelcanon"
	"github.com/toolcanon/toolcanon/projectors/mcpresult"
	"github.com/toolcanon/toolcanon/registry"
)

// The agent's trace context in these tests.
const (
	agentTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	agentSpanID  = "00f067aa0ba902b7"
	agentParent  = "00-" + agentTraceID + "-" + agentSpanID + "-01"
	agentState   = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
)

// upstreamMeta is what the test upstream's meta tool logged of one call.
type upstreamMeta struct {
	traceparent, tracestate, baggage string
	keys                             []string
}

// readUpstreamMeta returns what the meta tool logged for the call tagged
// tag; it fails the test unless there is exactly one such line.
func readUpstreamMeta(t *testing.T, logPath, tag string) upstreamMeta {
	t.Helper()
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var found []upstreamMeta
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 6 || fields[0] != "meta" || fields[1] != tag {
			continue
		}
		var m upstreamMeta
		for _, f := range fields[2:] {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "traceparent":
				m.traceparent = v
			case "tracestate":
				m.tracestate = v
			case "baggage":
				m.baggage = v
			case "keys":
				m.keys = strings.Split(v, ",")
			}
		}
		found = append(found, m)
	}
	if len(found) != 1 {
		t.Fatalf("the upstream logged the call %q %d times, want once", tag, len(found))
	}
	return found[0]
}

// traced is a gateway in front of the test upstream, with OpenTelemetry's
// SDK recording every span in memory.
type traced struct {
	cs      *mcp.ClientSession
	spans   *tracetest.SpanRecorder
	logPath string
}

func newTraced(t *testing.T, prop gateway.Propagator) *traced {
	t.Helper()
	dir := t.TempDir()
	tr := &traced{spans: tracetest.NewSpanRecorder(), logPath: filepath.Join(dir, "upstream.log")}
	cfg, err := gateway.LoadConfig(baseConfig(t, stdioUpstream(t, tr.logPath, ""), "meta", "secrets", "echo").write(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tr.spans))
	mp := sdkmetric.NewMeterProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	obs, err := otelcanon.New(tp, mp, otelcanon.WithDBSystem("memory"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := gateway.Open(ctx, cfg, observe.Store(memstore.New(), obs), gateway.OpenOptions{Observer: obs, Propagator: prop})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	tr.cs = connect(t, g.Server())
	return tr
}

// call calls tool with the given trace context members in _meta (values
// of any type; "" members are left out).
func (tr *traced) call(t *testing.T, tool, id string, trace map[string]any, args any) outcome {
	t.Helper()
	meta := mcp.Meta{gateway.MetaToolCallID: id, gateway.MetaRunID: "run-trace"}
	for k, v := range trace {
		meta[k] = v
	}
	res, err := tr.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, id, err)
	}
	return decode(t, res)
}

// callSpan returns the one execute_tool span of the call id.
func (tr *traced) callSpan(t *testing.T, id string) sdktrace.ReadOnlySpan {
	t.Helper()
	var out []sdktrace.ReadOnlySpan
	for _, s := range tr.spans.Ended() {
		if !strings.HasPrefix(s.Name(), otelcanon.OperationExecuteTool) {
			continue
		}
		for _, a := range s.Attributes() {
			if a.Key == otelcanon.GenAIToolCallIDKey && a.Value.AsString() == id {
				out = append(out, s)
			}
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d execute_tool spans for %s, want 1", len(out), id)
	}
	return out[0]
}

// parseParent splits a traceparent into its trace and parent span ids.
func parseParent(t *testing.T, tp string) (trace.TraceID, trace.SpanID) {
	t.Helper()
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || parts[0] != "00" {
		t.Fatalf("traceparent %q", tp)
	}
	tid, err := trace.TraceIDFromHex(parts[1])
	if err != nil {
		t.Fatalf("traceparent %q: %v", tp, err)
	}
	sid, err := trace.SpanIDFromHex(parts[2])
	if err != nil {
		t.Fatalf("traceparent %q: %v", tp, err)
	}
	return tid, sid
}

// checkUpstream checks that the upstream saw, as the only trace context,
// the call's span as parent, and none of the agent's identity keys.
func checkUpstream(t *testing.T, up upstreamMeta, span sdktrace.ReadOnlySpan) {
	t.Helper()
	tid, sid := parseParent(t, up.traceparent)
	if tid != span.SpanContext().TraceID() || sid != span.SpanContext().SpanID() {
		t.Errorf("the upstream's parent is %s/%s, want the execute_tool span %s/%s",
			tid, sid, span.SpanContext().TraceID(), span.SpanContext().SpanID())
	}
	for _, k := range up.keys {
		if strings.HasPrefix(k, "io.github.toolcanon/") {
			t.Errorf("the upstream received the agent's identity key %q", k)
		}
		if k != gateway.MetaTraceParent && k != gateway.MetaTraceState && !strings.HasPrefix(k, "io.modelcontextprotocol/") {
			t.Errorf("the upstream received the _meta key %q, which is no trace context and not the SDK's own", k)
		}
	}
}

func TestTraceContextThroughTheGateway(t *testing.T) {
	tr := newTraced(t, otelcanon.NewMetaPropagator())

	// The agent's span is the parent of the call's; the call's is the
	// upstream's, in the same trace, with the agent's tracestate.
	o := tr.call(t, "meta", "call_tp", map[string]any{"traceparent": agentParent, "tracestate": agentState,
		"baggage": "user=alice"}, map[string]any{"query": "with-parent"})
	if !o.ready {
		t.Fatalf("meta: %s", o.text)
	}
	span := tr.callSpan(t, "call_tp")
	if got := span.SpanContext().TraceID().String(); got != agentTraceID {
		t.Errorf("execute_tool span in trace %s, want the agent's %s", got, agentTraceID)
	}
	if p := span.Parent(); !p.IsRemote() || p.SpanID().String() != agentSpanID || p.TraceID().String() != agentTraceID {
		t.Errorf("execute_tool span's parent %s/%s (remote %v), want the agent's span %s", p.TraceID(), p.SpanID(), p.IsRemote(), agentSpanID)
	}
	if span.Name() != "execute_tool meta" {
		t.Errorf("span %q", span.Name())
	}
	up := readUpstreamMeta(t, tr.logPath, "with-parent")
	checkUpstream(t, up, span)
	if up.tracestate != agentState {
		t.Errorf("the upstream's tracestate %q, want the agent's %q", up.tracestate, agentState)
	}
	if up.baggage != "" {
		t.Errorf("baggage %q forwarded without WithBaggage", up.baggage)
	}

	// No trace context: the call's span is a root, and still the
	// upstream's parent.
	o = tr.call(t, "meta", "call_root", nil, map[string]any{"query": "no-parent"})
	if !o.ready {
		t.Fatalf("meta: %s", o.text)
	}
	root := tr.callSpan(t, "call_root")
	if root.Parent().IsValid() {
		t.Errorf("a call without traceparent has the parent %s", root.Parent().SpanID())
	}
	if root.SpanContext().TraceID().String() == agentTraceID {
		t.Error("a call without traceparent joined the previous call's trace")
	}
	checkUpstream(t, readUpstreamMeta(t, tr.logPath, "no-parent"), root)

	// Malformed trace contexts are ignored: a new root, never an error.
	for i, bad := range []map[string]any{
		{"traceparent": "00-" + agentTraceID + "-" + agentSpanID},                          // no flags
		{"traceparent": "00-00000000000000000000000000000000-" + agentSpanID + "-01"},      // zero trace id
		{"traceparent": "00-" + agentTraceID + "-0000000000000000-01"},                     // zero span id
		{"traceparent": "ff-" + agentTraceID + "-" + agentSpanID + "-01"},                  // forbidden version
		{"traceparent": "00-" + strings.ToUpper(agentTraceID) + "-" + agentSpanID + "-01"}, // upper case
		{"traceparent": "00-" + agentTraceID + "-" + agentSpanID + "-01-extra"},            // version 00 with more
		{"traceparent": 42}, // not a string
		{"traceparent": map[string]any{"trace_id": agentTraceID}},                             // not a string
		{"traceparent": strings.Repeat("0", 1<<16)},                                           // long
		{"traceparent": "", "tracestate": agentState},                                         // state without parent
		{"traceparent": agentParent + "\n", "tracestate": strings.Repeat("k=v,", 40) + "k=v"}, // trailing byte
	} {
		id := fmt.Sprintf("call_bad_%d", i)
		tag := fmt.Sprintf("bad-%d", i)
		o := tr.call(t, "meta", id, bad, map[string]any{"query": tag})
		if !o.ready {
			t.Fatalf("%v: a malformed trace context failed the call: %s", bad, o.text)
		}
		s := tr.callSpan(t, id)
		if s.Parent().IsValid() {
			t.Errorf("%v: parent %s/%s, want a root", bad, s.Parent().TraceID(), s.Parent().SpanID())
		}
		up := readUpstreamMeta(t, tr.logPath, tag)
		checkUpstream(t, up, s)
		if up.tracestate != "" {
			t.Errorf("%v: tracestate %q forwarded without a valid parent", bad, up.tracestate)
		}
	}
}

func TestBaggageOnlyWhenOptedIn(t *testing.T) {
	tr := newTraced(t, otelcanon.NewMetaPropagator(otelcanon.WithBaggage()))
	o := tr.call(t, "meta", "call_bag", map[string]any{"traceparent": agentParent, "baggage": "user=alice"}, map[string]any{"query": "baggage"})
	if !o.ready {
		t.Fatalf("meta: %s", o.text)
	}
	up := readUpstreamMeta(t, tr.logPath, "baggage")
	if up.baggage != "user=alice" {
		t.Errorf("baggage %q, want the agent's", up.baggage)
	}
	if tid, _ := parseParent(t, up.traceparent); tid.String() != agentTraceID {
		t.Errorf("upstream trace %s, want %s", tid, agentTraceID)
	}
}

func TestNoPropagatorForwardsNoTraceContext(t *testing.T) {
	tr := newTraced(t, nil)
	o := tr.call(t, "meta", "call_none", map[string]any{"traceparent": agentParent}, map[string]any{"query": "none"})
	if !o.ready {
		t.Fatalf("meta: %s", o.text)
	}
	if span := tr.callSpan(t, "call_none"); span.Parent().IsValid() {
		t.Errorf("without a Propagator the call's span has the parent %s", span.Parent().SpanID())
	}
	if up := readUpstreamMeta(t, tr.logPath, "none"); up.traceparent != "" {
		t.Errorf("without a Propagator the upstream got traceparent %q", up.traceparent)
	}
}

// spanText is every string a span exports: name, status, attributes,
// events, links and resource.
func spanText(s sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	b.WriteString(s.Name() + "\n" + s.Status().Description + "\n")
	for _, a := range s.Attributes() {
		b.WriteString(string(a.Key) + "=" + a.Value.Emit() + "\n")
	}
	for _, e := range s.Events() {
		b.WriteString(e.Name + "\n")
		for _, a := range e.Attributes {
			b.WriteString(string(a.Key) + "=" + a.Value.Emit() + "\n")
		}
	}
	for _, l := range s.Links() {
		for _, a := range l.Attributes {
			b.WriteString(string(a.Key) + "=" + a.Value.Emit() + "\n")
		}
	}
	for _, a := range s.Resource().Attributes() {
		b.WriteString(string(a.Key) + "=" + a.Value.Emit() + "\n")
	}
	return b.String()
}

// inputMarker is a value an agent sends; no span may carry it.
const inputMarker = "INPUT-MARKER-7f3a9c"

func TestTracedGatewayExportsNoPayload(t *testing.T) {
	tr := newTraced(t, otelcanon.NewMetaPropagator())
	tp := map[string]any{"traceparent": agentParent}
	if o := tr.call(t, "secrets", "call_leak_1", tp, map[string]any{"query": inputMarker}); !o.ready {
		t.Fatalf("secrets: %s", o.text)
	}
	if o := tr.call(t, "echo", "call_leak_2", tp, map[string]any{"text": inputMarker + " password=hunter2"}); !o.ready {
		t.Fatalf("echo: %s", o.text)
	}
	spans := tr.spans.Ended()
	if len(spans) < 2 {
		t.Fatalf("%d spans", len(spans))
	}
	for _, s := range spans {
		text := spanText(s)
		for _, sec := range append([]string{inputMarker}, plantedSecrets...) {
			if strings.Contains(text, sec) {
				t.Errorf("span %q exports %q:\n%s", s.Name(), sec, text)
			}
		}
	}
	// The check above could pass on spans that say nothing: they do carry
	// the call's identity.
	if s := tr.callSpan(t, "call_leak_1"); !strings.Contains(spanText(s), "run-trace") {
		t.Errorf("the call's span lacks its run id:\n%s", spanText(s))
	}
}

// exportedSpan is what stdouttrace writes of one span, as far as read here.
type exportedSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct {
		TraceID, SpanID string
		Remote          bool
	}
}

func TestGatewayTraceFileFlag(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "upstream.log")
	tracePath := filepath.Join(dir, "spans.jsonl")
	cfg := baseConfig(t, stdioUpstream(t, logPath, ""), "meta", "secrets").write(t, dir)
	cs, stderr := stdioGateway(t, cfg, "--trace-file", tracePath)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "meta", Arguments: map[string]any{"query": "cli"},
		Meta: mcp.Meta{gateway.MetaToolCallID: "call_cli", gateway.MetaRunID: "run-cli", "traceparent": agentParent}})
	if err != nil || res.IsError {
		t.Fatalf("meta: %v %+v\n%s", err, res, stderr)
	}
	if o := mustCall(ctx, t, cs, "secrets", "call_cli_sec", "run-cli", map[string]any{"query": inputMarker}); !o.ready {
		t.Fatalf("secrets: %s", o.text)
	}
	// The spans are written when the gateway stops: the agent leaves.
	_ = cs.Close()
	var spans []exportedSpan
	var raw []byte
	waitFor(t, func() bool {
		raw, _ = os.ReadFile(tracePath)
		spans = spans[:0]
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		for {
			var s exportedSpan
			if err := dec.Decode(&s); err != nil {
				break
			}
			spans = append(spans, s)
		}
		n := 0
		for _, s := range spans {
			if strings.HasPrefix(s.Name, otelcanon.OperationExecuteTool) {
				n++
			}
		}
		return n == 2
	}, "two execute_tool spans in the trace file")
	var call *exportedSpan
	for i := range spans {
		if spans[i].Name == "execute_tool meta" {
			call = &spans[i]
		}
	}
	if call == nil {
		t.Fatalf("no execute_tool meta span in %s", raw)
	}
	if call.SpanContext.TraceID != agentTraceID || call.Parent.SpanID != agentSpanID || !call.Parent.Remote {
		t.Errorf("execute_tool meta: trace %s parent %s (remote %v), want %s/%s remote",
			call.SpanContext.TraceID, call.Parent.SpanID, call.Parent.Remote, agentTraceID, agentSpanID)
	}
	up := readUpstreamMeta(t, logPath, "cli")
	tid, sid := parseParent(t, up.traceparent)
	if tid.String() != agentTraceID || sid.String() != call.SpanContext.SpanID {
		t.Errorf("upstream traceparent %q, want trace %s, parent %s", up.traceparent, agentTraceID, call.SpanContext.SpanID)
	}
	for _, sec := range append([]string{inputMarker}, plantedSecrets...) {
		if strings.Contains(string(raw), sec) {
			t.Errorf("the trace file holds %q", sec)
		}
	}
	// Children of the call are there too: the phases and the store.
	kids := 0
	for _, s := range spans {
		if s.Parent.SpanID == call.SpanContext.SpanID {
			kids++
		}
	}
	if kids < 3 {
		t.Errorf("execute_tool meta has %d children in the file, want its phases and store operations", kids)
	}
}

func TestMiddlewareJoinsTheAgentsTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	obs, err := otelcanon.New(tp, sdkmetric.NewMeterProvider(), otelcanon.WithDBSystem("memory"))
	if err != nil {
		t.Fatal(err)
	}
	// A host's go-sdk server whose own handler runs as the bound tool.
	srv := mcp.NewServer(&mcp.Implementation{Name: "host", Version: "1"}, nil)
	seen := make(chan trace.SpanContext, 1)
	srv.AddTool(&mcp.Tool{Name: "search", Description: "Search.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			seen <- trace.SpanContextFromContext(ctx)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil
		})
	reg, err := registry.New(testDefs()...)
	if err != nil {
		t.Fatal(err)
	}
	proj, err := mcpresult.New(mcpresult.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	b, err := boundary.New(observe.Store(memstore.New(), obs), reg, allowAll,
		boundary.Bind("search", "kb.search", "1.0.0", gateway.ServerTool, proj), boundary.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	mw, err := gateway.Middleware(b, gateway.Options{Runs: fixedRun("run-mw"), Propagator: otelcanon.NewMetaPropagator()})
	if err != nil {
		t.Fatal(err)
	}
	srv.AddReceivingMiddleware(mw)
	cs := connect(t, srv)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "refunds"},
		Meta: mcp.Meta{gateway.MetaToolCallID: "call_mw", "traceparent": agentParent}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	var span sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "execute_tool search" {
			span = s
		}
	}
	if span == nil {
		t.Fatal("no execute_tool span")
	}
	if span.SpanContext().TraceID().String() != agentTraceID || span.Parent().SpanID().String() != agentSpanID {
		t.Errorf("execute_tool span %s, parent %s; want the agent's trace and span", span.SpanContext().TraceID(), span.Parent().SpanID())
	}
	if got := <-seen; got.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("the server's handler ran under span %s, want the call's %s", got.SpanID(), span.SpanContext().SpanID())
	}
}
