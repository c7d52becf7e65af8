package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolcanon/toolcanon/registry"
)

// An Authorization header gives a token only when it is one Bearer
// credential of the b64token alphabet, within the size bound; another
// scheme is no token, and anything else is malformed.
func TestOAuthBearerHeader(t *testing.T) {
	long := strings.Repeat("a", MaxAccessTokenBytes)
	for _, c := range []struct {
		header []string
		tok    string
		ok     bool
		bad    bool
	}{
		{nil, "", false, false},
		{[]string{"Bearer abc.def-_~+/=="}, "abc.def-_~+/==", true, false},
		{[]string{"bearer   abc"}, "abc", true, false},
		{[]string{"Bearer " + long}, long, true, false},
		{[]string{"Bearer " + long + "a"}, "", false, true},
		{[]string{"Basic dXNlcjpwYXNz"}, "", false, false},
		{[]string{"Bearer"}, "", false, true},
		{[]string{"Bearer "}, "", false, true},
		{[]string{"Bearer a b"}, "", false, true},
		{[]string{"Bearer a\r\nb"}, "", false, true},
		{[]string{"Bearer ==="}, "", false, true},
		{[]string{"Bearer a=b"}, "", false, true},
		{[]string{"Bearer a", "Bearer a"}, "", false, true},
		{[]string{"Bearer ab\x00"}, "", false, true},
	} {
		h := http.Header{}
		if c.header != nil {
			h["Authorization"] = c.header
		}
		tok, ok, err := bearerToken(h)
		if tok != c.tok || ok != c.ok || (err != nil) != c.bad {
			t.Errorf("%.60q: %.20q %v %v", c.header, tok, ok, err)
		}
	}
}

// staticKeys is a keyFinder over fixed keys.
type staticKeys []jose.JSONWebKey

func (s staticKeys) key(_ context.Context, kid, alg string) (*jose.JSONWebKey, error) {
	ks := &keySet{keys: s}
	if k := ks.lookup(kid, alg); k != nil {
		return k, nil
	}
	return nil, refusedKey
}

