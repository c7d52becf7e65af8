package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// Bounds of what the gateway fetches from an authorization server.
const (
	// MaxJWKSBytes bounds a key set document; a larger one is refused.
	MaxJWKSBytes = 256 << 10
	// MaxJWKSKeys bounds the keys kept of one key set.
	MaxJWKSKeys = 64
	// maxMetadataBytes bounds an issuer's metadata document.
	maxMetadataBytes = 64 << 10
	// OAuthFetchTimeout bounds one fetch of the issuer's metadata or keys.
	OAuthFetchTimeout = 5 * time.Second
	// DefaultJWKSMinRefetch is the least time between two fetches of the key
	// set: a token naming a key the set lacks fetches it again (a rotation)
	// at most this often, whatever the tokens say.
	DefaultJWKSMinRefetch = 30 * time.Second
	// minRSABits is the least RSA modulus accepted.
	minRSABits = 2048
)

// keySet is the issuer's JSON Web Key Set, fetched when first needed, again
// every refresh (in the background, the old keys serving meanwhile), and
// again at once when a token names a key it lacks, at most every
// minRefetch. One fetch runs at a time; whoever waits for keys waits for
// it. A failed fetch keeps the keys there were.
type keySet struct {
	issuer     string
	jwksURI    string // configured; "" reads it from the issuer's metadata
	algs       []string
	refresh    time.Duration
	minRefetch time.Duration
	client     *http.Client
	log        *slog.Logger
	now        func() time.Time

	mu       sync.Mutex
	keys     []jose.JSONWebKey
	fetched  time.Time     // the last fetch that succeeded
	tried    time.Time     // the last fetch started
	uri      string        // jwks_uri, configured or discovered
	inflight chan struct{} // closed when the fetch in flight ends; nil when none
}

func newKeySet(o *OAuthConfig, log *slog.Logger) *keySet {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxResponseHeaderBytes = 64 << 10
	tr.ResponseHeaderTimeout = OAuthFetchTimeout
	return &keySet{
		issuer: o.Issuer, jwksURI: o.JWKSURI, uri: o.JWKSURI, algs: o.Algorithms, refresh: o.JWKSRefresh,
		minRefetch: DefaultJWKSMinRefetch, log: log, now: time.Now,
		client: &http.Client{Transport: tr, Timeout: OAuthFetchTimeout,
			// The issuer's documents are read where configured or
			// published, never where a redirect points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
}

// key implements keyFinder: the key of id kid fit for alg. When kid is
// "", the set's only key fit for alg.
func (s *keySet) key(ctx context.Context, kid, alg string) (*jose.JSONWebKey, error) {
	s.mu.Lock()
	now := s.now()
	never := s.fetched.IsZero()
	k := s.lookup(kid, alg)
	stale := now.Sub(s.fetched) >= s.refresh
	s.mu.Unlock()
	switch {
	case never || k == nil:
		// No keys yet, or a key the set lacks: wait for a fetch.
		if s.sync(ctx, true) {
			s.mu.Lock()
			never, k = s.fetched.IsZero(), s.lookup(kid, alg)
			s.mu.Unlock()
		}
	case stale:
		s.sync(ctx, false)
	}
	switch {
	case k != nil:
		return k, nil
	case never:
		return nil, errKeysUnavailable
	}
	return nil, refusedKey
}

// sync starts a fetch, unless one is in flight or the last began less
// than minRefetch ago, and with wait waits for the one in flight (or ctx).
// It reports whether a fetch ended while it waited.
func (s *keySet) sync(ctx context.Context, wait bool) bool {
	s.mu.Lock()
	ch := s.inflight
	if ch == nil {
		if !s.tried.IsZero() && s.now().Sub(s.tried) < s.minRefetch {
			s.mu.Unlock()
			return false
		}
		ch = make(chan struct{})
		s.inflight, s.tried = ch, s.now()
		go s.fetch(ch)
	}
	s.mu.Unlock()
	if !wait {
		return false
	}
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// fetch fetches the key set (and first the issuer's metadata when its
// location is not known), within OAuthFetchTimeout, and closes done. It
// runs on its own: a request that stops waiting does not end it for the
// others.
func (s *keySet) fetch(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), OAuthFetchTimeout)
	defer cancel()
	keys, uri, err := s.load(ctx)
	s.mu.Lock()
	if err == nil {
		s.keys, s.fetched, s.uri = keys, s.now(), uri
	} else if s.jwksURI == "" {
		s.uri = "" // read the metadata again next time: the keys may have moved
	}
	s.inflight = nil
	s.mu.Unlock()
	close(done)
	if err != nil {
		s.log.Warn("oauth: the authorization server's keys could not be fetched; the keys fetched before, if any, still serve",
			slog.String("issuer", s.issuer), slog.String("cause", err.Error()))
	}
}

// load reads the key set, discovering where it is first when needed.
func (s *keySet) load(ctx context.Context) ([]jose.JSONWebKey, string, error) {
	s.mu.Lock()
	uri := s.uri
	s.mu.Unlock()
	if uri == "" {
		var err error
		if uri, err = s.discover(ctx); err != nil {
			return nil, "", err
		}
	}
	body, err := s.get(ctx, uri, MaxJWKSBytes)
	if err != nil {
		return nil, "", err
	}
	keys, err := parseJWKS(body, s.algs)
	return keys, uri, err
}

// discover reads jwks_uri from the issuer's metadata: RFC 8414's
// oauth-authorization-server document, else OpenID Connect discovery's,
// each at the locations the MCP authorization spec lists. The metadata's
// issuer must be the configured one (RFC 8414 section 3.3).
func (s *keySet) discover(ctx context.Context) (string, error) {
	for _, u := range issuerMetadataURLs(s.issuer) {
		body, err := s.get(ctx, u, maxMetadataBytes)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return "", err
		}
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if strictjson.Check(body, strictjson.MaxDepth) != nil || json.Unmarshal(body, &meta) != nil {
			return "", fmt.Errorf("%s: not a JSON metadata document", u)
		}
		if meta.Issuer != s.issuer {
			return "", fmt.Errorf("%s: the metadata names issuer %q, not %q", u, meta.Issuer, s.issuer)
		}
		if !fetchURL(meta.JWKSURI) {
			return "", fmt.Errorf("%s: jwks_uri %q is not an https URL (http only on loopback)", u, meta.JWKSURI)
		}
		return meta.JWKSURI, nil
	}
	return "", fmt.Errorf("issuer %s publishes no metadata; configure http.oauth.jwks_uri", s.issuer)
}

