package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// oauthServer makes the HTTP listener an OAuth 2.1 resource server: it
// verifies access tokens, answers what the MCP authorization spec asks of
// a resource server (401 and 403 challenges naming the resource's
// metadata), and serves that metadata (RFC 9728).
type oauthServer struct {
	cfg      *OAuthConfig
	tokens   *accessTokens
	keys     *keySet
	scopes   *scopeCheck
	metaURL  string
	metaBody []byte   // the metadata document
	paths    []string // where it is served
	log      *slog.Logger
}

func newOAuthServer(cfg *Config, perms func(string) []string, log *slog.Logger) *oauthServer {
	o := cfg.HTTP.OAuth
	ks := newKeySet(o, log)
	s := &oauthServer{
		cfg: o, keys: ks, log: log, metaURL: o.MetadataURL(),
		tokens: &accessTokens{issuer: o.Issuer, resource: o.Resource, algs: o.Algorithms, skew: o.ClockSkew,
			subjectClaim: o.SubjectClaim, keys: ks, now: time.Now},
		scopes: &scopeCheck{grants: cfg.Policy, project: cfg.Identity.Project, perms: perms},
	}
	var supported []string
	for _, g := range cfg.Policy {
		supported = union(supported, g.Scopes)
	}
	slices.Sort(supported)
	s.metaBody, _ = json.Marshal(struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		ScopesSupported        []string `json:"scopes_supported"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
	}{o.Resource, []string{o.Issuer}, supported, []string{"header"}})
	s.metaBody = append(s.metaBody, '\n')
	s.paths = []string{wellKnownResource}
	if u, err := url.Parse(s.metaURL); err == nil && u.Path != wellKnownResource {
		s.paths = append([]string{u.Path}, s.paths...)
	}
	return s
}

// MetadataPaths returns the paths at which Handler serves the protected
// resource metadata (RFC 9728) of an OAuth configuration (http.oauth):
// the well-known path followed by the resource's path, as the MCP
// authorization spec has clients try first, and the bare well-known path.
// None without http.oauth. A server that routes paths to Handler routes
// these too.
func (g *Gateway) MetadataPaths() []string {
	if g.oauth == nil {
		return nil
	}
	return slices.Clone(g.oauth.paths)
}

// withMetadata serves the metadata at its paths, and passes every other
// request to next. Nil-safe: without OAuth it is next.
func (s *oauthServer) withMetadata(next http.Handler) http.Handler {
	if s == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(s.paths, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		// Public, as RFC 9728 says: any origin may read it.
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", "public, max-age=300")
			w.WriteHeader(http.StatusOK)
			if r.Method == http.MethodGet {
				_, _ = w.Write(s.metaBody)
			}
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, MCP-Protocol-Version")
			w.WriteHeader(http.StatusNoContent)
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			httpRPCError(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, httpErrorMessage(http.StatusMethodNotAllowed))
		}
	})
}

// verifiedKey holds, in a request's context, the token authenticate
// verified, for the SDK's bearer middleware to hand on.
type verifiedKey struct{}

// authenticate refuses every request that carries neither one of the
// static bearer tokens nor a valid access token, and an access token whose
// scopes fall short; the rest reach next with the token verified (as the
// SDK's auth.RequireBearerToken would leave it: auth.TokenInfoFromContext,
// and the request's TokenInfo in every MCP request it carries).
//
// The answers, each a JSON-RPC error with a fixed message:
//   - no bearer token: 401, WWW-Authenticate: Bearer resource_metadata="…";
//   - a malformed Authorization header: 400, error="invalid_request";
//   - a token refused: 401, error="invalid_token" with a fixed
//     error_description saying why;
//   - scopes that fall short: 403, error="insufficient_scope" with the
//     scopes that would do;
//   - the issuer's keys never fetched: 503 (the server's fault, not the
//     token's).
//
// The token is never passed on: the upstreams get only their own headers.
func (s *oauthServer) authenticate(next http.Handler, static []BearerToken) http.Handler {
	inner := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		if ti, ok := ctx.Value(verifiedKey{}).(*auth.TokenInfo); ok {
			return ti, nil
		}
		return nil, auth.ErrInvalidToken
	}, nil)(next)
	var verifyStatic auth.TokenVerifier
	if len(static) > 0 {
		verifyStatic = tokenVerifier(static)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok, err := bearerToken(r.Header)
		switch {
		case err != nil:
			s.challenge(w, http.StatusBadRequest, `error="invalid_request", error_description="send one Authorization: Bearer header"`)
			return
		case !ok:
			s.challenge(w, http.StatusUnauthorized, "")
			return
		}
		var ti *auth.TokenInfo
		if verifyStatic != nil {
			ti, _ = verifyStatic(r.Context(), tok, r)
		}
		if ti == nil {
			if ti, err = s.verify(r.Context(), tok); err != nil {
				s.refuse(w, err)
				return
			}
			if short, need := s.scopes.need(ti, s.peek(r)); short {
				params := `error="insufficient_scope", error_description="the token's scopes do not allow this request"`
				if len(need) > 0 {
					params += `, scope="` + strings.Join(need, " ") + `"`
				}
				s.challenge(w, http.StatusForbidden, params)
				return
			}
		}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), verifiedKey{}, ti)))
	})
}

// verify verifies a bearer token that no static token matched as an
// access token.
func (s *oauthServer) verify(ctx context.Context, tok string) (*auth.TokenInfo, error) {
	if !jwsShape(tok) {
		return nil, refusedUnknown
	}
	return s.tokens.verify(ctx, tok)
}

// refuse answers a token verify refused.
func (s *oauthServer) refuse(w http.ResponseWriter, err error) {
	var r tokenRefusal
	if !errors.As(err, &r) {
		w.Header().Set("Retry-After", "5")
		httpRPCError(w, http.StatusServiceUnavailable, jsonrpc.CodeInternalError,
			"toolcanon: the authorization server's keys are unavailable; try again later")
		return
	}
	s.log.Debug("oauth: bearer token refused", slog.String("reason", string(r)))
	s.challenge(w, http.StatusUnauthorized, `error="invalid_token", error_description="`+string(r)+`"`)
}

// challenge answers status with a Bearer challenge of params (RFC 6750)
// naming the resource's metadata (RFC 9728), and a JSON-RPC error. An
// unauthenticated answer closes the connection.
func (s *oauthServer) challenge(w http.ResponseWriter, status int, params string) {
	c := `Bearer resource_metadata="` + s.metaURL + `"`
	if params != "" {
		c += ", " + params
	}
	w.Header().Set("WWW-Authenticate", c)
	msg := httpErrorMessage(status)
	if status == http.StatusForbidden {
		msg = "Forbidden: the access token's scopes do not allow this request; ask the authorization server for the scopes WWW-Authenticate names"
	} else {
		w.Header().Set("Connection", "close")
	}
	httpRPCError(w, status, jsonrpc.CodeInvalidRequest, msg)
}

// peek returns the request's body (bounded by BoundBodies), leaving it to
// be read again; nil when it has none or it cannot be read, which bounded
// then answers.
func (s *oauthServer) peek(r *http.Request) []byte {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body
}

// errReader fails every read with its error.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
