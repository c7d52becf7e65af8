package redisstore_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// checkUser creates an ACL user on addr with the keys tc:* and exactly
// grants, and returns its name; the password is "pw-check".
func checkUser(t *testing.T, addr string, grants ...string) string {
	t.Helper()
	name := "check-" + canonical.NewOwner()[:8]
	args := append([]string{"ACL", "SETUSER", name, "reset", "on", ">pw-check", "resetkeys", "~tc:*", "-@all"}, grants...)
	if _, err := redistest.Command(addr, args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = redistest.Command(addr, "ACL", "DELUSER", name) })
	return name
}

// without returns grants without the ones named.
func without(grants []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(grants), func(g string) bool { return slices.Contains(drop, g) })
}

func check(t *testing.T, opts redisstore.Options) redisstore.Report {
	t.Helper()
	s, err := redisstore.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// finding returns the finding named setting of the first server.
func finding(t *testing.T, rep redisstore.Report, setting string) redisstore.Finding {
	t.Helper()
	for _, f := range append(slices.Clone(rep.Findings), rep.Nodes[0].Findings...) {
		if f.Setting == setting {
			return f
		}
	}
	t.Fatalf("no finding %s in %+v", setting, rep)
	return redisstore.Finding{}
}

func failures(rep redisstore.Report) []string {
	var out []string
	for _, n := range rep.Nodes {
		for _, f := range n.Findings {
			if f.Level == redisstore.LevelFail {
				out = append(out, f.String())
			}
		}
	}
	return out
}

// A user that may not run the scripts is one failure, which says so, what
// it means and what to grant; the rest of its ACL is still checked where
// it may run EVAL.
func TestCheckScriptingDeniedByTheACL(t *testing.T) {
	addr := redistest.Addr(t)
	worker := redisstore.ACLGrants(redisstore.ACLWorker, redisstore.ACLReap, redisstore.ACLCheck)
	for _, c := range []struct {
		name    string
		grants  []string
		meaning string
		acl     redisstore.Level
	}{
		{"evalsha", without(worker, "+evalsha"), "may not run EVALSHA: no state change can be made: every call fails with STORE_UNAVAILABLE and no tool runs; grant +evalsha", redisstore.LevelOK},
		{"eval", without(worker, "+eval"), "may not run EVAL, which loads a script the server does not hold", redisstore.LevelUnknown},
		{"both", without(worker, "+eval", "+evalsha"), "may not run EVALSHA or EVAL", redisstore.LevelUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			user := checkUser(t, addr, c.grants...)
			rep := check(t, redisstore.Options{Addrs: []string{addr}, Username: user, Password: "pw-check", Standalone: true})
			f := finding(t, rep, "scripting")
			if f.Level != redisstore.LevelFail || f.Value != "denied" || !strings.Contains(f.Meaning, c.meaning) {
				t.Errorf("scripting: %s", f)
			}
			if fails := failures(rep); len(fails) != 1 {
				t.Errorf("%d failures, want the one:\n%s", len(fails), strings.Join(fails, "\n"))
			}
			if a := finding(t, rep, "acl"); a.Level != c.acl {
				t.Errorf("acl: %s", a)
			}
		})
	}
}

