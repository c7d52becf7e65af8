package redisstore

import "strings"

// ACLUse says when the store's ACL user needs a command.
type ACLUse string

// The uses of the commands in ACL.
const (
	ACLWorker     ACLUse = "worker"     // every store: the handshake, the scripts, the reads
	ACLDurability ACLUse = "durability" // Durability.Replicas: WAIT
	ACLAOF        ACLUse = "aof"        // Durability.AOF: WAITAOF (Redis 7.2+, Valkey)
	ACLReap       ACLUse = "reap"       // the UI's list of runs: SCAN (reaping needs only a worker's commands)
	ACLAudit      ACLUse = "audit"      // Options.Audit and the audit exporter: the audit stream's lists and counts
	ACLCluster    ACLUse = "cluster"    // a cluster: discovery and the walk over its masters
	ACLCheck      ACLUse = "check"      // Check (toolcanon doctor): INFO, CONFIG GET, CLUSTER INFO
)

// ACLCommand is one command the store sends, itself or from its scripts.
type ACLCommand struct {
	Name string // as ACL SETUSER grants it: "hset", "cluster|slots"
	Use  ACLUse
	args []string // a call of it that ACL DRYRUN accepts; "{key}" is a key under the prefix
}

// acl is the least-privilege list: the README's ACL block is checked
// against it, and Check checks the user against it.
var acl = []ACLCommand{
	{"hello", ACLWorker, []string{"3"}},
	{"auth", ACLWorker, []string{"user", "password"}},
	{"ping", ACLWorker, nil},
	{"evalsha", ACLWorker, []string{"0000000000000000000000000000000000000000", "1", "{key}"}},
	{"eval", ACLWorker, []string{"return 1", "1", "{key}"}},
	{"hmget", ACLWorker, []string{"{key}", "f"}},
	{"hgetall", ACLWorker, []string{"{key}"}},
	{"pttl", ACLWorker, []string{"{key}"}},
	{"zrange", ACLWorker, []string{"{key}", "0", "-1"}},
	{"zcount", ACLWorker, []string{"{key}", "0", "1"}},
	{"time", ACLWorker, nil},
	{"hset", ACLWorker, []string{"{key}", "f", "v"}},
	{"hsetnx", ACLWorker, []string{"{key}", "f", "v"}},
	{"hget", ACLWorker, []string{"{key}", "f"}},
	{"hincrby", ACLWorker, []string{"{key}", "f", "1"}},
	{"hdel", ACLWorker, []string{"{key}", "f"}},
	{"exists", ACLWorker, []string{"{key}"}},
	{"zadd", ACLWorker, []string{"{key}", "0", "m"}},
	{"zrem", ACLWorker, []string{"{key}", "m"}},
	{"pexpiretime", ACLWorker, []string{"{key}"}},
	{"pexpireat", ACLWorker, []string{"{key}", "1"}},
	{"set", ACLWorker, []string{"{key}", "v"}},
	{"get", ACLWorker, []string{"{key}"}},                     // the cancel relay: a cancel's claim, read
	{"xadd", ACLWorker, []string{"{key}", "*", "k", "v"}},     // a cancel sent to every replica
	{"xread", ACLWorker, []string{"STREAMS", "{key}", "0-0"}}, // and read by each
	{"xrevrange", ACLWorker, []string{"{key}", "+", "-", "COUNT", "1"}},
	{"pexpire", ACLWorker, []string{"{key}", "1"}}, // the relay's stream kept as long as a cancel is heard
	{"wait", ACLDurability, []string{"1", "1"}},
	{"waitaof", ACLAOF, []string{"1", "1", "1"}},
	{"incrby", ACLAudit, []string{"{key}", "1"}},
	{"decrby", ACLAudit, []string{"{key}", "1"}},
	{"lpush", ACLAudit, []string{"{key}", "v"}},
	{"lindex", ACLAudit, []string{"{key}", "0"}},
	{"ltrim", ACLAudit, []string{"{key}", "0", "-1"}},
	{"lset", ACLAudit, []string{"{key}", "0", "v"}},
	{"rpush", ACLAudit, []string{"{key}", "v"}},        // an event appended
	{"lrange", ACLAudit, []string{"{key}", "0", "-1"}}, // the exporter's read of a run's events
	{"llen", ACLAudit, []string{"{key}"}},              // and its acknowledgement: the events left,
	{"zcard", ACLAudit, []string{"{key}"}},             // the runs left in the slot,
	{"del", ACLAudit, []string{"{key}"}},               // and the keys of nothing pending removed
	{"scan", ACLReap, []string{"0"}},
	{"cluster|slots", ACLCluster, nil},
	{"cluster|myid", ACLCluster, nil},
	{"info", ACLCheck, nil},
	{"config|get", ACLCheck, []string{"maxmemory-policy"}},
	{"cluster|info", ACLCheck, nil},
}

// ACL returns every command the store may send, with when it needs it:
// the least-privilege ACL of its user is the commands of the uses it has
// (ACLGrants).
func ACL() []ACLCommand { return append([]ACLCommand(nil), acl...) }

// ACLGrants returns "+name" for each command of the given uses, in the
// order of ACL: the command part of an ACL SETUSER.
func ACLGrants(uses ...ACLUse) []string {
	var out []string
	for _, c := range acl {
		for _, u := range uses {
			if c.Use == u {
				out = append(out, "+"+c.Name)
				break
			}
		}
	}
	return out
}

// call returns the command and its arguments, as ACL DRYRUN and
// redis.acl_check_cmd take them, with key standing for "{key}".
func (c ACLCommand) call(key string) []string {
	out := strings.Split(c.Name, "|")
	for _, a := range c.args {
		if a == "{key}" {
			a = key
		}
		out = append(out, a)
	}
	return out
}
