package test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// The cluster puts each slot's due set in the slot its tag names, beside
// the keys of every run of that slot: CLUSTER KEYSLOT agrees with the
// generated table.
func TestSlotIndexesLiveInTheirRunsSlots(t *testing.T) {
	addrs := redistest.ClusterAddrs(t)
	keys, err := canonical.NewKeys("tc")
	if err != nil {
		t.Fatal(err)
	}
	keyslot := func(key string) int {
		t.Helper()
		v, err := redistest.Command(addrs[0], "CLUSTER", "KEYSLOT", key)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %q", key, v)
		}
		return n
	}
	for slot := 0; slot < canonical.Slots; slot += 97 {
		if got := keyslot(keys.SlotIndex(slot, canonical.SlotDue)); got != slot {
			t.Fatalf("%s is in slot %d, not %d", keys.SlotIndex(slot, canonical.SlotDue), got, slot)
		}
	}
	for i := range 50 {
		run := fmt.Sprintf("run-%d-%s", i, canonical.NewOwner()[:6])
		slot := keyslot(keys.Run(run))
		if slot != canonical.Slot(run) || keyslot(keys.RunSlotIndex(run, canonical.SlotDue)) != slot {
			t.Fatalf("run %s: its state is in slot %d, canonical.Slot says %d, its due set is in %d", run, slot,
				canonical.Slot(run), keyslot(keys.RunSlotIndex(run, canonical.SlotDue)))
		}
	}
}
