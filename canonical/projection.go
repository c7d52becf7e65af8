package canonical

import "context"

// Projector turns a tool's complete raw response into the small agent-facing
// result and the evidence status the record will carry. The boundary calls
// it after the raw response is known to fit; projectors live in package
// projectors, the boundary only needs this contract.
type Projector interface {
	Project(ctx context.Context, call Call, raw []byte) (Projection, error)
}

// Call is what a projector knows of the call it projects.
type Call struct {
	RunID      string
	ToolCallID string
	Tool       string // agent-facing tool name
	Input      []byte // the canonical input JSON the tool was called with
	// Mask is what the projector's redactor writes in place of a masked
	// value: the boundary gives each call a Masker that mints the run's
	// handles. Nil means Placeholders.
	Mask Masker
}

// Projection is a projector's output.
type Projection struct {
	Evidence Evidence // EvidenceFound or NoEvidence
	Result   []byte   // valid JSON within the projector's byte budget
}

// ProjectorFunc adapts a function to a Projector.
type ProjectorFunc func(ctx context.Context, call Call, raw []byte) (Projection, error)

// Project calls f.
func (f ProjectorFunc) Project(ctx context.Context, call Call, raw []byte) (Projection, error) {
	return f(ctx, call, raw)
}
