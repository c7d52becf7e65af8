package gateway

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults and bounds of OAuthConfig.
const (
	DefaultOAuthClockSkew   = 30 * time.Second
	MaxOAuthClockSkew       = 5 * time.Minute
	DefaultOAuthJWKSRefresh = 10 * time.Minute
	maxScopeLen             = 128
)

// defaultOAuthAlgorithms are the JWS algorithms an access token may be
// signed with when the configuration names none.
var defaultOAuthAlgorithms = []string{"RS256", "ES256"}

// oauthAlgorithms are those a configuration may name: asymmetric only.
// HMAC would need the issuer's secret, and "none" signs nothing.
var oauthAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// OAuthConfig makes the HTTP listener an OAuth 2.1 resource server
// (http.oauth): it accepts JWT access tokens its issuer signed for its
// resource, beside any http.bearer_tokens.
type OAuthConfig struct {
	// Resource is the gateway's resource URI (RFC 8707), the URL clients
	// connect to: a token's audience must name it.
	Resource string
	// Issuer is the authorization server's issuer identifier: a token's
	// "iss" must equal it.
	Issuer string
	// JWKSURI is the issuer's key set; "" reads jwks_uri from the issuer's
	// metadata (RFC 8414, else OpenID Connect discovery).
	JWKSURI string
	// Algorithms are the JWS algorithms accepted (default RS256, ES256).
	Algorithms []string
	// ClockSkew is the tolerance of exp, nbf and iat (default 30s).
	ClockSkew time.Duration
	// SubjectClaim is the claim naming the principal (default "sub").
	SubjectClaim string
	// JWKSRefresh is how often the key set is fetched again (default 10m).
	JWKSRefresh time.Duration
}

// Authenticated reports whether the HTTP listener authenticates its
// requests: with bearer tokens, OAuth access tokens or both.
func (h HTTPConfig) Authenticated() bool { return len(h.BearerTokens) > 0 || h.OAuth != nil }

// MetadataURL is the URL of the resource's protected resource metadata
// (RFC 9728): /.well-known/oauth-protected-resource inserted between the
// resource's host and its path.
func (o *OAuthConfig) MetadataURL() string {
	u, err := url.Parse(o.Resource)
	if err != nil {
		return ""
	}
	u.Path = wellKnownResource + strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u.String()
}

// wellKnownResource is RFC 9728's well-known path.
const wellKnownResource = "/.well-known/oauth-protected-resource"

