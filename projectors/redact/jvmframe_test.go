package redact

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// findJVMFrame finds what jvmFrame.FindIndex finds.
func TestFindJVMFrameMatchesRegexp(t *testing.T) {
	pieces := []string{"at", "at ", "at+", " ", "\t", "\n", "\f", "\r", "\v", ":", ";", ",", "+", "a", "t", "x",
		"com.shop.Cart", "$1", "<init>", "(", ")", "Cart.java:214", ":12", "Native Method", "Unknown+Source", "Native", "/", "."}
	r := rand.New(rand.NewPCG(11, 12))
	found := 0
	for n := 0; n < 100000; n++ {
		var b []byte
		for k := r.IntN(14); k > 0; k-- {
			b = append(b, pieces[r.IntN(len(pieces))]...)
			if r.IntN(8) == 0 {
				// A frame, or most of one.
				frame := []string{" ", "at", " ", "com.shop.Cart", "(", "Cart.java:214", ")"}
				if r.IntN(2) == 0 {
					frame[r.IntN(len(frame))] = pieces[r.IntN(len(pieces))]
				}
				for _, p := range frame {
					b = append(b, p...)
				}
			}
		}
		want := jvmFrame.FindIndex(b)
		if got := findJVMFrame(b); !slices.Equal(got, want) {
			t.Fatalf("%q: findJVMFrame %v, FindIndex %v", b, got, want)
		}
		if want != nil {
			found++
		}
	}
	if found < 1000 {
		t.Fatalf("only %d inputs hold a frame", found)
	}
}
