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

// Durability: every state change waits until one replica has it, so that a
// failover never loses an acknowledged record.
func ExampleDurability() {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		return
	}
	store, err := redisstore.New(redisstore.Options{
		Addrs:      []string{addr},
		Durability: redisstore.Durability{Replicas: 1, Timeout: 500 * time.Millisecond},
	})
	if err != nil {
		fmt.Println(canonical.CodeOf(err))
		return
	}
	defer store.Close()
	_, err = store.Begin(context.Background(), canonical.BeginRequest{
		RunID: "run-42", ToolCallID: "call_9x", Tool: "kb.search", Owner: canonical.NewOwner(),
		Request: []byte(`{"query":"refund policy"}`), TTL: time.Hour,
	})
	// STORE_UNAVAILABLE when no replica confirmed in time: do not run the tool.
	fmt.Println(canonical.CodeOf(err))
}

// Check reports the server settings the guarantees assume, as `toolcanon
// doctor` prints them.
func ExampleStore_Check() {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		return
	}
	store, err := redisstore.New(redisstore.Options{Addrs: []string{addr}})
	if err != nil {
		return
	}
	defer store.Close()
	rep, err := store.Check(context.Background())
	if err != nil {
		fmt.Println(canonical.CodeOf(err))
		return
	}
	for _, n := range rep.Nodes {
		for _, f := range n.Findings {
			fmt.Println(n.Addr, f.Level, f.Setting, f.Value)
		}
	}
	fmt.Println(rep.Warnings(), "warnings")
}
