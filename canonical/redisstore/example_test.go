package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
)

// Connecting to Redis or Redis Cluster: the same options reach either; the
// topology is discovered from the addresses.
func ExampleNew() {
	addr := os.Getenv("REDIS_ADDR") // e.g. "127.0.0.1:6379"
	if addr == "" {
		return
	}
	store, err := redisstore.New(redisstore.Options{
		Addrs:      []string{addr},
		Prefix:     "tc",
		DefaultTTL: 24 * time.Hour,
	})
	if err != nil {
		fmt.Println(canonical.CodeOf(err)) // STORE_UNAVAILABLE when nothing answers
		return
	}
	defer store.Close()

	owner := canonical.NewOwner()
	_, err = store.Begin(context.Background(), canonical.BeginRequest{
		RunID: "run-42", ToolCallID: "call_8f2k", Tool: "kb.search", Owner: owner,
		Request: []byte(`{"query":"refund policy"}`),
	})
	fmt.Println(err)
}
