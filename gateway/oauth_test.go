package gateway_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
)

// oauthWorld is a gateway whose HTTP listener is an OAuth resource server
// for a zitadel OpenID Provider running in the test, over the test
// upstream's echo and search tools: scope tools.read allows echo,
// tools.search allows search, and calls without an OAuth token (a static
// bearer token, when the test adds one) may call both.
type oauthWorld struct {
	op       *testOP
	gw       *gateway.Gateway
	base     string // the gateway's origin
	resource string // its MCP endpoint, the resource tokens are for
	sessions bool   // serve MCP sessions instead of stateless requests
	skew     atomic.Int64
}

func newOAuthWorld(t *testing.T, edit func(cfg configDoc, w *oauthWorld)) *oauthWorld {
	t.Helper()
	w := &oauthWorld{op: newTestOP(t, nil)}
	srv := httptest.NewUnstartedServer(nil)
	w.base = "http://" + srv.Listener.Addr().String()
	w.resource = w.base + "/mcp"
	ds := upstreamDrafts(t)
	cfg := baseConfig(t, stdioUpstream(t, t.TempDir()+"/upstream.log", ""), "echo", "search")
	cfg["policy"] = map[string]any{"grants": []any{
		map[string]any{"principals": []string{"*"}, "projects": []string{"support"}, "scopes": []string{"tools.read"},
			"allow": []string{"tool.call:" + ds["echo"].Definition.Name}},
		map[string]any{"principals": []string{"*"}, "projects": []string{"support"}, "scopes": []string{"tools.search"},
			"allow": []string{"tool.call:" + ds["search"].Definition.Name}},
		map[string]any{"principals": []string{"*"}, "projects": []string{"support"}, "allow": []string{"tool.call:*"}},
	}}
	cfg["http"] = map[string]any{"oauth": map[string]any{"resource": w.resource, "issuer": w.op.issuer}}
	if edit != nil {
		edit(cfg, w)
	}
	loaded, err := gateway.LoadConfig(cfg.write(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if w.gw, err = gateway.Open(ctx, loaded, memstore.New(), gateway.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.gw.Close() })
	gateway.SetOAuthClock(w.gw, func() time.Time { return time.Now().Add(time.Duration(w.skew.Load())) })
	srv.Config.Handler = w.gw.Handler(gateway.HTTPOptions{Sessions: w.sessions})
	srv.Start()
	t.Cleanup(srv.Close)
	return w
}

// metadataURL is where the 401 challenges point.
func (w *oauthWorld) metadataURL() string {
	return w.base + "/.well-known/oauth-protected-resource/mcp"
}

const listBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

func callBody(tool, id string, args string) string {
	return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args +
		`,"_meta":{"` + gateway.MetaToolCallID + `":"` + id + `","` + gateway.MetaRunID + `":"run-oauth"}}}`
}

// challenge parses a response's Bearer challenge.
func challenge(t *testing.T, resp *http.Response) map[string]string {
	t.Helper()
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || len(cs) != 1 || cs[0].Scheme != "bearer" {
		t.Fatalf("WWW-Authenticate %q: %v", resp.Header.Values("WWW-Authenticate"), err)
	}
	return cs[0].Params
}

// A client of the official SDK runs the authorization code flow against
// the gateway from nothing but its URL: a 401 names the resource's
// metadata, which names the provider; the token it gets lists and calls.
// Asked for tools.read only, it sees echo alone; calling search gets a 403
// insufficient_scope naming tools.search, and the client's step-up
// authorization gets a token with both, with which the call goes through,
// stateless and in a session (whose event stream the token opens too).
func TestOAuthAuthorizationCodeFlow(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateless", true: "sessions"}[sessions], func(t *testing.T) {
			authorizationCodeFlow(t, sessions)
		})
	}
}

