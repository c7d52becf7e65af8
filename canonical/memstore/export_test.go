package memstore

// Len returns how many records the store holds, expired or not.
func Len(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}
