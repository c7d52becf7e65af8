package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// isolationKey sets the run-token key the isolation tests' configurations
// name (one per test, from seed) and returns the identity's run_token
// section and a minter of tokens under it.
func isolationKey(t *testing.T, seed string) (section map[string]any, mint func(run, principal string) string) {
	t.Helper()
	key := strings.Repeat(seed, 40)
	t.Setenv("TOOLCANON_TEST_ISOLATION_KEY", key)
	section = map[string]any{"audience": "isolation-test",
		"keys": []any{map[string]any{"id": "k1", "key_env": "TOOLCANON_TEST_ISOLATION_KEY"}}}
	return section, func(run, principal string) string {
		tok, err := gateway.MintRunToken(gateway.RunTokenKey{ID: "k1", Key: []byte(key)}, "isolation-test", run, principal, time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
}

// sessionRequest sends one request of method to url with a bearer token
// and a session id, as a client of a session does, and returns its status
// and body.
func sessionRequest(t *testing.T, url, method, token, session, body string) (int, string) {
	t.Helper()
	return sessionRequestWith(t, url, method, http.Header{"Authorization": {"Bearer " + token}}, session, body)
}

// sessionRequestWith is sessionRequest with the given headers instead of
// a bearer token.
func sessionRequestWith(t *testing.T, url, method string, header http.Header, session, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body == "" {
		req.Body = http.NoBody
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	for k, v := range header {
		req.Header[k] = v
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	// A GET that reaches a session opens its event stream, which never
	// ends: the answer is what came within a moment.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, string(b) + " (the stream stayed open)"
	}
	return resp.StatusCode, string(b)
}

// A session is its principal's, and to another principal its id is one
// that names nothing: bob's POST, GET and DELETE with alice's session id
// get the answer of an id no session ever had, byte for byte, so that bob
// cannot even learn that alice's session exists; and none of them ends or
// reaches it.
func TestAnotherPrincipalsSessionIsNoSession(t *testing.T) {
	g := openTestGateway(t, func(cfg configDoc) {
		cfg["http"] = map[string]any{"bearer_tokens": []any{
			map[string]any{"sha256": sha("alice-token"), "subject": "alice"},
			map[string]any{"sha256": sha("bob-token"), "subject": "bob"},
		}}
	})
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{Sessions: true}))
	t.Cleanup(srv.Close)
	alice := http.Header{"Authorization": {"Bearer alice-token"}}
	alices := openSession(t, srv.URL, alice)
	checkSessionIsNone(t, srv.URL, alice, alices, map[string]http.Header{"bob": {"Authorization": {"Bearer bob-token"}}})
}

// openSession opens a session with the given headers and returns its id.
func openSession(t *testing.T, url string, header http.Header) string {
	t.Helper()
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, id)
	}
	const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	if code, body := sessionRequestWith(t, url, http.MethodPost, header, id, initialized); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", code, body)
	}
	return id
}

// checkSessionIsNone checks that each of others gets, for a POST, a GET and
// a DELETE naming the owner's session, what it gets for a session id that
// names nothing, byte for byte, and that the owner's session still serves
// it afterwards.
func checkSessionIsNone(t *testing.T, url string, owner http.Header, session string, others map[string]http.Header) {
	t.Helper()
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	unknown := "S" + strings.Repeat("0", len(session)-1)
	for who, h := range others {
		for _, tc := range []struct{ method, body string }{
			{http.MethodPost, list},
			{http.MethodGet, ""},
			{http.MethodDelete, ""},
		} {
			code, body := sessionRequestWith(t, url, tc.method, h, session, tc.body)
			noneCode, noneBody := sessionRequestWith(t, url, tc.method, h, unknown, tc.body)
			if code != noneCode || body != noneBody {
				t.Errorf("%s's %s of another's session: %d %s; of a session that does not exist: %d %s", who, tc.method, code, body, noneCode, noneBody)
			}
			if strings.Contains(body, session) {
				t.Errorf("%s's %s was told the session's id: %s", who, tc.method, body)
			}
		}
	}
	if code, body := sessionRequestWith(t, url, http.MethodPost, owner, session, list); code != http.StatusOK || !strings.Contains(body, `"echo"`) {
		t.Fatalf("the owner's session after the others' requests: %d %s", code, body)
	}
}

// Without bearer tokens, a session opened with a run token in its header
// is that token's caller's: another principal's run token, and a token of
// another run of the same principal, name no session with its id.
func TestRunTokenSessionIsNoSessionToOthers(t *testing.T) {
	section, mint := isolationKey(t, "s")
	section["required"] = true
	g := openTestGateway(t, func(cfg configDoc) {
		cfg["identity"] = map[string]any{"project": "support", "run_token": section}
	})
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{Sessions: true}))
	t.Cleanup(srv.Close)
	token := func(run, principal string) http.Header {
		return http.Header{gateway.RunTokenHeader: {mint(run, principal)}}
	}
	alice := token("run-sa", "alice")
	checkSessionIsNone(t, srv.URL, alice, openSession(t, srv.URL, alice), map[string]http.Header{
		"bob":                   token("run-sb", "bob"),
		"alice, of another run": token("run-sc", "alice"),
	})
}

