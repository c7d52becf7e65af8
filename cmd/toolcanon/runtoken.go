package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/toolcanon/toolcanon/gateway"
)

// runTokenCmd mints a signed run token for the gateway (gateway.MintRunToken).
func runTokenCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run-token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyFile := fs.String("key-file", "", "file holding the key the gateway verifies with (required)")
	runID := fs.String("run", "", "run id (required)")
	principal := fs.String("principal", "", "the principal the run belongs to (required)")
	ttl := fs.Duration("ttl", time.Hour, "how long the token is valid (at most "+gateway.MaxRunTokenTTL.String()+")")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *keyFile == "" || *runID == "" || *principal == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "toolcanon run-token: --key-file, --run and --principal are required")
		return exitUsage
	}
	rc := gateway.RunTokenConfig{KeyFile: *keyFile}
	key, err := rc.Key()
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon run-token: %v\n", err)
		return exitUsage
	}
	tok, err := gateway.MintRunToken(key, *runID, *principal, *ttl, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon run-token: %v\n", err)
		return exitUsage
	}
	fmt.Fprintln(stdout, tok)
	return exitOK
}
