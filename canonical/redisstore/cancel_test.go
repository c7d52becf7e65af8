package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// A call registered by one store (replica) is cancelled through another
// over the same servers: only the registering nonce sees the cancel, a
// key never registered is not cancelled, every key has a TTL, and a
// registration is forgotten only by its own nonce. Standalone and cluster.
func TestCancelRegistrationsAcrossStores(t *testing.T) {
	for name, addrs := range map[string]func(testing.TB) []string{
		"standalone": func(tb testing.TB) []string { return []string{redistest.Addr(tb)} },
		"cluster":    redistest.ClusterAddrs,
	} {
		t.Run(name, func(t *testing.T) {
			a := addrs(t)
			prefix := "tccx" + canonical.NewOwner()[:8]
			running := newStore(t, a, redisstore.Options{Prefix: prefix})
			other := newStore(t, a, redisstore.Options{Prefix: prefix})
			ctx := context.Background()
			key, nonce := "0123456789abcdef0123456789abcdef", canonical.NewOwner()
			if found, err := other.CancelCall(ctx, key); err != nil || found {
				t.Fatalf("cancel before any registration: %v %v", found, err)
			}
			if err := running.RegisterCall(ctx, key, nonce, time.Minute); err != nil {
				t.Fatal(err)
			}
			if yes, err := running.CallCancelled(ctx, key, nonce); err != nil || yes {
				t.Fatalf("cancelled before any cancel: %v %v", yes, err)
			}
			ttls, err := redistest.KeyTTLs(a, prefix+":*")
			if err != nil {
				t.Fatal(err)
			}
			if len(ttls) != 1 {
				t.Fatalf("keys %v, want one", ttls)
			}
			for k, ms := range ttls {
				if ms <= 0 || ms > time.Minute.Milliseconds() {
					t.Fatalf("%s has TTL %dms", k, ms)
				}
			}
			if found, err := other.CancelCall(ctx, key); err != nil || !found {
				t.Fatalf("cancel of a registered call: %v %v", found, err)
			}
			if yes, err := running.CallCancelled(ctx, key, nonce); err != nil || !yes {
				t.Fatalf("the running store does not see the cancel: %v %v", yes, err)
			}
			if yes, _ := running.CallCancelled(ctx, key, canonical.NewOwner()); yes {
				t.Fatal("another nonce sees the cancel")
			}
			if err := other.ForgetCall(ctx, key, canonical.NewOwner()); err != nil {
				t.Fatal(err)
			}
			if yes, _ := running.CallCancelled(ctx, key, nonce); !yes {
				t.Fatal("another nonce forgot the registration")
			}
			if err := running.ForgetCall(ctx, key, nonce); err != nil {
				t.Fatal(err)
			}
			if ttls, _ := redistest.KeyTTLs(a, prefix+":*"); len(ttls) != 0 {
				t.Fatalf("left behind: %v", ttls)
			}
			// Two calls under one key: a cancel stops neither.
			one, two := canonical.NewOwner(), canonical.NewOwner()
			if err := running.RegisterCall(ctx, key, one, time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := other.RegisterCall(ctx, key, two, time.Minute); err != nil {
				t.Fatal(err)
			}
			if found, err := other.CancelCall(ctx, key); err != nil || !found {
				t.Fatalf("cancel of an ambiguous key: %v %v", found, err)
			}
			for _, n := range []string{one, two} {
				if yes, _ := running.CallCancelled(ctx, key, n); yes {
					t.Fatal("a cancel of an ambiguous key stopped a call")
				}
			}
			if err := running.RegisterCall(ctx, "bad}key", nonce, time.Minute); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
				t.Fatalf("a key with a brace: %v", err)
			}
		})
	}
}
