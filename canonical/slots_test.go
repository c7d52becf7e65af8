package canonical_test

import (
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

// crc16 is the bitwise CRC16-CCITT (XMODEM) of Redis Cluster's
// specification, against which the table-driven one and the generated
// tags are checked.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Every slot's tag hashes to the slot, is "~" and three characters of
// [0-9A-Za-z], and is no run id; a run's slot is its id's CRC16.
func TestSlotTagsHashToTheirSlots(t *testing.T) {
	if got := crc16("123456789"); got != 0x31c3 {
		t.Fatalf("the reference CRC16 of 123456789 is %#x, want 0x31c3 (the specification's check value)", got)
	}
	seen := map[string]bool{}
	for slot := range canonical.Slots {
		tag := canonical.SlotTag(slot)
		if got := int(crc16(tag) % canonical.Slots); got != slot {
			t.Fatalf("slot %d: tag %q hashes to slot %d", slot, tag, got)
		}
		if len(tag) != 4 || tag[0] != '~' || strings.Trim(tag[1:], "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("slot %d: tag %q is not ~ and three alphanumerics", slot, tag)
		}
		if canonical.ValidateRunID(tag) == nil {
			t.Fatalf("slot %d: tag %q is a valid run id", slot, tag)
		}
		if seen[tag] {
			t.Fatalf("tag %q twice", tag)
		}
		seen[tag] = true
	}
	for _, run := range []string{"a", "run-42", "4f1c2a7e-9b3d-4c55-8e21-000000000001", strings.Repeat("z", 128)} {
		if got, want := canonical.Slot(run), int(crc16(run)%canonical.Slots); got != want {
			t.Fatalf("Slot(%q) = %d, want %d", run, got, want)
		}
	}
	// Values CLUSTER KEYSLOT gives (Redis Cluster's specification).
	for key, slot := range map[string]int{"foo": 12182, "somekey": 11058} {
		if got := canonical.Slot(key); got != slot {
			t.Fatalf("Slot(%q) = %d, want %d", key, got, slot)
		}
	}
	keys, _ := canonical.NewKeys("tc")
	run := "run-42"
	if got, want := keys.RunSlotIndex(run, canonical.SlotDue), "tc:{"+canonical.SlotTag(canonical.Slot(run))+"}:due"; got != want {
		t.Fatalf("RunSlotIndex = %q, want %q", got, want)
	}
}
