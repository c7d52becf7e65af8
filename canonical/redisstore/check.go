package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
)

// Level says how a server setting bears on the store's guarantees.
type Level string

// Levels of a Finding.
const (
	LevelOK      Level = "OK"      // the setting is what the guarantees assume
	LevelWarn    Level = "WARN"    // a guarantee is weaker than documented with this setting
	LevelFail    Level = "FAIL"    // a guarantee does not hold with this setting
	LevelUnknown Level = "UNKNOWN" // the user may not read the setting (ACL), or the server did not say
)

// Finding is one server setting and what it means for the guarantees.
type Finding struct {
	Setting string // "tls", "scripting", "acl", "maxmemory-policy", "appendonly", "durability", …
	Value   string // as the server reports it, or "unknown"
	Level   Level
	Meaning string // what the value means for the guarantees
}

// NodeReport is what Check found on one server (one master of a cluster).
type NodeReport struct {
	Addr     string
	Findings []Finding
}

// Report is what Check found: of the connection (TLS, topology), then of
// every server the store writes to.
type Report struct {
	Findings []Finding
	Nodes    []NodeReport
}

// Warnings counts the findings at LevelWarn.
func (r Report) Warnings() int { return r.count(LevelWarn) }

// Failures counts the findings at LevelFail: settings under which a
// guarantee does not hold.
func (r Report) Failures() int { return r.count(LevelFail) }

func (r Report) count(l Level) int {
	n := 0
	for _, f := range r.Findings {
		if f.Level == l {
			n++
		}
	}
	for _, node := range r.Nodes {
		for _, f := range node.Findings {
			if f.Level == l {
				n++
			}
		}
	}
	return n
}

// Check reads, on every server the store writes to, what its guarantees
// depend on: the version, whether scripts may run (Lua there, EVALSHA and
// EVAL allowed), which commands of ACL the user lacks, maxmemory-policy,
// persistence, the replicas and what WAIT counts there against
// Options.Durability, and a cluster's state; and of the connection, TLS.
// The ACL is read with ACL DRYRUN where the user may run it, else with
// redis.acl_check_cmd in a script, which changes nothing. A setting the user
// may not read is reported as unknown, not as an error. It fails with
// STORE_UNAVAILABLE only when no server answers.
func (s *Store) Check(ctx context.Context) (Report, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	nodes := s.c.Nodes()
	addrs := make([]string, 0, len(nodes))
	for a := range nodes {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	rep := Report{Findings: []Finding{s.tlsFinding(addrs), s.topologyFinding()}}
	answered := 0
	var lastErr error
	for _, addr := range addrs {
		n, err := s.checkNode(ctx, nodes[addr])
		switch {
		case err != nil:
			// A node the client knows that does not answer: on a cluster,
			// the runs in its slots cannot be served.
			lastErr = err
			n = NodeReport{Findings: []Finding{{Setting: "reachable", Value: "no", Level: LevelFail,
				Meaning: "this server does not answer (" + oneLine(rootError(err).Error()) + "): calls of the runs it holds fail (STORE_UNAVAILABLE)"}}}
		case n.Findings == nil:
			answered++
			continue // a replica: the store never writes there
		default:
			answered++
		}
		n.Addr = addr
		rep.Nodes = append(rep.Nodes, n)
	}
	if answered == 0 {
		if lastErr == nil {
			return Report{}, canonical.Errorf(canonical.CodeStoreUnavailable, "check: no server")
		}
		return Report{}, unavailable(lastErr, "check: no server answered")
	}
	if f, ok := s.auditFinding(ctx); ok {
		rep.Findings = append(rep.Findings, f)
	}
	return rep, nil
}

// AuditLagWarning is the export lag past which Check warns.
const AuditLagWarning = 10 * time.Minute

// auditFinding says how far the audit export is behind, when the store
// has audit on or an export has run on it.
func (s *Store) auditFinding(ctx context.Context) (Finding, bool) {
	st, err := s.AuditStatus(ctx)
	if err != nil {
		return Finding{Setting: "audit export", Value: "unknown", Level: LevelUnknown,
			Meaning: "the export's status could not be read: " + oneLine(rootError(err).Error())}, true
	}
	lag, ok := st.Lag(time.Now())
	switch {
	case !ok && s.audit == nil:
		return Finding{}, false
	case !ok:
		return Finding{Setting: "audit export", Value: "never", Level: LevelWarn,
			Meaning: "audit is on and no export pass has run: events wait in Redis until the backlog refuses new calls (AUDIT_BACKLOG)"}, true
	}
	f := Finding{Setting: "audit export", Value: fmt.Sprintf("lag %v, %d pending", lag.Round(time.Second), st.Pending), Level: LevelOK,
		Meaning: fmt.Sprintf("the last export pass was %v ago and exported %d events", time.Since(st.LastPass).Round(time.Second), st.Exported)}
	if lag > AuditLagWarning {
		f.Level = LevelWarn
		f.Meaning += fmt.Sprintf("; the export is over %v behind: is an exporter running and its sink up? Past the backlog, new calls are refused (AUDIT_BACKLOG)", AuditLagWarning)
	}
	return f, true
}

// tlsFinding says whether the connection is encrypted: plain TCP beyond
// loopback shows the password and every record to the network.
func (s *Store) tlsFinding(addrs []string) Finding {
	f := Finding{Setting: "tls", Value: "off", Level: LevelOK}
	if s.tls != nil {
		f.Value = "on"
		f.Meaning = "connections are encrypted and the server's certificate is verified"
		if s.tls.InsecureSkipVerify {
			f.Level, f.Meaning = LevelWarn, "connections are encrypted, but the server's certificate is not verified: "+
				"anyone on the path can pose as the server"
		}
		if len(s.tls.Certificates) > 0 || s.tls.GetClientCertificate != nil {
			f.Meaning += "; a client certificate is presented"
		}
		return f
	}
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if ip := net.ParseIP(host); err != nil || host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			f.Level, f.Meaning = LevelWarn, "plain TCP beyond loopback: the password and every record cross the network "+
				"readable; use rediss:// (TLS)"
			return f
		}
	}
	f.Meaning = "plain TCP, on loopback only"
	return f
}