func (c *cfgParser) oauth(n *jnode, ptr string) (*OAuthConfig, error) {
	if err := c.obj(n, ptr, "resource", "issuer", "jwks_uri", "algorithms", "clock_skew", "subject_claim", "jwks_refresh"); err != nil {
		return nil, err
	}
	o := &OAuthConfig{ClockSkew: DefaultOAuthClockSkew, JWKSRefresh: DefaultOAuthJWKSRefresh, SubjectClaim: "sub",
		Algorithms: slices.Clone(defaultOAuthAlgorithms)}
	const httpsFix = "an https URL (http only on loopback), without a fragment"
	for _, f := range []struct {
		key, fix string
		dst      *string
		required bool
		check    func(string) bool
	}{
		{"resource", `the URL clients connect to, such as "https://gateway.example.com/mcp": ` + httpsFix + " or query", &o.Resource, true, resourceURL},
		{"issuer", `the authorization server's issuer, such as "https://auth.example.com": ` + httpsFix + " or query", &o.Issuer, true, resourceURL},
		{"jwks_uri", "the issuer's key set: " + httpsFix + "; leave it out to read it from the issuer's metadata", &o.JWKSURI, false, fetchURL},
		{"subject_claim", `a claim name such as "sub" or "email"`, &o.SubjectClaim, false, claimName},
	} {
		v := n.member(f.key)
		if v == nil {
			if f.required {
				return nil, c.fail(n, ptr, f.fix, "missing member %q", f.key)
			}
			continue
		}
		s, err := c.str(v, ptr+"/"+f.key, f.fix)
		if err != nil {
			return nil, err
		}
		if !f.check(s) {
			return nil, c.fail(v, ptr+"/"+f.key, f.fix, "%q is not valid here", s)
		}
		*f.dst = s
	}
	if v := n.member("algorithms"); v != nil {
		fix := "list asymmetric JWS algorithms: " + strings.Join(oauthAlgorithms, ", ") + `; never "none" or HMAC (HS256…), which a resource server cannot verify with the issuer's public keys`
		algs, err := c.strList(v, ptr+"/algorithms", len(oauthAlgorithms), fix, func(s string) bool { return slices.Contains(oauthAlgorithms, s) })
		if err != nil {
			return nil, err
		}
		if len(algs) == 0 {
			return nil, c.fail(v, ptr+"/algorithms", fix, "the list is empty")
		}
		o.Algorithms = algs
	}
	var err error
	if v := n.member("clock_skew"); v != nil {
		if o.ClockSkew, err = c.duration(v, ptr+"/clock_skew", 0, MaxOAuthClockSkew, `a duration such as "30s", at most 5m`); err != nil {
			return nil, err
		}
	}
	if v := n.member("jwks_refresh"); v != nil {
		if o.JWKSRefresh, err = c.duration(v, ptr+"/jwks_refresh", time.Minute, 24*time.Hour, `a duration such as "10m", from 1m to 24h`); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// oauthScopes checks what http.oauth and the grants' scopes say of each
// other: scopes are carried only by OAuth access tokens, and an OAuth token
// is allowed only what a grant naming one of its scopes allows.
func (c *cfgParser) oauthScopes(root *jnode, cfg *Config) error {
	scoped := -1
	for i, g := range cfg.Policy {
		if len(g.Scopes) > 0 {
			scoped = i
			break
		}
	}
	switch {
	case cfg.HTTP.OAuth == nil && scoped >= 0:
		p := "/policy/grants/" + strconv.Itoa(scoped) + "/scopes"
		return c.fail(root.member("policy").member("grants").elems[scoped].member("scopes"), p,
			`configure "http": {"oauth": {…}}, or remove the scopes`, "scopes are carried only by OAuth access tokens, and http.oauth is not configured")
	case cfg.HTTP.OAuth != nil && scoped < 0 && !c.pinOnly:
		return c.fail(root.member("http").member("oauth"), "/http/oauth",
			`add "scopes": ["tools.read"] to the grants OAuth clients may use`,
			"no grant names a scope, so an OAuth access token would be allowed nothing")
	}
	return nil
}

// resourceURL: an absolute https URL (http on a loopback host) without
// user, query or fragment, as RFC 8707 and RFC 8414 want of a resource and
// an issuer.
func resourceURL(s string) bool {
	u, ok := secureURL(s)
	return ok && u.RawQuery == "" && !u.ForceQuery
}

// fetchURL: an absolute https URL (http on a loopback host) without user
// or fragment.
func fetchURL(s string) bool {
	_, ok := secureURL(s)
	return ok
}

func secureURL(s string) (*url.URL, bool) {
	u, err := url.Parse(s)
	if err != nil || len(s) > 2048 || u.User != nil || u.Fragment != "" || strings.Contains(s, "#") || u.Host != "" && u.Hostname() == "" {
		return nil, false
	}
	switch u.Scheme {
	case "https":
		return u, u.Host != ""
	case "http":
		return u, loopbackHost(u.Hostname())
	}
	return nil, false
}

// loopbackHost: "localhost" or a loopback IP literal; names are not resolved.
func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func claimName(s string) bool { return len(s) > 0 && len(s) <= 64 && printableNoSpace(s) }

// scopeToken: an RFC 6749 scope-token (printable ASCII but space, '"' and
// '\'), at most 128 bytes.
func scopeToken(s string) bool {
	if len(s) == 0 || len(s) > maxScopeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
