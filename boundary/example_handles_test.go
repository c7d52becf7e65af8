package boundary_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/registry"
)

// A masked value reaches the agent as a handle of its run; the agent passes
// the handle back, and the tool receives the value.
func Example_handles() {
	var keyPattern = regexp.MustCompile(`sk-live-[0-9a-z]+`)
	// The projector masks what it must not show through the call's Masker
	// (the projectors' redactor does so for every value it masks).
	project := canonical.ProjectorFunc(func(_ context.Context, call canonical.Call, raw []byte) (canonical.Projection, error) {
		m := canonical.MaskerOf(call.Mask)
		text := keyPattern.ReplaceAllStringFunc(string(raw), func(v string) string {
			return string(m.AppendMask(nil, canonical.KindSecret, []byte(v)))
		})
		return canonical.Projection{Evidence: canonical.EvidenceFound, Result: []byte(`{"text":` + fmt.Sprintf("%q", text) + `}`)}, nil
	})
	read := boundary.ToolFunc(func(context.Context, []byte) ([]byte, error) { return []byte("the key is sk-live-7f3k9q2w"), nil })
	var got string
	use := boundary.ToolFunc(func(_ context.Context, input []byte) ([]byte, error) { got = string(input); return []byte("ok"), nil })

	def := exampleSearch
	reg, _ := registry.New(def, registry.Definition{Name: "db.connect", Version: "1.0.0", Description: "Connect.",
		InputSchema: def.InputSchema, Effect: registry.EffectRead, Risk: registry.RiskLow, Timeout: 10 * time.Second})
	b, err := boundary.New(memstore.New(), reg, examplePolicy,
		boundary.Bind("read_key", "kb.search", "1.0.0", read, project),
		boundary.Bind("connect", "db.connect", "1.0.0", use, project),
		boundary.Group("db", "read_key", "connect")) // values may flow between these two tools only
	if err != nil {
		panic(err)
	}
	run := exampleRun()
	ctx := context.Background()

	res := b.Invoke(ctx, run, boundary.Envelope{ToolCallID: "call_1", RunID: run.ID, Tool: "read_key", Input: []byte(`{"query":"key"}`)})
	off, n := canonical.IndexHandle(res.AgentJSON())
	handle := string(res.AgentJSON()[off : off+n])
	fmt.Println("the agent sees the key:", strings.Contains(string(res.AgentJSON()), "sk-live"))
	fmt.Println("it sees a handle:", strings.HasPrefix(handle, "<SECRET:"))

	res = b.Invoke(ctx, run, boundary.Envelope{ToolCallID: "call_2", RunID: run.ID, Tool: "connect",
		Input: []byte(`{"query":"` + handle + `"}`)})
	fmt.Println(res.Status(), "and the tool received", got)
	// Output:
	// the agent sees the key: false
	// it sees a handle: true
	// READY and the tool received {"query":"sk-live-7f3k9q2w"}
}
