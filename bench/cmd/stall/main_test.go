package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestParseSizes(t *testing.T) {
	if got, err := parseSizes("1MiB, 64KiB,512"); err != nil || !slices.Equal(got, []int64{1 << 20, 64 << 10, 512}) {
		t.Fatalf("parseSizes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,,2", "-3MiB", "xKiB", "2000000MiB"} {
		if got, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) = %v, want an error", bad, got)
		}
	}
}

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), redistest.Addr(t), []int64{4 << 10}, time.Minute, false, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "script (SLOWLOG)") || !strings.Contains(s, " 4096 ") || !strings.Contains(s, "EVALSHA") {
		t.Errorf("output:\n%s", s)
	}
}