// A server without Lua (here: EVAL and EVALSHA renamed away, as a server
// without a scripting engine answers) fails the check in one line.
func TestCheckServerWithoutLua(t *testing.T) {
	srv, err := redistest.StartServer("--rename-command", "EVAL", "", "--rename-command", "EVALSHA", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rep := check(t, redisstore.Options{Addrs: []string{srv.Addr}})
	f := finding(t, rep, "scripting")
	if f.Level != redisstore.LevelFail || f.Value != "no Lua" || !strings.Contains(f.Meaning, "the server runs no Lua scripts (unknown command 'EVAL'") {
		t.Fatalf("scripting: %s", f)
	}
	if fails := failures(rep); len(fails) != 1 {
		t.Errorf("%d failures:\n%s", len(fails), strings.Join(fails, "\n"))
	}
}

// What the user lacks is read with ACL DRYRUN where it may run that, else
// in a script with redis.acl_check_cmd; both find the same gaps, judged
// against what this store needs (WAIT only with Durability, SCAN a warning).
func TestCheckACLGaps(t *testing.T) {
	addr := redistest.Addr(t)
	full := redisstore.ACLGrants(redisstore.ACLWorker, redisstore.ACLDurability, redisstore.ACLReap, redisstore.ACLCheck)
	for _, how := range []struct {
		name  string
		extra []string
	}{{"redis.acl_check_cmd", nil}, {"ACL DRYRUN", []string{"+acl|dryrun", "+acl|whoami"}}} {
		for _, c := range []struct {
			name    string
			grants  []string
			durable bool
			level   redisstore.Level
			value   string
		}{
			{"all", full, true, redisstore.LevelOK, "ok"},
			{"no hdel", without(full, "+hdel"), false, redisstore.LevelFail, "lacks +hdel"},
			{"no hdel or set", without(full, "+hdel", "+set"), false, redisstore.LevelFail, "lacks +hdel +set"},
			{"no wait, with durability", without(full, "+wait"), true, redisstore.LevelFail, "lacks +wait"},
			{"no wait, without durability", without(full, "+wait"), false, redisstore.LevelOK, "ok"},
			{"no scan", without(full, "+scan"), false, redisstore.LevelWarn, "lacks +scan"},
		} {
			t.Run(how.name+"/"+c.name, func(t *testing.T) {
				user := checkUser(t, addr, append(slices.Clone(c.grants), how.extra...)...)
				opts := redisstore.Options{Addrs: []string{addr}, Username: user, Password: "pw-check", Standalone: true}
				if c.durable {
					opts.Durability = redisstore.Durability{Replicas: 1, Timeout: 10 * time.Millisecond}
				}
				f := finding(t, check(t, opts), "acl")
				if f.Level != c.level || f.Value != c.value {
					t.Fatalf("acl: %s; want %s %s", f, c.level, c.value)
				}
				if c.level == redisstore.LevelOK && !strings.Contains(f.Meaning, "(checked with "+how.name+")") {
					t.Fatalf("acl: %s; want it checked with %s", f, how.name)
				}
			})
		}
	}
}

// Durability against the server: replicas asked for and not connected fail;
// WAITAOF fails where the server has none or no append-only file; with a
// replica it says what WAIT counts on that server.
func TestCheckDurability(t *testing.T) {
	addr := redistest.Addr(t)
	d := func(n int, aof bool) redisstore.Options {
		return redisstore.Options{Addrs: []string{addr}, Durability: redisstore.Durability{Replicas: n, Timeout: 20 * time.Millisecond, AOF: aof}}
	}
	if f := finding(t, check(t, redisstore.Options{Addrs: []string{addr}}), "durability"); f.Level != redisstore.LevelWarn || f.Value != "off" {
		t.Errorf("off: %s", f)
	}
	if f := finding(t, check(t, d(1, false)), "durability"); f.Level != redisstore.LevelFail ||
		f.Value != "wait 1 20ms" || !strings.Contains(f.Meaning, "1 replica(s) asked for, 0 connected: every change fails") {
		t.Errorf("no replica: %s", f)
	}
	aof := finding(t, check(t, d(0, true)), "durability")
	want := "needs appendonly yes"
	if redistest.Kind(t) == redistest.KindRedis {
		v, _ := redistest.Command(addr, "INFO", "server")
		if strings.Contains(v, "redis_version:7.0.") || strings.Contains(v, "redis_version:7.1.") {
			want = "this server has no WAITAOF"
		}
	}
	if aof.Level != redisstore.LevelFail || !strings.Contains(aof.Meaning, want) {
		t.Errorf("aof: %s; want %q", aof, want)
	}

	master, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Stop)
	replica, err := redistest.StartServer("--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Stop)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if info, _ := redistest.Command(master.Addr, "INFO", "replication"); strings.Contains(info, "state=online") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica did not come online")
		}
	}
	rep := check(t, redisstore.Options{Addrs: []string{master.Addr}, Standalone: true,
		Durability: redisstore.Durability{Replicas: 1, Timeout: 20 * time.Millisecond}})
	f := finding(t, rep, "durability")
	semantics := "WAIT here counts the whole replication stream"
	if info, _ := redistest.Command(master.Addr, "INFO", "server"); strings.Contains(info, "server_name:valkey") ||
		!strings.Contains(info, "redis_version:7.0.") {
		semantics = "WAIT here counts only what its own connection wrote"
	}
	if f.Level != redisstore.LevelOK || !strings.Contains(f.Meaning, "each change waits for 1 of 1 replica(s); "+semantics) {
		t.Errorf("with a replica: %s", f)
	}
	if r := finding(t, rep, "connected_replicas"); r.Level != redisstore.LevelOK || r.Value != "1" {
		t.Errorf("replicas: %s", r)
	}
}

// On a cluster every master is checked, with its cluster_state; a master
// that does not answer is a failure of its own, and the check goes on.
func TestCheckCluster(t *testing.T) {
	rep := check(t, redisstore.Options{Addrs: redistest.ClusterAddrs(t)})
	if f := finding(t, rep, "topology"); f.Value != "cluster" {
		t.Fatalf("topology: %s", f)
	}
	if len(rep.Nodes) != 3 {
		t.Fatalf("%d masters checked", len(rep.Nodes))
	}
	for _, n := range rep.Nodes {
		if !slices.ContainsFunc(n.Findings, func(f redisstore.Finding) bool {
			return f.Setting == "cluster_state" && f.Value == "ok" && f.Level == redisstore.LevelOK
		}) {
			t.Errorf("%s: no cluster_state ok in %+v", n.Addr, n.Findings)
		}
	}

	nodes, err := redistest.StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		t.Cleanup(n.Stop)
	}
	s, err := redisstore.New(redisstore.Options{Addrs: []string{nodes[0].Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nodes[2].Kill()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if info, _ := redistest.Command(nodes[0].Addr, "CLUSTER", "INFO"); strings.Contains(info, "cluster_state:fail") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cluster did not notice its lost master")
		}
	}
	rep, err = s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var states, unreachable int
	for _, n := range rep.Nodes {
		for _, f := range n.Findings {
			switch {
			case f.Setting == "cluster_state" && f.Value == "fail" && f.Level == redisstore.LevelFail:
				states++
			case f.Setting == "reachable" && f.Level == redisstore.LevelFail && n.Addr == nodes[2].Addr:
				unreachable++
			}
		}
	}
	if states != 2 || unreachable != 1 {
		t.Fatalf("%d cluster_state fail, %d unreachable: %+v", states, unreachable, rep)
	}
}
