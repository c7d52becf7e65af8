package querylog_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/drain"
	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/querylog"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

var levelNames = []string{"FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "UNKNOWN"}

func levelOf(s string) int {
	switch strings.ToUpper(s) {
	case "FATAL", "CRITICAL", "CRIT", "EMERG", "ALERT", "PANIC":
		return 0
	case "ERROR", "ERR", "SEVERE":
		return 1
	case "WARN", "WARNING":
		return 2
	case "INFO", "NOTICE", "INFORMATION":
		return 3
	case "DEBUG", "FINE":
		return 4
	case "TRACE", "FINER", "FINEST":
		return 5
	}
	return 6
}

// baseline is the straightforward projection: unmarshal the whole response
// into maps, redact and mine every message with the same packages, build
// the result and marshal it, dropping items until the budgets hold.
func baseline(cfg querylog.Config, call projectors.Call, raw []byte) (projectors.Projection, error) {
	req, err := querylog.ParseRequest(call.Input)
	if err != nil {
		return projectors.Projection{}, err
	}
	var resp map[string]any
	if err := json.Unmarshal(raw, &resp); err != nil {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "malformed")
	}
	if resp["success"] != true {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "failure")
	}
	entries, ok := resp["entries"].([]any)
	if !ok {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "no entries")
	}
	var from, to time.Time
	if w, ok := resp["window"].(map[string]any); ok {
		fs, _ := w["from"].(string)
		ts, _ := w["to"].(string)
		from, err = time.Parse(time.RFC3339Nano, fs)
		if err == nil {
			to, err = time.Parse(time.RFC3339Nano, ts)
		}
		if err != nil {
			return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "window")
		}
	} else {
		to = cfg.Now()
		from = to.Add(-time.Duration(req.LookbackMinutes) * time.Minute)
	}
	type stat struct {
		count       int
		first, last time.Time
	}
	type pattern struct {
		Pattern   string `json:"pattern"`
		Count     int    `json:"count"`
		Level     string `json:"level"`
		FirstSeen string `json:"first_seen"`
		LastSeen  string `json:"last_seen"`
	}
	type event struct {
		TS      string `json:"ts"`
		Level   string `json:"level"`
		Message string `json:"message"`
	}
	lim := cfg.Limits
	mcfg := cfg.Miner
	mcfg.MaxClusters, mcfg.MaxTokens = 512, 64
	var miners [7]*drain.Miner
	var stats [7][]stat
	timeline := []event{}
	truncated := false
	const layout = "2006-01-02T15:04:05.000Z07:00"
	for i, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "entry %d", i)
		}
		tsS, _ := m["timestamp"].(string)
		ts, err := time.Parse(time.RFC3339Nano, tsS)
		msg, ok := m["message"].(string)
		if err != nil || !ok {
			return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "entry %d", i)
		}
		lvlS, _ := m["level"].(string)
		lvl := levelOf(lvlS)
		red := redact.String(msg)
		mined := red
		if len(mined) > 2048 {
			mined, _ = projtest.CutRunes(mined, 2048)
			truncated = true
		}
		if miners[lvl] == nil {
			miners[lvl] = drain.New(mcfg)
		}
		id, ok := miners[lvl].AddString(mined)
		if ok {
			if id == len(stats[lvl]) {
				stats[lvl] = append(stats[lvl], stat{first: ts, last: ts})
			}
			s := &stats[lvl][id]
			if ts.Before(s.first) {
				s.first = ts
			}
			if ts.After(s.last) {
				s.last = ts
			}
			s.count++
		} else {
			truncated = true
		}
		if len(timeline) < lim.Items {
			text, c := projtest.CutRunes(red, lim.Text)
			truncated = truncated || c
			timeline = append(timeline, event{ts.UTC().Format(layout), levelNames[lvl], text})
		} else {
			truncated = true
		}
	}
	type ref struct {
		lvl, id int
		stat
	}
	var refs []ref
	for l := range stats {
		for id, s := range stats[l] {
			refs = append(refs, ref{l, id, s})
		}
	}
	slices.SortFunc(refs, func(a, b ref) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		if c := a.first.Compare(b.first); c != 0 {
			return c
		}
		if c := cmp.Compare(a.lvl, b.lvl); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	patterns := []pattern{}
	for i, r := range refs {
		if i == lim.Items {
			truncated = true
			break
		}
		text, c := projtest.CutRunes(miners[r.lvl].TemplateString(r.id), lim.Text)
		truncated = truncated || c
		patterns = append(patterns, pattern{text, r.count, levelNames[r.lvl], r.first.UTC().Format(layout), r.last.UTC().Format(layout)})
	}
	type scope struct {
		Topic           string `json:"topic"`
		Query           string `json:"query"`
		LookbackMinutes int    `json:"lookback_minutes"`
		From            string `json:"from"`
		To              string `json:"to"`
	}
	result := struct {
		SourceKind string    `json:"source_kind"`
		ToolCallID string    `json:"tool_call_id"`
		Scope      scope     `json:"scope"`
		MatchCount int       `json:"match_count"`
		Patterns   []pattern `json:"patterns"`
		Timeline   []event   `json:"timeline"`
		Returned   int       `json:"returned"`
		Truncated  bool      `json:"truncated"`
	}{cfg.SourceKind, call.ToolCallID, scope{req.Topic, req.Query, req.LookbackMinutes, from.UTC().Format(layout), to.UTC().Format(layout)},
		len(entries), patterns, timeline, len(timeline), truncated}
	for {
		out := projtest.Marshal(result)
		if len(out) <= lim.Total && len(projtest.Marshal(result.Patterns)) <= lim.Collection && len(projtest.Marshal(result.Timeline)) <= lim.Collection {
			ev := canonical.NoEvidence
			if len(entries) > 0 {
				ev = canonical.EvidenceFound
			}
			return projectors.Projection{Evidence: ev, Result: out}, nil
		}
		switch {
		case len(result.Timeline) > 0:
			result.Timeline = result.Timeline[:len(result.Timeline)-1]
			result.Returned--
		case len(result.Patterns) > 0:
			result.Patterns = result.Patterns[:len(result.Patterns)-1]
		default:
			return projectors.Projection{}, canonical.Errorf(canonical.CodeResultTooLarge, "too large")
		}
		result.Truncated = true
	}
}

