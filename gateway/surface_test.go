package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/gateway"
)

// surfaceConfig exposes, besides tools, the test upstream's prompts greet,
// plain and huge, its resources readme, logo and watched, and its item
// template, as `gateway pin` drafts them.
func surfaceConfig(t *testing.T, upstream map[string]any, tools ...string) configDoc {
	t.Helper()
	cfg := baseConfig(t, upstream, tools...)
	sd := surfaceDrafts(t)
	var prompts, resources []any
	for _, name := range []string{"greet", "plain", "huge"} {
		e := sd[name]
		e.Upstream = "up"
		prompts = append(prompts, e)
	}
	for _, uri := range []string{"kb://docs/readme", "kb://docs/logo", "kb://watched", "kb://items/{id}"} {
		e, ok := sd[uri]
		if !ok {
			t.Fatalf("no draft of %s", uri)
		}
		e.Upstream = "up"
		resources = append(resources, e)
	}
	cfg["prompts"], cfg["resources"] = prompts, resources
	return cfg
}

// withMaxText sets max_text_bytes (and media, when given) on every prompt
// and resource of cfg.
func withLimits(cfg configDoc, maxText int, media map[string]any) configDoc {
	for _, key := range []string{"prompts", "resources"} {
		list := cfg[key].([]any)
		for i, e := range list {
			m := map[string]any{}
			b, _ := json.Marshal(e)
			_ = json.Unmarshal(b, &m)
			if maxText > 0 {
				m["max_text_bytes"] = maxText
			}
			if media != nil {
				m["media"] = media
			}
			list[i] = m
		}
	}
	return cfg
}

