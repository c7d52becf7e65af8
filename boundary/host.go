package boundary

import (
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

// Definition returns the registry definition bound as agentName, so that a
// host can list exactly the bound tools (name, description, input schema,
// effect) as the registry holds them.
func (b *Boundary) Definition(agentName string) (*registry.Tool, bool) {
	if b == nil {
		return nil, false
	}
	bd := b.bindings[agentName]
	if bd == nil {
		return nil, false
	}
	return b.reg.Lookup(bd.name, bd.version)
}

// Refuse returns the ERROR Result of a call the host refused before Invoke,
// for a reason only the host can see (for example an upstream tool that no
// longer matches its pinned definition). Nothing is recorded and nothing
// runs; the agent gets the code and its fixed hint. An invalid toolCallID is
// not echoed.
func Refuse(toolCallID string, code canonical.Code, cause error) Result {
	if canonical.ValidateToolCallID(toolCallID) != nil {
		toolCallID = ""
	}
	if cause == nil {
		cause = canonical.Errorf(code, "refused by the host before invoke")
	}
	return failure(toolCallID, code, cause, false)
}
