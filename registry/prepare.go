package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// ActionDomain is the domain tag of the action digest. It changes only with
// the digest's layout.
const ActionDomain = "toolcanon/tool-invocation@v1"

// Request is the exact envelope of one tool call. Nothing in it is trimmed,
// folded, defaulted or resolved: Tool and Version must name a registered
// definition byte for byte.
type Request struct {
	Project   string    // project id: 1 to 128 bytes of [A-Za-z0-9_.-], first byte alphanumeric
	Principal Principal // who calls
	Tool      string    // exact tool name
	Version   string    // exact tool version
	Input     []byte    // raw JSON input; parsed only after the policy allowed the call
}

// Status is the outcome of Prepare.
type Status string

// Plan statuses. A plan is not an authorization to execute: the boundary
// executes only ready plans of read tools, and approval_required plans go to
// an approval flow that binds the action digest.
const (
	StatusReady            Status = "ready"
	StatusApprovalRequired Status = "approval_required"
)

// Plan is a prepared, digest-bound invocation. It is immutable.
type Plan struct {
	status       Status
	tool         *Tool
	project      string
	subject      string
	fence        Fence
	input        []byte
	inputDigest  [32]byte
	actionDigest [32]byte
}

// Status returns ready or approval_required.
func (p *Plan) Status() Status { return p.status }

// Tool returns the definition the plan is for.
func (p *Plan) Tool() *Tool { return p.tool }

// Project returns the project the call was authorized in.
func (p *Plan) Project() string { return p.project }

// Subject returns the principal's subject.
func (p *Plan) Subject() string { return p.subject }

// Fence returns the policy fence all decisions agreed on.
func (p *Plan) Fence() Fence { return p.fence }

// Permissions returns the permissions that were authorized: tool.call:<name>
// first, then the definition's permissions, sorted.
func (p *Plan) Permissions() []string { return slices.Clone(p.tool.callPermissions) }

// Input returns a copy of the canonical (RFC 8785) input bytes.
func (p *Plan) Input() []byte { return slices.Clone(p.input) }

// CanonicalInput checks raw, another rendering of the plan's input (its
// handles resolved to the values they stand for, say), against the tool's
// input schema and bounds, and returns its canonical form, or the
// INVALID_INPUT error Prepare would have returned. It authorizes nothing:
// the plan's decision covers the call, and its digests stay the input's.
func (p *Plan) CanonicalInput(raw []byte) ([]byte, error) { return p.tool.canonicalInput(raw) }

// InputDigest returns the SHA-256 of the canonical input.
func (p *Plan) InputDigest() [32]byte { return p.inputDigest }

// ActionDigest returns the SHA-256 of the action preimage (see Prepare).
func (p *Plan) ActionDigest() [32]byte { return p.actionDigest }

// Prepare turns a request into a plan, in this fixed order:
//
//  1. the envelope: project id syntax and the exact (Tool, Version) identity;
//  2. the principal: a valid subject, not expired;
//  3. the policy: tool.call:<name>, then each required permission, one by one;
//     the first deny stops with UNAUTHORIZED before the input is even looked at;
//  4. every non-deny decision must carry the same, well-formed fence; a policy
//     error, a malformed decision, or an empty or mixed fence fails closed
//     with POLICY_UNAVAILABLE;
//  5. any require_approval makes the plan approval_required, otherwise ready;
//  6. only then is the input parsed, validated and canonicalized (≤ MaxInputBytes),
//     and the digests computed.
//
// The action digest is the SHA-256 of the RFC 8785 form of
//
//	{"domain":"toolcanon/tool-invocation@v1","effect":…,"input_sha256":"<hex>",
//	 "permissions":["tool.call:<name>",…],"project":…,"risk":…,"subject":…,
//	 "timeout_seconds":…,"tool":{"name":…,"version":…}}
//
// which holds no input, fence or secret, and which any RFC 8785 implementation
// can recompute.
func (r *Registry) Prepare(ctx context.Context, policy Policy, req Request) (*Plan, error) {
	return r.prepare(ctx, policy, req, time.Now(), false)
}

// PrepareRead is Prepare for a caller that executes only read tools. A tool
// of any other effect is refused with NOT_READ_ONLY between steps 4 and 5,
// once the policy has answered and before the input is looked at: the effect
// is the definition's, known without the input, so no input, however
// malformed, changes that answer, and a write tool's input is never parsed.
// An approval cannot make such a call runnable, so it does not matter here.
func (r *Registry) PrepareRead(ctx context.Context, policy Policy, req Request) (*Plan, error) {
	return r.prepare(ctx, policy, req, time.Now(), true)
}

