package redact

import (
	"math/rand/v2"
	"testing"
)

// scanFeaturesByDefinition is scanFeatures written from the definitions:
// the features of each byte, and each bigram of bigramDefs found by
// looking at every pair of adjacent bytes.
func scanFeaturesByDefinition(src []byte) features {
	var f features
	for i, c := range src {
		f |= featureOf[c]
		if i == 0 {
			continue
		}
		p := src[i-1]
		for k, d := range bigramDefs {
			if matchesBigramByte(d[0], p, true) && matchesBigramByte(d[1], c, false) {
				f |= 1 << (nByteFeatures + k)
			}
		}
	}
	return f
}

func matchesBigramByte(def, c byte, first bool) bool {
	switch {
	case first && def == 'W':
		return isWord(c)
	case def >= 'a' && def <= 'z':
		return lower(c) == def
	case def == ' ':
		return c == ' ' || c == '+'
	}
	return c == def
}

func TestScanFeatures(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const alphabet = "usertidhwlpckoa:(/\\W[ +-.nj\n\tgSUERTIDH0123456789=@<>_"
	seen := features(0)
	for n := 0; n < 20000; n++ {
		b := make([]byte, r.IntN(70))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		want := scanFeaturesByDefinition(b)
		if got := scanFeatures(b); got != want {
			t.Fatalf("%q: scanFeatures %x, by definition %x", b, got, want)
		}
		seen |= want
	}
	if all := features(1)<<(nByteFeatures+len(bigramDefs)) - 1; seen != all {
		t.Fatalf("features never seen: %x", all&^seen)
	}
}
