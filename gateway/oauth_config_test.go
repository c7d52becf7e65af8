package gateway_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/gateway"
)

// oauthConfig is goodConfig with an OAuth resource server and a grant of
// a scope.
var oauthConfig = strings.Replace(strings.Replace(goodConfig,
	`"http": {"bearer_tokens"`,
	`"http": {"oauth": {"resource": "https://gw.example.com/mcp", "issuer": "https://auth.example.com"}, "bearer_tokens"`, 1),
	`"grants": [`, `"grants": [{"principals": ["*"], "projects": ["support"], "scopes": ["kb.read"], "allow": ["tool.call:kb.search", "kb.read"]}, `, 1)

func TestOAuthConfig(t *testing.T) {
	cfg, err := gateway.ParseConfig("gw.json", []byte(oauthConfig))
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.HTTP.OAuth
	if o == nil || o.Resource != "https://gw.example.com/mcp" || o.Issuer != "https://auth.example.com" || o.JWKSURI != "" ||
		!slices.Equal(o.Algorithms, []string{"RS256", "ES256"}) || o.ClockSkew != 30*time.Second || o.SubjectClaim != "sub" ||
		o.JWKSRefresh != 10*time.Minute || !slices.Equal(cfg.Policy[0].Scopes, []string{"kb.read"}) || len(cfg.Policy[1].Scopes) != 0 {
		t.Fatalf("%+v %+v", o, cfg.Policy)
	}
	if got := o.MetadataURL(); got != "https://gw.example.com/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("MetadataURL %s", got)
	}
	if !cfg.HTTP.Authenticated() {
		t.Error("an OAuth listener is not authenticated")
	}
	full := strings.Replace(oauthConfig, `"issuer": "https://auth.example.com"}`, `"issuer": "https://auth.example.com",
		"jwks_uri": "https://auth.example.com/keys?v=2", "algorithms": ["ES256", "EdDSA"], "clock_skew": "5s",
		"subject_claim": "email", "jwks_refresh": "1h"}`, 1)
	cfg, err = gateway.ParseConfig("gw.json", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.HTTP.OAuth; o.JWKSURI != "https://auth.example.com/keys?v=2" || !slices.Equal(o.Algorithms, []string{"ES256", "EdDSA"}) ||
		o.ClockSkew != 5*time.Second || o.SubjectClaim != "email" || o.JWKSRefresh != time.Hour {
		t.Errorf("%+v", o)
	}

	edit := func(from, to string) string {
		t.Helper()
		if !strings.Contains(oauthConfig, from) {
			t.Fatalf("no %q in the configuration", from)
		}
		return strings.Replace(oauthConfig, from, to, 1)
	}
	oauthMember := `"oauth": {"resource": "https://gw.example.com/mcp", "issuer": "https://auth.example.com"}`
	for _, c := range []struct {
		name, doc, pointer, msg, fix string
	}{
		{"no resource", edit(`"resource": "https://gw.example.com/mcp", `, ``), "/http/oauth", `missing member "resource"`, "the URL clients connect to"},
		{"resource with a fragment", edit(`gw.example.com/mcp"`, `gw.example.com/mcp#x"`), "/http/oauth/resource", "not valid", "without a fragment"},
		{"resource with a query", edit(`gw.example.com/mcp"`, `gw.example.com/mcp?a=b"`), "/http/oauth/resource", "not valid", "or query"},
		{"plain http beyond loopback", edit(`"https://auth.example.com"`, `"http://auth.example.com"`), "/http/oauth/issuer", "not valid", "http only on loopback"},
		{"a user in the URL", edit(`"https://auth.example.com"`, `"https://u:p@auth.example.com"`), "/http/oauth/issuer", "not valid", "https URL"},
		{"HMAC", edit(`"issuer": "https://auth.example.com"`, `"issuer": "https://auth.example.com", "algorithms": ["RS256", "HS256"]`),
			"/http/oauth/algorithms/1", "not valid", `never "none" or HMAC`},
		{"none", edit(`"issuer": "https://auth.example.com"`, `"issuer": "https://auth.example.com", "algorithms": ["none"]`),
			"/http/oauth/algorithms/0", "not valid", "asymmetric"},
		{"no algorithms", edit(`"issuer": "https://auth.example.com"`, `"issuer": "https://auth.example.com", "algorithms": []`),
			"/http/oauth/algorithms", "empty", "asymmetric"},
		{"skew too large", edit(`"issuer": "https://auth.example.com"`, `"issuer": "https://auth.example.com", "clock_skew": "10m"`),
			"/http/oauth/clock_skew", "not a duration in", "at most 5m"},
		{"misspelt member", edit(`"issuer": "https://auth.example.com"`, `"issuer": "https://auth.example.com", "jwks_url": "https://x"`),
			"/http/oauth/jwks_url", "unknown member", `did you mean "jwks_uri"?`},
		{"a scope with a quote", edit(`"scopes": ["kb.read"]`, `"scopes": ["kb\"read"]`), "/policy/grants/0/scopes/0", "not valid", ""},
		{"scopes without oauth", edit(oauthMember+`, `, ``), "/policy/grants/0/scopes", "only by OAuth access tokens", `"oauth"`},
		{"oauth without a scoped grant", edit(`"scopes": ["kb.read"], `, ``), "/http/oauth", "allowed nothing", `"scopes"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := gateway.ParseConfig("gw.json", []byte(c.doc))
			var ce *gateway.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *ConfigError", err)
			}
			if ce.Pointer != c.pointer || ce.Line == 0 || !strings.Contains(ce.Msg, c.msg) || !strings.Contains(ce.Fix, c.fix) {
				t.Errorf("%s", err)
			}
		})
	}
}
