package storetest

import (
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// testOwnedReads: reads on a principal's behalf check the run's owner in
// the read itself, and hand over no record of another generation of the
// run, so that a run that expires and is begun again between two reads
// of one reader never hands it the newcomer's records.
func testOwnedReads(t *testing.T, f Factory) {
	t.Run("OwnerChecked", func(t *testing.T) {
		h := f(t)
		o := h.owned(t)
		run := newRunID(t)
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		idx, err := o.ReadIndex(ctx(), run, alice, 10)
		if err != nil || len(idx.IDs) != 1 || idx.IDs[0] != "c1" || idx.Length != 1 || idx.Gen == "" {
			t.Fatalf("ReadIndex(owner) = %+v, %v", idx, err)
		}
		recs, err := o.ReadRecords(ctx(), run, alice, idx.Gen, []string{"c1", "c2"}, canonical.ReadOptions{})
		if err != nil || len(recs) != 2 || recs[0] == nil || recs[0].Status != canonical.StatusReady || recs[1] != nil {
			t.Fatalf("ReadRecords(owner) = %v, %v", recs, err)
		}
		if u, err := o.ReadUsage(ctx(), run, alice); err != nil || u.Calls != 1 || u.Completed != 1 {
			t.Fatalf("ReadUsage(owner) = %+v, %v", u, err)
		}
		_, err = o.ReadIndex(ctx(), run, bob, 10)
		wantCode(t, err, canonical.CodeRunForbidden)
		_, err = o.ReadRecords(ctx(), run, bob, "", []string{"c1"}, canonical.ReadOptions{})
		wantCode(t, err, canonical.CodeRunForbidden)
		_, err = o.ReadUsage(ctx(), run, bob)
		wantCode(t, err, canonical.CodeRunForbidden)
		// A run nobody wrote has nothing to read.
		other := newRunID(t) + "x"
		_, err = o.ReadIndex(ctx(), other, alice, 10)
		wantCode(t, err, canonical.CodeNotFound)
		_, err = o.ReadRecords(ctx(), other, alice, "", []string{"c1"}, canonical.ReadOptions{})
		wantCode(t, err, canonical.CodeNotFound)
		_, err = o.ReadUsage(ctx(), other, alice)
		wantCode(t, err, canonical.CodeNotFound)
		assertNothingStored(t, h, other)
	})

	// The run expires between the reader's index read and its records
	// read, and another principal begins it again with the same call id:
	// the reader gets RUN_FORBIDDEN, not the newcomer's record.
	t.Run("NoNewcomersRecords", func(t *testing.T) {
		h := f(t)
		o := h.owned(t)
		run := newRunID(t)
		short := beginReq(run, "c1")
		short.TTL = 200 * time.Millisecond
		mustBegin(t, h.Store, asPrincipal(short, alice))
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		idx, err := o.ReadIndex(ctx(), run, alice, 10)
		if err != nil || len(idx.IDs) != 1 {
			t.Fatalf("ReadIndex = %+v, %v", idx, err)
		}
		h.Wait(400 * time.Millisecond) // every key of the run expires
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), bob))
		newcomer := ready(run, "c1", canonical.NoEvidence)
		mustComplete(t, h.Store, newcomer)
		recs, err := o.ReadRecords(ctx(), run, alice, idx.Gen, idx.IDs, canonical.ReadOptions{})
		wantCode(t, err, canonical.CodeRunForbidden)
		if len(recs) != 0 {
			t.Fatalf("the reader got %d records of the newcomer's run", len(recs))
		}
	})

	// The same reader begins the run again after it expired: its records of
	// the earlier run are gone, and a record of the new one is not the one
	// the earlier index read named.
	t.Run("NoRecordOfAnotherGeneration", func(t *testing.T) {
		h := f(t)
		o := h.owned(t)
		run := newRunID(t)
		short := beginReq(run, "c1")
		short.TTL = 200 * time.Millisecond
		mustBegin(t, h.Store, asPrincipal(short, alice))
		mustComplete(t, h.Store, ready(run, "c1", canonical.EvidenceFound))
		idx, err := o.ReadIndex(ctx(), run, alice, 10)
		if err != nil {
			t.Fatal(err)
		}
		h.Wait(400 * time.Millisecond)
		mustBegin(t, h.Store, asPrincipal(beginReq(run, "c1"), alice))
		recs, err := o.ReadRecords(ctx(), run, alice, idx.Gen, idx.IDs, canonical.ReadOptions{})
		if err != nil || len(recs) != 1 || recs[0] != nil {
			t.Fatalf("a record of the next generation was read as the earlier one's: %v, %v", recs, err)
		}
		recs, err = o.ReadRecords(ctx(), run, alice, "", idx.IDs, canonical.ReadOptions{})
		if err != nil || len(recs) != 1 || recs[0] == nil || recs[0].Status != canonical.StatusProjecting {
			t.Fatalf("the run's own generation: %v, %v", recs, err)
		}
	})
}