// forgedTaskID writes a task id as the gateway writes one, for any run,
// call and owner token: what a caller who knows the format can forge.
func forgedTaskID(run, call, owner string) string {
	return "t1." + base64.RawURLEncoding.EncodeToString([]byte(run+"\n"+call+"\n"+owner))
}

// A task is reached only by its run's principal, and through a run token
// only by one of the task's run: another principal, and another run token
// of the same principal (another agent the host gave another run), get for
// the task's own id, from tasks/get, tasks/result, tasks/cancel and
// tasks/update, the answer of an id that names nothing, byte for byte;
// neither learns that the task exists, and the cancel stops nothing. On
// the in-memory store and on Redis.
func TestTasksOfAnotherRunOrPrincipalAreNoTasks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) canonical.Store
	}{
		{"memstore", func(*testing.T) canonical.Store { return newMemStore() }},
		{"redis", func(t *testing.T) canonical.Store { return openRedisStore(t, redistest.Addr(t)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			section, mint := isolationKey(t, "r")
			dir := t.TempDir()
			logPath := filepath.Join(dir, "up.log")
			cfg := markLongRunning(t, baseConfig(t, stdioUpstream(t, logPath, ""), "wait"), "wait")
			cfg["identity"].(map[string]any)["run_token"] = section
			lg := openLiveOn(t, cfg, tc.store(t), gateway.OpenOptions{})
			srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
			t.Cleanup(srv.Close)
			suffix := canonical.NewOwner()[:8]
			runA, runB := "host-a-"+suffix, "host-b-"+suffix
			tokA, tokB := mint(runA, "alice"), mint(runB, "alice")
			withRunToken := func(tok string, p map[string]any) map[string]any {
				meta, _ := p["_meta"].(map[string]any)
				if meta == nil {
					meta = map[string]any{}
				}
				meta[gateway.MetaRunToken] = tok
				delete(meta, gateway.MetaRunID) // the token names the run
				p["_meta"] = meta
				return p
			}
			c := &rpcClient{t: t, url: srv.URL, version: "2025-11-25"}
			created := c.ok("tools/call", withRunToken(tokA, withTask(toolParams("wait", "call_i1", "", map[string]any{"query": "alices", "ms": 3000}))))
			id := created["task"].(map[string]any)["taskId"].(string)
			waitFor(t, func() bool { return countExecutions(t, logPath, "wait", "alices") == 1 }, "the upstream to run alice's call")

			// What a caller gets for a task id that names no record: of
			// the task's run, of an absent call; of the task's call, with
			// another owner token.
			nothing := []string{forgedTaskID(runA, "call_absent", canonical.NewOwner()), forgedTaskID(runA, "call_i1", canonical.NewOwner())}
			callers := map[string]func(map[string]any) map[string]any{
				"alice's token of another run": func(p map[string]any) map[string]any { return withRunToken(tokB, p) },
				"another principal":            func(p map[string]any) map[string]any { return p },
			}
			ext := &rpcClient{t: t, url: srv.URL, version: "2026-07-28"}
			for who, as := range callers {
				for _, cl := range []*rpcClient{c, ext} {
					for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel", "tasks/update"} {
						got := cl.call(m, as(map[string]any{"taskId": id}))
						for _, none := range nothing {
							want := cl.call(m, as(map[string]any{"taskId": none}))
							if got.Error == nil || want.Error == nil || !bytes.Equal(mustMarshal(t, got), mustMarshal(t, want)) {
								t.Errorf("%s, %s (%s) of alice's task: %s; of a task that does not exist: %s", who, m, cl.version, mustMarshal(t, got), mustMarshal(t, want))
							}
						}
					}
				}
			}
			if got := c.ok("tasks/get", withRunToken(tokA, map[string]any{"taskId": id})); got["status"] != "working" {
				t.Errorf("alice's task after the others' cancels: %v", got)
			}
			if n := countExecutions(t, logPath, "cancelled", "alices"); n != 0 {
				t.Errorf("another caller's cancel reached the upstream")
			}
		})
	}
}