// testTokens returns a verifier of tokens of the issuer "https://as.test"
// for "https://gw.test/mcp" at a fixed time, and a signer of its key.
func testTokens(t testing.TB) (*accessTokens, func(header, claims string) string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	a := &accessTokens{issuer: "https://as.test", resource: "https://gw.test/mcp", algs: []string{"RS256", "ES256"},
		skew: 30 * time.Second, subjectClaim: "sub", now: func() time.Time { return time.Unix(1_800_000_000, 0) },
		keys: staticKeys{{Key: &priv.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}}
	sign := func(header, claims string) string {
		// The exact header bytes are signed: go-jose would write its own.
		h := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(claims))
		sum := sha256.Sum256([]byte(h))
		r, s, err := ecdsa.Sign(rand.Reader, priv, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		sig := make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
		return h + "." + base64.RawURLEncoding.EncodeToString(sig)
	}
	return a, sign
}

const goodClaims = `{"iss":"https://as.test","aud":["https://gw.test/mcp","other"],"sub":"alice","exp":1800000300,"iat":1800000000,"nbf":1800000000,"scope":"tools.read  tools.search"}`

// Each claim is checked as RFC 9068 says, with the skew, and the claims
// are strict JSON.
func TestOAuthAccessTokenClaims(t *testing.T) {
	a, sign := testTokens(t)
	hdr := `{"alg":"ES256","kid":"k1","typ":"at+jwt"}`
	ti, err := a.verify(context.Background(), sign(hdr, goodClaims))
	if err != nil {
		t.Fatal(err)
	}
	if ti.UserID != "alice" || strings.Join(ti.Scopes, ",") != "tools.read,tools.search" ||
		!ti.Expiration.Equal(time.Unix(1800000330, 0)) || !isOAuth(ti) {
		t.Errorf("%+v", ti)
	}
	edit := func(from, to string) string { return strings.Replace(goodClaims, from, to, 1) }
	for _, c := range []struct {
		name, header, claims string
		want                 error
	}{
		{"issuer", hdr, edit(`"iss":"https://as.test"`, `"iss":"https://as.test/"`), refusedIssuer},
		{"no issuer", hdr, edit(`"iss":"https://as.test",`, ``), refusedIssuer},
		{"audience", hdr, edit(`["https://gw.test/mcp","other"]`, `"https://gw.test/mcp/"`), refusedAudience},
		{"audience object", hdr, edit(`["https://gw.test/mcp","other"]`, `{"a":"https://gw.test/mcp"}`), refusedAudience},
		{"no exp", hdr, edit(`"exp":1800000300,`, ``), refusedClaims},
		{"exp a string", hdr, edit(`1800000300`, `"1800000300"`), refusedClaims},
		{"exp null", hdr, edit(`1800000300`, `null`), refusedClaims},
		{"expired past the skew", hdr, edit(`1800000300`, `1799999970`), refusedExpired},
		{"nbf past the skew", hdr, edit(`"nbf":1800000000`, `"nbf":1800000031`), refusedNotYetValid},
		{"nbf after exp", hdr, edit(`"nbf":1800000000`, `"nbf":1800000301`), refusedClaims},
		{"iat in the future", hdr, edit(`"iat":1800000000`, `"iat":1800000031`), refusedClaims},
		{"no subject", hdr, edit(`"sub":"alice",`, ``), refusedSubject},
		{"a subject with a space", hdr, edit(`"alice"`, `"al ice"`), refusedSubject},
		{"a subject not a string", hdr, edit(`"alice"`, `7`), refusedSubject},
		{"scopes not a string", hdr, edit(`"tools.read  tools.search"`, `["tools.read"]`), refusedClaims},
		{"a repeated claim", hdr, edit(`"sub":"alice"`, `"sub":"alice","sub":"bob"`), refusedClaims},
		{"trailing bytes", hdr, goodClaims + ` {}`, refusedClaims},
		{"crit", `{"alg":"ES256","kid":"k1","crit":["exp"]}`, goodClaims, refusedMalformed},
		{"another type", `{"alg":"ES256","kid":"k1","typ":"dpop+jwt"}`, goodClaims, refusedMalformed},
		{"an unknown key id", `{"alg":"ES256","kid":"k2"}`, goodClaims, refusedKey},
		{"RS256 with an EC key", `{"alg":"RS256","kid":"k1"}`, goodClaims, refusedKey},
		{"ES384 (not accepted)", `{"alg":"ES384","kid":"k1"}`, goodClaims, refusedAlgorithm},
	} {
		if _, err := a.verify(context.Background(), sign(c.header, c.claims)); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// The principal may come from another claim.
	a.subjectClaim = "email"
	if _, err := a.verify(context.Background(), sign(hdr, goodClaims)); !errors.Is(err, refusedSubject) {
		t.Errorf("no email claim: %v", err)
	}
	if ti, err := a.verify(context.Background(), sign(hdr, edit(`"sub":"alice"`, `"sub":"alice","email":"alice@example.com"`))); err != nil || ti.UserID != "alice@example.com" {
		t.Errorf("the email claim: %v %v", ti, err)
	}
	a.subjectClaim = "sub"
	// Within the skew past exp the token passes; exactly at exp+skew not.
	a.now = func() time.Time { return time.Unix(1800000329, 0) }
	if _, err := a.verify(context.Background(), sign(hdr, goodClaims)); err != nil {
		t.Errorf("29s past exp: %v", err)
	}
	a.now = func() time.Time { return time.Unix(1800000330, 0) }
	if _, err := a.verify(context.Background(), sign(hdr, goodClaims)); !errors.Is(err, refusedExpired) {
		t.Errorf("30s past exp: %v", err)
	}
}

// jwksServer serves a key set document and counts its fetches.
func jwksServer(t *testing.T, doc func() []byte) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = w.Write(doc())
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func testKeySet(uri string) *keySet {
	return newKeySet(&OAuthConfig{Issuer: "http://127.0.0.1:1", JWKSURI: uri, Algorithms: []string{"RS256", "ES256"},
		JWKSRefresh: time.Hour}, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func jwk(t *testing.T, k jose.JSONWebKey) json.RawMessage {
	t.Helper()
	b, err := k.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Of a key set, only public signing keys the accepted algorithms can use
// are kept: not a symmetric key, a short RSA key, a private key, an
// encryption key or one of another algorithm.
func TestOAuthKeySetKeepsOnlyUsableKeys(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	short, _ := rsa.GenerateKey(rand.Reader, 1024)
	good, _ := rsa.GenerateKey(rand.Reader, 2048)
	keys := []json.RawMessage{
		jwk(t, jose.JSONWebKey{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "hmac", Algorithm: "HS256"}),
		jwk(t, jose.JSONWebKey{Key: &short.PublicKey, KeyID: "short", Algorithm: "RS256"}),
		jwk(t, jose.JSONWebKey{Key: good, KeyID: "private", Algorithm: "RS256"}),
		jwk(t, jose.JSONWebKey{Key: &good.PublicKey, KeyID: "enc", Use: "enc"}),
		jwk(t, jose.JSONWebKey{Key: &good.PublicKey, KeyID: "ps", Algorithm: "PS256"}),
		json.RawMessage(`{"kty":"XYZ","kid":"odd"}`),
		jwk(t, jose.JSONWebKey{Key: &good.PublicKey, KeyID: "rsa", Use: "sig"}),
		jwk(t, jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "ec", Algorithm: "ES256"}),
	}
	doc, _ := json.Marshal(map[string]any{"keys": keys})
	got, err := parseJWKS(doc, []string{"RS256", "ES256"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range got {
		ids = append(ids, k.KeyID)
	}
	if strings.Join(ids, ",") != "rsa,ec" {
		t.Errorf("kept %v, want rsa and ec", ids)
	}
	if _, err := parseJWKS([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`), []string{"RS256"}); err == nil {
		t.Error("a set of symmetric keys only was taken")
	}
	if _, err := parseJWKS([]byte(`{"keys":[],"keys":[]}`), []string{"RS256"}); err == nil {
		t.Error("a set with a repeated member was taken")
	}
}

// A key set larger than MaxJWKSBytes, one that does not come within the
// fetch timeout, and a redirect are refused; the keys fetched before keep
// serving, and a token cannot make the gateway fetch more often than the
// least interval.
func TestOAuthKeySetFetchIsBounded(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	set, _ := json.Marshal(map[string]any{"keys": []json.RawMessage{jwk(t, jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "k1", Algorithm: "ES256"})}})
	ctx := context.Background()

	big, _ := jwksServer(t, func() []byte {
		return []byte(string(set[:len(set)-1]) + `,"pad":"` + strings.Repeat("x", MaxJWKSBytes) + `"}`)
	})
	if _, err := testKeySet(big.URL).key(ctx, "k1", "ES256"); !errors.Is(err, errKeysUnavailable) {
		t.Errorf("an oversized key set: %v", err)
	}

	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	ks := testKeySet(slow.URL)
	ks.client.Timeout = 200 * time.Millisecond
	start := time.Now()
	if _, err := ks.key(ctx, "k1", "ES256"); !errors.Is(err, errKeysUnavailable) || time.Since(start) > 5*time.Second {
		t.Errorf("a key set that never comes: %v after %v", err, time.Since(start))
	}

	redirect := httptest.NewServer(http.RedirectHandler(big.URL, http.StatusFound))
	defer redirect.Close()
	if _, err := testKeySet(redirect.URL).key(ctx, "k1", "ES256"); !errors.Is(err, errKeysUnavailable) {
		t.Errorf("a redirect was followed: %v", err)
	}

	var broken atomic.Bool
	good, fetches := jwksServer(t, func() []byte {
		if broken.Load() {
			return []byte("{")
		}
		return set
	})
	ks = testKeySet(good.URL)
	ks.minRefetch = time.Hour
	if k, err := ks.key(ctx, "k1", "ES256"); err != nil || k.KeyID != "k1" {
		t.Fatalf("the key: %v %v", k, err)
	}
	broken.Store(true)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ks.key(ctx, "unknown-"+string(rune('a'+i%26)), "ES256"); !errors.Is(err, refusedKey) {
				t.Errorf("an unknown key: %v", err)
			}
		}()
	}
	wg.Wait()
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d fetches for 50 unknown key ids within the least interval, want 1", n)
	}
	// A refetch that fails keeps the keys there were.
	ks.minRefetch = 0
	if _, err := ks.key(ctx, "unknown", "ES256"); !errors.Is(err, refusedKey) {
		t.Errorf("an unknown key: %v", err)
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
	if k, err := ks.key(ctx, "k1", "ES256"); err != nil || k.KeyID != "k1" {
		t.Errorf("after a failed refetch: %v %v", k, err)
	}
}

// The key set's location is read from the issuer's metadata, which must
// name the configured issuer.
func TestOAuthKeySetDiscovery(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	set, _ := json.Marshal(map[string]any{"keys": []json.RawMessage{jwk(t, jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "k1", Algorithm: "ES256"})}})
	var issuer, claimed string
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration/tenant", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"issuer":"` + claimed + `","jwks_uri":"` + issuer + `/keys"}`))
	})
	mux.HandleFunc("/tenant/keys", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(set) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	issuer = srv.URL + "/tenant"
	for _, c := range []struct {
		claimed string
		ok      bool
	}{{srv.URL + "/other", false}, {issuer, true}} {
		claimed = c.claimed
		ks := newKeySet(&OAuthConfig{Issuer: issuer, Algorithms: []string{"ES256"}, JWKSRefresh: time.Hour}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if _, err := ks.key(context.Background(), "k1", "ES256"); (err == nil) != c.ok {
			t.Errorf("metadata naming issuer %s: %v", c.claimed, err)
		}
	}
}

// A grant with scopes covers only an OAuth token carrying one of them; a
// grant without covers only the other calls.
func TestOAuthPolicyScopes(t *testing.T) {
	p, err := NewStaticPolicy([]Grant{
		{Principals: []string{"*"}, Projects: []string{"p"}, Scopes: []string{"kb.read"}, Allow: []string{"tool.call:kb.*"}},
		{Principals: []string{"*"}, Projects: []string{"p"}, Allow: []string{"tool.call:*"}},
	}, "v1")
	if err != nil {
		t.Fatal(err)
	}
	who := registry.Principal{Subject: "alice", ExpiresAt: time.Now().Add(time.Hour)}
	oauth := func(scopes ...string) context.Context {
		return withCallToken(context.Background(), &auth.TokenInfo{UserID: "alice", Scopes: scopes, Extra: map[string]any{oauthIssuerKey: "x"}})
	}
	static := withCallToken(context.Background(), &auth.TokenInfo{UserID: "alice"})
	for _, c := range []struct {
		name string
		ctx  context.Context
		perm string
		want registry.Verdict
	}{
		{"kb.read covers kb", oauth("kb.read"), "tool.call:kb.search", registry.VerdictAllow},
		{"kb.read does not cover logs", oauth("kb.read"), "tool.call:logs.query", registry.VerdictDeny},
		{"a scope without a grant", oauth("admin"), "tool.call:kb.search", registry.VerdictDeny},
		{"no scopes", oauth(), "tool.call:kb.search", registry.VerdictDeny},
		{"a static token", static, "tool.call:logs.query", registry.VerdictAllow},
		{"no token (stdio)", context.Background(), "tool.call:logs.query", registry.VerdictAllow},
	} {
		d, err := p.Authorize(c.ctx, "p", who, c.perm)
		if err != nil || d.Verdict != c.want {
			t.Errorf("%s: %v %v, want %v", c.name, d.Verdict, err, c.want)
		}
	}
	if _, err := NewStaticPolicy([]Grant{{Principals: []string{"*"}, Projects: []string{"p"}, Scopes: []string{"a b"}, Allow: []string{"*"}}}, "v1"); err == nil {
		t.Error("a scope with a space was taken")
	}
}

func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer a.b.c", "Basic x", "Bearer  a==", "Bearer a b", "Bearer \x00", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tok, ok, err := bearerToken(http.Header{"Authorization": {v}})
		if ok != (err == nil && tok != "") {
			t.Fatalf("%q: %q %v %v", v, tok, ok, err)
		}
		if ok && (len(tok) > MaxAccessTokenBytes || !b64token(tok) || !strings.HasSuffix(v, tok)) {
			t.Fatalf("%q gave %q", v, tok)
		}
	})
}

// No input is accepted but a token whose header and claims are exactly
// those the key signed; none panics.
func FuzzAccessToken(f *testing.F) {
	a, sign := testTokens(f)
	signed := map[string]bool{}
	for _, h := range []string{`{"alg":"ES256","kid":"k1"}`, `{"alg":"ES256"}`, `{"alg":"ES256","kid":"k1","typ":"JWT"}`} {
		tok := sign(h, goodClaims)
		signed[tok[:strings.LastIndexByte(tok, '.')]] = true
		f.Add(tok)
	}
	f.Add(`eyJhbGciOiJub25lIn0.e30.`)
	f.Add(`eyJhbGciOiJIUzI1NiJ9.e30.c2ln`)
	f.Add(`a.b.c`)
	f.Fuzz(func(t *testing.T, tok string) {
		ti, err := a.verify(context.Background(), tok)
		var r tokenRefusal
		if err != nil && !errors.As(err, &r) {
			t.Fatalf("%q: an error that is no refusal: %v", tok, err)
		}
		if err == nil && (!signed[tok[:strings.LastIndexByte(tok, '.')]] || ti.UserID != "alice") {
			t.Fatalf("%q was accepted", tok)
		}
	})
}

// Whatever a key set holds, only public signing keys come out of it.
func FuzzJWKS(f *testing.F) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k, _ := jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "k1"}.MarshalJSON()
	f.Add([]byte(`{"keys":[` + string(k) + `]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		keys, err := parseJWKS(doc, []string{"RS256", "ES256", "EdDSA"})
		if err == nil && len(keys) == 0 || len(keys) > MaxJWKSKeys {
			t.Fatalf("%d keys, %v", len(keys), err)
		}
		for _, k := range keys {
			if !k.IsPublic() || !fitsAny(&k, []string{"RS256", "ES256", "EdDSA"}) {
				t.Fatalf("kept %T", k.Key)
			}
		}
	})
}

// The cost an access token adds to every request: parsing, one ES256
// verification and the claims.
func BenchmarkAccessTokenVerify(b *testing.B) {
	a, sign := testTokens(b)
	tok := sign(`{"alg":"ES256","kid":"k1","typ":"at+jwt"}`, goodClaims)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}
