package redisconn_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore/redisconn"
)

// A managed Redis with TLS and an ACL user: the password is in a file, never
// in the URL.
func ExampleSpec() {
	spec := redisconn.Spec{
		URL:          "rediss://toolcanon@redis.example.com:6380",
		PasswordFile: "/run/secrets/redis-password",
		CAFile:       "/etc/toolcanon/server-ca.pem",
		Durability:   redisstore.Durability{Replicas: 1, Timeout: 500 * time.Millisecond},
	}
	fmt.Println(spec, spec.Validate())

	bad := redisconn.Spec{URL: "rediss://toolcanon:hunter2@redis.example.com:6380"}
	fmt.Println(bad.Validate())
	// Output:
	// rediss://toolcanon@redis.example.com:6380 <nil>
	// url: the URL carries a password, which would show in ps output, shell history and configuration files: write the URL without it (rediss://user@host:port) and put the password in a file (password_file) or in an environment variable ($TOOLCANON_REDIS_PASSWORD, or the one password_env names)
}

// The same Spec from the command line: every field is a flag, and an error
// names the flags.
func ExampleSpec_Flags() {
	var spec redisconn.Spec
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	spec.Flags(fs)
	_ = fs.Parse([]string{"--redis", "rediss://toolcanon@10.0.0.5:6380", "--tls-ca-file", "ca.pem",
		"--durability-replicas", "1"})
	var e *redisconn.Error
	if err := spec.Validate(); errors.As(err, &e) {
		fmt.Println(e.Text(true))
	}
	// Output:
	// --durability-timeout: required with --durability-replicas or --durability-aof: how long each change waits, at least 1ms (e.g. 500ms)
}

// Open reads the password and the TLS files and connects.
func ExampleOpen() {
	addr := os.Getenv("REDIS_ADDR") // e.g. "127.0.0.1:6379"
	if addr == "" {
		return
	}
	store, err := redisconn.Open(redisconn.Spec{URL: addr, Prefix: "tc"})
	if err != nil {
		fmt.Println(err) // INVALID_ARGUMENT for a bad Spec, STORE_UNAVAILABLE when nothing answers
		return
	}
	defer store.Close()
}