// topologyFinding names how the store reaches its servers.
func (s *Store) topologyFinding() Finding {
	f := Finding{Setting: "topology", Value: string(s.c.Mode()), Level: LevelOK}
	switch s.c.Mode() {
	case rueidis.ClientModeCluster:
		f.Meaning = "a Redis Cluster: each run's keys share one hash tag, so every script runs on one master"
	case rueidis.ClientModeSentinel:
		f.Meaning = "the master Redis Sentinel names, followed through failovers"
	default:
		f.Meaning = "one server"
	}
	return f
}

// Replies of checkNode's pipeline, by position.
const (
	rPing = iota
	rServer
	rRepl
	rPolicy
	rAOF
	rSave
	rFsync
	rEval
	rEvalsha
	rWhoami
	rClusterInfo
)

// zeroSHA names no script: EVALSHA answers NOSCRIPT where it is allowed.
const zeroSHA = "0000000000000000000000000000000000000000"

func (s *Store) checkNode(ctx context.Context, c rueidis.Client) (NodeReport, error) {
	cmds := rueidis.Commands{
		c.B().Ping().Build(),
		c.B().Info().Section("server").Build(),
		c.B().Info().Section("replication").Build(),
		c.B().ConfigGet().Parameter("maxmemory-policy").Build(),
		c.B().ConfigGet().Parameter("appendonly").Build(),
		c.B().ConfigGet().Parameter("save").Build(),
		c.B().ConfigGet().Parameter("appendfsync").Build(),
		c.B().Eval().Script("return 1").Numkeys(0).Build(),
		c.B().Evalsha().Sha1(zeroSHA).Numkeys(0).Build(),
		c.B().AclWhoami().Build(),
	}
	if s.c.Mode() == rueidis.ClientModeCluster {
		cmds = append(cmds, c.B().ClusterInfo().Build())
	}
	res := c.DoMulti(ctx, cmds...)
	if err := res[rPing].Error(); err != nil {
		var rerr *rueidis.RedisError
		if !errors.As(err, &rerr) {
			return NodeReport{}, err // nothing answered
		}
	}
	server, serverOK := infoFields(res[rServer])
	repl, replOK := infoFields(res[rRepl])
	if replOK && (repl["role"] == "slave" || repl["role"] == "replica") {
		return NodeReport{}, nil
	}
	var n NodeReport
	add := func(setting, value string, level Level, meaning string) {
		n.Findings = append(n.Findings, Finding{Setting: setting, Value: value, Level: level, Meaning: meaning})
	}
	srv := serverOf(server)

	if v := server["redis_version"]; serverOK && v != "" {
		if srv.atLeast(7, 0) {
			add("redis_version", v, LevelOK, "scripts see one clock and expire keys as of their start")
		} else {
			add("redis_version", v, LevelWarn, "older than 7.0, which the store is tested on: a script may see a key expire while it runs")
		}
	} else {
		add("redis_version", "unknown", LevelUnknown, "INFO is not allowed for this user")
	}

	scripts := scriptingOf(res[rEval], res[rEvalsha])
	add("scripting", scripts.value, scripts.level, scripts.meaning)
	acl, err := s.aclOf(ctx, c, res[rWhoami], scripts.eval == probeAllowed)
	if err != nil {
		return NodeReport{}, err
	}
	n.Findings = append(n.Findings, s.aclFinding(acl, c.Mode()))

	switch v, ok := configValue(res[rPolicy], "maxmemory-policy"); {
	case !ok:
		add("maxmemory-policy", "unknown", LevelUnknown, "CONFIG GET is not allowed for this user; the guarantees assume noeviction")
	case v == "noeviction":
		add("maxmemory-policy", v, LevelOK, "a full server refuses writes (STORE_UNAVAILABLE) rather than evict records or run state")
	default:
		add("maxmemory-policy", v, LevelFail, "under memory pressure Redis may evict any key (every key has a TTL): "+
			"an evicted record is gone, and some evictions of a run's keys go undetected (see the README's loss table), "+
			"so a run may restart with fresh budgets; set noeviction")
	}

	aof, aofOK := configValue(res[rAOF], "appendonly")
	fsync, _ := configValue(res[rFsync], "appendfsync")
	switch {
	case !aofOK:
		add("appendonly", "unknown", LevelUnknown, "CONFIG GET is not allowed for this user")
	case aof == "yes" && fsync == "no":
		add("appendonly", "yes, fsync no", LevelWarn, "appendfsync no: the system decides when the append-only file "+
			"reaches the disk, so a crash of the machine loses recent acknowledged writes; use everysec or always")
	case aof == "yes":
		add("appendonly", aof, LevelOK, "acknowledged writes survive a restart, up to the appendfsync policy ("+fsync+")")
	default:
		add("appendonly", aof, LevelWarn, "no append-only file: a restart keeps at most the last RDB snapshot")
	}
	switch v, ok := configValue(res[rSave], "save"); {
	case !ok:
		add("save", "unknown", LevelUnknown, "CONFIG GET is not allowed for this user")
	case v != "":
		add("save", v, LevelOK, "RDB snapshots: a restart without appendonly loses the writes since the last one")
	case aof == "yes":
		add("save", `""`, LevelOK, "no RDB snapshots; the append-only file keeps the writes")
	default:
		add("save", `""`, LevelWarn, "no persistence at all: a restart loses every record and run")
	}

	replicas := -1
	if v, ok := repl["connected_slaves"]; replOK && ok {
		replicas, _ = strconv.Atoi(v)
		if replicas > 0 {
			add("connected_replicas", v, LevelOK, "a failover keeps what reached a replica; Options.Durability makes "+
				"every acknowledged change be there")
		} else {
			add("connected_replicas", v, LevelWarn, "no replica: losing this server loses every record, and "+
				"Options.Durability cannot be met")
		}
	} else {
		add("connected_replicas", "unknown", LevelUnknown, "INFO is not allowed for this user")
	}
	n.Findings = append(n.Findings, s.durabilityFinding(srv, serverOK, replicas, aof, aofOK))

	if len(res) > rClusterInfo {
		if info, ok := infoFields(res[rClusterInfo]); !ok {
			add("cluster_state", "unknown", LevelUnknown, "CLUSTER INFO is not allowed for this user")
		} else if st := info["cluster_state"]; st == "ok" {
			add("cluster_state", st, LevelOK, "every slot is served")
		} else {
			add("cluster_state", st, LevelFail, "the cluster does not serve every slot: calls of runs in the slots "+
				"it lacks fail (STORE_UNAVAILABLE) until it is whole again")
		}
	}
	return n, nil
}

