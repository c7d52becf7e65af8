package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

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
	Setting string // "redis_version", "maxmemory-policy", "appendonly", "save", "connected_replicas"
	Value   string // as the server reports it, or "unknown"
	Level   Level
	Meaning string // what the value means for the guarantees
}

// NodeReport is what Check found on one server (one master of a cluster).
type NodeReport struct {
	Addr     string
	Findings []Finding
}

// Report is what Check found on every server the store writes to.
type Report struct {
	Nodes []NodeReport
}

// Warnings counts the findings at LevelWarn.
func (r Report) Warnings() int { return r.count(LevelWarn) }

// Failures counts the findings at LevelFail: settings under which a
// guarantee does not hold.
func (r Report) Failures() int { return r.count(LevelFail) }

func (r Report) count(l Level) int {
	n := 0
	for _, node := range r.Nodes {
		for _, f := range node.Findings {
			if f.Level == l {
				n++
			}
		}
	}
	return n
}

// Check reads the settings of every server the store writes to that its
// guarantees depend on: the Redis version, maxmemory-policy, persistence
// (appendonly, save) and the replicas connected. It needs INFO and CONFIG
// GET; a setting the user may not read (an ACL without those commands) is
// reported as unknown, not as an error. It fails with STORE_UNAVAILABLE only
// when no server answers.
func (s *Store) Check(ctx context.Context) (Report, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	nodes := s.c.Nodes()
	addrs := make([]string, 0, len(nodes))
	for a := range nodes {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	var rep Report
	for _, addr := range addrs {
		n, err := checkNode(ctx, nodes[addr])
		if err != nil {
			return Report{}, unavailable(err, "check "+addr)
		}
		if n.Findings == nil {
			continue // a replica: the store never writes there
		}
		n.Addr = addr
		rep.Nodes = append(rep.Nodes, n)
	}
	if len(rep.Nodes) == 0 {
		return Report{}, canonical.Errorf(canonical.CodeStoreUnavailable, "check: no master answered")
	}
	return rep, nil
}

func checkNode(ctx context.Context, c rueidis.Client) (NodeReport, error) {
	res := c.DoMulti(ctx,
		c.B().Ping().Build(),
		c.B().Info().Section("server").Build(),
		c.B().Info().Section("replication").Build(),
		c.B().ConfigGet().Parameter("maxmemory-policy").Build(),
		c.B().ConfigGet().Parameter("appendonly").Build(),
		c.B().ConfigGet().Parameter("save").Build())
	if err := res[0].Error(); err != nil {
		var rerr *rueidis.RedisError
		if !errors.As(err, &rerr) {
			return NodeReport{}, err // nothing answered
		}
	}
	server, serverOK := infoFields(res[1])
	repl, replOK := infoFields(res[2])
	if replOK && (repl["role"] == "slave" || repl["role"] == "replica") {
		return NodeReport{}, nil
	}
	var n NodeReport
	add := func(setting, value string, level Level, meaning string) {
		n.Findings = append(n.Findings, Finding{Setting: setting, Value: value, Level: level, Meaning: meaning})
	}

	if v := server["redis_version"]; serverOK && v != "" {
		if major, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0]); major >= 7 {
			add("redis_version", v, LevelOK, "scripts see one clock and expire keys as of their start")
		} else {
			add("redis_version", v, LevelWarn, "older than 7.0, which the store is tested on: a script may see a key expire while it runs")
		}
	} else {
		add("redis_version", "unknown", LevelUnknown, "INFO is not allowed for this user")
	}

	switch v, ok := configValue(res[3], "maxmemory-policy"); {
	case !ok:
		add("maxmemory-policy", "unknown", LevelUnknown, "CONFIG GET is not allowed for this user; the guarantees assume noeviction")
	case v == "noeviction":
		add("maxmemory-policy", v, LevelOK, "a full server refuses writes (STORE_UNAVAILABLE) rather than evict records or run state")
	default:
		add("maxmemory-policy", v, LevelFail, "under memory pressure Redis may evict any key (every key has a TTL): "+
			"an evicted record is gone, and some evictions of a run's keys go undetected (see the README's loss table), "+
			"so a run may restart with fresh budgets; set noeviction")
	}

	aof, aofOK := configValue(res[4], "appendonly")
	switch {
	case !aofOK:
		add("appendonly", "unknown", LevelUnknown, "CONFIG GET is not allowed for this user")
	case aof == "yes":
		add("appendonly", aof, LevelOK, "acknowledged writes survive a restart, up to the appendfsync policy")
	default:
		add("appendonly", aof, LevelWarn, "no append-only file: a restart keeps at most the last RDB snapshot")
	}
	switch v, ok := configValue(res[5], "save"); {
	case !ok:
		add("save", "unknown", LevelUnknown, "CONFIG GET is not allowed for this user")
	case v != "":
		add("save", v, LevelOK, "RDB snapshots: a restart without appendonly loses the writes since the last one")
	case aof == "yes":
		add("save", `""`, LevelOK, "no RDB snapshots; the append-only file keeps the writes")
	default:
		add("save", `""`, LevelWarn, "no persistence at all: a restart loses every record and run")
	}

	if v, ok := repl["connected_slaves"]; replOK && ok {
		if r, _ := strconv.Atoi(v); r > 0 {
			add("connected_replicas", v, LevelOK, "a failover keeps what reached a replica; Options.Durability makes "+
				"every acknowledged change be there")
		} else {
			add("connected_replicas", v, LevelWarn, "no replica: losing this server loses every record, and "+
				"Options.Durability cannot be met")
		}
	} else {
		add("connected_replicas", "unknown", LevelUnknown, "INFO is not allowed for this user")
	}
	return n, nil
}

// infoFields parses an INFO reply; ok is false when the user may not run
// INFO.
func infoFields(r rueidis.RedisResult) (map[string]string, bool) {
	text, err := r.ToString()
	if err != nil {
		return nil, false
	}
	return parseInfo(text), true
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