// makeLogs builds a legacy Mock response of about size bytes from service
// log templates with random values, instance and metrics fields included.
func makeLogs(size int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	tmpls := []func() (string, string){
		func() (string, string) {
			return "ERROR", fmt.Sprintf("payment timeout after %dms for order %d", 3000+r.IntN(900), 80000+r.IntN(9999))
		},
		func() (string, string) {
			return "INFO", fmt.Sprintf("GET /api/v1/orders/%d took %dms status=%d", r.IntN(99999), r.IntN(900), 200)
		},
		func() (string, string) {
			return "WARN", fmt.Sprintf("login failed password=%s for user=%s from 10.%d.%d.%d", fmt.Sprintf("pw%dX!", r.IntN(1e6)), "alice", r.IntN(255), r.IntN(255), r.IntN(255))
		},
		func() (string, string) {
			return "ERROR", fmt.Sprintf("connection to 10.%d.%d.%d:5432 refused after %d retries", r.IntN(255), r.IntN(255), r.IntN(255), r.IntN(9))
		},
		func() (string, string) {
			return "DEBUG", fmt.Sprintf("cache miss for session %x on shard %d", r.Uint64(), r.IntN(64))
		},
		func() (string, string) {
			return "INFO", fmt.Sprintf("Receiving block blk_%d src: /10.250.%d.%d:%d dest: /10.250.%d.%d:50010", r.Int64(), r.IntN(255), r.IntN(255), 40000+r.IntN(9999), r.IntN(255), r.IntN(255))
		},
		func() (string, string) {
			return "ERROR", fmt.Sprintf("slow query SELECT * FROM orders WHERE customer_id = %d took %dms", r.IntN(1e6), r.IntN(9000))
		},
	}
	type entry struct {
		Timestamp string             `json:"timestamp"`
		Level     string             `json:"level"`
		Service   string             `json:"service"`
		Message   string             `json:"message"`
		Instance  string             `json:"instance"`
		Metrics   map[string]float64 `json:"metrics"`
	}
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var es []entry
	n := 0
	for {
		raw, _ := json.Marshal(map[string]any{"success": true, "source": "mock", "topic": "checkout", "query": "*",
			"window": map[string]string{"from": "2026-03-01T09:00:00Z", "to": "2026-03-01T10:00:00Z"}, "total": len(es), "entries": es})
		if len(raw) >= size {
			return raw
		}
		for k := max(1, (size-len(raw))/260); k > 0; k-- {
			lvl, msg := tmpls[r.IntN(len(tmpls))]()
			es = append(es, entry{base.Add(time.Duration(n) * 100 * time.Millisecond).Format(time.RFC3339Nano), lvl, "checkout-api", msg,
				fmt.Sprintf("checkout-api-7d9f8b6c5d-x%dk4p", r.IntN(9)), map[string]float64{"latency_ms": r.Float64() * 900, "cpu": r.Float64()}})
			n++
		}
	}
}

var sizes = []struct {
	name string
	n    int
}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}}

var benchInput = []byte(`{"topic":"checkout","query":"*","lookback_minutes":60}`)

func TestBaselineAgrees(t *testing.T) {
	cfg := querylog.DefaultConfig()
	cfg.Now = func() time.Time { return now }
	p, _ := querylog.New(cfg)
	call := projectors.Call{ToolCallID: "call_1", Input: benchInput}
	for _, s := range sizes[:2] {
		raw := makeLogs(s.n)
		a, err1 := p.Project(context.Background(), call, raw)
		b, err2 := baseline(cfg, call, raw)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", s.name, err1, err2)
		}
		var x, y any
		_ = json.Unmarshal(a.Result, &x)
		_ = json.Unmarshal(b.Result, &y)
		if a.Evidence != b.Evidence || !reflect.DeepEqual(x, y) {
			t.Fatalf("%s: results differ\nours:     %s\nbaseline: %s", s.name, a.Result, b.Result)
		}
	}
}

func BenchmarkQueryLog(b *testing.B) {
	cfg := querylog.DefaultConfig()
	cfg.Now = func() time.Time { return now }
	p, _ := querylog.New(cfg)
	call := projectors.Call{ToolCallID: "call_1", Input: benchInput}
	for _, s := range sizes {
		raw := makeLogs(s.n)
		b.Run("ours/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Project(context.Background(), call, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("encodingjson/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := baseline(cfg, call, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
