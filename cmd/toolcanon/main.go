// Command toolcanon runs the demo of the tool-call boundary, lets an
// operator inspect a run, check a Redis server and close out calls whose
// worker died, and runs the MCP gateway in front of upstream MCP servers.
//
//	toolcanon demo    [--redis ADDR[,ADDR...]] [--raw] [--trace]
//	toolcanon inspect --redis ADDR[,ADDR...] --run RUN [--call ID] [--raw] [--json] [--principal P]
//	toolcanon doctor  --redis ADDR[,ADDR...] [--json]
//	toolcanon reap    --redis ADDR[,ADDR...] --run RUN [--max N]
//	toolcanon reap    --redis ADDR[,ADDR...] --all [--once] [--interval D] [--batch N] [--max N]
//	toolcanon abandon --redis ADDR[,ADDR...] --run RUN --call ID
//	toolcanon gateway --config FILE [--stdio] [--listen ADDR] [--sessions] [--redis ADDR[,ADDR...]]
//	                  [--trace-file FILE | --trace-stdout]
//	toolcanon gateway pin|check --config FILE
//	toolcanon run-token --config FILE --run RUN --principal P [--ttl 1h]
//	toolcanon ui      --redis ADDR[,ADDR...] [--cluster] [--listen 127.0.0.1:7474] [--show-raw] [--allow-actions]
//	toolcanon audit   export|verify|tail|keygen ...
//
// Exit codes: 0 success, 1 the store failed (unreachable), 2 bad usage,
// 3 nothing found, 4 the store refused the change (a lease still runs, the
// call is already complete).
package main

import (
	"fmt"
	"io"
	"os"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitNotFound = 3
	exitRefused  = 4
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "demo":
		return demoCmd(args[1:], stdout, stderr)
	case "inspect":
		return inspectCmd(args[1:], stdout, stderr)
	case "doctor":
		return doctorCmd(args[1:], stdout, stderr)
	case "reap":
		return reapCmd(args[1:], stdout, stderr)
	case "abandon":
		return abandonCmd(args[1:], stdout, stderr)
	case "gateway":
		return gatewayCmd(args[1:], stdout, stderr)
	case "run-token":
		return runTokenCmd(args[1:], stdout, stderr)
	case "ui":
		return uiCmd(args[1:], stdout, stderr)
	case "audit":
		return auditCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "toolcanon: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `toolcanon: one boundary for every tool call, one canonical record of each.

Usage:
  toolcanon demo    [--redis ADDR[,ADDR...]] [--raw] [--trace]
      Run a scripted agent run through the boundary and show what the agent
      saw and what the store holds. Default store: in memory (no setup).
      --trace also prints the run's OpenTelemetry span tree.
  toolcanon inspect --redis ADDR[,ADDR...] --run RUN [--call ID] [--raw] [--json] [--principal P]
      Show a run's settings, records and completion index. Raw payloads only with --raw.
      With --principal, only a run that belongs to P is shown (else exit 4).
  toolcanon doctor  --redis ADDR[,ADDR...] [--json]
      Report what the guarantees assume, and what each finding means: TLS,
      scripting (Lua, EVALSHA and EVAL allowed), the ACL user's commands,
      maxmemory-policy, persistence, replicas and Durability, cluster state.
      Exit 1 when one breaks a guarantee.
  toolcanon reap    --redis ADDR[,ADDR...] --run RUN [--max N]
      Abandon every call of the run whose lease has passed (its worker died):
      each becomes ERROR/EXECUTION_ABANDONED. Prints what it did.
  toolcanon reap    --redis ADDR[,ADDR...] --all [--once] [--interval 30s] [--batch 256] [--max 10000]
      The same for every run of the store, found through the due set of each
      slot: a pass every --interval, logged, until SIGINT or SIGTERM; --once
      makes one pass and prints it. Any number may run at once: the store
      sees one pass per interval between them.
  toolcanon abandon --redis ADDR[,ADDR...] --run RUN --call ID
      Abandon one call whose lease has passed.
  toolcanon gateway --config FILE [--stdio] [--listen ADDR] [--sessions] [--redis ADDR[,ADDR...]]
      Put toolcanon in front of MCP servers: every tools/call of an agent
      through the boundary. "toolcanon gateway help" for pin, check and
      tracing (--trace-file FILE, --trace-stdout).
  toolcanon run-token --config FILE --run RUN --principal P [--ttl 1h]
      Print a signed token that lets principal P use run RUN through the
      gateway of that configuration (its identity.run_token: the audience
      and the "mint" key); or, without the configuration, --key-file FILE
      --key-id ID --audience AUD.
  toolcanon ui      --redis ADDR[,ADDR...] [--cluster] [--listen 127.0.0.1:7474] [--show-raw] [--allow-actions]
      Serve the operator UI on loopback: runs, a run's calls, a call. "toolcanon ui -h" for more.
  toolcanon audit   export|verify|tail|keygen ...
      Drain the audit stream to a JSONL directory or PostgreSQL, check an
      export offline, follow it. "toolcanon audit help" for more.

Connection flags (every command; the gateway's configuration takes them as its "redis" object):
  --redis URL      rediss://[user@]host:port (TLS), redis://[user@]host:port, or
                   host:port[,host:port...] (several: cluster seeds, or the sentinels)
  --user NAME      Redis ACL user, when the URL names none
  --password-file FILE, --password-env NAME
                   where the password is; default $TOOLCANON_REDIS_PASSWORD.
                   --password and a password in the URL are refused: a command
                   line shows in ps output and shell history.
  --tls-ca-file, --tls-cert-file, --tls-key-file FILE, --tls-server-name NAME
                   the CA that signed the server's certificate (default: the
                   system's roots), a client certificate and its key, and the
                   name the server's certificate carries
  --standalone | --cluster | --sentinel-master NAME
                   skip cluster discovery (an ACL user that may not run CLUSTER),
                   require a cluster, or find the master through Redis Sentinel
  --durability-replicas N, --durability-timeout D, --durability-aof
                   wait until N replicas (and their append-only files) have
                   each change
  --prefix P       key prefix (default tc); --redis-timeout D bounds each store call

Exit codes: 0 ok, 1 store failure, 2 bad usage, 3 not found, 4 refused (lease still running, call complete, another principal's run).
`)
}
