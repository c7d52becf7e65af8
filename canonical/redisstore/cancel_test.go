package redisstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// heard keeps what a listener delivered.
type heard struct {
	mu  sync.Mutex
	got []string
}

func (h *heard) deliver(key, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, key+" "+id)
}

func (h *heard) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

// A cancel sent through one store (replica) reaches the listeners of every
// other over the same servers, in order, and only what was sent after
// each began; a cancel claimed by one holder is held by it, by two by
// none; every key has a TTL. Standalone and cluster.
func TestCancelRelayAcrossStores(t *testing.T) {
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
			key := "0123456789abcdef0123456789abcdef"
			if err := other.SendCancel(ctx, key, "before"); err != nil {
				t.Fatal(err)
			}
			lctx, stop := context.WithCancel(ctx)
			var h heard
			done := make(chan error, 1)
			go func() { done <- running.ListenCancels(lctx, h.deliver) }()
			// What is sent from now on is heard; what came before is not.
			deadline := time.Now().Add(10 * time.Second)
			for n := 0; len(h.list()) == 0; n++ {
				if time.Now().After(deadline) {
					t.Fatal("no cancel heard")
				}
				if err := other.SendCancel(ctx, key, "c"+string(rune('a'+n%26))); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			for _, g := range h.list() {
				if g == key+" before" {
					t.Fatalf("a cancel sent before the listener began was heard: %v", h.list())
				}
			}
			stop()
			if err := <-done; err != context.Canceled {
				t.Fatalf("the listener ended with %v", err)
			}

			// One holder holds a cancel; a second claim makes it none's.
			one, two := canonical.NewOwner(), canonical.NewOwner()
			if got, err := running.ClaimCancel(ctx, key, "c1", one); err != nil || got != one {
				t.Fatalf("first claim: %q %v", got, err)
			}
			if got, err := running.ClaimCancel(ctx, key, "c1", one); err != nil || got != one {
				t.Fatalf("the holder again: %q %v", got, err)
			}
			if got, err := other.ClaimCancel(ctx, key, "c1", two); err != nil || got != "" {
				t.Fatalf("a second holder: %q %v", got, err)
			}
			if got, _ := running.ClaimCancel(ctx, key, "c1", one); got != "" {
				t.Fatalf("the first holder after a second claim: %q", got)
			}
			// Several calls of one replica claim for none; a new cancel of
			// the key starts afresh.
			if got, _ := running.ClaimCancel(ctx, key, "c2", ""); got != "" {
				t.Fatalf("a claim for several calls: %q", got)
			}
			if got, _ := other.ClaimCancel(ctx, key, "c3", two); got != two {
				t.Fatalf("a new cancel: %q", got)
			}
			ttls, err := redistest.KeyTTLs(a, prefix+":*")
			if err != nil {
				t.Fatal(err)
			}
			if len(ttls) != 2 {
				t.Fatalf("keys %v, want the log and one claim", ttls)
			}
			for k, ms := range ttls {
				if ms <= 0 || ms > (10*time.Minute).Milliseconds() {
					t.Fatalf("%s has TTL %dms", k, ms)
				}
			}
			for _, bad := range []string{"bad}key", "a:b", ""} {
				if err := running.SendCancel(ctx, bad, "x"); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
					t.Fatalf("key %q: %v", bad, err)
				}
			}
			if _, err := running.ClaimCancel(ctx, key, "x", "a|b"); canonical.CodeOf(err) != canonical.CodeInvalidArgument {
				t.Fatalf("a holder with a bar: %v", err)
			}
		})
	}
}
