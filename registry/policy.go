package registry

import (
	"context"
	"time"
)

// Principal is the actor a call is made for, as the host authenticated it.
type Principal struct {
	Subject   string    // stable subject id: 1 to 256 bytes of printable ASCII, no spaces
	ExpiresAt time.Time // the principal is valid strictly before this instant; zero is invalid
}

// Verdict is a policy's answer for one permission.
type Verdict string

// Verdicts.
const (
	VerdictAllow           Verdict = "allow"
	VerdictDeny            Verdict = "deny"
	VerdictRequireApproval Verdict = "require_approval"
)

// Fence pins the policy state a decision was made under. Every non-deny
// decision of one call must carry the same fence, so that a call can never
// combine grants from two project versions, or from before and after a
// revocation.
type Fence struct {
	ProjectVersion     string // 1 to 128 bytes of printable ASCII
	RoleBindingVersion string // 1 to 128 bytes of printable ASCII
}

func (f Fence) valid() bool {
	return printable(f.ProjectVersion, 128) && printable(f.RoleBindingVersion, 128)
}

// Decision is a policy's answer for one permission.
type Decision struct {
	Verdict Verdict
	Fence   Fence // required unless Verdict is deny
}

// Policy is the port to the host's project policy engine. Authorize decides
// whether principal holds permission in project. An error means the policy
// could not decide; the call then fails closed with POLICY_UNAVAILABLE.
type Policy interface {
	Authorize(ctx context.Context, project string, principal Principal, permission string) (Decision, error)
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(ctx context.Context, project string, principal Principal, permission string) (Decision, error)

// Authorize calls f.
func (f PolicyFunc) Authorize(ctx context.Context, project string, principal Principal, permission string) (Decision, error) {
	return f(ctx, project, principal, permission)
}

func printable(s string, limit int) bool {
	if len(s) == 0 || len(s) > limit {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7E {
			return false
		}
	}
	return true
}