func rpcCode(err error) int64 {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func sha(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }

// Prompts, resources, templates and completions are each a principal's own,
// as tools are: alice, granted all, sees and gets them all; bob, granted the
// greet prompt and the readme only, sees only those, and everything else —
// a prompt, a resource, a template's URI, a completion, a subscription — is
// to him as if it did not exist.
func TestPromptsAndResourcesObeyGrants(t *testing.T) {
	dir := t.TempDir()
	cfg := surfaceConfig(t, stdioUpstream(t, filepath.Join(dir, "up.log"), ""), "echo")
	cfg["http"] = map[string]any{"bearer_tokens": []any{
		map[string]any{"sha256": sha("alice-token"), "subject": "alice"},
		map[string]any{"sha256": sha("bob-token"), "subject": "bob"},
	}}
	cfg["policy"] = map[string]any{"grants": []any{
		map[string]any{"principals": []string{"alice"}, "projects": []string{"support"}, "allow": []string{"tool.call:*", "prompt.get:*", "resource.read:*"}},
		map[string]any{"principals": []string{"bob"}, "projects": []string{"support"}, "allow": []string{"tool.call:*", "prompt.get:greet", "resource.read:readme"}},
	}}
	lg := openLive(t, cfg, gateway.OpenOptions{})
	srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	connectAt := func(token, version string) *mcp.ClientSession {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	connect := func(token string) *mcp.ClientSession { return connectAt(token, "") }
	alice, bob := connect("alice-token"), connect("bob-token")
	ctx := context.Background()

	names := func(cs *mcp.ClientSession) string {
		var out []string
		pl, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pl.Prompts {
			out = append(out, "prompt:"+p.Name)
		}
		rl, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rl.Resources {
			out = append(out, "resource:"+r.URI)
		}
		tl, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range tl.ResourceTemplates {
			out = append(out, "template:"+r.URITemplate)
		}
		return strings.Join(out, " ")
	}
	if got, want := names(alice), "prompt:greet prompt:plain prompt:huge resource:kb://docs/readme resource:kb://docs/logo resource:kb://watched template:kb://items/{id}"; got != want {
		t.Errorf("alice sees %s, want %s", got, want)
	}
	if got, want := names(bob), "prompt:greet resource:kb://docs/readme"; got != want {
		t.Errorf("bob sees %s, want %s", got, want)
	}

	// What bob may use works for him.
	if _, err := bob.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}}); err != nil {
		t.Errorf("bob's greet: %v", err)
	}
	if _, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "kb://docs/readme"}); err != nil {
		t.Errorf("bob's readme: %v", err)
	}
	// The rest answers as for what does not exist, with the same codes.
	unknown := func(what string, err error, code int64) {
		t.Helper()
		if rpcCode(err) != code {
			t.Errorf("%s: %v, want JSON-RPC code %d", what, err, code)
		}
	}
	_, err := bob.GetPrompt(ctx, &mcp.GetPromptParams{Name: "plain"})
	_, errNone := bob.GetPrompt(ctx, &mcp.GetPromptParams{Name: "no-such-prompt"})
	unknown("bob's plain", err, jsonrpc.CodeInvalidParams)
	if err == nil || errNone == nil || err.Error() != errNone.Error() {
		t.Errorf("a prompt bob may not get is told apart from one that does not exist: %v / %v", err, errNone)
	}
	_, err = bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "kb://docs/logo"})
	unknown("bob's logo", err, mcp.CodeResourceNotFound)
	_, err = bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "kb://items/7"})
	unknown("bob's item", err, mcp.CodeResourceNotFound)
	_, err = bob.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "plain"}, Argument: mcp.CompleteParamsArgument{Name: "x", Value: "a"}})
	unknown("bob's completion of plain", err, jsonrpc.CodeInvalidParams)
	_, err = bob.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "kb://items/{id}"}, Argument: mcp.CompleteParamsArgument{Name: "id", Value: "4"}})
	unknown("bob's completion of the template", err, mcp.CodeResourceNotFound)
	// A subscription: on 2025-11-25 an answer, on 2026-07-28 (whose
	// subscriptions/listen the SDK client sends without waiting) nothing
	// held upstream.
	err = connectAt("bob-token", "2025-11-25").Subscribe(ctx, &mcp.SubscribeParams{URI: "kb://watched"})
	unknown("bob's subscription", err, mcp.CodeResourceNotFound)
	if err := bob.Subscribe(ctx, &mcp.SubscribeParams{URI: "kb://watched"}); err != nil {
		t.Fatal(err)
	}

	// Alice may: the template reads and completes.
	rr, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "kb://items/7"})
	if err != nil || len(rr.Contents) != 1 || !strings.HasPrefix(rr.Contents[0].Text, "item 7") {
		t.Fatalf("alice's item: %v %+v", err, rr)
	}
	cr, err := alice.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "kb://items/{id}"}, Argument: mcp.CompleteParamsArgument{Name: "id", Value: "4"}})
	if err != nil || len(cr.Completion.Values) != 2 || cr.Completion.Values[0] != "4ice" {
		t.Fatalf("alice's completion: %v %+v", err, cr)
	}
	if n := countExecutions(t, filepath.Join(dir, "up.log"), "subscribe", "kb://watched"); n != 0 {
		t.Errorf("bob's refused subscriptions reached the upstream %d times", n)
	}
	// What bob was refused never ran upstream.
	if n := countExecutions(t, filepath.Join(dir, "up.log"), "complete", "ref/resource kb://items/{id} id=4"); n != 1 {
		t.Errorf("the template's completion ran upstream %d times, want alice's once", n)
	}
}

