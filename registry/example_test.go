package registry_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

var search = registry.Definition{
	Name:        "kb.search",
	Version:     "1.0.0",
	Description: "Search the knowledge base.",
	InputSchema: []byte(`{
		"type": "object", "additionalProperties": false,
		"properties": {
			"query": {"type": "string", "minLength": 1, "maxLength": 256},
			"limit": {"type": "integer", "minimum": 1, "maximum": 50}
		},
		"required": ["query"]
	}`),
	Effect:      registry.EffectRead,
	Risk:        registry.RiskLow,
	Permissions: []string{"kb.read"},
	Timeout:     30 * time.Second,
}

// A host's policy engine, behind the Policy port.
var policy = registry.PolicyFunc(func(_ context.Context, project string, p registry.Principal, permission string) (registry.Decision, error) {
	fence := registry.Fence{ProjectVersion: "12", RoleBindingVersion: "40"}
	if p.Subject == "agent:planner" && permission == registry.CallPermissionPrefix+"kb.search" {
		return registry.Decision{Verdict: registry.VerdictRequireApproval, Fence: fence}, nil
	}
	if p.Subject == "user:mallory" {
		return registry.Decision{Verdict: registry.VerdictDeny}, nil
	}
	return registry.Decision{Verdict: registry.VerdictAllow, Fence: fence}, nil
})

func Example() {
	reg, err := registry.New(search)
	if err != nil {
		panic(err)
	}
	plan, err := reg.Prepare(context.Background(), policy, registry.Request{
		Project:   "proj-1",
		Principal: registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(time.Hour)},
		Tool:      "kb.search",
		Version:   "1.0.0",
		Input:     []byte(`{ "limit": 5, "query": "redis \u0074tl" }`),
	})
	if err != nil {
		panic(err)
	}
	digest := plan.InputDigest()
	fmt.Println(plan.Status())
	fmt.Println(string(plan.Input()))
	fmt.Println(plan.Permissions())
	fmt.Println(hex.EncodeToString(digest[:8]))
	// Output:
	// ready
	// {"limit":5,"query":"redis ttl"}
	// [tool.call:kb.search kb.read]
	// 3ac0f4506a116b99
}

func ExampleRegistry_Prepare_approval() {
	reg, _ := registry.New(search)
	plan, err := reg.Prepare(context.Background(), policy, registry.Request{
		Project:   "proj-1",
		Principal: registry.Principal{Subject: "agent:planner", ExpiresAt: time.Now().Add(time.Hour)},
		Tool:      "kb.search",
		Version:   "1.0.0",
		Input:     []byte(`{"query":"redis ttl"}`),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Status(), plan.Fence().ProjectVersion)
	// Output: approval_required 12
}

func ExampleRegistry_Prepare_deny() {
	reg, _ := registry.New(search)
	_, err := reg.Prepare(context.Background(), policy, registry.Request{
		Project:   "proj-1",
		Principal: registry.Principal{Subject: "user:mallory", ExpiresAt: time.Now().Add(time.Hour)},
		Tool:      "kb.search",
		Version:   "1.0.0",
		Input:     []byte(`{not even json`), // never parsed: the deny comes first
	})
	fmt.Println(canonical.CodeOf(err))
	// Output: UNAUTHORIZED
}

func ExampleNew_schemaError() {
	bad := search
	bad.InputSchema = []byte(`{"type":"object","additionalProperties":false,
		"properties":{"query":{"type":"string","maxLength":64,"pattern":"^[a-z]+$"}}}`)
	_, err := registry.New(bad)
	var se *registry.SchemaError
	if errors.As(err, &se) {
		fmt.Println(se.Path, se.Keyword, errors.Is(err, canonical.ErrInvalidArgument))
	}
	// Output: /properties/query pattern true
}

func ExampleCanonicalize() {
	out, err := registry.Canonicalize([]byte(`{"b": [1.50, 2e-3, "\u20ac"], "a": 1E2}`))
	fmt.Println(string(out), err)
	_, err = registry.Canonicalize([]byte(`{"a": 1, "a": 2}`))
	fmt.Println(canonical.CodeOf(err))
	// Output:
	// {"a":100,"b":[1.5,0.002,"€"]} <nil>
	// INVALID_ARGUMENT
}

func ExampleRegistry_PrepareRead() {
	write := search
	write.Name, write.Effect, write.Risk = "kb.delete", registry.EffectWrite, registry.RiskHigh
	reg, _ := registry.New(search, write)
	req := registry.Request{
		Project:   "proj-1",
		Principal: registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(time.Hour)},
		Tool:      "kb.delete",
		Version:   "1.0.0",
		Input:     []byte(`{not even json`), // never parsed: the effect is known first
	}
	_, err := reg.PrepareRead(context.Background(), policy, req)
	fmt.Println(canonical.CodeOf(err))
	// Prepare still plans it, for a flow that can run writes.
	_, err = reg.Prepare(context.Background(), policy, req)
	fmt.Println(canonical.CodeOf(err))
	// Output:
	// NOT_READ_ONLY
	// INVALID_INPUT
}

func ExampleTool_CanonicalOutput() {
	typed := search
	typed.OutputSchema = []byte(`{"type":"object","additionalProperties":false,"required":["ids"],
		"properties":{"ids":{"type":"array","maxItems":10,"items":{"type":"string","maxLength":64}}}}`)
	reg, _ := registry.New(typed)
	tool, _ := reg.Lookup("kb.search", "1.0.0")
	out, err := tool.CanonicalOutput([]byte(`{ "ids": ["doc-7"] }`))
	fmt.Println(tool.HasOutputSchema(), string(out), err)
	_, err = tool.CanonicalOutput([]byte(`{"ids":["doc-7"],"debug":"trace"}`))
	fmt.Println(canonical.CodeOf(err))
	// Output:
	// true {"ids":["doc-7"]} <nil>
	// EXECUTION_FAILED
}