// issuerMetadataURLs are the metadata locations of an issuer, in the order
// the MCP authorization spec tries them.
func issuerMetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	p := strings.Trim(u.Path, "/")
	at := func(path string) string {
		c := *u
		c.Path, c.RawPath = path, ""
		return c.String()
	}
	if p == "" {
		return []string{at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")}
	}
	return []string{at("/.well-known/oauth-authorization-server/" + p), at("/.well-known/openid-configuration/" + p),
		at("/" + p + "/.well-known/openid-configuration")}
}

var errNotFound = errors.New("not found")

// get fetches u: at most limit bytes, status 200.
func (s *keySet) get(ctx context.Context, u string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, errNotFound
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s: status %d", u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", u, limit)
	}
	return body, nil
}

// parseJWKS returns the keys of a JWK Set fit to verify tokens of the
// algorithms algs: public RSA (2048 bits or more), EC (P-256, P-384,
// P-521) and Ed25519 keys, for signing ("use" absent or "sig"), of an
// accepted "alg" when one is given; at most MaxJWKSKeys. Symmetric keys,
// private keys and keys this server does not read are skipped. A set with
// no such key is an error.
func parseJWKS(body []byte, algs []string) ([]jose.JSONWebKey, error) {
	if strictjson.Check(body, maxClaimsDepth) != nil {
		return nil, errors.New("the key set is not strict JSON")
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if json.Unmarshal(body, &set) != nil {
		return nil, errors.New("the key set has no keys array")
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if k.UnmarshalJSON(raw) != nil || k.Use != "" && k.Use != "sig" || k.Algorithm != "" && !slices.Contains(algs, k.Algorithm) {
			continue
		}
		if !fitsAny(&k, algs) {
			continue
		}
		keys = append(keys, k)
		if len(keys) == MaxJWKSKeys {
			break
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("the key set holds no public signing key for the accepted algorithms")
	}
	return keys, nil
}

func fitsAny(k *jose.JSONWebKey, algs []string) bool {
	for _, a := range algs {
		if fits(k, a) {
			return true
		}
	}
	return false
}

// fits reports whether k is a public key of the type alg needs.
func fits(k *jose.JSONWebKey, alg string) bool {
	switch key := k.Key.(type) {
	case *rsa.PublicKey:
		return (strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")) && key.N.BitLen() >= minRSABits
	case *ecdsa.PublicKey:
		switch alg {
		case "ES256":
			return key.Curve == elliptic.P256()
		case "ES384":
			return key.Curve == elliptic.P384()
		case "ES512":
			return key.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// lookup returns the key of id kid fit for alg (s.mu held); with kid "",
// the only such key, or none when there are several.
func (s *keySet) lookup(kid, alg string) *jose.JSONWebKey {
	var found *jose.JSONWebKey
	for i := range s.keys {
		k := &s.keys[i]
		if kid != "" && k.KeyID != kid || k.Algorithm != "" && k.Algorithm != alg || !fits(k, alg) {
			continue
		}
		if kid != "" {
			return k
		}
		if found != nil {
			return nil
		}
		found = k
	}
	return found
}