// What an upstream's prompts, resources and completions say is third-party
// text: each reaches the agent redacted by the projections' redactor and
// cut to its budget, images and blobs pass only within a media budget, and
// a cut result says so.
func TestPromptsAndResourcesAreRedactedAndBounded(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "up.log")
	cfg := withLimits(surfaceConfig(t, stdioUpstream(t, logPath, ""), "echo"), 4096, nil)
	cfg["policy"] = map[string]any{"grants": []any{map[string]any{"principals": []string{"*"}, "projects": []string{"support"},
		"allow": []string{"tool.call:*", "prompt.get:*", "resource.read:*"}}}}
	cs := openLive(t, cfg, gateway.OpenOptions{}).agent(t, nil, nil)
	ctx := context.Background()

	all := func(v any) string { return string(mustMarshal(t, v)) }
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	text := all(gp)
	if !strings.Contains(text, "Greet Ada") || !strings.Contains(text, "withheld an image (image/png") || gp.Meta[gateway.MetaTruncated] != true {
		t.Errorf("greet: %s", text)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "kb://docs/readme"})
	if err != nil {
		t.Fatal(err)
	}
	text += all(rr)
	lr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "kb://docs/logo"})
	if err != nil || lr.Contents[0].Blob != nil || !strings.Contains(lr.Contents[0].Text, "withheld a blob (image/png") {
		t.Errorf("logo without a media budget: %v %s", err, all(lr))
	}
	cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, Argument: mcp.CompleteParamsArgument{Name: "name", Value: "al"}})
	if err != nil || len(cr.Completion.Values) != 2 {
		t.Fatalf("completion: %v %+v", err, cr)
	}
	text += all(cr)
	for _, s := range plantedSecrets {
		if strings.Contains(text, s) {
			t.Errorf("a planted secret reached the agent: %q in %s", s, text)
		}
	}
	huge, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "huge", Arguments: map[string]string{"size_kib": "256"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(huge.Messages[0].Content.(*mcp.TextContent).Text); n > 4096 || huge.Meta[gateway.MetaTruncated] != true {
		t.Errorf("a 256 KiB prompt passed %d bytes (truncated %v), the budget is 4096", n, huge.Meta[gateway.MetaTruncated])
	}
	// An argument the pinned definition does not name is refused before
	// anything is sent upstream.
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "x", "mode": "root"}})
	if rpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "INVALID_INPUT") {
		t.Errorf("an unknown argument: %v", err)
	}
	if n := countExecutions(t, logPath, "prompt", "greet x"); n != 0 {
		t.Errorf("the refused prompt ran upstream %d times", n)
	}

	// With a media budget, the image and the blob pass.
	cfg = withLimits(surfaceConfig(t, stdioUpstream(t, logPath, ""), "echo"), 0, map[string]any{"max_bytes": 4096})
	cfg["policy"] = map[string]any{"grants": []any{map[string]any{"principals": []string{"*"}, "projects": []string{"support"},
		"allow": []string{"prompt.get:*", "resource.read:*"}}}}
	cs = openLive(t, cfg, gateway.OpenOptions{}).agent(t, nil, nil)
	gp, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(gp.Messages) != 2 {
		t.Fatalf("greet: %v", err)
	}
	if img, ok := gp.Messages[1].Content.(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || len(img.Data) == 0 {
		t.Errorf("the image did not pass within its budget: %s", all(gp))
	}
	lr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "kb://docs/logo"})
	if err != nil || len(lr.Contents[0].Blob) == 0 {
		t.Errorf("the blob did not pass within its budget: %v %s", err, all(lr))
	}
}

// Lists carry the cache hints of the current revision: each is the
// principal's own (cacheScope private) and fresh for 30 s; a read is the
// principal's own, and stale at once.
func TestListsCarryCacheHints(t *testing.T) {
	cfg := surfaceConfig(t, stdioUpstream(t, filepath.Join(t.TempDir(), "up.log"), ""), "echo")
	cfg["policy"] = map[string]any{"grants": []any{map[string]any{"principals": []string{"*"}, "projects": []string{"support"},
		"allow": []string{"tool.call:*", "prompt.get:*", "resource.read:*"}}}}
	cs := openLive(t, cfg, gateway.OpenOptions{}).agent(t, nil, nil)
	ctx := context.Background()
	tl, err1 := cs.ListTools(ctx, nil)
	pl, err2 := cs.ListPrompts(ctx, nil)
	rl, err3 := cs.ListResources(ctx, nil)
	ml, err4 := cs.ListResourceTemplates(ctx, nil)
	rr, err5 := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "kb://docs/readme"})
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]mcp.Cacheable{"tools": tl.Cacheable, "prompts": pl.Cacheable, "resources": rl.Cacheable, "templates": ml.Cacheable} {
		if c.CacheScope != "private" || c.TTLMs != 30000 {
			t.Errorf("%s/list: cacheScope %q ttlMs %d, want private and 30000", name, c.CacheScope, c.TTLMs)
		}
	}
	// A resource read is the principal's own too, and read again each time.
	if rr.CacheScope != "private" || rr.TTLMs != 0 {
		t.Errorf("resources/read: cacheScope %q ttlMs %d, want private and 0", rr.CacheScope, rr.TTLMs)
	}
}

