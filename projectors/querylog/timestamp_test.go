package querylog

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestParseTimestampIsTimeParse compares parseTimestamp with time.Parse on
// timestamps of the common shape with every field pushed to and past its
// bounds, and on random edits of them.
func TestParseTimestampIsTimeParse(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	fast := 0
	check := func(s string) {
		got, err1 := parseTimestamp(s)
		want, err2 := time.Parse(time.RFC3339Nano, s)
		if (err1 == nil) != (err2 == nil) || err1 == nil && got != want.UnixNano() {
			t.Fatalf("%q: %v %v, time.Parse: %v %v", s, got, err1, want.UnixNano(), err2)
		}
		if err1 == nil && s[len(s)-1] == 'Z' {
			fast++
		}
	}
	pick := func(vals ...string) string { return vals[r.IntN(len(vals))] }
	for n := 0; n < 200000; n++ {
		s := pick("2026", "2024", "2000", "1900", "0000", "9999", "0001", "2100") + "-" +
			pick("00", "01", "02", "04", "06", "09", "11", "12", "13", "1a") + "-" +
			pick("00", "01", "28", "29", "30", "31", "32", "3") + pick("T", "t", " ") +
			pick("00", "09", "23", "24") + ":" + pick("00", "59", "60") + ":" + pick("00", "59", "60", "5") +
			pick("", ".", ".1", ".123", ".123456789", ".1234567891", ",5", ".12a") + pick("Z", "z", "+01:00", "")
		if r.IntN(4) == 0 {
			b := []byte(s)
			b[r.IntN(len(b))] = "0123456789-:TZ.+ "[r.IntN(17)]
			s = string(b)
		}
		check(s)
	}
	if fast < 500 {
		t.Fatalf("only %d valid timestamps of the common shape", fast)
	}
}