// serverInfo is what kind of server answered, and its version.
type serverInfo struct {
	valkey       bool
	major, minor int
}

func serverOf(info map[string]string) serverInfo {
	si := serverInfo{valkey: info["server_name"] == "valkey" || info["valkey_version"] != ""}
	parts := strings.SplitN(info["redis_version"], ".", 3)
	si.major, _ = strconv.Atoi(parts[0])
	if len(parts) > 1 {
		si.minor, _ = strconv.Atoi(parts[1])
	}
	return si
}

func (si serverInfo) atLeast(major, minor int) bool {
	return si.major > major || si.major == major && si.minor >= minor
}

// waitPerConnection reports whether WAIT counts only what its own
// connection propagated (Redis 7.2+, Valkey), and WAITAOF exists.
func (si serverInfo) waitPerConnection() bool { return si.valkey || si.atLeast(7, 2) }

// durabilityFinding says what Options.Durability asks of this server, and
// whether it can answer.
func (s *Store) durabilityFinding(si serverInfo, known bool, replicas int, aof string, aofKnown bool) Finding {
	d := s.durable
	f := Finding{Setting: "durability", Level: LevelOK}
	semantics := "WAIT here counts the whole replication stream"
	if si.waitPerConnection() {
		semantics = "WAIT here counts only what its own connection wrote, and each script that succeeds writes on the connection that waits"
	}
	switch {
	case !d.waits():
		f.Value, f.Level = "off", LevelWarn
		f.Meaning = "a change is acknowledged before any replica has it: a failover can lose it, and the same call can " +
			"then run again; ask for replicas (durability-replicas)"
		return f
	case d.AOF:
		f.Value = fmt.Sprintf("waitaof 1 %d %v", d.Replicas, d.Timeout)
	default:
		f.Value = fmt.Sprintf("wait %d %v", d.Replicas, d.Timeout)
	}
	switch {
	case d.AOF && known && !si.waitPerConnection():
		f.Level, f.Meaning = LevelFail, "this server has no WAITAOF (Redis 7.2+ or Valkey): every change fails (STORE_UNAVAILABLE)"
	case d.AOF && aofKnown && aof != "yes":
		f.Level, f.Meaning = LevelFail, "WAITAOF needs appendonly yes here: every change fails (STORE_UNAVAILABLE)"
	case replicas >= 0 && replicas < d.Replicas:
		f.Level = LevelFail
		f.Meaning = fmt.Sprintf("%d replica(s) asked for, %d connected: every change fails (STORE_UNAVAILABLE) "+
			"although it is made on the master", d.Replicas, replicas)
	case replicas < 0 || !known:
		f.Level, f.Meaning = LevelUnknown, "INFO is not allowed for this user: the replicas and WAIT's semantics are unknown"
	default:
		f.Meaning = fmt.Sprintf("each change waits for %d of %d replica(s); %s", d.Replicas, replicas, semantics)
	}
	return f
}

