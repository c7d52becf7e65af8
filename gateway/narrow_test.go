package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/registry"
)

// The narrowed schema is in the subset for every input: the registry
// accepts it, so that a draft is refused only for review, never for its
// schema.
func FuzzNarrowSchema(f *testing.F) {
	for _, s := range []string{
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"string","default":"x"}}}`,
		`{"type":"object","properties":{"n":{"type":["null","array"],"items":{"type":"integer","exclusiveMinimum":0}}},"required":["n","m"]}`,
		`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}},"e":{"enum":["a","a"]}}}`,
		`{"anyOf":[{"type":"object"}]}`,
		`{"type":"object","properties":{"s":{"type":"string","enum":["abc"],"maxLength":1,"minLength":9}}}`,
		`{"properties":{"k":{"const":"v"},"t":{"title":"` + string(make([]byte, 5000)) + `"}}}`,
		`true`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		schema, _ := narrowSchema(v)
		def := registry.Definition{Name: "up.tool", Version: "1.0.0", Description: "d", Effect: registry.EffectRead,
			Risk: registry.RiskLow, Timeout: time.Second, InputSchema: schema}
		if _, err := registry.New(def); err != nil {
			t.Fatalf("narrowed %s to %s, which the registry refuses: %v", raw, schema, err)
		}
	})
}
