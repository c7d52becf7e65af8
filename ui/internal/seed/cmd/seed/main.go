// Command seed writes the UI's demonstration run (package seed) into a
// Redis store, for make ui-demo: toolcanon's own demo leaves no call in
// flight, and this run has one whose lease has passed, and hostile text.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/ui/internal/seed"
)

func main() {
	addrs := flag.String("redis", "", "Redis address, or cluster nodes separated by commas")
	run := flag.String("run", "", "run id (default: ui-demo- and a random suffix)")
	ttl := flag.Duration("ttl", 30*time.Minute, "lifetime of the records")
	flag.Parse()
	if *addrs == "" {
		fmt.Fprintln(os.Stderr, "seed: --redis is required")
		os.Exit(2)
	}
	if *run == "" {
		*run = "ui-demo-" + canonical.NewOwner()[:8]
	}
	s, err := redisstore.New(redisstore.Options{Addrs: strings.Split(*addrs, ",")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
	defer s.Close()
	if err := seed.Run(context.Background(), s, *run, *ttl); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
	fmt.Printf("seed: run %s, with call %s stuck past its lease\n", *run, seed.Stuck)
}
