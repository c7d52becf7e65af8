package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/toolcanon/toolcanon/gateway"
)

// runTokenCmd mints a signed run token for the gateway (gateway.MintRunToken):
// with the audience and the minting key of a gateway's configuration, or
// with a key file, its id and an audience given apart.
func runTokenCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run-token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "the gateway's configuration: its identity.run_token gives the audience and the key to sign with")
	keyFile := fs.String("key-file", "", "without --config: file holding the key to sign with")
	keyID := fs.String("key-id", "", "without --config: the id the gateway knows that key by")
	audience := fs.String("audience", "", "without --config: the gateway's identity.run_token.audience")
	runID := fs.String("run", "", "run id (required)")
	principal := fs.String("principal", "", "the principal the run belongs to (required)")
	ttl := fs.Duration("ttl", time.Hour, "how long the token is valid (at most "+gateway.MaxRunTokenTTL.String()+")")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	apart := *keyFile != "" || *keyID != "" || *audience != ""
	if *runID == "" || *principal == "" || fs.NArg() != 0 || (*config == "") == !apart ||
		apart && (*keyFile == "" || *keyID == "" || *audience == "") {
		fmt.Fprintln(stderr, "toolcanon run-token: --run, --principal, and either --config or all of --key-file, --key-id and --audience are required")
		return exitUsage
	}
	var key gateway.RunTokenKey
	var err error
	if *config != "" {
		key, *audience, err = configMintKey(*config)
	} else {
		key, err = gateway.RunTokenKeySource{ID: *keyID, KeyFile: *keyFile}.Read()
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon run-token: %v\n", err)
		return exitUsage
	}
	tok, err := gateway.MintRunToken(key, *audience, *runID, *principal, *ttl, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon run-token: %v\n", err)
		return exitUsage
	}
	fmt.Fprintln(stdout, tok)
	return exitOK
}

// configMintKey reads the minting key and the audience of a gateway's
// configuration (which may still lack its tools, as for pin).
func configMintKey(path string) (gateway.RunTokenKey, string, error) {
	cfg, err := gateway.LoadPinConfig(path)
	if err != nil {
		return gateway.RunTokenKey{}, "", err
	}
	rc := cfg.Identity.RunToken
	if rc == nil {
		return gateway.RunTokenKey{}, "", fmt.Errorf("%s: identity.run_token is not configured", path)
	}
	key, err := rc.MintKey()
	return key, rc.Audience, err
}
