package boundary_test

import (
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

func TestRunBelongsToItsPrincipal(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		fx.checkReady(t, fx.invoke("call_a1"), canonical.EvidenceFound)
		alice := fx.run
		bob := fx.run
		bob.Principal.Subject = "user:bob"

		// Bob's calls in alice's run: refused before anything runs, even
		// for the id alice used and the one she will use next.
		for _, id := range []string{"call_a1", "call_a2"} {
			fx.run = bob
			fx.checkError(t, fx.invoke(id), id, canonical.CodeRunForbidden, false)
		}
		if _, err := fx.b.Usage(fx.ctx, bob); canonical.CodeOf(err) != canonical.CodeRunForbidden {
			t.Fatalf("bob's Usage: %v", err)
		}
		if recs, err := fx.b.Records(fx.ctx, bob, []string{"call_a1"}, canonical.ReadOptions{Raw: true}); canonical.CodeOf(err) != canonical.CodeRunForbidden || recs != nil {
			t.Fatalf("bob's Records: %v, %v", recs, err)
		}
		if err := fx.b.CloseRun(fx.ctx, bob); canonical.CodeOf(err) != canonical.CodeRunForbidden {
			t.Fatalf("bob's CloseRun: %v", err)
		}
		if fx.tool.calls.Load() != 1 {
			t.Fatalf("the tool ran %d times", fx.tool.calls.Load())
		}

		u, err := fx.b.Usage(fx.ctx, alice)
		if err != nil || u.Calls != 1 || u.Closed {
			t.Fatalf("alice's Usage: %+v, %v", u, err)
		}
		recs, err := fx.b.Records(fx.ctx, alice, []string{"call_a1"}, canonical.ReadOptions{})
		if err != nil || recs[0] == nil || recs[0].Status != canonical.StatusReady {
			t.Fatalf("alice's Records: %v, %v", recs, err)
		}
		// A run nobody wrote: nothing to read, for anybody, and nothing read.
		nobody := bob
		nobody.ID = fx.run.ID + "-none"
		if recs, err := fx.b.Records(fx.ctx, nobody, []string{"call_a1"}, canonical.ReadOptions{}); err != nil || len(recs) != 1 || recs[0] != nil {
			t.Fatalf("Records of a run nobody wrote: %v, %v", recs, err)
		}
		if _, err := fx.b.Usage(fx.ctx, nobody); canonical.CodeOf(err) != canonical.CodeNotFound {
			t.Fatalf("Usage of a run nobody wrote: %v", err)
		}
		fx.run = alice
		fx.checkReady(t, fx.invoke("call_a2"), canonical.EvidenceFound)
		if err := fx.b.CloseRun(fx.ctx, alice); err != nil {
			t.Fatal(err)
		}
		fx.checkError(t, fx.invoke("call_a3"), "call_a3", canonical.CodeRunInactive, false)
	})
}

func TestAuthorizeAsksThePolicyForTheToolName(t *testing.T) {
	forEachStore(t, func(t *testing.T, fx *fixture) {
		run := fx.run
		if err := fx.b.Authorize(fx.ctx, run, "progress_facts"); err != nil {
			t.Fatalf("allowed: %v", err)
		}
		for subject, want := range map[string]canonical.Code{
			"user:mallory": canonical.CodeUnauthorized, "user:broken": canonical.CodePolicyUnavailable, "": canonical.CodeUnauthorized,
		} {
			run.Principal = registry.Principal{Subject: subject, ExpiresAt: time.Now().Add(time.Hour)}
			if err := fx.b.Authorize(fx.ctx, run, "progress_facts"); canonical.CodeOf(err) != want {
				t.Errorf("%q: %v, want %s", subject, err, want)
			}
		}
		run.Principal = registry.Principal{Subject: "user:alice", ExpiresAt: time.Now().Add(-time.Second)}
		if err := fx.b.Authorize(fx.ctx, run, "progress_facts"); canonical.CodeOf(err) != canonical.CodeUnauthorized {
			t.Errorf("expired principal: %v", err)
		}
		run = fx.run
		if err := fx.b.Authorize(fx.ctx, run, "kb.approve"); canonical.CodeOf(err) != canonical.CodeApprovalRequired {
			t.Errorf("a permission that needs approval: %v", err)
		}
	})
}
