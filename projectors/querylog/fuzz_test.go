package querylog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/querylog"
)

var fuzzSecrets = []string{
	"AKIAIOSFODNN7EXAMPLE", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl",
	"ghp_0123456789abcdefghijABCDEFGHIJ012345", "10.20.30.40", "bob.jones@example.com",
	"4111 1111 1111 1111", "sk_live_0123456789abcdefABCD",
}

const (
	instanceMarker = "INSTANCE-MARKER-3f2a"
	metricsMarker  = "METRICS-MARKER-9d1c"
)

// FuzzQueryLog: for any raw bytes the projector returns an error or a valid
// result within budget; for any message around a planted secret, neither
// the secret nor the instance and metrics fields reach the result.
func FuzzQueryLog(f *testing.F) {
	f.Add([]byte(`{"success":true,"entries":[{"timestamp":"2026-03-01T09:00:00Z","level":"ERROR","message":"boom 10.0.0.1"}]}`), []byte("login failed for"), uint8(0), uint16(0))
	f.Add([]byte(`{"success":true,"window":{"from":"2026-03-01T09:00:00Z","to":"2026-03-01T10:00:00Z"},"entries":[]}`), []byte("password="), uint8(3), uint16(500))
	f.Add([]byte(`{"success":false}`), []byte("SELECT * FROM t WHERE x = '"), uint8(5), uint16(9000))
	f.Fuzz(func(t *testing.T, raw, context_ []byte, k uint8, budget uint16) {
		lim := projectors.Limits{Total: 4352 + int(budget)%8192, Items: 1 + int(budget)%30, Text: 16 + int(budget)%300}
		lim.Collection = lim.Total / 3
		lim.Item = max(64, min(lim.Collection, 100+int(budget)%700))
		lim.Text = min(lim.Text, lim.Item)
		cfg := querylog.DefaultConfig()
		cfg.Limits = lim
		cfg.Now = func() time.Time { return now }
		p, err := querylog.New(cfg)
		if err != nil {
			t.Fatalf("limits %+v: %v", lim, err)
		}
		call := projectors.Call{ToolCallID: "call_1", Input: []byte(`{"topic":"t","query":"q"}`)}
		check := func(raw []byte, secrets []string) {
			pr, err := p.Project(context.Background(), call, raw)
			if err != nil {
				if canonical.CodeOf(err) == canonical.CodeStoreUnavailable || pr.Result != nil {
					t.Fatalf("error %v with result %q", err, pr.Result)
				}
				return
			}
			if !pr.Evidence.Ready() || len(pr.Result) > lim.Total || !json.Valid(pr.Result) {
				t.Fatalf("evidence %s, %d bytes (budget %d): %q", pr.Evidence, len(pr.Result), lim.Total, pr.Result)
			}
			for _, s := range secrets {
				if bytes.Contains(pr.Result, []byte(s)) {
					t.Fatalf("%q leaks into %s", s, pr.Result)
				}
			}
		}
		check(raw, nil)

		secret := fuzzSecrets[int(k)%len(fuzzSecrets)]
		msg := string(context_) + " " + secret + " "
		planted, _ := json.Marshal(map[string]any{"success": true, "entries": []map[string]any{
			{"timestamp": "2026-03-01T09:00:00Z", "level": "ERROR", "message": msg, "instance": instanceMarker, "metrics": map[string]string{"m": metricsMarker}},
			{"timestamp": "2026-03-01T09:00:01Z", "level": "INFO", "message": secret, "instance": instanceMarker},
		}})
		check(planted, []string{secret, instanceMarker, metricsMarker})
	})
}

// Property: for mutated responses and random budgets, the projector returns
// an error or a valid result within budget, and instance and metrics values
// never appear.
func TestQueryLogProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	mock := &querylog.Mock{Entries: mockEntries(), Now: func() time.Time { return now }}
	for i := range mock.Entries {
		mock.Entries[i].Instance = instanceMarker
		mock.Entries[i].Metrics = map[string]float64{metricsMarker: 1}
	}
	req := querylog.Request{Topic: "checkout", Query: "*", LookbackMinutes: 60}
	base, _ := mock.Search(context.Background(), req)
	errs, oks := 0, 0
	for i := 0; i < 2000; i++ {
		cfg := querylog.DefaultConfig()
		cfg.Now = func() time.Time { return now }
		cfg.Limits = projectors.Limits{Total: 4352 + r.IntN(4096), Items: 1 + r.IntN(8)}
		cfg.Limits.Collection = max(64, r.IntN(cfg.Limits.Total/2))
		cfg.Limits.Item = max(64, r.IntN(cfg.Limits.Collection+1))
		cfg.Limits.Text = 1 + r.IntN(cfg.Limits.Item)
		p, err := querylog.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := p.Project(context.Background(), projectors.Call{ToolCallID: "c", Input: []byte(`{"topic":"checkout","query":"*"}`)}, projtest.Mutate(r, base, false))
		if err != nil {
			errs++
			continue
		}
		oks++
		checkResult(t, pr.Result, cfg.Limits.Total, []string{instanceMarker, metricsMarker})
	}
	t.Logf("%d errors, %d results", errs, oks)
	if oks == 0 || errs == 0 {
		t.Fatal("the property saw only one outcome")
	}
}
