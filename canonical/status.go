package canonical

// Status is a record's lifecycle state.
type Status string

// Lifecycle states. The only transitions are PROJECTING → READY and
// PROJECTING → ERROR.
const (
	StatusProjecting Status = "PROJECTING"
	StatusReady      Status = "READY"
	StatusError      Status = "ERROR"
)

// Valid reports whether s is a lifecycle state.
func (s Status) Valid() bool {
	return s == StatusProjecting || s == StatusReady || s == StatusError
}

// Terminal reports whether s is READY or ERROR.
func (s Status) Terminal() bool { return s == StatusReady || s == StatusError }

// Evidence is what a record may be used to prove.
type Evidence string

// Evidence statuses. A PROJECTING record carries EvidenceUnknown; a READY
// record carries EvidenceFound or NoEvidence; an ERROR record carries
// EvidenceError and is never referencable.
const (
	EvidenceUnknown Evidence = "UNKNOWN"
	EvidenceFound   Evidence = "EVIDENCE_FOUND"
	NoEvidence      Evidence = "NO_EVIDENCE"
	EvidenceError   Evidence = "ERROR"
)

// Valid reports whether e is one of the evidence statuses.
func (e Evidence) Valid() bool {
	return e == EvidenceUnknown || e == EvidenceFound || e == NoEvidence || e == EvidenceError
}

// Ready reports whether e may be carried by a READY record.
func (e Evidence) Ready() bool { return e == EvidenceFound || e == NoEvidence }
