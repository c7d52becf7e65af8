package boundary_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/registry"
)

// asking makes fx's tool ask for input when it is not continued, and answer
// with the agent's input as a hit's document id when it is.
func asking(fx *fixture, seen *[]boundary.Resumed) {
	fx.tool.fn = func(ctx context.Context, _ []byte) ([]byte, error) {
		r, ok := boundary.ContinuationFrom(ctx)
		if !ok {
			return nil, &boundary.InputRequired{Requests: json.RawMessage(`{"confirm":{"method":"elicitation/create"}}`),
				State: []byte("step-1 " + fx.marker)}
		}
		*seen = append(*seen, r)
		var in struct{ Answer string }
		_ = json.Unmarshal(r.Input, &in)
		return []byte(`{"hits":[{"source":"kb","document_id":"` + in.Answer + `"}]}`), nil
	}
}

func TestInputRequiredKeepsTheCallOpenForItsContinuation(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		var seen []boundary.Resumed
		asking(fx, &seen)
		res := fx.invoke("c1")
		requests, token, ok := res.InputRequired()
		if !ok || res.Status() != canonical.StatusProjecting || !res.Executed() || string(requests) != `{"confirm":{"method":"elicitation/create"}}` {
			t.Fatalf("first round: %s %s ok=%v requests %s", res.Status(), res.Code(), ok, requests)
		}
		if want := `{"tool_call_id":"c1","status":"INPUT_REQUIRED","input_requests":{"confirm":{"method":"elicitation/create"}}}`; string(res.AgentJSON()) != want {
			t.Fatalf("agent JSON = %s", res.AgentJSON())
		}
		if strings.Contains(string(res.AgentJSON()), fx.marker) || strings.Contains(token, fx.marker) {
			t.Fatal("the tool's state reached the agent")
		}
		fx.checkRecord(t, "c1", want{status: canonical.StatusProjecting, evidence: canonical.EvidenceUnknown})

		env := fx.envelope("c1", "kb.search", okInput)
		cont := func(token, input string) boundary.Envelope {
			e := env
			e.Continue = &boundary.Continuation{Token: token, Input: json.RawMessage(input)}
			return e
		}
		// Every other use of the id is refused, and changes nothing.
		bob := fx.run
		bob.Principal.Subject = "user:bob"
		other := fx.envelope("c1", "kb.search", `{"query":"another"}`)
		other.Continue = &boundary.Continuation{Token: token, Input: json.RawMessage(`{"Answer":"x"}`)}
		for _, tc := range []struct {
			name string
			run  boundary.RunContext
			env  boundary.Envelope
			want canonical.Code
		}{
			{"the same call without input", fx.run, env, canonical.CodeToolCallInProgress},
			{"another token", fx.run, cont(canonical.NewOwner(), `{"Answer":"x"}`), canonical.CodeToolCallInProgress},
			{"another request", fx.run, other, canonical.CodeToolCallInProgress},
			{"another principal", bob, cont(token, `{"Answer":"x"}`), canonical.CodeRunForbidden},
			{"a malformed token", fx.run, cont("a b", `{"Answer":"x"}`), canonical.CodeInvalidArgument},
		} {
			if r := fx.b.Invoke(fx.ctx, tc.run, tc.env); r.Code() != tc.want || r.Executed() {
				t.Errorf("%s: %s %s executed=%v, want %s", tc.name, r.Status(), r.Code(), r.Executed(), tc.want)
			}
		}
		if n := fx.tool.calls.Load(); n != 1 {
			t.Fatalf("the tool ran %d times before the continuation", n)
		}

		res = fx.b.Invoke(fx.ctx, fx.run, cont(token, `{"Answer":"d7"}`))
		if res.Status() != canonical.StatusReady || !res.Executed() {
			t.Fatalf("continuation: %s %s %v", res.Status(), res.Code(), res.Err())
		}
		if len(seen) != 1 || string(seen[0].State) != "step-1 "+fx.marker || string(seen[0].Input) != `{"Answer":"d7"}` {
			t.Fatalf("the continued tool was given %+v", seen)
		}
		rec := fx.checkRecord(t, "c1", want{status: canonical.StatusReady, evidence: canonical.EvidenceFound,
			raw: []byte(`{"hits":[{"source":"kb","document_id":"d7"}]}`), result: res.AgentJSON()})
		// The input's key and its value as a JSON string: a bare "d7" is
		// found in a random run id one time in a few.
		if strings.Contains(string(rec.Request), `"d7"`) || strings.Contains(string(rec.Request), "Answer") {
			t.Fatalf("the agent's input was recorded: %s", rec.Request)
		}
		if u, err := fx.store.Usage(context.Background(), fx.run.ID); err != nil || u.Calls != 1 {
			t.Fatalf("the run counted %d calls, %v", u.Calls, err)
		}
		// Finished: the continuation is a duplicate now.
		if r := fx.b.Invoke(fx.ctx, fx.run, cont(token, `{"Answer":"d7"}`)); r.Code() != canonical.CodeDuplicateToolCall {
			t.Fatalf("continuation of a finished call: %s %s", r.Status(), r.Code())
		}
	})
}