func authorizationCodeFlow(t *testing.T, sessions bool) {
	w := newOAuthWorld(t, func(_ configDoc, w *oauthWorld) { w.sessions = sessions })
	var flows atomic.Int32
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient: &oauthex.ClientCredentials{ClientID: opClientID},
		RedirectURL:         opRedirectURL,
		ScopeFilter: func(discovered []string) []string {
			if flows.Load() == 0 {
				if !slices.Equal(discovered, []string{"tools.read", "tools.search"}) {
					t.Errorf("the client discovered scopes %v", discovered)
				}
				return []string{"tools.read"}
			}
			return discovered
		},
		AuthorizationCodeFetcher: func(_ context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			flows.Add(1)
			code, state, iss, err := followToRedirect(args.URL)
			if err != nil {
				return nil, err
			}
			return &auth.AuthorizationResult{Code: code, State: state, Iss: iss}, nil
		},
		AcceptUnadvertisedIss: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: w.resource, OAuthHandler: h, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	lr, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lr.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"echo"}) {
		t.Errorf("with tools.read the agent sees %v, want [echo]", names)
	}
	if o := mustCall(ctx, t, cs, "echo", "call-echo-1", "run-oauth", map[string]any{"text": "hello"}); !o.ready || !strings.Contains(o.text, "hello") {
		t.Fatalf("echo: %s", o.text)
	}
	if flows.Load() != 1 {
		t.Fatalf("%d authorization flows before the step-up, want 1", flows.Load())
	}
	o := mustCall(ctx, t, cs, "search", "call-search-1", "run-oauth", map[string]any{"query": "refunds"})
	if !o.ready {
		t.Fatalf("search after the step-up: %s", o.text)
	}
	if flows.Load() != 2 {
		t.Errorf("%d authorization flows, want 2 (the step-up)", flows.Load())
	}
	ts, _ := h.TokenSource(ctx)
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	if c := claimsOf(t, tok.AccessToken); c["sub"] != opSubject || c["aud"] == nil {
		t.Errorf("the client's token: %v", c)
	}
}

