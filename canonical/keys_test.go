package canonical_test

import (
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

// Every key of a run is built with one allocation, whatever the lengths of
// the prefix and the ids: a Begin and a Complete build seven of them.
func TestRunKeysAllocateOnce(t *testing.T) {
	k, err := canonical.NewKeys("toolcanon-prod")
	if err != nil {
		t.Fatal(err)
	}
	run, call := "run-01JF8ZQ3W9K4M7T2X5C6V8B0N1", "call_8f14e45fceea167a5a36dedd4bea2543"
	for name, key := range map[string]func() string{
		"record": func() string { return k.Record(run, call) },
		"run":    func() string { return k.Run(run) },
		"calls":  func() string { return k.Calls(run) },
		"live":   func() string { return k.Live(run) },
		"audit":  func() string { return k.Audit(run) },
	} {
		var s string
		if n := testing.AllocsPerRun(100, func() { s = key() }); n != 1 {
			t.Errorf("%s: %v allocations, want 1", name, n)
		}
		_ = s
	}
	base := "toolcanon-prod:{" + run + "}:"
	for got, want := range map[string]string{k.Record(run, call): base + "call:" + call, k.Run(run): base + "run",
		k.Calls(run): base + "calls", k.Live(run): base + "live", k.Audit(run): base + "audit"} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
}