// probe is what a server answered a command the check sent to find out
// whether the user may run it.
type probe int

const (
	probeUnknown probe = iota // some other error: the server did not say
	probeAllowed
	probeDenied  // NOPERM: the ACL denies it
	probeMissing // the server does not know the command
)

func probeOf(r rueidis.RedisResult) (probe, string) {
	err := r.Error()
	if err == nil {
		return probeAllowed, ""
	}
	rerr, ok := rueidis.IsRedisErr(err)
	switch {
	case !ok:
		return probeUnknown, err.Error()
	case rerr.IsNoScript():
		return probeAllowed, ""
	case strings.HasPrefix(rerr.Error(), "NOPERM"):
		return probeDenied, rerr.Error()
	case strings.Contains(strings.ToLower(rerr.Error()), "unknown command"):
		return probeMissing, rerr.Error()
	}
	return probeUnknown, rerr.Error()
}

// scripting is the scripting finding, and the probe of EVAL.
type scripting struct {
	eval           probe
	value, meaning string
	level          Level
}

// scriptingOf judges EVAL "return 1" 0 and EVALSHA of no script: the store
// runs every state change with EVALSHA, and with EVAL when the server does
// not hold the script (after a restart, a failover, SCRIPT FLUSH).
func scriptingOf(eval, evalsha rueidis.RedisResult) scripting {
	e, emsg := probeOf(eval)
	h, hmsg := probeOf(evalsha)
	const broken = "no state change can be made: every call fails with STORE_UNAVAILABLE and no tool runs"
	switch {
	case e == probeMissing || h == probeMissing:
		msg := emsg
		if e != probeMissing {
			msg = hmsg
		}
		return scripting{e, "no Lua", "the server runs no Lua scripts (" + oneLine(msg) + "): " + broken +
			"; use a server with Lua (Redis 7+, or Valkey with its Lua engine)", LevelFail}
	case h == probeDenied && e == probeDenied:
		return scripting{e, "denied", "the ACL user may not run EVALSHA or EVAL: " + broken + "; grant +evalsha +eval", LevelFail}
	case h == probeDenied:
		return scripting{e, "denied", "the ACL user may not run EVALSHA: " + broken + "; grant +evalsha", LevelFail}
	case e == probeDenied:
		return scripting{e, "denied", "the ACL user may not run EVAL, which loads a script the server does not hold " +
			"(after a restart, a failover or SCRIPT FLUSH): then " + broken + "; grant +eval", LevelFail}
	case e == probeAllowed && h == probeAllowed:
		return scripting{e, "available", "EVALSHA and EVAL run the store's scripts", LevelOK}
	}
	return scripting{e, "unknown", "EVAL or EVALSHA failed: " + oneLine(emsg+" "+hmsg), LevelUnknown}
}

