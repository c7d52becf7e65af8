package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// seedRun writes a run with a READY, an ERROR and a PROJECTING call.
func seedRun(t *testing.T, addr string) string {
	t.Helper()
	s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	run := "inspect-" + canonical.NewOwner()[:12]
	for _, id := range []string{"call_ok", "call_err", "call_open"} {
		if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search", Owner: "o-" + id,
			Request: []byte(`{"query":"REQUEST-MARKER"}`), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "call_ok", Owner: "o-call_ok",
		Status: canonical.StatusReady, Evidence: canonical.EvidenceFound,
		Raw: []byte(`{"secret":"RAW-MARKER"}`), Result: []byte(`{"evidence":["doc-1"]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "call_err", Owner: "o-call_err",
		Status: canonical.StatusError, Code: canonical.CodeToolTimeout}); err != nil {
		t.Fatal(err)
	}
	return run
}

func TestInspectOnBehalfOfAPrincipal(t *testing.T) {
	addr := redistest.Addr(t)
	run := seedRun(t, addr) // begun by the empty principal
	code, out, stderr := runCmd("inspect", "--redis", addr, "--run", run, "--principal", "user:bob")
	if code != exitRefused || out != "" || !strings.Contains(stderr, "RUN_FORBIDDEN") || strings.Contains(stderr, "call_ok") {
		t.Fatalf("another principal: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, out, stderr := runCmd("inspect", "--redis", addr, "--run", run, "--principal", ""); code != exitOK || !strings.Contains(out, "call_ok") {
		t.Fatalf("the run's principal: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

func TestInspectText(t *testing.T) {
	addr := redistest.Addr(t)
	run := seedRun(t, addr)
	code, out, stderr := runCmd("inspect", "--redis", addr, "--run", run)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"run " + run, "calls begun 3, completed 2, in flight 1", "completion index: call_ok, call_err",
		"settings: calls per run 256, per tool 64; bytes per run 67108864, per record 1048576, per result 16384",
		"call_ok  kb.search  READY EVIDENCE_FOUND", "call_err  kb.search  ERROR ERROR/TOOL_TIMEOUT",
		`agent result: {"evidence":["doc-1"]}`, "raw 23 B"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "RAW-MARKER") || strings.Contains(out, "REQUEST-MARKER") {
		t.Fatalf("payloads shown without --raw:\n%s", out)
	}
}

func TestInspectRawAndCall(t *testing.T) {
	addr := redistest.Addr(t)
	run := seedRun(t, addr)
	code, out, _ := runCmd("inspect", "--redis", addr, "--run", run, "--raw")
	if code != exitOK || !strings.Contains(out, "RAW-MARKER") || !strings.Contains(out, "REQUEST-MARKER") {
		t.Fatalf("exit %d, --raw output:\n%s", code, out)
	}
	// --call shows a record that is not in the completion index yet.
	code, out, _ = runCmd("inspect", "--redis", addr, "--run", run, "--call", "call_open")
	if code != exitOK || !strings.Contains(out, "call_open  kb.search  PROJECTING UNKNOWN") || strings.Contains(out, "call_ok  ") {
		t.Fatalf("exit %d, --call output:\n%s", code, out)
	}
}

func TestInspectJSON(t *testing.T) {
	addr := redistest.Addr(t)
	run := seedRun(t, addr)
	code, out, _ := runCmd("inspect", "--redis", addr, "--run", run, "--json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var v inspectView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	if v.Run.Calls != 3 || v.Run.Completed != 2 || len(v.Index) != 2 || len(v.Records) != 2 || v.Run.InFlight != 1 ||
		v.Run.Settings.MaxCallsPerRun != canonical.DefaultLimits.MaxCallsPerRun ||
		v.Records[0].Status != "READY" || v.Records[1].Error != "TOOL_TIMEOUT" || v.Records[0].Raw != "" {
		t.Fatalf("view = %+v", v)
	}
	// Each record names its fields as the specs do.
	var generic struct {
		Records []map[string]json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal([]byte(out), &generic); err != nil {
		t.Fatal(err)
	}
	ok := generic.Records[0]
	for _, k := range []string{"tool_call_id", "tool", "status", "evidence_status", "agent_result", "raw_response_bytes", "agent_result_bytes"} {
		if _, has := ok[k]; !has {
			t.Errorf("--json record lacks %q: %s", k, out)
		}
	}
	for _, k := range []string{"evidence", "result", "raw", "raw_bytes", "result_bytes"} {
		if _, has := ok[k]; has {
			t.Errorf("--json record still has %q: %s", k, out)
		}
	}
	if string(ok["evidence_status"]) != `"EVIDENCE_FOUND"` || string(generic.Records[1]["evidence_status"]) != `"ERROR"` {
		t.Errorf("evidence_status: %s", out)
	}
	code, out, _ = runCmd("inspect", "--redis", addr, "--run", run, "--json", "--raw")
	if code != exitOK || !strings.Contains(out, "RAW-MARKER") {
		t.Fatalf("--json --raw: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, `"raw_response": "{\"secret\":\"RAW-MARKER\"}"`) {
		t.Fatalf("--json --raw does not name raw_response:\n%s", out)
	}
}

func TestInspectErrorsAPersonUnderstands(t *testing.T) {
	addr := redistest.Addr(t)
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	dead := srv.Addr
	srv.Stop()
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"inspect", "--run", "r1"}, exitUsage, "--redis and --run are required"},
		{[]string{"inspect", "--redis", addr, "--run", "bad:run"}, exitUsage, "invalid --run"},
		{[]string{"inspect", "--redis", addr, "--run", "r1", "--call", "a b"}, exitUsage, "invalid --call"},
		{[]string{"inspect", "--redis", addr, "--run", "never-begun-run"}, exitNotFound, "run never-begun-run is unknown"},
		{[]string{"inspect", "--redis", dead, "--run", "r1"}, exitFailure, "cannot reach Redis at " + dead},
		{[]string{"inspect", "--redis", addr, "--run", "r1", "--prefix", "{bad}"}, exitUsage, "key prefix"},
		{[]string{"frobnicate"}, exitUsage, "unknown command"},
		{nil, exitUsage, "Usage:"},
	}
	for _, c := range cases {
		code, _, stderr := runCmd(c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
	run := seedRun(t, addr)
	code, _, stderr := runCmd("inspect", "--redis", addr, "--run", run, "--call", "call_none")
	if code != exitNotFound || !strings.Contains(stderr, "no record call_none") {
		t.Errorf("unknown call: exit %d, %q", code, stderr)
	}
}

// A password on the command line shows in ps output and shell history:
// --password is refused with a message naming the alternatives, and the
// password comes from TOOLCANON_REDIS_PASSWORD or --password-file.
func TestInspectPasswordNeverOnTheCommandLine(t *testing.T) {
	const pw = "s3cret-Redis-PW"
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	if _, err := redistest.Command(srv.Addr, "CONFIG", "SET", "requirepass", pw); err != nil {
		t.Fatal(err)
	}
	s, err := redisstore.New(redisstore.Options{Addrs: []string{srv.Addr}, Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	run := "inspect-pw-" + canonical.NewOwner()[:12]
	if _, err := s.Begin(context.Background(), canonical.BeginRequest{RunID: run, ToolCallID: "call_1", Tool: "kb.search",
		Owner: "o", Request: []byte(`{"q":1}`), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	t.Setenv(EnvRedisPassword, "")
	for _, args := range [][]string{{"inspect", "--run", run}, {"demo"}} {
		cmd := args[0]
		code, out, stderr := runCmd(append(args, "--redis", srv.Addr, "--password", pw)...)
		if code != exitUsage || !strings.Contains(stderr, "--password is refused") || !strings.Contains(stderr, EnvRedisPassword) ||
			!strings.Contains(stderr, "--password-file") || strings.Contains(stderr+out, pw) {
			t.Errorf("%s --password: exit %d, stderr %q", cmd, code, stderr)
		}
	}
	if code, _, stderr := runCmd("inspect", "--redis", srv.Addr, "--run", run); code != exitFailure {
		t.Errorf("no password: exit %d, %q", code, stderr)
	}

	t.Setenv(EnvRedisPassword, pw)
	if code, out, stderr := runCmd("inspect", "--redis", srv.Addr, "--run", run); code != exitOK || !strings.Contains(out, "calls begun 1") {
		t.Errorf("password from the environment: exit %d, %q %q", code, out, stderr)
	}

	t.Setenv(EnvRedisPassword, "wrong")
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	if err := os.WriteFile(file, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCmd("inspect", "--redis", srv.Addr, "--run", run, "--password-file", file); code != exitOK || !strings.Contains(out, "calls begun 1") {
		t.Errorf("password from a file (over the environment): exit %d, %q %q", code, out, stderr)
	}
	for name, content := range map[string]string{"empty": "", "two lines": pw + "\nmore\n", "huge": strings.Repeat("x", 5000)} {
		f := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runCmd("inspect", "--redis", srv.Addr, "--run", run, "--password-file", f); code != exitUsage || !strings.Contains(stderr, "--password-file") {
			t.Errorf("%s password file: exit %d, %q", name, code, stderr)
		}
	}
	if code, _, stderr := runCmd("inspect", "--redis", srv.Addr, "--run", run, "--password-file", filepath.Join(dir, "missing")); code != exitUsage || !strings.Contains(stderr, "--password-file: cannot read") {
		t.Errorf("missing password file: exit %d, %q", code, stderr)
	}
}

// inspect shows the owner and the request digest as the store was given
// them, although the record keeps them in a compact form.
func TestInspectDecodesCompactFields(t *testing.T) {
	addr := redistest.Addr(t)
	s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	run, owner, req := "inspect-"+canonical.NewOwner()[:12], canonical.NewOwner(), []byte(`{"q":"compact"}`)
	if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: "c1", Tool: "kb.search", Owner: owner,
		Request: req, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCmd("inspect", "--redis", addr, "--run", run, "--call", "c1", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var v inspectView
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Records) != 1 {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if r := v.Records[0]; r.Owner != owner || r.RequestSHA != canonical.RequestDigest(req) {
		t.Fatalf("owner %q, request_sha256 %q; want %q, %q", r.Owner, r.RequestSHA, owner, canonical.RequestDigest(req))
	}
	code, out, _ = runCmd("inspect", "--redis", addr, "--run", run, "--call", "c1")
	if code != exitOK || !strings.Contains(out, "owner "+owner+"; request sha256 "+canonical.RequestDigest(req)) {
		t.Fatalf("exit %d, text output:\n%s", code, out)
	}
}

// readLog records the reads collect makes of a store.
type readLog struct {
	inspectStore
	mu    sync.Mutex
	reads []string
}

func (r *readLog) log(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads = append(r.reads, what)
}

func (r *readLog) CheckPrincipal(ctx context.Context, run, p string) error {
	r.log("CheckPrincipal")
	return r.inspectStore.CheckPrincipal(ctx, run, p)
}

func (r *readLog) Usage(ctx context.Context, run string) (canonical.RunUsage, error) {
	r.log("Usage")
	return r.inspectStore.Usage(ctx, run)
}

func (r *readLog) Completed(ctx context.Context, run string, n int) ([]string, int, error) {
	r.log("Completed")
	return r.inspectStore.Completed(ctx, run, n)
}

func (r *readLog) GetMany(ctx context.Context, run string, ids []string, o canonical.ReadOptions) ([]*canonical.Record, error) {
	r.log("GetMany")
	return r.inspectStore.GetMany(ctx, run, ids, o)
}

func (r *readLog) ReadUsage(ctx context.Context, run, p string) (canonical.RunUsage, error) {
	r.log("ReadUsage")
	return r.inspectStore.ReadUsage(ctx, run, p)
}

func (r *readLog) ReadIndex(ctx context.Context, run, p string, n int) (canonical.RunIndex, error) {
	r.log("ReadIndex")
	return r.inspectStore.ReadIndex(ctx, run, p, n)
}

func (r *readLog) ReadRecords(ctx context.Context, run, p, gen string, ids []string, o canonical.ReadOptions) ([]*canonical.Record, error) {
	r.log("ReadRecords")
	return r.inspectStore.ReadRecords(ctx, run, p, gen, ids, o)
}

// On a principal's behalf, every read of inspect is an owned read: the
// owner is checked in the first read (no separate check before it), and
// another principal's run is refused there, before anything of it is read.
func TestInspectOnBehalfReadsOwned(t *testing.T) {
	addr := redistest.Addr(t)
	run := seedRun(t, addr)
	s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}, Standalone: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mine := &readLog{inspectStore: s}
	p := ""
	if v, err := collect(context.Background(), mine, run, "", false, &p); err != nil || len(v.Records) != 2 {
		t.Fatalf("collect on the run's principal's behalf: %+v, %v", v, err)
	}
	if got := strings.Join(mine.reads, " "); got != "ReadUsage ReadIndex ReadRecords" {
		t.Fatalf("reads %q, want ReadUsage ReadIndex ReadRecords", got)
	}
	theirs := &readLog{inspectStore: s}
	bob := "user:bob"
	if _, err := collect(context.Background(), theirs, run, "", false, &bob); canonical.CodeOf(err) != canonical.CodeRunForbidden {
		t.Fatalf("another principal: %v, want RUN_FORBIDDEN", err)
	}
	if got := strings.Join(theirs.reads, " "); got != "ReadUsage" {
		t.Fatalf("another principal's reads %q, want ReadUsage alone", got)
	}
}
