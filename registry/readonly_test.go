package registry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

// A caller that runs only read tools learns a tool's effect from its
// definition, before the input is read: any other effect is NOT_READ_ONLY,
// whatever the input holds, and the input is never parsed.
func TestReadOnlyRefusesOtherEffectsBeforeInputIsParsed(t *testing.T) {
	defs := []Definition{searchDef()}
	for _, e := range []Effect{EffectWrite, EffectExecute, EffectExternal} {
		d := searchDef()
		d.Name, d.Effect = "kb."+string(e), e
		defs = append(defs, d)
	}
	r := mustNew(t, defs...)
	malformed := []string{
		`{"query":`,                            // truncated
		`{"query":"a","query":"b"}`,            // duplicate key
		"\xff\xfe",                             // not UTF-8
		`{"query":"x"} trailing`,               // trailing data
		strings.Repeat("[", 100000),            // deep
		strings.Repeat(" ", 6*MaxInputBytes+1), // over the raw budget
		`{"query":1}`,                          // fails the schema
		`{"query":"x"}`,                        // valid
	}
	request := func(tool, input string) Request {
		req := searchRequest(input)
		req.Tool = tool
		return req
	}
	all := []string{"tool.call:kb.search", "kb.audit", "kb.read"}
	for _, e := range []Effect{EffectWrite, EffectExecute, EffectExternal} {
		tool := "kb." + string(e)
		for _, input := range malformed {
			spy := &spyPolicy{}
			_, err := r.prepare(context.Background(), spy, request(tool, input), testNow, true)
			wantCode(t, err, canonical.CodeNotReadOnly)
			var syn *SyntaxError
			var ve *ValidationError
			if errors.As(err, &syn) || errors.As(err, &ve) {
				t.Fatalf("%s with %.20q: refusal reports an input error: %v", tool, input, err)
			}
			// The policy is asked first, about every permission.
			want := append([]string{"tool.call:" + tool}, all[1:]...)
			if got := spy.calls(); !slices.Equal(got, want) {
				t.Fatalf("%s: policy asked %v, want %v", tool, got, want)
			}
		}
		// A deny still wins, and a broken policy still fails closed.
		spy := &spyPolicy{answers: map[string]Decision{"kb.read": {Verdict: VerdictDeny}}}
		_, err := r.prepare(context.Background(), spy, request(tool, `{"query":`), testNow, true)
		wantCode(t, err, canonical.CodeUnauthorized)
		spy = &spyPolicy{errs: map[string]error{"kb.audit": errors.New("policy store down")}}
		_, err = r.prepare(context.Background(), spy, request(tool, `{"query":`), testNow, true)
		wantCode(t, err, canonical.CodePolicyUnavailable)
		// An approval cannot make a write runnable by a read-only caller.
		spy = &spyPolicy{answers: map[string]Decision{"tool.call:" + tool: {Verdict: VerdictRequireApproval, Fence: fenceA}}}
		_, err = r.prepare(context.Background(), spy, request(tool, `{"query":"x"}`), testNow, true)
		wantCode(t, err, canonical.CodeNotReadOnly)
		// Prepare plans the same call as before: approval flows prepare
		// writes.
		plan, err := r.prepare(context.Background(), &spyPolicy{}, request(tool, `{"query":"x"}`), testNow, false)
		ok(t, err)
		if plan.Status() != StatusReady || plan.Tool().Effect() != e {
			t.Fatalf("%s under Prepare: plan %s of effect %s", tool, plan.Status(), plan.Tool().Effect())
		}
	}
	// A read tool under PrepareRead: its input is parsed as always.
	_, err := r.prepare(context.Background(), &spyPolicy{}, request("kb.search", `{"query":`), testNow, true)
	wantCode(t, err, canonical.CodeInvalidInput)
	plan, err := r.prepare(context.Background(), &spyPolicy{}, request("kb.search", `{"query":"x"}`), testNow, true)
	ok(t, err)
	if plan.Status() != StatusReady || string(plan.Input()) != `{"query":"x"}` {
		t.Fatalf("read tool under PrepareRead: %s %s", plan.Status(), plan.Input())
	}
}
