package querylog

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
)

// TestOneWalkAgreesWithTwo checks that reading the entries during the walk
// that locates the other members gives the result, or the error, that
// reading them after it gives: on responses whose members come in every
// order, with failing entries, failure flags and broken windows, and on
// random mutations of them.
func TestOneWalkAgreesWithTwo(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Now = func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) }
	one, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	two, _ := New(cfg)
	two.oneWalk = false
	if !one.oneWalk {
		t.Fatal("the legacy paths are plain keys: one walk expected")
	}
	call := projectors.Call{ToolCallID: "c", Input: []byte(`{"topic":"t","query":"q"}`)}
	r := rand.New(rand.NewPCG(9, 9))
	entry := func(k int) string {
		switch r.IntN(12) {
		case 0:
			return `{"level":"INFO","message":"no timestamp"}`
		case 1:
			return `"not an object"`
		default:
			return fmt.Sprintf(`{"timestamp":"2026-03-01T09:%02d:00.%dZ","level":"%s","message":"user=alice from 10.0.0.%d took %dms","metrics":{"cpu":0.5}}`,
				r.IntN(60), r.IntN(1000), []string{"ERROR", "info", "warning", "x"}[r.IntN(4)], k, r.IntN(999))
		}
	}
	agreed, failed := 0, 0
	for n := 0; n < 3000; n++ {
		var es bytes.Buffer
		for k := r.IntN(6); k >= 0; k-- {
			if es.Len() > 0 {
				es.WriteByte(',')
			}
			es.WriteString(entry(k))
		}
		members := []string{
			`"success":` + []string{"true", "true", "true", "false", `"true"`}[r.IntN(5)],
			`"entries":[` + es.String() + `]`,
			`"window":` + []string{`{"from":"2026-03-01T09:00:00Z","to":"2026-03-01T10:00:00Z"}`, `{"from":"x","to":"y"}`, `{}`}[r.IntN(3)],
			`"total":3`,
		}
		r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		raw := []byte("{" + members[0] + "," + members[1] + "," + members[2] + "," + members[3] + "}")
		if r.IntN(3) == 0 {
			raw = projtest.Mutate(r, raw, true)
		}
		a, errA := one.Project(context.Background(), call, raw)
		b, errB := two.Project(context.Background(), call, raw)
		if fmt.Sprint(errA) != fmt.Sprint(errB) || a.Evidence != b.Evidence || !bytes.Equal(a.Result, b.Result) {
			t.Fatalf("%s:\none walk:  %v %s\ntwo walks: %v %s", raw, errA, a.Result, errB, b.Result)
		}
		if errA == nil {
			agreed++
		} else {
			failed++
		}
	}
	// Both outcomes must be common for the comparison to mean something.
	if agreed < 300 || failed < 300 {
		t.Fatalf("%d projected, %d failed", agreed, failed)
	}
}