func (r *Registry) prepare(ctx context.Context, policy Policy, req Request, now time.Time, readOnly bool) (*Plan, error) {
	if !validProject(req.Project) {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "registry: project id %q is malformed", req.Project)
	}
	tool, ok := r.Lookup(req.Tool, req.Version)
	if !ok {
		return nil, canonical.Errorf(canonical.CodeUnknownTool, "registry: no tool %q version %q", req.Tool, req.Version)
	}
	if !printable(req.Principal.Subject, 256) {
		return nil, canonical.Errorf(canonical.CodeUnauthorized, "registry: principal subject is malformed")
	}
	if req.Principal.ExpiresAt.IsZero() || !now.Before(req.Principal.ExpiresAt) {
		return nil, canonical.Errorf(canonical.CodeUnauthorized, "registry: principal %q expired or has no expiry", req.Principal.Subject)
	}
	if policy == nil {
		return nil, canonical.Errorf(canonical.CodePolicyUnavailable, "registry: no policy")
	}
	if err := ctx.Err(); err != nil {
		return nil, canonical.Wrap(canonical.CodeDeadlineExceeded, err, "registry: before authorization")
	}

	var fences [1 + MaxPermissions]Fence
	approval := false
	for i, perm := range tool.callPermissions {
		d, err := authorize(ctx, policy, req.Project, req.Principal, perm)
		if err != nil {
			return nil, canonical.Wrap(canonical.CodePolicyUnavailable, err, "registry: authorizing "+perm)
		}
		switch d.Verdict {
		case VerdictDeny:
			return nil, canonical.Errorf(canonical.CodeUnauthorized, "registry: %q denied %q in project %q", req.Principal.Subject, perm, req.Project)
		case VerdictAllow:
		case VerdictRequireApproval:
			approval = true
		default:
			return nil, canonical.Errorf(canonical.CodePolicyUnavailable, "registry: malformed decision %q for %q", d.Verdict, perm)
		}
		fences[i] = d.Fence
	}
	fence := fences[0]
	for i := range tool.callPermissions {
		if !fences[i].valid() {
			return nil, canonical.Errorf(canonical.CodePolicyUnavailable, "registry: empty or malformed fence for %q", tool.callPermissions[i])
		}
		if fences[i] != fence {
			return nil, canonical.Errorf(canonical.CodePolicyUnavailable, "registry: mixed policy fences across permissions")
		}
	}

	if readOnly && tool.effect != EffectRead {
		return nil, canonical.Errorf(canonical.CodeNotReadOnly, "registry: %s@%s has effect %s and the caller runs only read tools", tool.name, tool.version, tool.effect)
	}

	input, err := tool.canonicalInput(req.Input)
	if err != nil {
		return nil, err
	}
	p := &Plan{
		status: StatusReady, tool: tool, project: req.Project, subject: req.Principal.Subject,
		fence: fence, input: input, inputDigest: sha256.Sum256(input),
	}
	if approval {
		p.status = StatusApprovalRequired
	}
	preimage, err := actionPreimage(p)
	if err != nil {
		return nil, err
	}
	p.actionDigest = sha256.Sum256(preimage)
	return p, nil
}

// authorize calls the policy and turns a panic into an error: a broken
// policy must fail closed, not take the caller down.
func authorize(ctx context.Context, policy Policy, project string, pr Principal, perm string) (d Decision, err error) {
	defer func() {
		if v := recover(); v != nil {
			d, err = Decision{}, fmt.Errorf("policy panicked: %v", v)
		}
	}()
	return policy.Authorize(ctx, project, pr, perm)
}

// actionPreimage builds the canonical JSON the action digest is taken over.
// Canonical JSON makes the encoding unambiguous without a bespoke framing.
func actionPreimage(p *Plan) ([]byte, error) {
	t := p.tool
	perms := make([]value, len(t.callPermissions))
	for i, s := range t.callPermissions {
		perms[i] = value{kind: kindString, str: s}
	}
	str := func(s string) value { return value{kind: kindString, str: s} }
	// Keys in RFC 8785 order (all ASCII, so byte order).
	doc := value{kind: kindObject, obj: []member{
		{"domain", str(ActionDomain)},
		{"effect", str(string(t.effect))},
		{"input_sha256", str(hex.EncodeToString(p.inputDigest[:]))},
		{"permissions", value{kind: kindArray, arr: perms}},
		{"project", str(p.project)},
		{"risk", str(string(t.risk))},
		{"subject", str(p.subject)},
		{"timeout_seconds", value{kind: kindNumber, num: float64(t.timeout / time.Second)}},
		{"tool", value{kind: kindObject, obj: []member{
			{"name", str(t.name)},
			{"version", str(t.version)},
		}}},
	}}
	return appendCanonical(make([]byte, 0, 512), &doc)
}

func validProject(s string) bool {
	if len(s) == 0 || len(s) > 128 || !alnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