// rootError is the innermost error err wraps.
func rootError(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// oneLine keeps a server's message to one short line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// aclReport is what the user may run of ACL.
type aclReport struct {
	user    string
	how     string           // "ACL DRYRUN" or "redis.acl_check_cmd"; "" when neither could run
	allowed map[string]probe // by command name
}

// aclCheckScript answers, for each command of ARGV (its argument count,
// then the command and its arguments), 1 when the user may run it, 0 when
// not, -1 when the server does not know it. It reads and writes nothing.
const aclCheckScript = `local out, i = {}, 1
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local ok, allowed = pcall(redis.acl_check_cmd, unpack(ARGV, i + 1, i + n))
  if not ok then out[#out + 1] = -1 elseif allowed then out[#out + 1] = 1 else out[#out + 1] = 0 end
  i = i + n + 1
end
return out`

// aclOf finds which commands of acl the user may run: with ACL DRYRUN when
// it may run that, else with aclCheckScript when it may run EVAL.
func (s *Store) aclOf(ctx context.Context, c rueidis.Client, whoami rueidis.RedisResult, evalOK bool) (aclReport, error) {
	rep := aclReport{user: s.user, allowed: map[string]probe{}}
	key := s.keys.Run("toolcanon-doctor")
	if name, err := whoami.ToString(); err == nil {
		rep.user = name
		cmds := make(rueidis.Commands, 0, len(acl))
		for _, cmd := range acl {
			cmds = append(cmds, c.B().Arbitrary("ACL", "DRYRUN", name).Args(cmd.call(key)...).Build())
		}
		res := c.DoMulti(ctx, cmds...)
		ok := true
		for i, r := range res {
			v, err := r.ToString()
			switch {
			case err == nil && v == "OK":
				rep.allowed[acl[i].Name] = probeAllowed
			case err == nil:
				rep.allowed[acl[i].Name] = probeDenied
			default:
				if rerr, isRedis := rueidis.IsRedisErr(err); !isRedis {
					return rep, err
				} else if strings.HasPrefix(rerr.Error(), "NOPERM") {
					ok = false // the user may not run ACL DRYRUN
				} else {
					rep.allowed[acl[i].Name] = probeMissing
				}
			}
		}
		if ok {
			rep.how = "ACL DRYRUN"
			return rep, nil
		}
	}
	if !evalOK {
		return rep, nil
	}
	var args []string
	for _, cmd := range acl {
		call := cmd.call(key)
		args = append(append(args, strconv.Itoa(len(call))), call...)
	}
	res := c.Do(ctx, c.B().Eval().Script(aclCheckScript).Numkeys(0).Arg(args...).Build())
	vals, err := res.AsIntSlice()
	if err != nil {
		if _, isRedis := rueidis.IsRedisErr(err); !isRedis {
			return rep, err
		}
		return rep, nil // redis.acl_check_cmd is Redis 7.0+
	}
	if len(vals) != len(acl) {
		return rep, nil
	}
	for i, v := range vals {
		rep.allowed[acl[i].Name] = map[int64]probe{1: probeAllowed, 0: probeDenied, -1: probeMissing}[v]
	}
	rep.how = "redis.acl_check_cmd"
	return rep, nil
}

// aclFinding judges what the user lacks against what this store needs:
// the worker's commands always (EVAL and EVALSHA are the scripting
// finding's), WAIT or WAITAOF with Durability, the cluster's commands on a
// cluster; SCAN only warns, since only reaping and listing runs need it.
func (s *Store) aclFinding(rep aclReport, mode rueidis.ClientMode) Finding {
	f := Finding{Setting: "acl"}
	who := "the user"
	if rep.user != "" {
		who = "user " + strconv.Quote(rep.user)
	}
	if rep.how == "" {
		f.Value, f.Level = "unknown", LevelUnknown
		f.Meaning = who + " may run neither ACL DRYRUN nor EVAL, so its commands cannot be checked"
		return f
	}
	needs := map[ACLUse]bool{ACLWorker: true, ACLCluster: mode == rueidis.ClientModeCluster, ACLAudit: s.audit != nil,
		ACLAOF: s.durable.AOF, ACLDurability: s.durable.Replicas > 0 && !s.durable.AOF}
	var lacks, warns, unknown []string
	for _, c := range acl {
		if c.Name == "eval" || c.Name == "evalsha" {
			continue
		}
		switch p := rep.allowed[c.Name]; {
		case needs[c.Use] && p == probeDenied:
			lacks = append(lacks, "+"+c.Name)
		case needs[c.Use] && p == probeMissing:
			unknown = append(unknown, strings.ToUpper(c.Name))
		case c.Use == ACLReap && p == probeDenied:
			warns = append(warns, "+"+c.Name)
		}
	}
	switch {
	case len(lacks) > 0:
		f.Value, f.Level = "lacks "+strings.Join(lacks, " "), LevelFail
		f.Meaning = who + " may not run " + strings.Join(lacks, " ") + ": the store's commands or scripts that need " +
			"them fail with NOPERM (STORE_UNAVAILABLE); grant them (the README's ACL)"
	case len(unknown) > 0:
		f.Value, f.Level = "unknown commands", LevelFail
		f.Meaning = "the server does not know " + strings.Join(unknown, " ") + ", which the store needs (Redis 7.0+)"
	case len(warns) > 0:
		f.Value, f.Level = "lacks "+strings.Join(warns, " "), LevelWarn
		f.Meaning = who + " may not run " + strings.Join(warns, " ") + ": calls run and are reaped, but the UI's " +
			"list of runs fails"
	default:
		f.Value, f.Level = "ok", LevelOK
		f.Meaning = who + " may run every command this store sends (checked with " + rep.how + ")"
	}
	return f
}

// infoFields parses an INFO reply; ok is false when the user may not run
// INFO.
func infoFields(r rueidis.RedisResult) (map[string]string, bool) {
	text, err := r.ToString()
	if err != nil {
		return nil, false
	}
	// In RESP3 a server may send the text as a verbatim string, which
	// rueidis gives with its format ("txt:").
	return parseInfo(strings.TrimPrefix(text, "txt:")), true
}

// parseInfo reads the "key:value" lines of an INFO reply, in one pass;
// section headers ("# Server") and other lines are skipped, and a later
// line wins over an earlier one with the same key.
func parseInfo(text string) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, found := strings.Cut(line, ":"); found && k != "" {
			m[k] = v
		}
	}
	return m
}

// configValue reads one parameter from a CONFIG GET reply (a map in RESP3,
// a flat array in RESP2); ok is false when the user may not run CONFIG.
func configValue(r rueidis.RedisResult, name string) (string, bool) {
	if m, err := r.AsStrMap(); err == nil {
		v, ok := m[name]
		return v, ok
	}
	if a, err := r.AsStrSlice(); err == nil {
		for i := 0; i+1 < len(a); i += 2 {
			if a[i] == name {
				return a[i+1], true
			}
		}
	}
	return "", false
}

// String renders a finding as one line.
func (f Finding) String() string {
	return fmt.Sprintf("%-7s %-18s %-14s %s", f.Level, f.Setting, f.Value, f.Meaning)
}
