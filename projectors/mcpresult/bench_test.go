package mcpresult_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

func benchInputs() map[string][]byte {
	row := map[string]any{"id": "o-81723", "status": "refunded", "note": "refund by alice@example.com from 10.0.0.7", "amount": 12.5}
	rows := make([]any, 2000)
	for i := range rows {
		rows[i] = row
	}
	return map[string][]byte{
		"structured-2000-rows": structuredResult(map[string]any{"rows": rows, "total": len(rows)}),
		"text-1MiB":            textResult(strings.Repeat("GET /api/orders?id=42 from 10.0.0.7 took 12ms ok\n", 1<<14)),
	}
}

func BenchmarkProject(b *testing.B) {
	p := newProjector(b, projectors.DefaultLimits())
	for name, raw := range benchInputs() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for range b.N {
				if _, err := p.Project(context.Background(), call, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBaselineUnmarshal is the projection done the usual way: the
// whole result into maps, every string redacted, the value marshalled and
// cut afterwards.
func BenchmarkBaselineUnmarshal(b *testing.B) {
	for name, raw := range benchInputs() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for range b.N {
				var r map[string]any
				if err := json.Unmarshal(raw, &r); err != nil {
					b.Fatal(err)
				}
				v := r["structuredContent"]
				if v == nil {
					v = r["content"]
				}
				out, _ := json.Marshal(redactAll(v))
				_ = out[:min(len(out), 16<<10)]
			}
		})
	}
}

func redactAll(v any) any {
	switch x := v.(type) {
	case string:
		return redact.String(x)
	case []any:
		for i := range x {
			x[i] = redactAll(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = redactAll(x[k])
		}
	}
	return v
}