// A pinned prompt whose upstream definition changes is refused with
// TOOL_DEFINITION_CHANGED and leaves the list, until it matches its pin
// again; the other prompts keep working.
func TestChangedPromptIsRefused(t *testing.T) {
	dir := t.TempDir()
	pidPath := filepath.Join(dir, "up.pid")
	cfg := surfaceConfig(t, stdioUpstream(t, filepath.Join(dir, "up.log"), pidPath), "search")
	cfg["policy"] = map[string]any{"grants": []any{map[string]any{"principals": []string{"*"}, "projects": []string{"support"},
		"allow": []string{"tool.call:*", "prompt.get:*", "resource.read:*"}}}}
	lg := openLive(t, cfg, gateway.OpenOptions{})
	cs := lg.agent(t, nil, nil)
	ctx := context.Background()
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(readPid(t, pidPath), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	var last error
	waitFor(t, func() bool {
		_, last = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
		return last != nil
	}, "the changed prompt to be refused")
	var rpc *jsonrpc.Error
	if !errors.As(last, &rpc) || !strings.Contains(string(rpc.Data), `"error_code":"TOOL_DEFINITION_CHANGED"`) {
		t.Fatalf("the changed prompt: %v", last)
	}
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 2 || pl.Prompts[0].Name != "plain" {
		t.Errorf("the list after the change: %v %s", err, mustMarshal(t, pl))
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "plain"}); err != nil {
		t.Errorf("another prompt: %v", err)
	}
	if log := lg.log.String(); !strings.Contains(log, "prompt refused: TOOL_DEFINITION_CHANGED") || !strings.Contains(log, "seen=sha256:") {
		t.Errorf("the change is not logged with both digests:\n%s", log)
	}
}

// A session subscribed to a resource it may read gets the upstream's
// resources/updated, on 2025-11-25 (resources/subscribe) and on 2026-07-28
// (subscriptions/listen); the gateway holds one upstream subscription per
// URI and lets it go when the last session unsubscribes or ends.
func TestResourceSubscriptionsReachTheirSessions(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "up.log")
	cfg := surfaceConfig(t, stdioUpstream(t, logPath, ""), "touch")
	cfg["policy"] = map[string]any{"grants": []any{map[string]any{"principals": []string{"*"}, "projects": []string{"support"},
		"allow": []string{"tool.call:*", "prompt.get:*", "resource.read:*"}}}}
	lg := openLive(t, cfg, gateway.OpenOptions{})
	var mu sync.Mutex
	heard := map[string]int{}
	updated := func(name string) *mcp.ClientOptions {
		return &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			heard[name+" "+req.Params.URI]++
			mu.Unlock()
		}}
	}
	heardBy := func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return heard[name+" kb://watched"]
	}
	old := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	a, b := lg.agent(t, updated("a"), old), lg.agent(t, updated("b"), old)
	c := lg.agent(t, updated("c"), nil)
	ctx := context.Background()
	for _, cs := range []*mcp.ClientSession{a, b, c} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "kb://watched"}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	waitFor(t, func() bool {
		n++
		mustCall(ctx, t, a, "touch", fmt.Sprintf("call_touch%d", n), "run-sub", map[string]any{"query": "kb://watched"})
		time.Sleep(20 * time.Millisecond)
		return heardBy("a") > 0 && heardBy("b") > 0 && heardBy("c") > 0
	}, "every session to hear of the update")
	if n := countExecutions(t, logPath, "subscribe", "kb://watched"); n != 1 {
		t.Errorf("%d upstream subscriptions for three sessions, want one", n)
	}
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "kb://watched"}); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	time.Sleep(100 * time.Millisecond)
	if n := countExecutions(t, logPath, "unsubscribe", "kb://watched"); n != 0 {
		t.Errorf("unsubscribed upstream while a session still holds it")
	}
	_ = c.Close()
	waitFor(t, func() bool { return countExecutions(t, logPath, "unsubscribe", "kb://watched") == 1 },
		"the last session's end to release the upstream subscription")
}
