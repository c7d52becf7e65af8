package gateway

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolcanon/toolcanon/registry"
)

// oauthIssuerKey marks, in auth.TokenInfo.Extra, a token verified as an
// OAuth access token; its value is the token's issuer.
const oauthIssuerKey = "io.github.toolcanon/oauthIssuer"

// callTokenKey holds, in a call's context, the verified token of the
// request, so that the policy sees the scopes of an OAuth access token.
type callTokenKey struct{}

// withCallToken returns ctx carrying the request's verified token.
func withCallToken(ctx context.Context, tok *auth.TokenInfo) context.Context {
	if tok == nil {
		return ctx
	}
	return context.WithValue(ctx, callTokenKey{}, tok)
}

// oauthScopes returns the scopes of the call's OAuth access token, and
// whether the call carries one.
func oauthScopes(ctx context.Context) ([]string, bool) {
	tok, _ := ctx.Value(callTokenKey{}).(*auth.TokenInfo)
	if !isOAuth(tok) {
		return nil, false
	}
	return tok.Scopes, true
}

func isOAuth(tok *auth.TokenInfo) bool {
	if tok == nil {
		return false
	}
	_, ok := tok.Extra[oauthIssuerKey]
	return ok
}

// appliesTo reports whether g covers a call with an OAuth access token of
// these scopes (oauth true) or a call without one.
func (g *Grant) appliesTo(scopes []string, oauth bool) bool {
	if !oauth {
		return len(g.Scopes) == 0
	}
	for _, s := range g.Scopes {
		if slices.Contains(scopes, s) {
			return true
		}
	}
	return false
}

// covers reports whether g allows perm, or holds it for an approval.
func (g *Grant) covers(perm string) bool {
	return matchPattern(g.Allow, perm) || matchPattern(g.RequireApproval, perm)
}

// scopeCheck says, before the SDK sees a request made with an OAuth access
// token, whether the token's scopes are enough for it (RFC 6750
// insufficient_scope), and if not which scopes would be. It is the early,
// HTTP-level answer the MCP authorization spec asks for so that a client
// can ask for more; the policy still decides every permission of a call.
type scopeCheck struct {
	grants  []Grant
	project string
	// perms returns the permissions a call of tool asks for; nil for a
	// tool the gateway does not serve.
	perms func(tool string) []string
}

// need returns whether tok's scopes fall short for the JSON-RPC message
// body (nil for a request without one), and the scopes that would do.
// A tools/call falls short when a permission it asks for is covered by no
// grant of tok's scopes but by one of other scopes; any other message
// when no grant of tok's principal and project names one of tok's scopes.
func (s *scopeCheck) need(tok *auth.TokenInfo, body []byte) (short bool, scopes []string) {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if len(body) > 0 && json.Unmarshal(body, &msg) == nil && msg.Method == methodCallTool {
		if perms := s.perms(msg.Params.Name); perms != nil {
			for _, perm := range perms {
				if s.covered(tok, perm) {
					continue
				}
				for _, g := range s.mine(tok) {
					if g.covers(perm) {
						scopes = union(scopes, g.Scopes)
					}
				}
			}
			return len(scopes) > 0, scopes
		}
	}
	for _, g := range s.mine(tok) {
		if g.appliesTo(tok.Scopes, true) {
			return false, nil
		}
		scopes = union(scopes, g.Scopes)
	}
	return true, scopes
}

// covered reports whether a grant of tok's scopes covers perm.
func (s *scopeCheck) covered(tok *auth.TokenInfo, perm string) bool {
	for _, g := range s.mine(tok) {
		if g.appliesTo(tok.Scopes, true) && g.covers(perm) {
			return true
		}
	}
	return false
}

// mine returns the scoped grants of tok's principal and the project.
func (s *scopeCheck) mine(tok *auth.TokenInfo) []Grant {
	var out []Grant
	for _, g := range s.grants {
		if len(g.Scopes) > 0 && matchName(g.Principals, tok.UserID) && matchName(g.Projects, s.project) {
			out = append(out, g)
		}
	}
	return out
}

func union(a, b []string) []string {
	for _, s := range b {
		if !slices.Contains(a, s) {
			a = append(a, s)
		}
	}
	return a
}

// toolPerms returns the permissions a call of tool asks for, as mayCall
// asks them: tool.call:<definition name> and the definition's permissions
// for a bound tool, tool.call:<tool> for a progress tool, nil for another.
func toolPerms(def func(string) (*registry.Tool, bool), progress []string) func(string) []string {
	return func(tool string) []string {
		if d, ok := def(tool); ok {
			return append([]string{registry.CallPermissionPrefix + d.Name()}, d.Permissions()...)
		}
		if slices.Contains(progress, tool) {
			return []string{registry.CallPermissionPrefix + tool}
		}
		return nil
	}
}