// A call can ask for input more than once; each round has its own token.
func TestInputRequiredTwice(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.tool.fn = func(ctx context.Context, _ []byte) ([]byte, error) {
			r, ok := boundary.ContinuationFrom(ctx)
			if !ok || string(r.State) == "1" {
				round := "1"
				if ok {
					round = "2"
				}
				return nil, &boundary.InputRequired{Requests: json.RawMessage(`{"round":` + round + `}`), State: []byte(round)}
			}
			return fx.raw(), nil
		}
		res := fx.invoke("c1")
		_, first, _ := res.InputRequired()
		env := fx.envelope("c1", "kb.search", okInput)
		env.Continue = &boundary.Continuation{Token: first, Input: json.RawMessage(`{}`)}
		res = fx.b.Invoke(fx.ctx, fx.run, env)
		requests, second, ok := res.InputRequired()
		if !ok || second == first || string(requests) != `{"round":2}` {
			t.Fatalf("second round: %s %s %s", res.Status(), res.Code(), requests)
		}
		if r := fx.b.Invoke(fx.ctx, fx.run, env); r.Code() != canonical.CodeToolCallInProgress {
			t.Fatalf("the first token again: %s %s", r.Status(), r.Code())
		}
		env.Continue.Token = second
		if res = fx.b.Invoke(fx.ctx, fx.run, env); res.Status() != canonical.StatusReady {
			t.Fatalf("last round: %s %s %v", res.Status(), res.Code(), res.Err())
		}
	})
}

// onlyStore hides every interface of a store but canonical.Store.
type onlyStore struct{ canonical.Store }

func TestInputRequiredThatCannotBeKept(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		for name, ir := range map[string]*boundary.InputRequired{
			"requests that are not JSON": {Requests: json.RawMessage(`{"confirm":`)},
			"no requests":                {},
			"a state too large":          {Requests: json.RawMessage(`{}`), State: make([]byte, canonical.MaxInputState+1)},
		} {
			fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return nil, ir }
			id := "c-" + strings.ReplaceAll(name, " ", "-")
			if r := fx.invoke(id); r.Code() != canonical.CodeExecutionFailed {
				t.Errorf("%s: %s %s", name, r.Status(), r.Code())
			}
			fx.checkRecord(t, id, want{status: canonical.StatusError, evidence: canonical.EvidenceError, code: canonical.CodeExecutionFailed})
		}

		// A store that keeps no call open: the call fails, and a
		// continuation is refused before anything is written.
		fx.rebuild(func(s canonical.Store) canonical.Store { return onlyStore{s} })
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) {
			return nil, &boundary.InputRequired{Requests: json.RawMessage(`{}`)}
		}
		if r := fx.invoke("c2"); r.Code() != canonical.CodeExecutionFailed {
			t.Fatalf("InputRequired over a plain store: %s %s", r.Status(), r.Code())
		}
		env := fx.envelope("c3", "kb.search", okInput)
		env.Continue = &boundary.Continuation{Token: canonical.NewOwner()}
		if r := fx.b.Invoke(fx.ctx, fx.run, env); r.Code() != canonical.CodeInvalidArgument || r.Executed() {
			t.Fatalf("continuation over a plain store: %s %s", r.Status(), r.Code())
		}
		fx.checkAbsent(t, "c3")
	})
}

// The policy is asked again when the call continues: a grant taken away
// while the call waited stops it.
func TestContinuationIsAuthorizedAgain(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		var seen []boundary.Resumed
		asking(fx, &seen)
		_, token, _ := fx.invoke("c1").InputRequired()
		deny := registry.PolicyFunc(func(context.Context, string, registry.Principal, string) (registry.Decision, error) {
			return registry.Decision{Verdict: registry.VerdictDeny}, nil
		})
		b, err := boundary.New(fx.store, fx.reg, deny, boundary.Bind("kb.search", "kb.search", "1.0.0", fx.tool, fx.proj))
		if err != nil {
			t.Fatal(err)
		}
		env := fx.envelope("c1", "kb.search", okInput)
		env.Continue = &boundary.Continuation{Token: token, Input: json.RawMessage(`{"Answer":"d1"}`)}
		if r := b.Invoke(fx.ctx, fx.run, env); r.Code() != canonical.CodeUnauthorized || len(seen) != 0 {
			t.Fatalf("continuation after the grant was taken: %s %s, tool given %d", r.Status(), r.Code(), len(seen))
		}
		fx.checkRecord(t, "c1", want{status: canonical.StatusProjecting, evidence: canonical.EvidenceUnknown})
	})
}

// With audit on, the continued call's stream holds its wait and its
// continuation, with the agent's input as its keyed digest and size only.
func TestContinuationIsAudited(t *testing.T) {
	opts := canonical.AuditOptions{Key: []byte(strings.Repeat("k", 32)), KeyID: "k1"}
	store := memstore.New(memstore.WithAudit(opts))
	fx := newFixture(t, factory{name: "memstore", open: func(testing.TB) canonical.Store { return store },
		addr: func(testing.TB) string { return "" }})
	var seen []boundary.Resumed
	asking(fx, &seen)
	_, token, ok := fx.invoke("c1").InputRequired()
	if !ok {
		t.Fatal("the tool's call does not wait for input")
	}
	env := fx.envelope("c1", "kb.search", okInput)
	input := json.RawMessage(`{"Answer":"d7"}`)
	env.Continue = &boundary.Continuation{Token: token, Input: input}
	if res := fx.b.Invoke(fx.ctx, fx.run, env); res.Status() != canonical.StatusReady {
		t.Fatalf("continuation: %s %s %v", res.Status(), res.Code(), res.Err())
	}
	p, err := store.AuditRead(context.Background(), []string{fx.run.ID}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var types []canonical.AuditType
	for _, e := range p[0].Events {
		types = append(types, e.Type)
	}
	if len(types) != 4 || types[1] != canonical.AuditAwaitInput || types[2] != canonical.AuditContinue {
		t.Fatalf("events %v, want begin, await_input, continue, complete", types)
	}
	aw, co := p[0].Events[1], p[0].Events[2]
	if aw.TokenDigest != opts.Digest([]byte(token)) || co.InputDigest != opts.Digest(input) || co.InputSize != int64(len(input)) ||
		co.Principal != canonical.PrincipalTag("user:alice") {
		t.Fatalf("await_input %+v, continue %+v", aw, co)
	}
}
