package gateway_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"
	"golang.org/x/text/language"
)

// The authorization server of the OAuth tests: zitadel's OpenID Provider
// (pkg/op) over its example storage, served in process, with what a
// resource server's tests need on top: a public client whose access tokens
// are JWTs, the RFC 8707 resource of the authorization request as the
// token's audience, a login that needs no form, and signing keys that can
// be rotated.
const (
	opClientID    = "mcp-agent"
	opRedirectURL = "http://127.0.0.1:1/callback"
	// opUser is the example storage's second user; its subject is "id2".
	opUser    = "test-user2"
	opSubject = "id2"
)

// testOP is a running OpenID Provider.
type testOP struct {
	issuer string
	store  *opStorage
}

// newTestOP serves a provider over store (a new one when nil): two
// providers may share a storage, and so its signing keys, under two
// issuers.
func newTestOP(t *testing.T, store *opStorage) *testOP {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	if store == nil {
		store = newOPStorage(t, issuer)
	}
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:          sha256.Sum256([]byte("toolcanon oauth test")),
		CodeMethodS256:     true,
		AuthMethodPost:     true,
		SupportedUILocales: []language.Tag{language.English},
	}, store, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	callback := op.AuthCallbackURL(provider)
	mux := http.NewServeMux()
	// The login: the test's user, signed in at once.
	mux.HandleFunc("/login", op.NewIssuerInterceptor(provider.IssuerFromRequest).HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if err := store.CheckUsernamePassword(store.user(), "verysecure", id); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, callback(r.Context(), id), http.StatusFound)
	}))
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/authorize" {
			q := r.URL.Query()
			store.requested(q.Get("state"), q.Get("resource"))
		}
		provider.ServeHTTP(w, r)
	}))
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	return &testOP{issuer: issuer, store: store}
}

// token runs the authorization code flow (PKCE, RFC 8707 resource) and
// returns the access token: for resource ("" asks for none) with scopes.
func (o *testOP) token(t *testing.T, resource string, scopes ...string) string {
	t.Helper()
	cfg := &oauth2.Config{ClientID: opClientID, RedirectURL: opRedirectURL, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: o.issuer + "/authorize", TokenURL: o.issuer + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", resource))
	}
	code, _, _, err := followToRedirect(cfg.AuthCodeURL("st-"+rand.Text(), opts...))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cfg.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

// followToRedirect follows an authorization URL through the provider and
// its login until the redirect to the client, and returns its code, state
// and issuer (RFC 9207).
func followToRedirect(authURL string) (code, state, iss string, err error) {
	hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), opRedirectURL) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := hc.Get(authURL)
	if err != nil {
		return "", "", "", err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), opRedirectURL) {
		return "", "", "", fmt.Errorf("the authorization ended with %d at %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	q := loc.Query()
	if q.Get("code") == "" {
		return "", "", "", fmt.Errorf("no code in %s", loc)
	}
	return q.Get("code"), q.Get("state"), q.Get("iss"), nil
}

// opStorage is the example storage with a JWT client, audiences from the
// resource indicator, a chosen user and rotatable keys.
type opStorage struct {
	*storage.Storage
	client op.Client

	mu        sync.Mutex
	byState   map[string]string // authorization request state -> resource
	byID      map[string]string // authorization request id -> resource
	username  string
	keys      []opKey // published; the last one signs
	published int     // how many of keys the key set shows (from the end)
}

func newOPStorage(t *testing.T, issuer string) *opStorage {
	t.Helper()
	s := &opStorage{
		Storage: storage.NewStorage(storage.NewUserStore(issuer)),
		client:  opClient{storage.NativeClient(opClientID, opRedirectURL)},
		byState: map[string]string{}, byID: map[string]string{}, username: opUser,
	}
	s.rotate(t, jose.RS256)
	return s
}

// rotate adds a new signing key of alg, which signs from now on; the key
// set shows it beside the one before.
func (s *opStorage) rotate(t *testing.T, alg jose.SignatureAlgorithm) opKey {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case jose.RS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		t.Fatalf("no key for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	k := opKey{id: "k-" + rand.Text()[:8], alg: alg, priv: priv}
	s.mu.Lock()
	s.keys = append(s.keys, k)
	s.published = min(len(s.keys), 2)
	s.mu.Unlock()
	return k
}

func (s *opStorage) user() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.username
}

func (s *opStorage) requested(state, resource string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byState[state] = resource
}

// GetClientByClientID implements op.Storage.
func (s *opStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	if id == opClientID {
		return s.client, nil
	}
	return s.Storage.GetClientByClientID(ctx, id)
}

// CreateAuthRequest implements op.Storage: the request's resource is kept.
func (s *opStorage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	ar, err := s.Storage.CreateAuthRequest(ctx, req, userID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.byID[ar.GetID()] = s.byState[req.State]
	s.mu.Unlock()
	return ar, nil
}

// AuthRequestByID implements op.Storage.
func (s *opStorage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	ar, err := s.Storage.AuthRequestByID(ctx, id)
	return s.withAudience(ar, err)
}

// AuthRequestByCode implements op.Storage.
func (s *opStorage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	ar, err := s.Storage.AuthRequestByCode(ctx, code)
	return s.withAudience(ar, err)
}

func (s *opStorage) withAudience(ar op.AuthRequest, err error) (op.AuthRequest, error) {
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.byID[ar.GetID()]; r != "" {
		return audienceRequest{ar, []string{r}}, nil
	}
	return ar, nil
}

// GetPrivateClaimsFromScopes implements op.Storage: the access token
// carries its scopes (RFC 9068 "scope"), which the provider leaves to the
// storage.
func (s *opStorage) GetPrivateClaimsFromScopes(_ context.Context, _, _ string, scopes []string) (map[string]any, error) {
	if len(scopes) == 0 {
		return nil, nil
	}
	return map[string]any{"scope": strings.Join(scopes, " ")}, nil
}

// SigningKey implements op.Storage: the newest key.
func (s *opStorage) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1], nil
}

// SignatureAlgorithms implements op.Storage.
func (s *opStorage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256, jose.ES256}, nil
}

// KeySet implements op.Storage: the published keys.
func (s *opStorage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []op.Key
	for _, k := range s.keys[len(s.keys)-s.published:] {
		out = append(out, opPublic{k})
	}
	return out, nil
}

// audienceRequest is an authorization request whose tokens are for its
// resource.
type audienceRequest struct {
	op.AuthRequest
	aud []string
}

func (a audienceRequest) GetAudience() []string { return a.aud }

// opClient is a public client (PKCE) whose access tokens are JWTs, that may
// ask for any scope, and whose login is the test's.
type opClient struct{ op.Client }

func (opClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (opClient) IsScopeAllowed(string) bool          { return true }
func (opClient) LoginURL(id string) string           { return "/login?id=" + id }
func (opClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// opKey is a signing key and its public half.
type opKey struct {
	id   string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

// opKey is an op.SigningKey.
func (k opKey) SignatureAlgorithm() jose.SignatureAlgorithm { return k.alg }
func (k opKey) ID() string                                  { return k.id }
func (k opKey) Key() any                                    { return k.priv }

// opPublic is the public half of a key, an op.Key of the key set.
type opPublic struct{ k opKey }

func (p opPublic) ID() string                         { return p.k.id }
func (p opPublic) Algorithm() jose.SignatureAlgorithm { return p.k.alg }
func (p opPublic) Use() string                        { return "sig" }
func (p opPublic) Key() any                           { return p.k.priv.Public() }
