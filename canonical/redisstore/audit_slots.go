package redisstore

// The per-slot keys of the audit stream: for each of Redis Cluster's
// 16,384 slots, a hash tag that hashes to it, so that a script of a run
// reaches its slot's keys with the run's own.

// auditSlots is how many hash slots Redis Cluster has.
const auditSlots = 16384

// auditSlotsPerStep is how many slots one pipeline of a sweep reads.
const auditSlotsPerStep = 1024

// auditSlotOf returns the slot of a run's keys: the CRC16 of the run id.
func auditSlotOf(runID string) int { return int(crc16(runID) % auditSlots) }

// auditSlotKey returns the key of name of slot, under the slot's tag.
func (s *Store) auditSlotKey(slot int, name string) string {
	return s.keys.Prefix() + ":{" + auditSlotTags[slot] + "}:" + name
}

// passLeaseKey is the key of the lease of a store's periodic pass.
func (s *Store) passLeaseKey(pass string) string { return s.keys.Prefix() + ":lease:" + pass }

// auditSlotTags[slot] is "~" and three characters, the first such tag
// (in the order of tagAlphabet) that hashes to slot. No run id starts
// with "~", so no run's keys carry one.
var auditSlotTags = func() []string {
	const tagAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"
	tags := make([]string, auditSlots)
	left := auditSlots
	for _, a := range tagAlphabet {
		for _, b := range tagAlphabet {
			for _, c := range tagAlphabet {
				t := "~" + string(a) + string(b) + string(c)
				if slot := crc16(t) % auditSlots; tags[slot] == "" {
					tags[slot] = t
					if left--; left == 0 {
						return tags
					}
				}
			}
		}
	}
	panic("redisstore: no tag for every slot")
}()

// crc16 is Redis Cluster's key hash: CRC16-CCITT (XMODEM).
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
