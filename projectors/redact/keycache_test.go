package redact

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The key cache answers as classifyKey does, for keys met again, in
// another case, colliding in its slots, or too long for it.
func TestKeyCacheMatchesClassifyKey(t *testing.T) {
	keys := slices.Sorted(maps.Keys(exactKeys))
	keys = append(keys, slices.Sorted(maps.Keys(credentialWords))...)
	keys = append(keys, slices.Sorted(maps.Keys(settingWords))...)
	keys = append(keys, "status", "src", "dest", "customer_id", "db_password", "x-auth", "max_token_count",
		strings.Repeat("password", 4), "10.0.0.1", "", "a", "User", "PASSWORD", "Authorization")
	r := rand.New(rand.NewPCG(9, 10))
	var c keyCache
	classes := map[kvClass]int{}
	for n := 0; n < 100000; n++ {
		k := []byte(keys[r.IntN(len(keys))])
		if r.IntN(3) == 0 && len(k) > 0 {
			k = append([]byte(nil), k...)
			k[r.IntN(len(k))] ^= 0x20 // flip the case of a letter, or change a byte
		}
		want := classifyKey(k)
		if got := c.classify(k); got != want {
			t.Fatalf("%q: cache %d, classifyKey %d", k, got, want)
		}
		classes[want]++
	}
	if len(classes) < 8 {
		t.Fatalf("only %d classes among the keys", len(classes))
	}
}
