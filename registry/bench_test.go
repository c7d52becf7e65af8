package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// typicalInput is a 2 KiB search input of the kind agents send.
func typicalInput(tb testing.TB) []byte {
	tb.Helper()
	var b strings.Builder
	b.WriteString(`{ "query": "why does the checkout service return 502 after the deploy of `)
	for b.Len() < 1700 {
		b.WriteString(`build 2026.07.24 café — ünïcödé \u00e9 `)
	}
	b.WriteString(`", "limit": 25, "mode": "semantic", "tags": ["payments", "checkout", "prod", "eu-west-1", "incident", "deploy", "p1", "sre"] }`)
	for b.Len() < 2048 {
		b.WriteByte(' ')
	}
	in := []byte(b.String())
	if len(in) != 2048 {
		tb.Fatalf("input is %d bytes", len(in))
	}
	return in
}

func BenchmarkPrepare(b *testing.B) {
	d := searchDef()
	d.InputSchema = []byte(strings.Replace(searchInputSchema, `"maxLength": 256`, `"maxLength": 4096`, 1))
	r := mustNew(b, d)
	req := searchRequest(string(typicalInput(b)))
	req.Principal.ExpiresAt = time.Now().Add(24 * time.Hour)
	pol := PolicyFunc(func(context.Context, string, Principal, string) (Decision, error) {
		return Decision{Verdict: VerdictAllow, Fence: fenceA}, nil
	})
	ctx := context.Background()
	if _, err := r.Prepare(ctx, pol, req); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(req.Input)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Prepare(ctx, pol, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonicalize(b *testing.B) {
	for _, tc := range []struct {
		name string
		doc  []byte
	}{
		{"input2KiB", typicalInput(b)},
		{"records64KiB", genDocument(64 << 10)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if _, err := Canonicalize(tc.doc); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(tc.doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Canonicalize(tc.doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// genDocument builds an array of mixed records of about size bytes.
func genDocument(size int) []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"doc-%d","score":%s,"title":"Résumé № %d \u2014 \ud83d\ude02","tags":["a","b"],"ok":%t,"n":null}`,
			i, strconv.FormatFloat(float64(i)/7, 'g', -1, 64), i, i%2 == 0)
	}
	b.WriteString("]")
	return []byte(b.String())
}

// genValue writes a random JSON value for differential testing.
func genValue(rng *rand.Rand, b *strings.Builder, depth int) {
	switch k := rng.IntN(8); {
	case depth > 4 || k < 3:
		genScalar(rng, b)
	case k < 5:
		b.WriteString("[")
		for i := range rng.IntN(5) {
			if i > 0 {
				b.WriteString(" , ")
			}
			genValue(rng, b, depth+1)
		}
		b.WriteString("]")
	default:
		b.WriteString("{")
		seen := map[string]bool{}
		for i := range rng.IntN(6) {
			key := genString(rng)
			if seen[key] {
				continue
			}
			seen[key] = true
			if i > 0 && len(seen) > 1 {
				b.WriteString(",")
			}
			b.WriteString(jsonString(key))
			b.WriteString(":")
			genValue(rng, b, depth+1)
		}
		b.WriteString("}")
	}
}

var genRunes = []rune{'a', 'b', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', '\x01', '\x7f', 'é', '€', '\u2028', '\ufb33', '\uffff', '😂', '\U0010ffff', '\u0080'}

// jsonString quotes s as JSON, with encoding/json's escapes (not ours).
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func genString(rng *rand.Rand) string {
	var r []rune
	for range rng.IntN(6) {
		r = append(r, genRunes[rng.IntN(len(genRunes))])
	}
	return string(r)
}

func genScalar(rng *rand.Rand, b *strings.Builder) {
	switch rng.IntN(6) {
	case 0:
		b.WriteString([]string{"null", "true", "false"}[rng.IntN(3)])
	case 1:
		b.WriteString(jsonString(genString(rng)))
	case 2:
		b.WriteString(strconv.FormatInt(rng.Int64N(2*MaxSafeInteger+1)-MaxSafeInteger, 10))
	case 3:
		b.WriteString(strconv.FormatFloat((rng.Float64()-0.5)*1e6, 'g', -1, 64))
	case 4:
		b.WriteString(strconv.FormatFloat(rng.Float64()*1e-9, 'e', -1, 64))
	default:
		fmt.Fprintf(b, "%d.%de%d", rng.IntN(100), rng.IntN(1000), rng.IntN(20)-12)
	}
}
