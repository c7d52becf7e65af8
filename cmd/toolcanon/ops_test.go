package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestDoctorReportsTheServersSettings(t *testing.T) {
	addr := redistest.Addr(t)
	code, out, stderr := runCmd("doctor", "--redis", addr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("toolcanon doctor --redis %s:\n%s", addr, out)
	version, _ := redistest.Command(addr, "INFO", "server")
	v := ""
	for _, line := range strings.Split(version, "\r\n") {
		if s, ok := strings.CutPrefix(line, "redis_version:"); ok {
			v = s
		}
	}
	// The test server runs without persistence and without replicas.
	for _, want := range []string{"Connection to " + addr, "OK      tls                off            plain TCP, on loopback only",
		"OK      topology           standalone", "Redis at " + addr, "OK      redis_version      " + v,
		"OK      scripting          available", `OK      acl                ok             user "default" may run every command`,
		"OK      maxmemory-policy   noeviction", "WARN    appendonly         no", `WARN    save               ""`,
		"WARN    connected_replicas 0", "WARN    durability         off", "4 warning(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

// An evicting maxmemory-policy used to be a warning, with exit 0: a
// deployment script could not tell. It is a failure now, exit 1, in text and
// in JSON, on a real server started with allkeys-lru.
func TestDoctorFailsOnAnEvictingPolicy(t *testing.T) {
	srv, err := redistest.StartServer("--maxmemory-policy", "allkeys-lru")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	code, out, stderr := runCmd("doctor", "--redis", srv.Addr)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d: %s\n%s", code, exitFailure, stderr, out)
	}
	for _, want := range []string{"FAIL    maxmemory-policy   allkeys-lru", "1 failure(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := runCmd("doctor", "--redis", srv.Addr, "--json"); code != exitFailure || !strings.Contains(out, `"Level": "FAIL"`) {
		t.Fatalf("--json: exit %d:\n%s", code, out)
	}
	// Back to noeviction: no failure, exit 0.
	if _, err := redistest.Command(srv.Addr, "CONFIG", "SET", "maxmemory-policy", "noeviction"); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCmd("doctor", "--redis", srv.Addr); code != exitOK || strings.Contains(out, "FAIL") {
		t.Fatalf("noeviction: exit %d: %s\n%s", code, stderr, out)
	}
}

// A worker's user, without the commands only doctor needs: every setting
// INFO or CONFIG GET would show is unknown, and what the user may run is
// still checked (in a script: it may not run ACL DRYRUN).
func TestDoctorWithoutInfoOrConfigSaysUnknown(t *testing.T) {
	addr := redistest.Addr(t)
	args := append([]string{"ACL", "SETUSER", "doctor-min", "reset", "on", ">pw-doctor", "resetkeys", "~tc:*", "-@all"},
		redisstore.ACLGrants(redisstore.ACLWorker, redisstore.ACLReap)...)
	if _, err := redistest.Command(addr, args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = redistest.Command(addr, "ACL", "DELUSER", "doctor-min") })
	t.Setenv(EnvRedisPassword, "pw-doctor")
	code, out, stderr := runCmd("doctor", "--redis", addr, "--user", "doctor-min", "--standalone")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(out, "UNKNOWN "); n != 5 || strings.Count(out, "WARN ") != 1 || !strings.Contains(out, "WARN    durability         off") ||
		!strings.Contains(out, `OK      acl                ok             user "doctor-min" may run every command this store sends (checked with redis.acl_check_cmd)`) {
		t.Fatalf("want 5 unknown settings, the user's commands checked, and only durability off as a warning, got:\n%s", out)
	}
}

// seedLeases begins three calls: one whose lease passes at once, one with a
// long lease, one completed.
func seedLeases(t *testing.T, addr string) string {
	t.Helper()
	s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	run := "reap-" + canonical.NewOwner()[:12]
	for id, lease := range map[string]time.Duration{"c_dead": 20 * time.Millisecond, "c_live": time.Hour, "c_done": 20 * time.Millisecond} {
		if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "kb.search", Owner: "o-" + id,
			Request: []byte(`{}`), TTL: time.Hour, Lease: lease}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "c_done", Owner: "o-c_done",
		Status: canonical.StatusReady, Evidence: canonical.NoEvidence, Raw: []byte(`{}`), Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	return run
}

func TestReapAbandonsExpiredLeasesOnly(t *testing.T) {
	addr := redistest.Addr(t)
	run := seedLeases(t, addr)
	code, out, stderr := runCmd("reap", "--redis", addr, "--run", run)
	if code != exitOK || !strings.Contains(out, "c_dead  abandoned: ERROR EXECUTION_ABANDONED") ||
		!strings.Contains(out, "1 call(s) abandoned") || strings.Contains(out, "c_live") || strings.Contains(out, "c_done") {
		t.Fatalf("reap: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runCmd("inspect", "--redis", addr, "--run", run, "--call", "c_dead")
	if code != exitOK || !strings.Contains(out, "c_dead  kb.search  ERROR ERROR/EXECUTION_ABANDONED") {
		t.Fatalf("inspect after reap: exit %d\n%s", code, out)
	}
	code, out, _ = runCmd("inspect", "--redis", addr, "--run", run, "--call", "c_live")
	if code != exitOK || !strings.Contains(out, "lease until") || !strings.Contains(out, "in flight 1") {
		t.Fatalf("inspect of a running call: exit %d\n%s", code, out)
	}
	code, out, _ = runCmd("reap", "--redis", addr, "--run", run)
	if code != exitOK || !strings.Contains(out, "0 call(s) abandoned") {
		t.Fatalf("second reap: exit %d\n%s", code, out)
	}
}

func TestAbandonOneCall(t *testing.T) {
	addr := redistest.Addr(t)
	run := seedLeases(t, addr)
	cases := []struct {
		call string
		code int
		out  string
	}{
		{"c_live", exitRefused, "the lease runs for"},
		{"c_done", exitRefused, "record is READY"},
		{"c_none", exitNotFound, "NOT_FOUND"},
		{"c_dead", exitOK, "c_dead  ERROR EXECUTION_ABANDONED"},
		{"c_dead", exitOK, "c_dead  ERROR EXECUTION_ABANDONED"}, // again: the stored outcome
	}
	for _, c := range cases {
		code, out, stderr := runCmd("abandon", "--redis", addr, "--run", run, "--call", c.call)
		if code != c.code || !strings.Contains(out+stderr, c.out) {
			t.Errorf("abandon %s: exit %d, %q%q; want exit %d and %q", c.call, code, out, stderr, c.code, c.out)
		}
	}
	for _, args := range [][]string{{"abandon", "--redis", addr, "--run", run}, {"reap", "--run", run},
		{"reap", "--redis", addr, "--run", "a:b"}, {"doctor"}, {"reap", "--redis", addr, "--run", run, "--max", "0"}} {
		if code, _, _ := runCmd(args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// doctor against a server whose ACL denies EVALSHA to the user: exit 1, and
// one line says so, what it means and what to grant.
func TestDoctorFailsWhenTheACLDeniesEVALSHA(t *testing.T) {
	addr := redistest.Addr(t)
	grants := slices.DeleteFunc(redisstore.ACLGrants(redisstore.ACLWorker, redisstore.ACLReap, redisstore.ACLCheck),
		func(g string) bool { return g == "+evalsha" })
	args := append([]string{"ACL", "SETUSER", "doctor-noevalsha", "reset", "on", ">pw-doctor", "resetkeys", "~tc:*", "-@all"}, grants...)
	if _, err := redistest.Command(addr, args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = redistest.Command(addr, "ACL", "DELUSER", "doctor-noevalsha") })
	t.Setenv(EnvRedisPassword, "pw-doctor")
	code, out, stderr := runCmd("doctor", "--redis", "redis://doctor-noevalsha@"+addr)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d: %s\n%s", code, exitFailure, stderr, out)
	}
	var fails []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "FAIL ") {
			fails = append(fails, line)
		}
	}
	want := "FAIL    scripting          denied         the ACL user may not run EVALSHA: no state change can be made: " +
		"every call fails with STORE_UNAVAILABLE and no tool runs; grant +evalsha"
	if len(fails) != 1 || strings.TrimSpace(fails[0]) != want || !strings.Contains(out, "1 failure(s)") {
		t.Fatalf("want the one line\n%s\ngot:\n%s", want, out)
	}
}

// doctor over TLS as an ACL user: the connection is encrypted, and the
// user has every command of the README's ACL.
func TestDoctorOverTLS(t *testing.T) {
	r := startTLSRedis(t)
	code, out, stderr := runCmd(append([]string{"doctor"}, r.flags()...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	for _, want := range []string{"Connection to " + r.url, "OK      tls                on             connections are encrypted and the server's certificate is verified",
		`OK      acl                ok             user "toolcanon" may run every command this store sends (checked with redis.acl_check_cmd)`,
		"OK      scripting          available"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	r2 := startTLSRedis(t, "--tls-auth-clients", "yes")
	code, out, stderr = runCmd(append([]string{"doctor"}, r2.flags("--tls-cert-file", r2.files.ClientCert, "--tls-key-file", r2.files.ClientKey)...)...)
	if code != exitOK || !strings.Contains(out, "verified; a client certificate is presented") {
		t.Fatalf("with a client certificate: exit %d: %s\n%s", code, stderr, out)
	}
}

// The durability flags reach the store: doctor judges them against the
// replicas connected (none here), and fails.
func TestDoctorChecksTheDurabilityAsked(t *testing.T) {
	addr := redistest.Addr(t)
	code, out, stderr := runCmd("doctor", "--redis", addr, "--durability-replicas", "1", "--durability-timeout", "100ms")
	if code != exitFailure || !strings.Contains(out, "FAIL    durability         wait 1 100ms   1 replica(s) asked for, 0 connected") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	code, _, stderr = runCmd("doctor", "--redis", addr, "--durability-replicas", "1")
	if code != exitUsage || !strings.Contains(stderr, "--durability-timeout: required with --durability-replicas") {
		t.Fatalf("no timeout: exit %d: %s", code, stderr)
	}
}

// Through Redis Sentinel: the sentinels' address and the master set's name.
func TestDoctorThroughASentinel(t *testing.T) {
	master, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Stop)
	sentinel, err := redistest.StartSentinel(master, "mymaster")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sentinel.Stop)
	code, out, stderr := runCmd("doctor", "--redis", sentinel.Addr, "--sentinel-master", "mymaster")
	if code != exitOK || !strings.Contains(out, "OK      topology           sentinel") || !strings.Contains(out, "Redis at "+master.Addr) {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
}
