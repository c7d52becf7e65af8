package projectors

import "github.com/toolcanon/toolcanon/canonical"

// Projection is a projector's output: the evidence status
// (canonical.EvidenceFound or canonical.NoEvidence) and the result, valid
// JSON within the configured total budget. It is canonical.Projection, so
// that the boundary and the projectors share one definition.
type Projection = canonical.Projection

// Call is what a projector knows of the call: at least the framework's
// ToolCallID, echoed exactly, and the canonical request Input JSON.
type Call = canonical.Call

// Projector turns a raw tool response into a bounded projection. It returns
// a *canonical.Error (PROJECTION_FAILED, INVALID_INPUT, RESULT_TOO_LARGE)
// when the response cannot be projected; the caller then records ERROR.
type Projector = canonical.Projector

// Limits are the byte and count budgets of one result. Byte budgets count
// encoded UTF-8 bytes of the JSON output, except Text, which counts the UTF-8
// bytes of one text value before escaping.
type Limits struct {
	Total      int // whole result
	Collection int // one array, brackets included
	Item       int // one array element
	Items      int // elements of one array
	Text       int // one text value (excerpt, message, pattern)
}

// DefaultLimits returns budgets sized for a model context: a result of at
// most 16 KiB.
func DefaultLimits() Limits {
	return Limits{Total: 16 << 10, Collection: 8 << 10, Item: 1 << 10, Items: 20, Text: 512}
}

// Minimum budgets: below these no useful result fits.
const (
	MinTotal = 256
	MinItem  = 64
)

// Validate reports whether l is usable.
func (l Limits) Validate() error {
	switch {
	case l.Total < MinTotal:
		return canonical.Errorf(canonical.CodeInvalidArgument, "projectors: total budget %d below %d", l.Total, MinTotal)
	case l.Collection < MinItem || l.Collection > l.Total:
		return canonical.Errorf(canonical.CodeInvalidArgument, "projectors: collection budget %d outside [%d, total]", l.Collection, MinItem)
	case l.Item < MinItem || l.Item > l.Collection:
		return canonical.Errorf(canonical.CodeInvalidArgument, "projectors: item budget %d outside [%d, collection]", l.Item, MinItem)
	case l.Items < 1 || l.Items > 10000:
		return canonical.Errorf(canonical.CodeInvalidArgument, "projectors: item count %d outside [1, 10000]", l.Items)
	case l.Text < 1 || l.Text > l.Item:
		return canonical.Errorf(canonical.CodeInvalidArgument, "projectors: text budget %d outside [1, item]", l.Text)
	}
	return nil
}