// A valid token lists and calls over plain HTTP; the token's subject is
// the principal.
func TestOAuthValidTokenListsAndCalls(t *testing.T) {
	w := newOAuthWorld(t, nil)
	tok := w.op.token(t, w.resource, "tools.read", "tools.search")
	resp, body := postRPC(t, w.resource, tok, listBody)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"name":"echo"`) || !strings.Contains(string(body), `"name":"search"`) {
		t.Fatalf("tools/list: %d %s", resp.StatusCode, body)
	}
	resp, body = postRPC(t, w.resource, tok, callBody("echo", "call-1", `{"text":"hi"}`))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `hi`) || strings.Contains(string(body), `"isError":true`) {
		t.Fatalf("tools/call: %d %s", resp.StatusCode, body)
	}
}

// Each token the gateway must not accept is refused with 401 and a Bearer
// challenge naming the resource's metadata, error="invalid_token" and why;
// a request without a token gets the challenge without an error (RFC 6750
// section 3.1); a malformed Authorization header is a 400 invalid_request.
func TestOAuthRefusals(t *testing.T) {
	w := newOAuthWorld(t, nil)
	valid := w.op.token(t, w.resource, "tools.read")
	hdr, payload, _ := strings.Cut(valid, ".")
	payload, _, _ = strings.Cut(payload, ".")
	kid := headerOf(t, valid)["kid"].(string)

	// Another provider over the same storage signs with the same keys under
	// another issuer; a third has keys of its own.
	sameKeys := newTestOP(t, w.op.store)
	otherKeys := newTestOP(t, nil)

	// The same claims signed with a new key under the provider's key id.
	foreign, _ := rsa.GenerateKey(rand.Reader, 2048)
	resigned := sign(t, jose.RS256, foreign, kid, payload)
	// HS256 with the provider's public key as the secret: the classic
	// confusion of a verifier that takes the algorithm from the token.
	pub := w.op.store.keys[0].priv.Public()
	der, _ := x509.MarshalPKIXPublicKey(pub)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	hsHeader := b64(`{"alg":"HS256","kid":"` + kid + `","typ":"JWT"}`)
	mac := hmac.New(sha256.New, pemKey)
	mac.Write([]byte(hsHeader + "." + payload))
	hmacToken := hsHeader + "." + payload + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))

	exp := time.Unix(int64(claimsOf(t, valid)["exp"].(float64)), 0)
	cases := []struct {
		name, token string
		skew        time.Duration
		why         string
	}{
		{"wrong audience", w.op.token(t, "http://127.0.0.1:1/other", "tools.read"), 0, "not for this resource"},
		{"no resource asked (the client's audience)", w.op.token(t, "", "tools.read"), 0, "not for this resource"},
		{"wrong issuer", sameKeys.token(t, w.resource, "tools.read"), 0, "another issuer"},
		{"expired", valid, time.Until(exp) + 31*time.Second, "expired"},
		{"not yet valid", valid, -time.Hour, "not valid yet"},
		{"unsigned (alg none)", b64(`{"alg":"none","typ":"JWT"}`) + "." + payload + ".", 0, "algorithm"},
		{"unsigned (alg none, no dot)", b64(`{"alg":"none"}`) + "." + payload, 0, "not known"},
		{"HS256 with the public key", hmacToken, 0, "algorithm"},
		{"signed by another key under the issuer's key id", resigned, 0, "signature does not verify"},
		{"signed by a key the issuer does not have", otherKeys.token(t, w.resource, "tools.read"), 0, "names no signing key"},
		{"a header with a repeated member", b64(`{"alg":"RS256","alg":"none"}`) + "." + payload + "." + strings.Repeat("A", 342), 0, "not a JWT"},
		{"not a JWT", "opaque-token-value", 0, "not known"},
		{"the valid token's header on a changed payload", hdr + "." + b64(`{"iss":"x"}`) + "." + strings.SplitN(valid, ".", 3)[2], 0, "signature"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.skew.Store(int64(c.skew))
			defer w.skew.Store(0)
			resp, body := postRPC(t, w.resource, c.token, listBody)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", resp.StatusCode, body)
			}
			p := challenge(t, resp)
			if p["resource_metadata"] != w.metadataURL() || p["error"] != "invalid_token" || !strings.Contains(p["error_description"], c.why) {
				t.Errorf("challenge %v, want invalid_token saying %q", p, c.why)
			}
			if !strings.Contains(string(body), `"error":{"code":-32600`) {
				t.Errorf("body %s, want a JSON-RPC error", body)
			}
		})
	}
	// Within the skew past exp the token still passes.
	w.skew.Store(int64(time.Until(exp) + 25*time.Second))
	if resp, body := postRPC(t, w.resource, valid, listBody); resp.StatusCode != http.StatusOK {
		t.Errorf("25s past exp, within the 30s skew: %d %s", resp.StatusCode, body)
	}
	w.skew.Store(0)

	resp, _ := postRPC(t, w.resource, "", listBody)
	if p := challenge(t, resp); resp.StatusCode != http.StatusUnauthorized || p["resource_metadata"] != w.metadataURL() || p["error"] != "" {
		t.Errorf("no token: %d %v", resp.StatusCode, p)
	}
	for _, h := range [][]string{{"Bearer " + valid, "Bearer " + valid}, {"Bearer a b"}, {"Bearer " + strings.Repeat("a", gateway.MaxAccessTokenBytes+1)}} {
		req, _ := http.NewRequest(http.MethodPost, w.resource, strings.NewReader(listBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header["Authorization"] = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if p := challenge(t, resp); resp.StatusCode != http.StatusBadRequest || p["error"] != "invalid_request" {
			t.Errorf("Authorization %.40q: %d %v, want 400 invalid_request", h, resp.StatusCode, p)
		}
	}
	// The token in the query string is not read.
	resp, _ = postRPC(t, w.resource+"?access_token="+valid, "", listBody)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a token in the query: %d, want 401", resp.StatusCode)
	}
}

// A scope no grant names allows nothing: every request is refused with 403
// insufficient_scope naming the scopes that would do. A call of a tool its
// scopes do not cover is refused likewise, naming that tool's scope, and
// is not listed.
func TestOAuthScopeWithoutGrant(t *testing.T) {
	w := newOAuthWorld(t, nil)
	for _, body := range []string{listBody, callBody("echo", "call-1", `{"text":"x"}`)} {
		resp, got := postRPC(t, w.resource, w.op.token(t, w.resource, "unmapped"), body)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d, want 403: %s", resp.StatusCode, got)
		}
		p := challenge(t, resp)
		if p["error"] != "insufficient_scope" || p["resource_metadata"] != w.metadataURL() {
			t.Errorf("challenge %v", p)
		}
		if want := map[bool]string{true: "tools.read", false: "tools.read tools.search"}[strings.Contains(body, "tools/call")]; p["scope"] != want {
			t.Errorf("scope %q, want %q", p["scope"], want)
		}
	}
	// A token with none of the gateway's scopes is the same.
	if resp, _ := postRPC(t, w.resource, w.op.token(t, w.resource, "openid"), listBody); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a token without the gateway's scopes: %d, want 403", resp.StatusCode)
	}
	read := w.op.token(t, w.resource, "tools.read", "unmapped")
	resp, body := postRPC(t, w.resource, read, callBody("search", "call-2", `{"query":"x"}`))
	if p := challenge(t, resp); resp.StatusCode != http.StatusForbidden || p["scope"] != "tools.search" {
		t.Errorf("search with tools.read: %d %v %s", resp.StatusCode, p, body)
	}
	resp, body = postRPC(t, w.resource, read, listBody)
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), `"name":"search"`) || !strings.Contains(string(body), `"name":"echo"`) {
		t.Errorf("tools/list with tools.read: %d %s", resp.StatusCode, body)
	}
}

// The protected resource metadata is served, unauthenticated, at the
// path-suffixed well-known URL and at the bare one, and names the
// provider and the scopes the grants name.
func TestOAuthMetadata(t *testing.T) {
	w := newOAuthWorld(t, nil)
	if got := w.gw.MetadataPaths(); !slices.Equal(got, []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}) {
		t.Errorf("MetadataPaths %v", got)
	}
	for _, u := range []string{w.metadataURL(), w.base + "/.well-known/oauth-protected-resource"} {
		prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), u, w.resource, http.DefaultClient)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if !slices.Equal(prm.AuthorizationServers, []string{w.op.issuer}) || !slices.Equal(prm.ScopesSupported, []string{"tools.read", "tools.search"}) ||
			!slices.Equal(prm.BearerMethodsSupported, []string{"header"}) {
			t.Errorf("%s: %+v", u, prm)
		}
	}
	resp, body := postRPC(t, w.metadataURL(), "", listBody)
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(string(body), `"error"`) {
		t.Errorf("POST to the metadata: %d %s", resp.StatusCode, body)
	}
}

// When the provider rotates to a new key (here ES256 after RS256), a token
// signed with it is accepted: the gateway fetches the key set again for a
// key id it does not know. Tokens of the old key pass while it is
// published.
func TestOAuthKeyRotation(t *testing.T) {
	w := newOAuthWorld(t, nil)
	gateway.SetJWKSMinRefetch(w.gw, 0)
	before := w.op.token(t, w.resource, "tools.read")
	if resp, body := postRPC(t, w.resource, before, listBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("before the rotation: %d %s", resp.StatusCode, body)
	}
	k := w.op.store.rotate(t, jose.ES256)
	after := w.op.token(t, w.resource, "tools.read")
	if h := headerOf(t, after); h["kid"] != k.id || h["alg"] != "ES256" {
		t.Fatalf("the new token's header: %v", h)
	}
	for _, tok := range []string{after, before} {
		if resp, body := postRPC(t, w.resource, tok, listBody); resp.StatusCode != http.StatusOK {
			t.Errorf("after the rotation: %d %s", resp.StatusCode, body)
		}
	}
}

// Neither the agent's token nor any header of its request reaches an HTTP
// upstream: it gets only its own configured token, or none.
func TestOAuthTokenNeverForwarded(t *testing.T) {
	for _, withOwn := range []bool{false, true} {
		up, seen := recordingUpstream(t)
		upstreamDraft := draftsOf(t, up)
		drafting := len(seen()) // the requests of `gateway pin`, made without a token
		w := newOAuthWorld(t, func(cfg configDoc, _ *oauthWorld) {
			spec := map[string]any{"url": up}
			if withOwn {
				t.Setenv("UPSTREAM_OWN_TOKEN", "the-gateway's-own")
				spec["bearer_token_env"] = "UPSTREAM_OWN_TOKEN"
			}
			e := upstreamDraft["shout"]
			e.Upstream = "up"
			cfg["upstreams"] = map[string]any{"up": spec}
			cfg["tools"] = []any{e}
			cfg["policy"] = map[string]any{"grants": []any{map[string]any{"principals": []string{"*"}, "projects": []string{"support"},
				"scopes": []string{"tools.read"}, "allow": []string{"tool.call:*"}}}}
		})
		tok := w.op.token(t, w.resource, "tools.read")
		resp, body := postRPC(t, w.resource, tok, callBody("shout", "call-fw", `{"text":"quiet"}`))
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "QUIET") {
			t.Fatalf("the call: %d %s", resp.StatusCode, body)
		}
		want := ""
		if withOwn {
			want = "Bearer the-gateway's-own"
		}
		got := seen()[drafting:]
		if len(got) == 0 {
			t.Fatal("the upstream saw no request")
		}
		for _, h := range got {
			if h != want {
				t.Errorf("the upstream saw Authorization %q, want %q", h, want)
			}
			if strings.Contains(h, tok) {
				t.Error("the agent's token reached the upstream")
			}
		}
	}
}

// Static bearer tokens keep working beside OAuth, and their grants (those
// without scopes) are not an OAuth token's.
func TestOAuthBesideStaticTokens(t *testing.T) {
	w := newOAuthWorld(t, func(cfg configDoc, _ *oauthWorld) {
		cfg["http"].(map[string]any)["bearer_tokens"] = []any{map[string]any{"sha256": tokenDigest("static-token"), "subject": "ops"}}
	})
	resp, body := postRPC(t, w.resource, "static-token", callBody("search", "call-s", `{"query":"x"}`))
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), `"isError":true`) {
		t.Errorf("search with the static token: %d %s", resp.StatusCode, body)
	}
	resp, _ = postRPC(t, w.resource, w.op.token(t, w.resource, "tools.read"), callBody("search", "call-o", `{"query":"x"}`))
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("search with a tools.read token: %d, want 403", resp.StatusCode)
	}
}

// recordingUpstream serves an MCP server over streamable HTTP with one
// tool, shout, and returns its URL and the Authorization headers of every
// request it got.
func recordingUpstream(t *testing.T) (string, func() []string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "recording", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "shout", Description: "Say it louder.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["text"],"properties":{"text":{"type":"string","maxLength":64}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(a.Text)}}}, nil
		})
	var mu sync.Mutex
	var seen []string
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// draftsOf drafts the tools of the upstream at url as `gateway pin` does.
func draftsOf(t *testing.T, url string) map[string]gateway.DraftEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ds, err := gateway.Drafts(ctx, &gateway.Config{Upstreams: map[string]gateway.UpstreamConfig{"up": {URL: url}}}, gateway.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]gateway.DraftEntry{}
	for _, d := range ds {
		out[d.Tool] = d.Entry
	}
	return out
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// sign signs payload (base64url) with key under kid.
func sign(t *testing.T, alg jose.SignatureAlgorithm, key any, kid, payload string) string {
	t.Helper()
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func headerOf(t *testing.T, tok string) map[string]any { return segment(t, tok, 0) }
func claimsOf(t *testing.T, tok string) map[string]any { return segment(t, tok, 1) }

func segment(t *testing.T, tok string, i int) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[i])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// While the issuer's keys have never been fetched (its server is down), a
// token cannot be verified: the answer is 503 with Retry-After, not a 401
// that would send the client to authorize again.
func TestOAuthKeysUnavailable(t *testing.T) {
	w := newOAuthWorld(t, func(cfg configDoc, _ *oauthWorld) {
		cfg["http"].(map[string]any)["oauth"].(map[string]any)["issuer"] = "http://127.0.0.1:1"
	})
	resp, body := postRPC(t, w.resource, w.op.token(t, w.resource, "tools.read"), listBody)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), "keys are unavailable") {
		t.Errorf("%d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}
