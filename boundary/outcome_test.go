package boundary_test

// Outcomes the specs fix beyond the basic lifecycle:
//
//   a projector's own overflow ................ TestProjectorOverflowIsResultTooLarge
//   other projector errors .................... TestOtherProjectorErrorsStayProjectionFailed
//   declared output schema enforced ........... TestDeclaredOutputSchemaIsEnforcedBeforeProjecting,
//                                               TestDeclaredOutputOverTheRegistryBoundIsResultTooLarge
//   no output schema keeps raw opaque ......... TestWithoutOutputSchemaRawIsOpaque
//   read-only before the input is read ........ TestWriteToolIsNotReadOnlyWhateverItsInput

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

func TestProjectorOverflowIsResultTooLarge(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		overflows := []error{
			canonical.Errorf(canonical.CodeResultTooLarge, "no evidence item fits the budget: %s", fx.marker),
			fmt.Errorf("projector: %w", canonical.ErrResultTooLarge),
		}
		for i, perr := range overflows {
			fx.proj.fn = func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
				return canonical.Projection{}, perr
			}
			id := fmt.Sprintf("call_over%d", i)
			res := fx.invoke(id)
			fx.checkError(t, res, id, canonical.CodeResultTooLarge, true)
			// Raw fitted the record: it stays, harness-only; no result.
			fx.checkRecord(t, id, errRec(canonical.CodeResultTooLarge, fx.raw()))
		}
		fx.calls(t, int64(len(overflows)), int64(len(overflows)))
	})
}

func TestOtherProjectorErrorsStayProjectionFailed(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		others := []error{
			canonical.Errorf(canonical.CodeInvalidInput, "query must be a string"),
			canonical.Errorf(canonical.CodeExecutionFailed, "backend reported failure"),
			canonical.Errorf(canonical.CodeStoreUnavailable, "a projector does not speak for the store"),
			canonical.Errorf(canonical.CodeDuplicateToolCall, "nor for the lifecycle"),
			// The projector's own code is the outermost one: a failure that
			// merely mentions an overflow among its causes is a failure.
			canonical.Wrap(canonical.CodeProjectionFailed, canonical.ErrResultTooLarge, "gave up"),
			fmt.Errorf("plain error %s", fx.marker),
		}
		for i, perr := range others {
			fx.proj.fn = func(context.Context, canonical.Call, []byte) (canonical.Projection, error) {
				return canonical.Projection{}, perr
			}
			id := fmt.Sprintf("call_other%d", i)
			res := fx.invoke(id)
			fx.checkError(t, res, id, canonical.CodeProjectionFailed, true)
			fx.checkRecord(t, id, errRec(canonical.CodeProjectionFailed, fx.raw()))
		}
		fx.calls(t, int64(len(others)), int64(len(others)))
	})
}

// typedOutput is the output schema of kb.typed: the hits the default fake
// projector reads, and nothing else.
const typedOutput = `{"type":"object","additionalProperties":false,"required":["hits"],
	"properties":{"hits":{"type":"array","maxItems":10,"items":{"type":"object","additionalProperties":false,
		"required":["source","document_id"],
		"properties":{"source":{"type":"string","maxLength":32},"document_id":{"type":"string","maxLength":64}}}}}}`

// wideOutput admits more than the registry's output bound.
const wideOutput = `{"type":"object","additionalProperties":false,
	"properties":{"hits":{"type":"array","maxItems":256,"items":{"type":"string","maxLength":4096}}}}`

// withOutputSchema rebuilds fx.b over a registry whose kb.typed and kb.wide
// declare output schemas, both bound to fx's tool and projector.
func (fx *fixture) withOutputSchema(t *testing.T) {
	t.Helper()
	typed := def("kb.typed", registry.EffectRead, 30*time.Second)
	typed.OutputSchema = []byte(typedOutput)
	wide := def("kb.wide", registry.EffectRead, 30*time.Second)
	wide.OutputSchema = []byte(wideOutput)
	reg, err := registry.New(typed, wide)
	if err != nil {
		t.Fatal(err)
	}
	fx.b, err = boundary.New(fx.store, reg, testPolicy(fx.marker),
		boundary.Bind("kb.typed", "kb.typed", "1.0.0", fx.tool, fx.proj),
		boundary.Bind("kb.wide", "kb.wide", "1.0.0", fx.tool, fx.proj))
	if err != nil {
		t.Fatal(err)
	}
}

