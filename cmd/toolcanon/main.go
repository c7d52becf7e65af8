// Command toolcanon runs the demo of the tool-call boundary and lets an
// operator inspect the canonical records of a run.
//
//	toolcanon demo    [--redis ADDR[,ADDR...]] [--raw]
//	toolcanon inspect --redis ADDR[,ADDR...] --run RUN [--call ID] [--raw] [--json]
//
// Exit codes: 0 success, 1 the store failed (unreachable, refused), 2 bad
// usage, 3 nothing found.
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
  toolcanon demo    [--redis ADDR[,ADDR...]] [--raw]
      Run a scripted agent run through the boundary and show what the agent
      saw and what the store holds. Default store: in memory (no setup).
  toolcanon inspect --redis ADDR[,ADDR...] --run RUN [--call ID] [--raw] [--json]
      Show a run's records and completion index. Raw payloads only with --raw.

Common flags:
  --redis ADDR     Redis address, or several cluster nodes separated by commas
  --user, --prefix  Redis ACL user, and key prefix (default tc)
  --password-file FILE
                   file holding the Redis password; without it the password
                   comes from $TOOLCANON_REDIS_PASSWORD. --password is refused:
                   a command line shows in ps output and shell history.

Exit codes: 0 ok, 1 store failure, 2 bad usage, 3 not found.
`)
}