// Without bearer tokens a run token is the caller's only credential: a
// stateless cancel is matched to a call by it, not by its principal
// alone. Another agent of the same principal, holding a token of another
// run, cancels nothing of the first agent's call with the call's JSON-RPC
// id (which a client numbers from 1, as every other does); the first
// agent's own cancel does.
func TestCancelOfAnotherRunTokenCancelsNothing(t *testing.T) {
	section, mint := isolationKey(t, "c")
	section["required"] = true
	dir := t.TempDir()
	logPath := filepath.Join(dir, "upstream.log")
	cfg := liveConfig(t, logPath)
	cfg["identity"] = map[string]any{"project": "support", "run_token": section}
	lg := openLive(t, cfg, gateway.OpenOptions{})
	srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	tokA, tokB := mint("run-agent-a", "alice"), mint("run-agent-b", "alice")
	done := waitCall(t, srv.URL, nil, logPath, "call_k1", map[string]any{gateway.MetaRunToken: tokA})
	if status, _ := rawPost(t, srv.URL, nil, cancelBody(t, map[string]any{gateway.MetaRunToken: tokB})); status != http.StatusAccepted {
		t.Fatalf("the other agent's cancel: %d", status)
	}
	time.Sleep(100 * time.Millisecond)
	if n := countExecutions(t, logPath, "cancelled", "call_k1"); n != 0 {
		t.Fatal("a token of another run cancelled the call")
	}
	if rec, err := lg.store.Get(context.Background(), "run-agent-a", "call_k1"); err != nil || rec.Status != canonical.StatusProjecting {
		t.Fatalf("the call after the other agent's cancel: %+v %v", rec, err)
	}
	if status, _ := rawPost(t, srv.URL, nil, cancelBody(t, map[string]any{gateway.MetaRunToken: tokA})); status != http.StatusAccepted {
		t.Fatalf("the owner's cancel: %d", status)
	}
	waitFor(t, func() bool { return countExecutions(t, logPath, "cancelled", "call_k1") == 1 }, "the owner's cancel to reach the upstream")
	<-done
}

// A run header binds its sender to its run as a run token does: the
// resolver gives the header's run whatever run a request names. Two
// agents of one principal a host sends with two run headers are two
// callers, and a stateless cancel of one, with the JSON-RPC id both
// number their first call with, cancels nothing of the other's call; its
// own agent's cancel does.
func TestCancelOfAnotherRunHeaderCancelsNothing(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "upstream.log")
	cfg := liveConfig(t, logPath)
	cfg["identity"] = map[string]any{"project": "support", "principal": "agent-1", "run_header": "X-Toolcanon-Run"}
	lg := openLive(t, cfg, gateway.OpenOptions{})
	srv := httptest.NewServer(lg.g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	agentA, agentB := http.Header{"X-Toolcanon-Run": {"run-agent-a"}}, http.Header{"X-Toolcanon-Run": {"run-agent-b"}}
	done := waitCall(t, srv.URL, agentA, logPath, "call_h1", map[string]any{})
	if status, _ := rawPost(t, srv.URL, agentB, cancelBody(t, nil)); status != http.StatusAccepted {
		t.Fatalf("the other agent's cancel: %d", status)
	}
	time.Sleep(100 * time.Millisecond)
	if n := countExecutions(t, logPath, "cancelled", "call_h1"); n != 0 {
		t.Fatal("a cancel of another run header cancelled the call")
	}
	if status, _ := rawPost(t, srv.URL, agentA, cancelBody(t, nil)); status != http.StatusAccepted {
		t.Fatalf("the owner's cancel: %d", status)
	}
	waitFor(t, func() bool { return countExecutions(t, logPath, "cancelled", "call_h1") == 1 }, "the owner's cancel to reach the upstream")
	<-done
}

// Without bearer tokens, the sessions of run-token holders are capped as
// its callers are told apart: each holder (its principal and run) at
// MaxSessionsPerCaller, each principal in all at MaxSessionsPerPrincipal.
// One agent cannot take every session of its principal, nor one principal
// every session of the run-token holders.
func TestRunTokenSessionsAreCappedPerCallerAndPrincipal(t *testing.T) {
	section, mint := isolationKey(t, "p")
	section["required"] = true
	g := openTestGateway(t, func(cfg configDoc) {
		cfg["identity"] = map[string]any{"project": "support", "run_token": section}
	})
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{Sessions: true, MaxSessions: 10,
		MaxSessionsPerPrincipal: 3, MaxSessionsPerCaller: 2}))
	t.Cleanup(srv.Close)
	token := func(run, principal string) http.Header {
		return http.Header{gateway.RunTokenHeader: {mint(run, principal)}}
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`
	opens := func(h http.Header) bool {
		t.Helper()
		code, body := sessionRequestWith(t, srv.URL, http.MethodPost, h, "", initialize)
		if code != http.StatusOK && code != http.StatusServiceUnavailable {
			t.Fatalf("initialize: %d %s", code, body)
		}
		return code == http.StatusOK
	}
	a1, a2, a3, b1 := token("run-a1", "alice"), token("run-a2", "alice"), token("run-a3", "alice"), token("run-b1", "bob")
	for i := range 2 {
		if !opens(a1) {
			t.Fatalf("alice's first agent's session %d was refused", i+1)
		}
	}
	if opens(a1) {
		t.Fatal("alice's first agent opened a third session past its cap of 2")
	}
	if !opens(a2) {
		t.Fatal("alice's second agent was refused while the first holds its cap")
	}
	if opens(a3) {
		t.Fatal("alice's third agent opened a fourth session of alice's past her cap of 3")
	}
	for i := range 2 {
		if !opens(b1) {
			t.Fatalf("bob's session %d was refused while alice holds her cap", i+1)
		}
	}
}
