package boundary_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
)

func TestNewRefusesBadBindings(t *testing.T) {
	t.Parallel()
	reg := testRegistry(t)
	pol := testPolicy("m")
	tool := boundary.ToolFunc(func(context.Context, []byte) ([]byte, error) { return nil, nil })
	proj := canonical.ProjectorFunc(func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
		return canonical.Projection{}, nil
	})
	ok := boundary.Bind("kb.search", "kb.search", "1.0.0", tool, proj)
	cases := []struct {
		name string
		new  func() (*boundary.Boundary, error)
		code canonical.Code
	}{
		{"nil store", func() (*boundary.Boundary, error) { return boundary.New(nil, reg, pol, ok) }, canonical.CodeInvalidArgument},
		{"nil registry", func() (*boundary.Boundary, error) { return boundary.New(memstore.New(), nil, pol, ok) }, canonical.CodeInvalidArgument},
		{"nil policy", func() (*boundary.Boundary, error) { return boundary.New(memstore.New(), reg, nil, ok) }, canonical.CodeInvalidArgument},
		{"nil option", func() (*boundary.Boundary, error) { return boundary.New(memstore.New(), reg, pol, nil) }, canonical.CodeInvalidArgument},
		{"unknown name", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, boundary.Bind("x", "kb.nope", "1.0.0", tool, proj))
		}, canonical.CodeUnknownTool},
		{"unknown version", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, boundary.Bind("x", "kb.search", "1.0.1", tool, proj))
		}, canonical.CodeUnknownTool},
		{"loose version", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, boundary.Bind("x", "kb.search", "v1.0.0", tool, proj))
		}, canonical.CodeUnknownTool},
		{"duplicate agent name", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, ok, boundary.Bind("kb.search", "kb.slow", "1.0.0", tool, proj))
		}, canonical.CodeInvalidArgument},
		{"malformed agent name", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, boundary.Bind("kb search", "kb.search", "1.0.0", tool, proj))
		}, canonical.CodeInvalidArgument},
		{"empty agent name", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, boundary.Bind("", "kb.search", "1.0.0", tool, proj))
		}, canonical.CodeInvalidArgument},
		{"nil tool", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, boundary.Bind("x", "kb.search", "1.0.0", nil, proj))
		}, canonical.CodeInvalidArgument},
		{"nil ToolFunc", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, boundary.Bind("x", "kb.search", "1.0.0", boundary.ToolFunc(nil), proj))
		}, canonical.CodeInvalidArgument},
		{"nil projector", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, boundary.Bind("x", "kb.search", "1.0.0", tool, nil))
		}, canonical.CodeInvalidArgument},
		{"nil ProjectorFunc", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, boundary.Bind("x", "kb.search", "1.0.0", tool, canonical.ProjectorFunc(nil)))
		}, canonical.CodeInvalidArgument},
		{"store attempts", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, ok, boundary.WithStoreAttempts(0))
		}, canonical.CodeInvalidArgument},
		{"store timeout", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, ok, boundary.WithStoreTimeout(0))
		}, canonical.CodeInvalidArgument},
		{"projection timeout", func() (*boundary.Boundary, error) {
			return boundary.New(memstore.New(), reg, pol, ok, boundary.WithProjectionTimeout(-time.Second))
		}, canonical.CodeInvalidArgument},
	}
	for _, c := range cases {
		b, err := c.new()
		if b != nil || canonical.CodeOf(err) != c.code {
			t.Errorf("%s: New = %v, %v; want code %s", c.name, b, err, c.code)
		}
	}

	b, err := boundary.New(memstore.New(), reg, pol, ok, boundary.Bind("find", "kb.search", "1.0.0", tool, proj),
		boundary.WithReplay(), boundary.WithStoreAttempts(1), boundary.WithStoreTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Tools(); !slices.Equal(got, []string{"find", "kb.search"}) {
		t.Errorf("Tools = %v", got)
	}
}

func TestHintTableIsComplete(t *testing.T) {
	t.Parallel()
	codes := []canonical.Code{
		canonical.CodeInvalidToolCallID, canonical.CodeInvalidRunID, canonical.CodeInvalidArgument,
		canonical.CodeRunMismatch, canonical.CodeRunInactive, canonical.CodeDeadlineExceeded,
		canonical.CodeUnknownTool, canonical.CodeInvalidInput, canonical.CodeUnauthorized,
		canonical.CodeApprovalRequired, canonical.CodeNotReadOnly, canonical.CodePolicyUnavailable,
		canonical.CodeDuplicateToolCall, canonical.CodeBudgetExhausted, canonical.CodeExecutionFailed,
		canonical.CodeToolTimeout, canonical.CodeProjectionFailed, canonical.CodeResultTooLarge,
		canonical.CodeInvalidTransition, canonical.CodeNotFound, canonical.CodeStoreUnavailable,
	}
	seen := map[string]bool{}
	for _, c := range codes {
		h := boundary.Hint(c)
		if h == boundary.Hint("NO_SUCH_CODE") || len(h) > 120 || strings.ContainsAny(h, "\"\\\n{}") {
			t.Errorf("%s: hint %q is missing, long or not plain", c, h)
		}
		seen[h] = true
	}
	if len(seen) != len(codes) {
		t.Errorf("%d distinct hints for %d codes", len(seen), len(codes))
	}
}

func TestInvokeNeverPanicsOnMisuse(t *testing.T) {
	t.Parallel()
	var zero *boundary.Boundary
	res := zero.Invoke(context.Background(), boundary.RunContext{}, boundary.Envelope{ToolCallID: "call_1"})
	if res.Code() != canonical.CodeInvalidArgument || !json.Valid(res.AgentJSON()) {
		t.Errorf("nil Boundary: %s %s", res.Code(), res.AgentJSON())
	}
	fx := newFixture(t, factories[0])
	var nilCtx context.Context // the misuse under test
	res = fx.b.Invoke(nilCtx, fx.run, fx.envelope("call_1", "kb.search", okInput))
	if res.Code() != canonical.CodeInvalidArgument {
		t.Errorf("nil context: %s", res.Code())
	}
	res = fx.b.Invoke(context.Background(), boundary.RunContext{}, boundary.Envelope{})
	fx.checkError(t, res, "", canonical.CodeInvalidToolCallID, false)
	fx.calls(t, 0, 0)
}
