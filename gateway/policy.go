package gateway

import (
	"context"
	"strings"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

// Grant is one rule of a StaticPolicy: the principals and projects it
// covers, the permissions it allows, and those it allows only with a human
// approval. A name may be "*" (any); a permission pattern may end with "*"
// (any suffix), as in "tool.call:kb.*".
//
// A grant with Scopes covers only calls made with an OAuth access token
// that carries one of them; one without covers only the other calls. An
// OAuth token is thus allowed only what its scopes' grants allow.
type Grant struct {
	Principals      []string
	Projects        []string
	Scopes          []string
	Allow           []string
	RequireApproval []string
}

// StaticPolicy is a registry.Policy read from configuration. Deny by
// default: a permission no grant covers is denied; one that a covering
// grant lists under RequireApproval needs an approval even if another
// allows it. Every decision carries the fence {"static", version}, so that
// it names the configuration it came from.
type StaticPolicy struct {
	grants []Grant
	fence  registry.Fence
}

var _ registry.Policy = (*StaticPolicy)(nil)

// NewStaticPolicy returns the policy of grants; version names the
// configuration (1 to 128 printable ASCII characters).
func NewStaticPolicy(grants []Grant, version string) (*StaticPolicy, error) {
	if !subject(version) || len(version) > 128 {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: policy version must be 1-128 printable characters")
	}
	for _, g := range grants {
		for _, s := range g.Scopes {
			if !scopeToken(s) {
				return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: scope %q is malformed", s)
			}
		}
		for _, p := range append(append([]string{}, g.Allow...), g.RequireApproval...) {
			if !validPattern(p) {
				return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: permission pattern %q is malformed", p)
			}
		}
	}
	return &StaticPolicy{grants: grants, fence: registry.Fence{ProjectVersion: "static", RoleBindingVersion: version}}, nil
}

// Authorize implements registry.Policy. The grants that apply depend on
// whether the call carries an OAuth access token, and its scopes (see Grant).
func (p *StaticPolicy) Authorize(ctx context.Context, project string, principal registry.Principal, permission string) (registry.Decision, error) {
	scopes, oauth := oauthScopes(ctx)
	allowed := false
	for _, g := range p.grants {
		if !g.appliesTo(scopes, oauth) || !matchName(g.Principals, principal.Subject) || !matchName(g.Projects, project) {
			continue
		}
		if matchPattern(g.RequireApproval, permission) {
			return registry.Decision{Verdict: registry.VerdictRequireApproval, Fence: p.fence}, nil
		}
		allowed = allowed || matchPattern(g.Allow, permission)
	}
	if allowed {
		return registry.Decision{Verdict: registry.VerdictAllow, Fence: p.fence}, nil
	}
	return registry.Decision{Verdict: registry.VerdictDeny}, nil
}

func matchName(names []string, s string) bool {
	for _, n := range names {
		if n == "*" || n == s {
			return true
		}
	}
	return false
}

func matchPattern(patterns []string, perm string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(perm, prefix) {
				return true
			}
		} else if p == perm {
			return true
		}
	}
	return false
}

// validPattern: "*", or a permission of [a-z0-9._:-] that may end with "*".
func validPattern(p string) bool {
	s := strings.TrimSuffix(p, "*")
	if p == "*" {
		return true
	}
	if len(s) == 0 || len(p) > registry.MaxPermissionLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}
