package redact

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// parseDottedQuad must accept exactly what netip.ParseAddr accepts as an
// IPv4 address in a text without a colon, and give the same address.
func TestParseDottedQuadMatchesNetip(t *testing.T) {
	inputs := []string{"", ".", "0.0.0.0", "255.255.255.255", "256.1.1.1", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.04",
		"1.2.3.4.", ".1.2.3.4", "1..2.3", "10.0.0.1", "127.0.0.1", "1.2.3.a", "1234.1.1.1", "0.00.0.0", "1.2.3.-4"}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789....af-+ "
	accepted := 0
	for n := 0; n < 200000; n++ {
		b := make([]byte, 1+r.IntN(16))
		for i := range b {
			if r.IntN(3) == 0 {
				b[i] = '.'
			} else {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
		}
		inputs = append(inputs, string(b))
		// Near-addresses: four fields of one to four digits, some mutated.
		q := fmt.Sprintf("%0*d.%0*d.%d.%d", 1+r.IntN(3), r.IntN(300), 1+r.IntN(2), r.IntN(300), r.IntN(300), r.IntN(1000))
		if r.IntN(4) == 0 {
			k := r.IntN(len(q))
			q = q[:k] + string(alphabet[r.IntN(len(alphabet))]) + q[k+1:]
		}
		inputs = append(inputs, q)
	}
	for _, s := range inputs {
		want, err := netip.ParseAddr(s)
		got, ok := parseDottedQuad([]byte(s))
		if ok != (err == nil && want.Is4()) || ok && netip.AddrFrom4(got) != want {
			t.Fatalf("%q: parseDottedQuad %v %v, netip %v %v", s, got, ok, want, err)
		}
		if ok {
			accepted++
		}
	}
	if accepted < 100 {
		t.Fatalf("only %d addresses among the inputs", accepted)
	}
}
