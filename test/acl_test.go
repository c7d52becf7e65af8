package test

import (
	"context"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/canonical/storetest"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// leastPrivilege is the ACL a toolcanon worker needs: its key prefix only,
// the connection handshake, the script commands, the reads the store makes,
// and the commands the scripts run. Nothing else.
var leastPrivilege = []string{
	"resetkeys", "~tcacl:*", "resetchannels", "-@all",
	"+hello", "+auth", "+ping",
	"+evalsha", "+eval",
	"+hmget", "+hgetall", "+pttl", "+lrange", "+llen",
	"+time", "+hset", "+hsetnx", "+hget", "+hincrby", "+hstrlen", "+pexpire", "+rpush", "+exists",
}

func aclUser(t *testing.T, addr, name string) {
	t.Helper()
	args := append([]string{"ACL", "SETUSER", name, "reset", "on", ">s3cret-acl"}, leastPrivilege...)
	if _, err := redistest.Command(addr, args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = redistest.Command(addr, "ACL", "DELUSER", name) })
}

func TestLeastPrivilegeUserRunsTheSuite(t *testing.T) {
	addr := redistest.Addr(t)
	aclUser(t, addr, "toolcanon")
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		s := open(t, redisstore.Options{
			Addrs: []string{addr}, Username: "toolcanon", Password: "s3cret-acl",
			Prefix: "tcacl", Standalone: true,
		})
		return storetest.Harness{Store: s, Wait: time.Sleep, RealClock: true}
	})
}

func TestLeastPrivilegeUserCannotLeaveItsPrefix(t *testing.T) {
	addr := redistest.Addr(t)
	aclUser(t, addr, "toolcanon2")
	s := open(t, redisstore.Options{
		Addrs: []string{addr}, Username: "toolcanon2", Password: "s3cret-acl",
		Prefix: "other", Standalone: true,
	})
	_, err := s.Begin(context.Background(), begin("acl-"+canonical.NewOwner(), "c1"))
	if canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
		t.Fatalf("begin outside the ACL's keys: %v, want STORE_UNAVAILABLE", err)
	}
	if _, err := redisstore.New(redisstore.Options{
		Addrs: []string{addr}, Username: "toolcanon2", Password: "wrong", Standalone: true,
	}); canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
		t.Fatalf("wrong password: %v, want STORE_UNAVAILABLE", err)
	}
}
