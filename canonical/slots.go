package canonical

//go:generate go run ../internal/slottags_gen -out slottags_gen.go -pkg canonical

// Slots is how many hash slots Redis Cluster has: a key lives in the slot
// its hash tag's CRC16 names, modulo Slots.
const Slots = 16384

// Slot returns the slot of a run's keys: the CRC16 of the run id, which
// every key of the run carries as its hash tag. The run id must be valid.
func Slot(runID string) int { return int(crc16(runID) % Slots) }

// SlotTag returns the hash tag of slot's per-slot keys (0 <= slot <
// Slots): "~" and three characters, the first such tag that hashes to the
// slot (a generated table). No run id starts with "~", so no run's keys
// carry it.
func SlotTag(slot int) string {
	return "~" + slotTags[3*slot:3*slot+3]
}

// The kinds of per-slot index (Keys.SlotIndex).
const (
	// SlotDue is the slot's runs that have calls in flight, each scored by
	// a time (ms since the epoch, server clock) at or before its earliest
	// lease: what a reap pass reads.
	SlotDue = "due"
	// SlotAudit is the slot's runs that have audit events pending export,
	// each scored by the time of its oldest pending event: what an export
	// pass reads (canonical.AuditSource).
	SlotAudit = "audit"
	// SlotAuditCount is not an index but the slot's count of pending audit
	// events (a STRING), which bounds the backlog (AuditOptions.MaxBacklog).
	SlotAuditCount = "audit-n"
)

// crc16 is Redis Cluster's key hash: CRC16-CCITT (XMODEM), polynomial
// 0x1021, initial value 0.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()