func TestDeclaredOutputSchemaIsEnforcedBeforeProjecting(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.withOutputSchema(t)
		var raw []byte
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return raw, nil }

		// A conforming response, in any spelling, is projected and kept as
		// the tool sent it: the check never rewrites raw.
		raw = []byte(" {\n \"hits\" : [ {\"document_id\":\"d1\", \"source\":\"kb\"} ] }\n")
		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_typed", "kb.typed", okInput))
		fx.checkReady(t, res, canonical.EvidenceFound)
		w := wantRec(canonical.StatusReady, canonical.EvidenceFound, "", raw, res.AgentJSON())
		w.tool = "kb.typed"
		rec := fx.checkRecord(t, "call_typed", w)
		if string(rec.Raw) != string(raw) {
			t.Fatalf("raw rewritten: %q", rec.Raw)
		}
		fx.calls(t, 1, 1)

		// A response outside the declared schema is the tool's failure: the
		// projector never sees it, and raw stays for the harness.
		mismatches := []string{
			`{"hits":[{"source":"kb","document_id":"d1","trace":"` + fx.marker + `"}]}`, // unknown key
			`{"hits":"` + fx.marker + `"}`,                                              // wrong type
			`{}`,                                                                        // required
			`{"hits":[{"source":"kb","document_id":"d1"}],"hits":[]}`, // duplicate key
			`null`,
			`{"hits":[`,       // not JSON
			"{\"hits\":[\xff", // not UTF-8
			`{"hits":[{"source":"kb","document_id":"` + strings.Repeat("d", 65) + `"}]}`, // over maxLength
		}
		for i, m := range mismatches {
			raw = []byte(m)
			id := fmt.Sprintf("call_mis%d", i)
			res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope(id, "kb.typed", okInput))
			fx.checkError(t, res, id, canonical.CodeExecutionFailed, true)
			w := errRec(canonical.CodeExecutionFailed, raw)
			w.tool = "kb.typed"
			fx.checkRecord(t, id, w)
		}
		fx.calls(t, int64(1+len(mismatches)), 1)
	})
}

func TestDeclaredOutputOverTheRegistryBoundIsResultTooLarge(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.withOutputSchema(t)
		// 80 strings of 4000 bytes: valid under the schema, 320 KB canonical,
		// over the 256 KiB output bound, well inside the record's room.
		hits := make([]string, 80)
		for i := range hits {
			hits[i] = `"` + strings.Repeat("x", 4000) + `"`
		}
		raw := []byte(`{"hits":[` + strings.Join(hits, ",") + `]}`)
		if len(raw) <= registry.MaxOutputBytes {
			t.Fatalf("test raw of %d bytes is not over the bound", len(raw))
		}
		fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return raw, nil }
		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_wide", "kb.wide", okInput))
		fx.checkError(t, res, "call_wide", canonical.CodeResultTooLarge, true)
		w := errRec(canonical.CodeResultTooLarge, raw)
		w.tool = "kb.wide"
		fx.checkRecord(t, "call_wide", w)
		fx.calls(t, 1, 0)
	})
}

func TestWithoutOutputSchemaRawIsOpaque(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		// kb.search declares no output schema: whatever the tool returns is
		// kept whole and only the projector reads it.
		raws := []string{
			string(fx.raw()),
			" {\"hits\" : [], \"extra\": {\"deep\": [1, 2.50, \"x\"]}}\n",
			`{"hits":[],"n":9007199254740993}`,
		}
		for i, r := range raws {
			fx.tool.fn = func(context.Context, []byte) ([]byte, error) { return []byte(r), nil }
			id := fmt.Sprintf("call_opaque%d", i)
			res := fx.invoke(id)
			if res.Status() != canonical.StatusReady {
				t.Fatalf("%s: %s %s (%v)", id, res.Status(), res.Code(), res.Err())
			}
			rec := fx.checkRecord(t, id, wantRec(canonical.StatusReady, res.Evidence(), "", []byte(r), res.AgentJSON()))
			if string(rec.Raw) != r {
				t.Fatalf("raw rewritten: %q", rec.Raw)
			}
		}
		fx.calls(t, int64(len(raws)), int64(len(raws)))
	})
}

func TestWriteToolIsNotReadOnlyWhateverItsInput(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		// The effect is the definition's: it is known before the input is
		// read, so no input, however broken, changes the answer.
		inputs := []string{``, `{"query":`, `{"query":"x","query":"y"}`, "{\"query\":\"\xff\"}", `[]`, `null`,
			`{"query":1}`, `{"query":"x","extra":true}`, strings.Repeat("[", 100000), okInput}
		for _, in := range inputs {
			res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_w", "kb.write", in))
			fx.checkError(t, res, "call_w", canonical.CodeNotReadOnly, false)
		}
		// The policy still speaks first.
		fx.run.Principal.Subject = "user:mallory"
		res := fx.b.Invoke(fx.ctx, fx.run, fx.envelope("call_w", "kb.write", `{"query":`))
		fx.checkError(t, res, "call_w", canonical.CodeUnauthorized, false)
		fx.calls(t, 0, 0)
		fx.checkAbsent(t, "call_w")
		fx.checkNothingWritten(t)
	})
}
